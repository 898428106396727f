/**
 * The engine's arrays by slot, grown together: the documents, the typed columns every query reads
 * per candidate (kind and status flags, times, uptime, developer) and the developers' trust parts,
 * the cache of trust and of the query-independent score, and the per-query scratch space.
 *
 * Typed columns rather than the documents' fields: the common filters and the ranking signals
 * then cost array reads, not object lookups.
 */
import type { DocumentPatch, EngineQuery, KeptDocument, SearchDocument, TrustFormula } from './engine-query.js'
import { freshness, type RankingWeights } from './ranking.js'
import { restoreDocuments, saveDocuments } from './document-columns.js'
import type { SlotLists } from './slot-lists.js'
import { StaticCeiling, type StaticScores } from './static-ceiling.js'
import type { SnapshotReader, SnapshotWriter } from '../util/snapshot-file.js'
import { widened } from '../util/typed-arrays.js'

export const SERVICE = 1
export const ACTIVE = 2
export const LIVE = 4
const NO_DEVELOPER = -1
/**
 * Trust and the query-independent part of the score are cached per slot and are at most this old
 * when a query reads them: in a minute trust's age term moves by millionths and freshness (half-life
 * of days) by less than a ten-thousandth. The cache expires a share of the slots per query, in
 * proportion to the time since the last one, rather than all at once: at 1M documents recomputing
 * every slot cost the query that found the cache expired about 80 ms.
 */
const SIGNALS_CACHE_MS = 60_000
/**
 * What the trust and static score of a slot are computed from, for one query. Its own class, like
 * RankPass: query objects come in many shapes (spread, cloned between threads), and V8 threw away
 * the compiled ranking loop each time it met a new one (at 1M slots the pass took 9.5 ms, not 8.3).
 */
export class Signals {
  readonly trust: TrustFormula
  readonly now: number
  readonly halfLifeDays: number
  readonly trustWeight: number
  readonly freshnessWeight: number
  readonly availabilityWeight: number

  constructor(q: Pick<EngineQuery, 'trust' | 'now' | 'halfLifeDays' | 'weights'>) {
    this.trust = q.trust
    this.now = q.now
    this.halfLifeDays = q.halfLifeDays
    this.trustWeight = q.weights.trust
    this.freshnessWeight = q.weights.freshness
    this.availabilityWeight = q.weights.availability
  }

  /** The same signals at another time. */
  at(now: number): Signals {
    const { trust, halfLifeDays, trustWeight, freshnessWeight, availabilityWeight } = this
    const weights = {
      trust: trustWeight,
      freshness: freshnessWeight,
      availability: availabilityWeight,
      text: 0,
      semantic: 0
    }
    return new Signals({ trust, now, halfLifeDays, weights })
  }
}

/** What the cached signals were computed for. */
interface SignalsKey {
  trust: TrustFormula
  weights: RankingWeights
  halfLifeDays: number
}

export class SlotColumns implements StaticScores<Signals> {
  /** The document kept in each slot (undefined: a free or removed slot); its length is the slot count. */
  readonly docs: (KeptDocument | undefined)[] = []
  // Columns by slot.
  flags = new Uint8Array(1024)
  registeredAt = new Float64Array(1024)
  lastChange = new Float64Array(1024)
  uptime = new Float32Array(1024)
  transitive = new Float32Array(1024)
  developerOf = new Int32Array(1024).fill(NO_DEVELOPER)
  /** Entity ID order as a number by slot (see idOrder), so ties between equal scores rarely compare strings. */
  idKeys = new Float64Array(1024)
  // Developers: a number each, and the part of trust that comes from the developer.
  private readonly developerNumbers = new Map<string, number>()
  private developerParts = new Float32Array(256)
  // By slot, for one trust formula, weights and half-life, as of when it was computed (NaN: to
  // compute): trust, and w_trust · trust + w_freshness · freshness + w_availability · availability.
  trustCache = new Float32Array(1024).fill(NaN)
  staticScore = new Float64Array(1024)
  private signalsKey: SignalsKey | null = null
  /** The cache expires slots from `expiryCursor` on, round robin; it has expired them up to this time. */
  private expiredUntil = 0
  private expiryCursor = 0
  /** The highest static score of any live slot, for the walk of common words (see static-ceiling.ts). */
  private readonly ceiling = new StaticCeiling()
  /** The last query's signals and when it ran (performance.now()), for warm(). */
  private lastSignals: { signals: Signals; at: number } | null = null
  private warmCursor = 0
  // Per-query scratch space, reused (text scores are reset after each query).
  textScores = new Float32Array(1024)
  /** Partial scores: by slot (rank-pass.ts), or by visit in a walk (walked-rank.ts). */
  scoreOf = new Float64Array(1024)
  touched = new Int32Array(1024)
  /** How many of a query's marked filter lists hold each slot (see SearchEngine.rank). */
  facetMarks = new Uint8Array(1024)
  /** Which of a phrase query's terms each touched slot holds (bit j: term j). */
  termMasks = new Uint32Array(1024)
  visitBuffer = new Int32Array(1024)
  candidateBuffer = new Int32Array(1024)

  /** Writes what filters and ranking read of the slot's document into the columns; its cached signals expire. */
  write(slot: number, doc: SearchDocument): void {
    this.flags[slot] = LIVE | (doc.type === 'service' ? SERVICE : 0) | (doc.active ? ACTIVE : 0)
    this.registeredAt[slot] = doc.registeredAt
    this.lastChange[slot] = doc.lastChange
    this.uptime[slot] = doc.uptime
    this.transitive[slot] = doc.transitive ?? 0
    this.developerOf[slot] = doc.developerId === null ? NO_DEVELOPER : this.developerNumber(doc.developerId)
    this.expire(slot)
  }

  /** Changes the slot's activity and ranking inputs in place (a last change only moves forward). */
  patch(slot: number, change: DocumentPatch): void {
    const flags = this.flags[slot] as number
    if (change.active !== undefined) this.flags[slot] = change.active ? flags | ACTIVE : flags & ~ACTIVE
    if (change.lastChange !== undefined)
      this.lastChange[slot] = Math.max(this.lastChange[slot] as number, change.lastChange)
    if (change.uptime !== undefined) this.uptime[slot] = change.uptime
    if (change.transitive !== undefined) this.transitive[slot] = change.transitive
    this.expire(slot)
  }

  isService(slot: number): boolean {
    return ((this.flags[slot] as number) & SERVICE) !== 0
  }

  isActive(slot: number): boolean {
    return ((this.flags[slot] as number) & ACTIVE) !== 0
  }

  /** The slot's cached signals are recomputed at their next read. */
  private expire(slot: number): void {
    this.trustCache[slot] = NaN
    this.ceiling.changed(slot)
  }

  /**
   * At least the static score of every live slot for these signals (the query's, after
   * refreshSignals): what a document not yet read can add to its text and similarity.
   */
  staticCeiling(signals: Signals): number {
    return this.ceiling.read(this, signals, this.signalsKey)
  }

  get slotCount(): number {
    return this.docs.length
  }

  isLive(slot: number): boolean {
    return this.docs[slot] !== undefined
  }

  /**
   * At least the static score the slot has, unchanged, computed at any time from `from` to `until`:
   * trust at `until` (it never falls with time) and freshness at `from` (it only falls), summed as
   * computeSignals sums them, so the float is a bound too.
   */
  staticBound(slot: number, signals: Signals, from: number, until: number): number {
    return this.staticSum(slot, signals, this.trustAt(slot, signals, until), from)
  }

  knowsDeveloper(developerId: string): boolean {
    return this.developerNumbers.has(developerId)
  }

  /** Sets the developer's part of trust; `byDeveloper` lists the slots whose cached signals it expires. */
  setDeveloperPart(developerId: string, part: number, byDeveloper: SlotLists): void {
    const n = this.developerNumber(developerId)
    if (this.developerParts[n] === Math.fround(part)) return
    this.developerParts[n] = part
    // Only their documents' cached signals change (dead slots in the list are harmless).
    const slots = byDeveloper.get(developerId)
    for (let i = 0; i < slots.length; i++) this.expire(slots[i] as number)
  }

  private developerNumber(developerId: string): number {
    let n = this.developerNumbers.get(developerId)
    if (n === undefined) {
      n = this.developerNumbers.size
      this.developerNumbers.set(developerId, n)
      if (n >= this.developerParts.length) {
        const parts = new Float32Array(this.developerParts.length * 2)
        parts.set(this.developerParts)
        this.developerParts = parts
      }
    }
    return n
  }

  /**
   * Empties the signal caches when the formula, weights or half-life changed, or the time moved by
   * a whole SIGNALS_CACHE_MS (or back); otherwise expires the share of the slots that the time
   * since the last query is of SIGNALS_CACHE_MS, the next ones round robin, so no cached value is
   * older than that. (A developer's part and a patched document expire their own slots.)
   */
  refreshSignals(q: EngineQuery, signals: Signals): void {
    this.lastSignals = { signals, at: performance.now() }
    const key = this.signalsKey
    const behind = q.now - this.expiredUntil
    if (
      key?.trust !== q.trust ||
      key.weights !== q.weights ||
      key.halfLifeDays !== q.halfLifeDays ||
      behind >= SIGNALS_CACHE_MS ||
      behind < -SIGNALS_CACHE_MS
    ) {
      this.trustCache.fill(NaN)
      this.signalsKey = { trust: q.trust, weights: q.weights, halfLifeDays: q.halfLifeDays }
      this.expiredUntil = q.now
      return
    }
    const count = this.docs.length
    const expire = Math.floor((count * behind) / SIGNALS_CACHE_MS)
    if (expire <= 0) return
    const from = this.expiryCursor % count
    const to = from + expire
    this.trustCache.fill(NaN, from, Math.min(to, count))
    if (to > count) this.trustCache.fill(NaN, 0, to - count)
    this.expiryCursor = to % count
    this.expiredUntil += (expire * SIGNALS_CACHE_MS) / count
  }

  /**
   * Computes the cached signals of up to `count` slots that have none, reading at most `scan`
   * slots from where the last call stopped, with the last query's formula at the last query's time
   * plus the time since: idle time fills the cache, so the queries after a start, a pause or many
   * writes do not. Returns how many it computed.
   */
  warm(count: number, scan: number): number {
    const last = this.lastSignals
    const slots = this.docs.length
    if (last === null || slots === 0) return 0
    const signals = last.signals.at(last.signals.now + (performance.now() - last.at))
    let computed = 0
    let slot = this.warmCursor % slots
    for (let read = 0; read < Math.min(scan, slots) && computed < count; read++) {
      if (Number.isNaN(this.trustCache[slot] as number) && this.docs[slot] !== undefined) {
        this.computeSignals(slot, signals)
        computed++
      }
      slot = slot + 1 === slots ? 0 : slot + 1
    }
    this.warmCursor = slot
    return computed
  }

  /** Trust of a slot, and its query-independent score part, computed into the caches. */
  computeSignals(slot: number, signals: Signals): number {
    const trust = this.trustAt(slot, signals, signals.now)
    this.trustCache[slot] = trust
    this.staticScore[slot] = this.staticSum(slot, signals, trust, signals.now)
    return this.trustCache[slot] as number
  }

  private trustAt(slot: number, signals: Signals, now: number): number {
    const developer = this.developerOf[slot] as number
    return signals.trust(
      developer === NO_DEVELOPER ? 0 : (this.developerParts[developer] as number),
      this.registeredAt[slot] as number,
      this.uptime[slot] as number,
      now,
      this.transitive[slot] as number
    )
  }

  private staticSum(slot: number, signals: Signals, trust: number, now: number): number {
    return (
      signals.trustWeight * trust +
      signals.freshnessWeight * freshness(this.lastChange[slot] as number, now, signals.halfLifeDays) +
      signals.availabilityWeight * ((this.flags[slot] as number) & ACTIVE ? 1 : 0)
    )
  }

  /** The documents, their ID order and the developers' parts; the other columns follow from the documents. */
  save(out: SnapshotWriter, prefix: string): void {
    saveDocuments(out, `${prefix}.docs`, this.docs, this)
    out.array(`${prefix}.idKeys`, () => this.idKeys.subarray(0, this.docs.length))
    out.strings(`${prefix}.developers`, () => [...this.developerNumbers.keys()])
    out.array(`${prefix}.developerParts`, () => this.developerParts.subarray(0, this.developerNumbers.size))
  }

  /** Takes what `save` wrote under `prefix`, into empty columns; each string passes through `intern`. */
  restore(input: SnapshotReader, prefix: string, intern: (value: string) => string): void {
    if (this.docs.length > 0) throw new Error('restore() needs empty columns')
    input.strings(`${prefix}.developers`).forEach((id, n) => {
      this.developerNumbers.set(intern(id), n)
    })
    const parts = input.array(`${prefix}.developerParts`, Float32Array)
    this.developerParts = widened(parts, Math.max(256, parts.length * 2))
    const restored = restoreDocuments(input, `${prefix}.docs`, intern)
    const docs = restored.docs
    this.ensure(docs.length)
    this.idKeys.set(input.array(`${prefix}.idKeys`, Float64Array))
    // Each whole document is read into one reused object: only the kept part stays.
    for (let slot = 0; slot < docs.length; slot++) {
      const kept = docs[slot]
      this.docs.push(kept)
      if (kept) this.write(slot, restored.read(slot, kept))
    }
  }

  /** Room for `slots` slots in every column. */
  ensure(slots: number): void {
    if (slots <= this.flags.length) return
    let size = this.flags.length
    while (size < slots) size *= 2
    this.flags = widened(this.flags, size)
    this.registeredAt = widened(this.registeredAt, size)
    this.lastChange = widened(this.lastChange, size)
    this.uptime = widened(this.uptime, size)
    this.transitive = widened(this.transitive, size)
    this.developerOf = widened(this.developerOf, size, NO_DEVELOPER)
    this.trustCache = widened(this.trustCache, size, NaN)
    this.textScores = widened(this.textScores, size)
    this.staticScore = widened(this.staticScore, size)
    this.touched = widened(this.touched, size)
    this.termMasks = widened(this.termMasks, size)
    this.facetMarks = widened(this.facetMarks, size)
    this.visitBuffer = widened(this.visitBuffer, size)
    this.candidateBuffer = widened(this.candidateBuffer, size)
    this.scoreOf = widened(this.scoreOf, size)
    this.idKeys = widened(this.idKeys, size)
  }
}
