/**
 * Candidate generation: the filters' slot lists (category, tag, developer, capability value), the
 * choice of the slots a query visits (the entities it names, the shortest list, or the text and
 * vector matches), and the filter conditions left to check on the documents visited.
 */
import {
  CAPABILITY_KEYS,
  type CapabilityCondition,
  type CapabilityKey,
  type EngineQuery,
  type KeptDocument
} from './engine-query.js'
import { SlotLists } from './slot-lists.js'
import type { SnapshotReader, SnapshotWriter } from '../util/snapshot-file.js'

const capabilityList = (key: string, value: string): string => `${key}:${value}`

/** A condition the visited list holds by itself: the category, the developer, a tag (its index), or the capability filter. */
export type Facet = 'category' | 'developer' | 'capability' | number

type Docs = readonly (KeptDocument | undefined)[]

export class FacetLists {
  readonly byCategory = new SlotLists()
  readonly byTag = new SlotLists()
  readonly byDeveloper = new SlotLists()
  /** Slots by capability value, under `capabilityList(key, value)`. */
  readonly byCapability = new SlotLists()

  add(slot: number, doc: KeptDocument): void {
    this.byCategory.add(doc.category, slot)
    for (const tag of doc.tags) this.byTag.add(tag, slot)
    if (doc.developerId !== null) this.byDeveloper.add(doc.developerId, slot)
    for (const key of CAPABILITY_KEYS)
      for (const value of new Set(doc.capabilities[key])) this.byCapability.add(capabilityList(key, value), slot)
  }

  save(out: SnapshotWriter, prefix: string): void {
    this.byCategory.save(out, `${prefix}.category`)
    this.byTag.save(out, `${prefix}.tag`)
    this.byDeveloper.save(out, `${prefix}.developer`)
    this.byCapability.save(out, `${prefix}.capability`)
  }

  restore(input: SnapshotReader, prefix: string): void {
    this.byCategory.restore(input, `${prefix}.category`)
    this.byTag.restore(input, `${prefix}.tag`)
    this.byDeveloper.restore(input, `${prefix}.developer`)
    this.byCapability.restore(input, `${prefix}.capability`)
  }

  /** Drops the slots whose document (in `docs`) is gone or no longer holds the list's value. */
  sweep(docs: Docs): void {
    this.byCategory.sweep((slot, category) => docs[slot]?.category === category)
    this.byTag.sweep((slot, tag) => docs[slot]?.tags.includes(tag) === true)
    this.byDeveloper.sweep((slot, developerId) => docs[slot]?.developerId === developerId)
    this.byCapability.sweep((slot, list) => {
      const at = list.indexOf(':')
      const values = docs[slot]?.capabilities[list.slice(0, at) as CapabilityKey]
      return values?.includes(list.slice(at + 1)) === true
    })
  }

  /** The lists of the category, tag and developer conditions of `q` that `covered` does not cover. */
  uncovered(q: EngineQuery, covered: Facet | null): Uint32Array[] {
    const lists: Uint32Array[] = []
    if (q.category != null && covered !== 'category') lists.push(this.byCategory.get(q.category))
    q.tags?.forEach((tag, i) => {
      if (i !== covered) lists.push(this.byTag.get(tag))
    })
    if (q.developerId != null && covered !== 'developer') lists.push(this.byDeveloper.get(q.developerId))
    return lists
  }

  /**
   * The slots that can match, when fewer than all: the named entities, else the shortest list of a
   * category, tag or developer filter or (without a vector) the text matches, when given. null:
   * every slot.
   */
  slotsToVisit(
    q: EngineQuery,
    textHits: Int32Array | null,
    slots: ReadonlyMap<string, number>,
    docs: Docs
  ): { visit: ArrayLike<number> | null; covered: Facet | null } {
    if (q.only)
      return {
        visit: q.only.flatMap(id => {
          const slot = slots.get(id)
          return slot === undefined ? [] : [slot]
        }),
        covered: null
      }
    let visit: ArrayLike<number> | null = q.terms.length > 0 && q.vector === null ? textHits : null
    let covered: Facet | null = null
    const consider = (list: ArrayLike<number>, facet: Facet): void => {
      if (visit === null || list.length < visit.length) {
        visit = list
        covered = facet
      }
    }
    if (q.category != null) consider(this.byCategory.get(q.category), 'category')
    q.tags?.forEach((tag, i) => {
      consider(this.byTag.get(tag), i)
    })
    if (q.developerId != null) consider(this.byDeveloper.get(q.developerId), 'developer')
    // The capability condition with the shortest list, if shorter than the visit so far. When it
    // is the only one, the list covers the capability filter; otherwise the filter checks them all.
    let shortest: { list: Uint32Array; condition: CapabilityCondition; size: number } | null = null
    for (const condition of q.capabilityConditions ?? []) {
      const list = this.byCapability.get(capabilityList(condition.key, condition.value))
      const size = list.length + condition.plus.length
      if (shortest === null || size < shortest.size) shortest = { list, condition, size }
    }
    if (shortest !== null && (visit === null || shortest.size < visit.length))
      return {
        visit: withDeclared(shortest.list, shortest.condition, slots, docs),
        covered: q.capabilityConditions?.length === 1 ? 'capability' : null
      }
    return { visit, covered }
  }
}

/** `list` and the live slots of `plus` not already in it (documents that do not hold the value themselves). */
function withDeclared(
  list: Uint32Array,
  { key, value, plus }: CapabilityCondition,
  slots: ReadonlyMap<string, number>,
  docs: Docs
): ArrayLike<number> {
  const extra: number[] = []
  for (const id of plus) {
    const slot = slots.get(id)
    if (slot !== undefined && !docs[slot]?.capabilities[key].includes(value)) extra.push(slot)
  }
  if (extra.length === 0) return list
  const out = new Uint32Array(list.length + extra.length)
  out.set(list)
  out.set(extra, list.length)
  return out
}

/**
 * The text matches, then the slots of `above` that are not among them, in one list (in `out`,
 * the visit buffer). `textScores` tells the text matches.
 */
export function union(touched: Int32Array, above: Int32Array, textScores: Float32Array, out: Int32Array): Int32Array {
  let n = 0
  for (let i = 0; i < above.length; i++) {
    const slot = above[i] as number
    if (textScores[slot] === 0) out[n++] = slot
  }
  out.copyWithin(touched.length, 0, n)
  out.set(touched, 0)
  return out.subarray(0, touched.length + n)
}

/**
 * The category, tag and developer conditions a visited document must still be checked against:
 * a live slot of a list holds that list's value (documents never change in place, an update
 * takes a new slot), so the list visited covers its own condition. null: nothing to check.
 */
export function facetCheck(q: EngineQuery, covered: Facet | null): ((doc: KeptDocument) => boolean) | null {
  const category = covered === 'category' ? null : (q.category ?? null)
  const developerId = covered === 'developer' ? null : (q.developerId ?? null)
  const tags = (q.tags ?? []).filter((_, i) => i !== covered)
  if (category === null && developerId === null && tags.length === 0) return null
  return doc => {
    if ((category !== null && doc.category !== category) || (developerId !== null && doc.developerId !== developerId))
      return false
    for (let i = 0; i < tags.length; i++) if (!doc.tags.includes(tags[i] as string)) return false
    return true
  }
}

/** The facet and other filters in one predicate, or null when there are none. */
export function withFilter(
  facets: ((doc: KeptDocument) => boolean) | null,
  filter: ((doc: KeptDocument) => boolean) | null
): ((doc: KeptDocument) => boolean) | null {
  return facets === null ? filter : filter === null ? facets : doc => facets(doc) && filter(doc)
}
