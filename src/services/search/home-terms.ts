/**
 * The terms of this node's home records (entities whose home registry is this node), summarised in a
 * Bloom filter that peers use to route federated queries (protocols/README.md, `/zns/bloom/1.0.0`).
 *
 * The search index (src/services/search/search-index.ts, on its own thread) hands every record it
 * indexes to `update` with the terms it has just analyzed (no second analysis), and every removal
 * to `remove`. Terms are reference-counted, so an update or a deregistration takes a record's old
 * terms out exactly; each entity's term set is kept as interned IDs (4 bytes a term). The filter
 * is rebuilt from the live terms (no store scan) when the term set changed, at most once per
 * `rebuildIntervalMs`, and each rebuild gets a larger version. A term's two base hashes are
 * computed once, when it first appears, so a rebuild only sets bits. Listeners are told after each
 * rebuild: on the worker, the one that posts the filter to the HTTP thread's `HomeTermFilterView`,
 * which the mesh reads and pushes to peers.
 */
import type { Logger } from 'pino'
import { hashTerm, TermFilter, type TermHash } from '../../search/term-filter.js'
import type { FieldTokens } from '../../search/text-index.js'
import type { EntityRecord } from '../../store/records.js'
import { FEDERATION_LIMITS, TERM_FILTER_SCHEME, type TermFilterMessage } from '../../wire/federation.js'

export interface HomeTermsOptions {
  /** This node's registry ID and host: what makes a record a home record. */
  registryId: string
  host: string
  falsePositiveRate: number
  rebuildIntervalMs: number
  logger: HomeTermsLogger
  now?: () => number
}

/** What the summary logs through: a pino logger, or a stand-in on a worker thread. */
export type HomeTermsLogger = Pick<Logger, 'debug' | 'error'>

/** The members of a record that decide where its home is. */
export type HomeFields = Pick<EntityRecord, 'entity_id' | 'home_registry'> & { home_registry_id?: string | undefined }

/**
 * Term IDs packed two UTF-16 code units each into a string: one small heap object per entity,
 * where a Uint32Array costs a typed array, an ArrayBuffer and a separate allocation (about 180
 * bytes more per home entity at 100k).
 */
function packIds(ids: readonly number[]): string {
  const units: number[] = []
  for (const id of ids) units.push(id >>> 16, id & 0xffff)
  // In slices: a spread of very many arguments would overflow the stack.
  let packed = ''
  for (let i = 0; i < units.length; i += 8192) packed += String.fromCharCode(...units.slice(i, i + 8192))
  return packed
}

function unpackIds(packed: string): number[] {
  const ids: number[] = []
  for (let i = 0; i < packed.length; i += 2) ids.push(((packed.charCodeAt(i) << 16) | packed.charCodeAt(i + 1)) >>> 0)
  return ids
}

/**
 * Home: the record names this node's registry ID; a record written before records carried one
 * (`home_registry_id` absent) is home when its `home_registry` is this node's host.
 */
export function isHomeRecord(record: HomeFields, registryId: string, host: string): boolean {
  return record.home_registry_id !== undefined ? record.home_registry_id === registryId : record.home_registry === host
}

/** Builds faster than this after a change are not worth delaying: bursts of writes still share one. */
const MIN_DELAY_MS = 50

export class HomeTermSummary {
  private readonly ids = new Map<string, number>()
  private readonly terms: (string | undefined)[] = []
  private counts = new Uint32Array(1024)
  /** Each term's two base hashes (see TermHash), by term ID. */
  private firstHashes = new Uint32Array(1024)
  private secondHashes = new Uint32Array(1024)
  private readonly freeIds: number[] = []
  /** Each home entity's term IDs, packed (see packIds). */
  private readonly byEntity = new Map<string, string>()
  private liveTerms = 0
  private dirty = false
  private timer: NodeJS.Timeout | null = null
  private lastBuildAt = -Infinity
  /** The last build and its subscribers. */
  private readonly built: HomeTermFilterView
  private readonly now: () => number
  private stopped = false
  /** Rebuilds so far, and the time the last one took (ms): for logs and tests. */
  builds = 0
  lastBuildMs = 0

  constructor(private readonly o: HomeTermsOptions) {
    this.now = o.now ?? Date.now
    this.built = new HomeTermFilterView(o.logger)
  }

  isHome(record: HomeFields): boolean {
    return isHomeRecord(record, this.o.registryId, this.o.host)
  }

  /** A record was indexed with these terms. Records homed elsewhere are ignored (or dropped, if they were home before). */
  update(record: HomeFields, fields: FieldTokens): void {
    if (this.isHome(record)) this.updateHome(record.entity_id, fields)
    else this.remove(record.entity_id)
  }

  /** A home record was indexed with these terms. */
  updateHome(entityId: string, fields: FieldTokens): void {
    const distinct = new Set<string>()
    for (const list of Object.values(fields)) for (const term of list) distinct.add(term)
    const next = packIds([...distinct].map(term => this.acquire(term)))
    const previous = this.byEntity.get(entityId)
    if (previous !== undefined) for (const id of unpackIds(previous)) this.release(id)
    this.byEntity.set(entityId, next)
    this.changed()
  }

  remove(entityId: string): void {
    const previous = this.byEntity.get(entityId)
    if (previous === undefined) return
    this.byEntity.delete(entityId)
    for (const id of unpackIds(previous)) this.release(id)
    this.changed()
  }

  has(entityId: string): boolean {
    return this.byEntity.has(entityId)
  }

  get homeEntities(): number {
    return this.byEntity.size
  }

  get termCount(): number {
    return this.liveTerms
  }

  /** The current filter as peers receive it; null until the first build. */
  current(): TermFilterMessage | null {
    return this.built.current()
  }

  /** Called after each rebuild; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    return this.built.subscribe(listener)
  }

  /** Builds the filter now (at start, after the index is loaded; tests). */
  rebuild(): TermFilterMessage {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    const started = performance.now()
    const filter = TermFilter.build(
      this.liveTermHashes(),
      this.liveTerms,
      this.o.falsePositiveRate,
      FEDERATION_LIMITS.maxFilterBits
    )
    const previous = this.built.current()?.version ?? 0
    const message: TermFilterMessage = {
      registry_id: this.o.registryId,
      version: Math.max(previous + 1, this.now()),
      scheme: TERM_FILTER_SCHEME,
      items: filter.items,
      bits: filter.bits,
      hashes: filter.hashes,
      seed: filter.seed,
      filter: Buffer.from(filter.bytes()).toString('base64')
    }
    this.dirty = false
    this.lastBuildAt = this.now()
    this.builds++
    this.lastBuildMs = performance.now() - started
    this.o.logger.debug(
      { version: message.version, terms: filter.items, bits: filter.bits, ms: Math.round(this.lastBuildMs) },
      'home term filter rebuilt'
    )
    this.built.publish(message)
    return message
  }

  stop(): void {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.built.stop()
  }

  private *liveTermHashes(): Iterable<TermHash> {
    const h = { first: 0, second: 0 }
    for (let id = 0; id < this.terms.length; id++) {
      if (this.terms[id] === undefined || (this.counts[id] as number) === 0) continue
      h.first = this.firstHashes[id] as number
      h.second = this.secondHashes[id] as number
      yield h
    }
  }

  /** Interns a term and counts one more home record holding it. */
  private acquire(term: string): number {
    let id = this.ids.get(term)
    if (id === undefined) {
      id = this.freeIds.pop() ?? this.terms.length
      if (id >= this.counts.length) this.grow()
      this.ids.set(term, id)
      this.terms[id] = term
      const h = hashTerm(term)
      this.firstHashes[id] = h.first
      this.secondHashes[id] = h.second
    }
    const count = this.counts[id] as number
    if (count === 0) {
      this.liveTerms++
      this.dirty = true
    }
    this.counts[id] = count + 1
    return id
  }

  private grow(): void {
    const size = this.counts.length * 2
    const counts = new Uint32Array(size)
    counts.set(this.counts)
    this.counts = counts
    const first = new Uint32Array(size)
    first.set(this.firstHashes)
    this.firstHashes = first
    const second = new Uint32Array(size)
    second.set(this.secondHashes)
    this.secondHashes = second
  }

  private release(id: number): void {
    const count = (this.counts[id] as number) - 1
    this.counts[id] = count
    if (count > 0) return
    this.liveTerms--
    this.dirty = true
    const term = this.terms[id]
    if (term !== undefined) this.ids.delete(term)
    this.terms[id] = undefined
    this.freeIds.push(id)
  }

  /** Schedules a rebuild when the set of terms changed: at most one per interval, bursts share one. */
  private changed(): void {
    if (!this.dirty || this.timer || this.stopped || this.built.current() === null) return
    const delay = Math.max(
      Math.min(MIN_DELAY_MS, this.o.rebuildIntervalMs),
      this.lastBuildAt + this.o.rebuildIntervalMs - this.now()
    )
    this.timer = setTimeout(() => {
      this.timer = null
      if (this.dirty && !this.stopped) this.rebuild()
    }, delay)
    this.timer.unref()
  }
}

/**
 * The last home term filter the index built, as the mesh reads it (`current`, `subscribe`): the
 * summary lives with the index, which may run on a worker thread and sends each build here.
 */
export class HomeTermFilterView {
  private message: TermFilterMessage | null = null
  private readonly listeners = new Set<() => void>()

  constructor(private readonly logger: HomeTermsLogger) {}

  current(): TermFilterMessage | null {
    return this.message
  }

  /** Called after each build; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  /** A build arrived from the index. */
  publish(message: TermFilterMessage): void {
    this.message = message
    for (const listener of this.listeners) {
      try {
        listener()
      } catch (err) {
        this.logger.error({ err }, 'home term filter listener failed')
      }
    }
  }

  stop(): void {
    this.listeners.clear()
  }
}
