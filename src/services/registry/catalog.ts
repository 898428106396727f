import type { EntityViewFields } from '../../store/entity-views.js'
import type { EntityRecord, EntityType } from '../../store/records.js'
import { Interner } from '../../util/interner.js'

/**
 * One entity's facets: one object and at most one string per entity, since a million of them stay
 * on the heap and every full collection marks each object (its pauses grow with their number,
 * docs/decisions.md). Values repeated across entities are shared: the type is one of two
 * literals, category and developer are interned; the tags are one JSON string, read back only when
 * the entity changes or goes.
 */
interface Facets {
  type: EntityType
  category: string
  developerId: string | null
  /** The distinct lowercased tags as a JSON array, or NO_TAGS. */
  tags: string
}

const NO_TAGS = ''

export interface CatalogQuery {
  type?: EntityType | undefined
  category?: string | undefined
  developerId?: string | undefined
  offset: number
  limit: number
}

function distinctTags(record: EntityViewFields): string[] {
  return [...new Set(record.tags.map(t => t.toLowerCase()))]
}

function tagsOf(f: Facets): string[] {
  return f.tags === NO_TAGS ? [] : (JSON.parse(f.tags) as string[])
}

/**
 * In-memory facets of the live entities (type, category, developer) in registration order, so
 * listings and counts never scan LMDB. Rebuilt from the store at start.
 */
export class EntityCatalog {
  private readonly facets = new Map<string, Facets>()
  private readonly byType = new Map<string, Set<string>>()
  private readonly byCategory = new Map<string, Set<string>>()
  private readonly byDeveloper = new Map<string, Set<string>>()
  /** Entities per tag: only counted (listings filter by type, category and developer). */
  private readonly byTag = new Map<string, number>()
  /** While loading: the records read so far (ID, facets, distinct tags, registration time), put in registration order by `loaded()`. */
  private loading = { ids: [] as string[], facets: [] as Facets[], tags: [] as string[][], times: [] as number[] }
  private readonly interned = new Interner()

  /** One stored record at start (any order); `loaded()` then indexes them in registration order. */
  loadRecord(record: EntityViewFields): void {
    const time = Date.parse(record.registered_at)
    this.loading.ids.push(record.entity_id)
    const tags = distinctTags(record)
    this.loading.facets.push(this.facetsOf(record, tags))
    this.loading.tags.push(tags)
    this.loading.times.push(Number.isNaN(time) ? 0 : time)
  }

  loaded(): void {
    const { ids, facets, tags, times } = this.loading
    this.loading = { ids: [], facets: [], tags: [], times: [] }
    for (const i of ascendingOrder(times)) this.insert(ids[i] as string, facets[i] as Facets, tags[i] as string[])
  }

  get size(): number {
    return this.facets.size
  }

  count(type: EntityType): number {
    return this.byType.get(type)?.size ?? 0
  }

  countByDeveloper(developerId: string): number {
    return this.byDeveloper.get(developerId)?.size ?? 0
  }

  has(id: string): boolean {
    return this.facets.has(id)
  }

  upsert(record: EntityRecord): void {
    const tags = distinctTags(record)
    this.insert(record.entity_id, this.facetsOf(record, tags), tags)
  }

  private facetsOf(record: EntityViewFields, tags: readonly string[]): Facets {
    return {
      type: record.type === 'service' ? 'service' : 'agent',
      category: this.interned.intern(record.category.toLowerCase()),
      developerId: record.developer_id === null ? null : this.interned.intern(record.developer_id),
      tags: tags.length === 0 ? NO_TAGS : JSON.stringify(tags)
    }
  }

  private insert(id: string, next: Facets, tags: readonly string[]): void {
    const previous = this.facets.get(id)
    if (previous) this.unindex(id, previous)
    this.facets.set(id, next)
    add(this.byType, next.type, id)
    add(this.byCategory, next.category, id)
    if (next.developerId) add(this.byDeveloper, next.developerId, id)
    for (const tag of tags) this.byTag.set(tag, (this.byTag.get(tag) ?? 0) + 1)
  }

  /** Categories in use with their entity counts, most used first (kept up to date on every write). */
  categoryCounts(): { name: string; count: number }[] {
    return counts(this.byCategory).map(([name, count]) => ({ name, count }))
  }

  tagCounts(): { tag: string; count: number }[] {
    return byCount([...this.byTag]).map(([tag, count]) => ({ tag, count }))
  }

  remove(id: string): void {
    const previous = this.facets.get(id)
    if (!previous) return
    this.unindex(id, previous)
    this.facets.delete(id)
  }

  /** IDs of one page and the total matching the filters. */
  list(q: CatalogQuery): { ids: string[]; total: number } {
    const candidates: Iterable<string>[] = []
    if (q.type) candidates.push(this.byType.get(q.type) ?? [])
    if (q.category !== undefined) candidates.push(this.byCategory.get(q.category.toLowerCase()) ?? [])
    if (q.developerId !== undefined) candidates.push(this.byDeveloper.get(q.developerId) ?? [])
    const source = candidates.length === 0 ? this.facets.keys() : smallest(candidates)
    const ids: string[] = []
    let total = 0
    for (const id of source) {
      const f = this.facets.get(id)
      if (!f) continue
      if (q.type && f.type !== q.type) continue
      if (q.category !== undefined && f.category !== q.category.toLowerCase()) continue
      if (q.developerId !== undefined && f.developerId !== q.developerId) continue
      if (total >= q.offset && ids.length < q.limit) ids.push(id)
      total++
    }
    return { ids, total }
  }

  private unindex(id: string, f: Facets): void {
    del(this.byType, f.type, id)
    del(this.byCategory, f.category, id)
    if (f.developerId) del(this.byDeveloper, f.developerId, id)
    for (const tag of tagsOf(f)) {
      const left = (this.byTag.get(tag) ?? 1) - 1
      if (left > 0) this.byTag.set(tag, left)
      else this.byTag.delete(tag)
    }
  }
}

function counts(index: Map<string, Set<string>>): [string, number][] {
  return byCount([...index].map(([key, ids]): [string, number] => [key, ids.size]))
}

/** Most first, then by name. */
function byCount(entries: [string, number][]): [string, number][] {
  return entries.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
}

/**
 * The indices of `times` (whole milliseconds) in ascending order of time, equal times in their
 * given order. At a million records a sort with a comparator took 9 s at start; here each time
 * and its index are packed into one double and sorted natively, unless the times span too long
 * for both to fit in a double's 53-bit integers (then the comparator).
 */
export function ascendingOrder(times: readonly number[]): Uint32Array | number[] {
  const n = times.length
  let min = Infinity
  let max = -Infinity
  for (const t of times) {
    if (t < min) min = t
    if (t > max) max = t
  }
  const scale = 2 ** Math.ceil(Math.log2(n + 1))
  if (n > 0 && (max - min + 1) * scale <= Number.MAX_SAFE_INTEGER) {
    const keys = new Float64Array(n)
    for (let i = 0; i < n; i++) keys[i] = ((times[i] as number) - min) * scale + i
    keys.sort()
    const order = new Uint32Array(n)
    for (let i = 0; i < n; i++) order[i] = (keys[i] as number) % scale
    return order
  }
  return Array.from({ length: n }, (_, i) => i).sort((a, b) => (times[a] as number) - (times[b] as number) || a - b)
}

function add(index: Map<string, Set<string>>, key: string, id: string): void {
  let set = index.get(key)
  if (!set) index.set(key, (set = new Set()))
  set.add(id)
}

function del(index: Map<string, Set<string>>, key: string, id: string): void {
  const set = index.get(key)
  if (!set) return
  set.delete(id)
  if (set.size === 0) index.delete(key)
}

function smallest(sets: Iterable<string>[]): Iterable<string> {
  let best = sets[0] as Iterable<string>
  for (const s of sets) if (size(s) < size(best)) best = s
  return best
}

function size(s: Iterable<string>): number {
  return s instanceof Set ? s.size : Array.isArray(s) ? s.length : Infinity
}
