/**
 * The local search engine: BM25F text index, vector index and the documents' filter facets, kept
 * in step with the store, and the ranking of one query. It knows entities only as documents;
 * the search service turns requests into queries and hits into results.
 *
 * What every query reads per candidate lives in typed columns by slot (kind and status flags,
 * registration and change times, the developer's trust part), so the common filters and the
 * ranking signals cost array reads, not object lookups. Category, tag and developer filters
 * also list their slots (src/search/slot-lists.ts), so a filtered query visits the shortest such
 * list instead of every document; the rarer filters (capabilities) run as a predicate.
 *
 * A removed document's slot is not reused until a sweep has dropped it from the postings and
 * lists (updates take a new slot), so no index ever attributes an old document's words to a new one.
 */
import type { QueryTerm } from './analyzer.js'
import {
  combine,
  freshness,
  PHRASE_BONUS,
  RRF_K,
  round4,
  type Fusion,
  type RankingWeights,
  type ScoreBreakdown
} from './ranking.js'
import { SlotLists } from './slot-lists.js'
import { TextIndex, type FieldTokens, type TextBest } from './text-index.js'
import { VectorIndex } from './vector-index.js'
import { widened } from '../util/typed-arrays.js'

export const CAPABILITY_KEYS = ['skills', 'protocols', 'languages', 'models'] as const
export type CapabilityKey = (typeof CAPABILITY_KEYS)[number]

/** Lowercased capability words (short lists: arrays cost far less memory than sets, per document). */
export type CapabilitySets = Record<CapabilityKey, readonly string[]>

/** What filters and ranking need of an entity, all lowercased where compared. */
export interface SearchDocument {
  entityId: string
  type: 'agent' | 'service'
  category: string
  tags: readonly string[]
  developerId: string | null
  active: boolean
  /** Registration time, ms (trust counts record age). */
  registeredAt: number
  /** Later of updated_at and last_heartbeat, ms. */
  lastChange: number
  /** Share of the observed time the entity was active, in [0, 1] (trust counts it). */
  uptime: number
  capabilities: CapabilitySets
}

/** The trust score from its inputs: the developer's part (see setDeveloperPart) and the entity's own. */
export type TrustFormula = (developerPart: number, registeredAt: number, uptime: number, now: number) => number

export interface EngineQuery {
  terms: readonly QueryTerm[]
  phrases: readonly (readonly string[])[]
  vector: Float32Array | null
  /** null: any kind. */
  type: 'agent' | 'service' | null
  /** true: active only, false: inactive only, null: both. */
  active: boolean | null
  /** Exact (lowercased) category, tags (all required) and developer; absent: any. */
  category?: string | null
  tags?: readonly string[]
  developerId?: string | null
  /** The other filters, or null when there are none. */
  filter: ((doc: SearchDocument) => boolean) | null
  trust: TrustFormula
  minTrust: number
  /** A document without a text match counts as a match when its similarity reaches this. */
  minSemantic: number
  weights: RankingWeights
  fusion: Fusion
  halfLifeDays: number
  now: number
  offset: number
  limit: number
  /** When the filters already name the only possible entities (an FQAN or ID), just these. */
  only?: readonly string[]
  /**
   * What `filter` requires of capabilities, as lists the engine keeps: a match holds `value` under
   * `key`, or is one of `plus` (entities whose cards declare it). The shortest can be the visit.
   */
  capabilityConditions?: readonly CapabilityCondition[]
}

export interface CapabilityCondition {
  key: CapabilityKey
  value: string
  plus: readonly string[]
}

const capabilityList = (key: string, value: string): string => `${key}:${value}`

export interface EngineHit {
  doc: SearchDocument
  score: number
  breakdown: ScoreBreakdown
}

const SERVICE = 1
const ACTIVE = 2
const LIVE = 4
const NO_DEVELOPER = -1
/**
 * Trust and the query-independent part of the score are cached per slot and are at most this old
 * when a query reads them: in a minute trust's age term moves by millionths and freshness (half-life
 * of days) by less than a ten-thousandth. The cache expires a share of the slots per query, in
 * proportion to the time since the last one, rather than all at once: at 1M documents recomputing
 * every slot cost the query that found the cache expired about 80 ms.
 */
const SIGNALS_CACHE_MS = 60_000
/** Removed slots wait for a sweep until they are this many, or this share of the documents. */
const SWEEP_AT = 1024
const SWEEP_SHARE = 8
/**
 * A query without a shorter list visits every slot in order, rather than a list of its matches,
 * when they are more than this share of the slots: sequential reads beat building the list.
 */
const LISTED_SHARE = 1 / 8

export class SearchEngine {
  private readonly text = new TextIndex()
  private readonly vectors: VectorIndex
  private readonly docs: (SearchDocument | undefined)[] = []
  private readonly slots = new Map<string, number>()
  private readonly free: number[] = []
  /** Removed slots, reusable after the next sweep. */
  private released: number[] = []
  private readonly byCategory = new SlotLists()
  private readonly byTag = new SlotLists()
  private readonly byDeveloper = new SlotLists()
  /** Slots by capability value, under `capabilityList(key, value)`. */
  private readonly byCapability = new SlotLists()
  // Columns by slot.
  private flags = new Uint8Array(1024)
  private registeredAt = new Float64Array(1024)
  private lastChange = new Float64Array(1024)
  private uptime = new Float32Array(1024)
  private developerOf = new Int32Array(1024).fill(NO_DEVELOPER)
  // Developers: a number each, and the part of trust that comes from the developer.
  private readonly developerNumbers = new Map<string, number>()
  private developerParts = new Float32Array(256)
  // Per-query scratch space, reused (text scores are reset after each query).
  private textScores = new Float32Array(1024)
  private scoreOf = new Float64Array(1024)
  /** Entity ID order as a number by slot (see idOrder), so ties between equal scores rarely compare strings. */
  private idKeys = new Float64Array(1024)
  // By slot, for one trust formula, weights and half-life, as of when it was computed (NaN: to
  // compute): trust, and w_trust · trust + w_freshness · freshness + w_availability · availability.
  private trustCache = new Float32Array(1024).fill(NaN)
  private staticScore = new Float64Array(1024)
  private signalsKey: { trust: TrustFormula; weights: RankingWeights; halfLifeDays: number } | null = null
  /** The cache expires slots from `expiryCursor` on, round robin; it has expired them up to this time. */
  private expiredUntil = 0
  private expiryCursor = 0
  private touched = new Int32Array(1024)
  private visitBuffer = new Int32Array(1024)
  private candidateBuffer = new Int32Array(1024)

  constructor(
    readonly dimension: number,
    options: { simd?: boolean } = {}
  ) {
    this.vectors = new VectorIndex(dimension, options)
  }

  get size(): number {
    return this.slots.size
  }

  /** Whether the vector scan runs on WebAssembly SIMD. */
  get simd(): boolean {
    return this.vectors.simd
  }

  has(entityId: string): boolean {
    return this.slots.has(entityId)
  }

  /** Adds or replaces a document; the vector may follow later (embedding runs off the write path). */
  upsert(doc: SearchDocument, fields: FieldTokens, vector: Float32Array | null): void {
    this.remove(doc.entityId)
    const slot = this.free.pop() ?? this.docs.length
    this.ensure(slot + 1)
    this.docs[slot] = doc
    this.slots.set(doc.entityId, slot)
    this.idKeys[slot] = idOrder(doc.entityId)
    this.writeColumns(slot, doc)
    this.text.add(slot, fields)
    this.byCategory.add(doc.category, slot)
    for (const tag of doc.tags) this.byTag.add(tag, slot)
    if (doc.developerId !== null) this.byDeveloper.add(doc.developerId, slot)
    for (const key of CAPABILITY_KEYS)
      for (const value of new Set(doc.capabilities[key])) this.byCapability.add(capabilityList(key, value), slot)
    if (vector) this.vectors.set(slot, vector)
  }

  setVector(entityId: string, vector: Float32Array): void {
    const slot = this.slots.get(entityId)
    if (slot !== undefined) this.vectors.set(slot, vector)
  }

  /** The document's vector as the index holds it (quantised), or null before it is embedded. */
  vectorOf(entityId: string): Float32Array | null {
    const slot = this.slots.get(entityId)
    return slot === undefined ? null : this.vectors.get(slot)
  }

  /** The document's analyzed fields as indexed (null: no such document). */
  fieldsOf(entityId: string): FieldTokens | null {
    const slot = this.slots.get(entityId)
    return slot === undefined ? null : this.text.fieldsOf(slot)
  }

  /** Whether the developer's part was set (or a document of theirs indexed). */
  knowsDeveloper(developerId: string): boolean {
    return this.developerNumbers.has(developerId)
  }

  /** The part of trust that depends on the developer only (verified handle, profile), for all their documents. */
  setDeveloperPart(developerId: string, part: number): void {
    const n = this.developerNumber(developerId)
    if (this.developerParts[n] === Math.fround(part)) return
    this.developerParts[n] = part
    // Only their documents' cached signals change (dead slots in the list are harmless).
    const slots = this.byDeveloper.get(developerId)
    for (let i = 0; i < slots.length; i++) this.trustCache[slots[i] as number] = NaN
  }

  /** Updates what filters and ranking see without re-indexing text (status changes, heartbeats). */
  patch(entityId: string, change: Partial<Pick<SearchDocument, 'active' | 'lastChange' | 'uptime'>>): void {
    const slot = this.slots.get(entityId)
    const doc = slot === undefined ? undefined : this.docs[slot]
    if (!doc || slot === undefined) return
    // Heartbeats patch often: documents are mutated in place rather than copied.
    const mutable = doc as { -readonly [K in keyof SearchDocument]: SearchDocument[K] }
    if (change.active !== undefined) mutable.active = change.active
    if (change.lastChange !== undefined) mutable.lastChange = Math.max(doc.lastChange, change.lastChange)
    if (change.uptime !== undefined) mutable.uptime = change.uptime
    this.writeColumns(slot, doc)
  }

  remove(entityId: string): void {
    const slot = this.slots.get(entityId)
    if (slot === undefined) return
    this.text.remove(slot)
    this.vectors.remove(slot)
    this.docs[slot] = undefined
    this.flags[slot] = 0
    this.slots.delete(entityId)
    this.released.push(slot)
    if (this.released.length >= Math.max(SWEEP_AT, this.slots.size / SWEEP_SHARE)) this.sweep()
  }

  /** Drops removed documents from the postings and slot lists, which frees their slots. */
  private sweep(): void {
    const { docs } = this
    this.text.sweep()
    this.byCategory.sweep((slot, category) => docs[slot]?.category === category)
    this.byTag.sweep((slot, tag) => docs[slot]?.tags.includes(tag) === true)
    this.byDeveloper.sweep((slot, developerId) => docs[slot]?.developerId === developerId)
    this.byCapability.sweep((slot, list) => {
      const at = list.indexOf(':')
      const values = docs[slot]?.capabilities[list.slice(0, at) as CapabilityKey]
      return values?.includes(list.slice(at + 1)) === true
    })
    this.free.push(...this.released)
    this.released = []
  }

  private writeColumns(slot: number, doc: SearchDocument): void {
    this.flags[slot] = LIVE | (doc.type === 'service' ? SERVICE : 0) | (doc.active ? ACTIVE : 0)
    this.registeredAt[slot] = doc.registeredAt
    this.lastChange[slot] = doc.lastChange
    this.uptime[slot] = doc.uptime
    this.developerOf[slot] = doc.developerId === null ? NO_DEVELOPER : this.developerNumber(doc.developerId)
    this.trustCache[slot] = NaN
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
   * Ranks the matches of a query. A first pass visits the candidate slots (the text hits of a
   * keyword-only query; every slot when there is a vector or no text), applies the filters and
   * computes trust; a second scores the survivors and keeps the best `offset + limit` in a heap.
   * Only the returned page gets a full breakdown.
   */
  search(q: EngineQuery): { hits: EngineHit[]; total: number } {
    const slotCount = this.docs.length
    const textScores = this.textScores
    let touched = this.touched.subarray(0, 0)
    const best: TextBest = { slot: -1, score: 0 }
    try {
      if (q.terms.length > 0) {
        touched = this.touched.subarray(0, this.text.search(q.terms, textScores, this.touched, best))
        for (const phrase of q.phrases) {
          // Every phrase word is a query term, so a match is already scored (> 0).
          this.text.forEachPhraseMatch(phrase, slot => {
            if (textScores[slot] === 0) return
            textScores[slot] = (textScores[slot] as number) + PHRASE_BONUS
            if ((textScores[slot] as number) > best.score) {
              best.slot = slot
              best.score = textScores[slot] as number
            }
          })
        }
      }
      const listed = this.slotsToVisit(q, touched)
      const covered = listed.covered
      let visit = listed.visit
      let semantic: Float32Array | null = null
      if (q.vector !== null && visit !== null && visit.length * 4 < slotCount) {
        semantic = this.vectors.scanSlots(q.vector, visit, slotCount)
      } else if (q.vector !== null) {
        const scanned = this.vectors.scanAbove(q.vector, slotCount, q.minSemantic)
        semantic = scanned.similarities
        // No shorter list: the candidates are the text matches and the documents similar enough,
        // listed when they are few.
        if (visit === null && touched.length + scanned.above.length < slotCount * LISTED_SHARE)
          visit = this.union(touched, scanned.above)
      }
      return this.rank(q, best, touched, visit, covered, semantic)
    } finally {
      for (let i = 0; i < touched.length; i++) textScores[touched[i] as number] = 0
    }
  }

  /** The text matches, then the slots of `above` that are not among them, in one list (in the visit buffer). */
  private union(touched: Int32Array, above: Int32Array): Int32Array {
    const out = this.visitBuffer
    const textScores = this.textScores
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
   * The slots that can match, when fewer than all: the named entities, else the shortest list of a
   * category, tag or developer filter or (without a vector) the text matches. null: every slot.
   */
  private slotsToVisit(
    q: EngineQuery,
    textHits: Int32Array
  ): { visit: ArrayLike<number> | null; covered: Facet | null } {
    if (q.only)
      return {
        visit: q.only.flatMap(id => {
          const slot = this.slots.get(id)
          return slot === undefined ? [] : [slot]
        }),
        covered: null
      }
    let visit: ArrayLike<number> | null = q.terms.length > 0 && q.vector === null ? textHits : null
    let covered: Facet | null = null
    const consider = (slots: ArrayLike<number>, facet: Facet): void => {
      if (visit === null || slots.length < visit.length) {
        visit = slots
        covered = facet
      }
    }
    if (q.category != null) consider(this.byCategory.get(q.category), 'category')
    q.tags?.forEach((tag, i) => {
      consider(this.byTag.get(tag), i)
    })
    if (q.developerId != null) consider(this.byDeveloper.get(q.developerId), 'developer')
    // The capability condition with the shortest list, if shorter than the visit so far. The
    // filter still checks every condition, so nothing is covered.
    let shortest: { list: Uint32Array; condition: CapabilityCondition; size: number } | null = null
    for (const condition of q.capabilityConditions ?? []) {
      const list = this.byCapability.get(capabilityList(condition.key, condition.value))
      const size = list.length + condition.plus.length
      if (shortest === null || size < shortest.size) shortest = { list, condition, size }
    }
    if (shortest !== null && (visit === null || shortest.size < visit.length))
      return { visit: this.withDeclared(shortest.list, shortest.condition), covered: null }
    return { visit, covered }
  }

  /** `list` and the live slots of `plus` not already in it (documents that do not hold the value themselves). */
  private withDeclared(list: Uint32Array, { key, value, plus }: CapabilityCondition): ArrayLike<number> {
    const extra: number[] = []
    for (const id of plus) {
      const slot = this.slots.get(id)
      if (slot !== undefined && !this.docs[slot]?.capabilities[key].includes(value)) extra.push(slot)
    }
    if (extra.length === 0) return list
    const out = new Uint32Array(list.length + extra.length)
    out.set(list)
    out.set(extra, list.length)
    return out
  }

  /**
   * The category, tag and developer conditions a visited document must still be checked against:
   * a live slot of a list holds that list's value (documents never change in place, an update
   * takes a new slot), so the list visited covers its own condition. null: nothing to check.
   */
  private facetCheck(q: EngineQuery, covered: Facet | null): ((doc: SearchDocument) => boolean) | null {
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

  /**
   * Empties the signal caches when the formula, weights or half-life changed, or the time moved by
   * a whole SIGNALS_CACHE_MS (or back); otherwise expires the share of the slots that the time
   * since the last query is of SIGNALS_CACHE_MS, the next ones round robin, so no cached value is
   * older than that. (A developer's part and a patched document expire their own slots.)
   */
  private refreshSignals(q: EngineQuery): void {
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

  /** Trust of a slot, and its query-independent score part, computed into the caches. */
  private computeSignals(slot: number, signals: Signals): number {
    const developer = this.developerOf[slot] as number
    const now = signals.now
    const trust = signals.trust(
      developer === NO_DEVELOPER ? 0 : (this.developerParts[developer] as number),
      this.registeredAt[slot] as number,
      this.uptime[slot] as number,
      now
    )
    this.trustCache[slot] = trust
    this.staticScore[slot] =
      signals.trustWeight * trust +
      signals.freshnessWeight * freshness(this.lastChange[slot] as number, now, signals.halfLifeDays) +
      signals.availabilityWeight * ((this.flags[slot] as number) & ACTIVE ? 1 : 0)
    return this.trustCache[slot] as number
  }

  /**
   * Scores the slots that pass the filters and match the query (a text score, or similarity
   * reaching minSemantic) into a heap of the best `offset + limit`, in one pass over the visit
   * (every slot when it is null). The text relevance is divided by the best text score among the
   * matches: the best text score of all (`best`) when its slot passes the filters, as it usually
   * does, else the best among the visited text matches that pass.
   */
  private rank(
    q: EngineQuery,
    best: TextBest,
    textHits: ArrayLike<number>,
    visit: ArrayLike<number> | null,
    covered: Facet | null,
    semantic: Float32Array | null
  ): { hits: EngineHit[]; total: number } {
    this.refreshSignals(q)
    const w = q.weights
    const signals = new Signals(q)
    const accept = withFilter(this.facetCheck(q, covered), q.filter)
    const pass = new RankPass(q, semantic, accept, signals, { keys: this.idKeys, docs: this.docs })
    let maxText = 0
    if (q.terms.length > 0) {
      // The best slot is checked against every filter, whatever list is visited (a query that names
      // its entities visits only those).
      const everyFilter = covered === null ? pass.accept : withFilter(this.facetCheck(q, null), q.filter)
      maxText =
        best.slot !== -1 && !q.only && this.admits(pass, best.slot, everyFilter)
          ? best.score
          : this.bestAdmitted(pass, visit ?? textHits)
    }
    const fused = q.fusion === 'rrf' && q.terms.length > 0 && semantic !== null
    pass.textWeight = maxText > 0 ? w.text / maxText : 0
    // Reciprocal rank fusion ranks all the matches first: they are listed instead of scored.
    pass.list = fused
    const total = visit === null ? this.everyCandidate(pass) : this.listedCandidates(pass, visit)
    const { heap } = pass
    if (fused) {
      const slots = this.candidateBuffer.subarray(0, total)
      const relevance = this.fusedRelevance(slots, semantic, w)
      for (let i = 0; i < slots.length; i++) {
        const slot = slots[i] as number
        const score = (relevance[i] as number) + (this.staticScore[slot] as number)
        this.scoreOf[slot] = score
        if (score >= heap.floor) heap.offer(slot, score)
      }
    }
    return { hits: this.page(q, heap, maxText, semantic, fused), total }
  }

  /** The best text score among the listed slots that pass the filters. */
  private bestAdmitted(pass: RankPass, slots: ArrayLike<number>): number {
    const textScores = this.textScores
    let max = 0
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as number
      const t = textScores[slot] as number
      if (t > max && this.admits(pass, slot, pass.accept)) max = t
    }
    return max
  }

  /** Whether a slot with a text score passes the pass's flags and trust and `accept`. */
  private admits(
    { flagMask, flagWant, minTrust, signals }: RankPass,
    slot: number,
    accept: ((doc: SearchDocument) => boolean) | null
  ): boolean {
    if (((this.flags[slot] as number) & flagMask) !== flagWant) return false
    if (accept !== null && !accept(this.docs[slot] as SearchDocument)) return false
    let trust = this.trustCache[slot] as number
    if (Number.isNaN(trust)) trust = this.computeSignals(slot, signals)
    return trust >= minTrust
  }

  /**
   * Every slot through the admission of `pass`, the matches scored into its heap (or listed);
   * returns how many matched. Two loops, one per shape of visit, each in its own method: V8
   * compiles each for its one shape, which at 1M documents made the pass over every slot about a
   * quarter faster than one loop for both.
   */
  private everyCandidate(pass: RankPass): number {
    const { flags, textScores, trustCache, staticScore, docs } = this
    const { semantic, textQuery, flagMask, flagWant, accept, heap, textWeight, semanticWeight, list } = pass
    const { minTrust, minSemantic, signals } = pass
    // Reused between queries: the candidates are read before the next query starts.
    const out = this.candidateBuffer
    let found = 0
    for (let slot = 0; slot < docs.length; slot++) {
      if (((flags[slot] as number) & flagMask) !== flagWant) continue
      const t = textScores[slot] as number
      const similarity = semantic === null ? 0 : (semantic[slot] as number)
      if (textQuery && t === 0 && (semantic === null || similarity < minSemantic)) continue
      if (accept !== null && !accept(docs[slot] as SearchDocument)) continue
      let trust = trustCache[slot] as number
      if (Number.isNaN(trust)) trust = this.computeSignals(slot, signals)
      if (trust < minTrust) continue
      if (list) out[found] = slot
      found++
      const score = textWeight * t + semanticWeight * Math.max(0, similarity) + (staticScore[slot] as number)
      if (score >= heap.floor && !list) heap.offer(slot, score)
    }
    return found
  }

  /** The same as everyCandidate, over the listed slots only. */
  private listedCandidates(pass: RankPass, visit: ArrayLike<number>): number {
    const { flags, textScores, trustCache, staticScore, docs } = this
    const { semantic, textQuery, flagMask, flagWant, accept, heap, textWeight, semanticWeight, list } = pass
    const { minTrust, minSemantic, signals } = pass
    const out = this.candidateBuffer
    let found = 0
    for (let i = 0; i < visit.length; i++) {
      const slot = visit[i] as number
      if (((flags[slot] as number) & flagMask) !== flagWant) continue
      const t = textScores[slot] as number
      const similarity = semantic === null ? 0 : (semantic[slot] as number)
      if (textQuery && t === 0 && (semantic === null || similarity < minSemantic)) continue
      if (accept !== null && !accept(docs[slot] as SearchDocument)) continue
      let trust = trustCache[slot] as number
      if (Number.isNaN(trust)) trust = this.computeSignals(slot, signals)
      if (trust < minTrust) continue
      if (list) out[found] = slot
      found++
      const score = textWeight * t + semanticWeight * Math.max(0, similarity) + (staticScore[slot] as number)
      if (score >= heap.floor && !list) heap.offer(slot, score)
    }
    return found
  }

  /** The heap's hits after the offset, each with its breakdown. */
  private page(
    q: EngineQuery,
    heap: TopK,
    maxText: number,
    semantic: Float32Array | null,
    fused: boolean
  ): EngineHit[] {
    const { textScores, trustCache, scoreOf } = this
    const w = q.weights
    return heap
      .sorted()
      .slice(q.offset)
      .map(slot => {
        const doc = this.docs[slot] as SearchDocument
        const breakdown: ScoreBreakdown = {
          text_relevance: round4(maxText > 0 ? (textScores[slot] as number) / maxText : 0),
          semantic_similarity: round4(Math.max(0, semantic ? (semantic[slot] as number) : 0)),
          trust_score: round4(trustCache[slot] as number),
          freshness: round4(freshness(this.lastChange[slot] as number, q.now, q.halfLifeDays)),
          availability: doc.active ? 1 : 0
        }
        return { doc, score: round4(fused ? (scoreOf[slot] as number) : combine(breakdown, w)), breakdown }
      })
  }

  /**
   * Reciprocal rank fusion of the text and semantic rankings of the candidates:
   *   (w_text / (k + rank_text) + w_semantic / (k + rank_semantic)) / (1 / (k + 1)),   k = 60
   * which is w_text + w_semantic for a document first in both. A document without a text match
   * (or with similarity ≤ 0) takes no part in that ranking. Returned by candidate index.
   */
  private fusedRelevance(slots: Int32Array, semantic: Float32Array, w: RankingWeights): Float32Array {
    const fused = new Float32Array(slots.length)
    const addRanks = (value: (slot: number) => number, weight: number): void => {
      const order = Array.from(slots.keys()).filter(i => value(slots[i] as number) > 0)
      order.sort((a, b) => value(slots[b] as number) - value(slots[a] as number))
      order.forEach((i, rank) => {
        fused[i] = (fused[i] as number) + (weight * (RRF_K + 1)) / (RRF_K + rank + 1)
      })
    }
    addRanks(slot => this.textScores[slot] as number, w.text)
    addRanks(slot => semantic[slot] as number, w.semantic)
    return fused
  }

  private ensure(slots: number): void {
    if (slots <= this.flags.length) return
    let size = this.flags.length
    while (size < slots) size *= 2
    this.flags = widened(this.flags, size)
    this.registeredAt = widened(this.registeredAt, size)
    this.lastChange = widened(this.lastChange, size)
    this.uptime = widened(this.uptime, size)
    this.developerOf = widened(this.developerOf, size, NO_DEVELOPER)
    this.trustCache = widened(this.trustCache, size, NaN)
    this.textScores = widened(this.textScores, size)
    this.staticScore = widened(this.staticScore, size)
    this.touched = widened(this.touched, size)
    this.visitBuffer = widened(this.visitBuffer, size)
    this.candidateBuffer = widened(this.candidateBuffer, size)
    this.scoreOf = widened(this.scoreOf, size)
    this.idKeys = widened(this.idKeys, size)
  }
}

/** The facet and other filters in one predicate, or null when there are none. */
function withFilter(
  facets: ((doc: SearchDocument) => boolean) | null,
  filter: ((doc: SearchDocument) => boolean) | null
): ((doc: SearchDocument) => boolean) | null {
  return facets === null ? filter : filter === null ? facets : doc => facets(doc) && filter(doc)
}

/**
 * What the trust and static score of a slot are computed from, for one query. Its own class, like
 * RankPass: query objects come in many shapes (spread, cloned between threads), and V8 threw away
 * the compiled ranking loop each time it met a new one (at 1M slots the pass took 9.5 ms, not 8.3).
 */
class Signals {
  readonly trust: TrustFormula
  readonly now: number
  readonly halfLifeDays: number
  readonly trustWeight: number
  readonly freshnessWeight: number
  readonly availabilityWeight: number

  constructor(q: EngineQuery) {
    this.trust = q.trust
    this.now = q.now
    this.halfLifeDays = q.halfLifeDays
    this.trustWeight = q.weights.trust
    this.freshnessWeight = q.weights.freshness
    this.availabilityWeight = q.weights.availability
  }
}

/** One pass of the ranking: what admits a slot as a match, and what scores the matches into the heap. */
class RankPass {
  /** Whether a match needs a text score or enough similarity (not so for a filter-only listing). */
  readonly textQuery: boolean
  /** The flags a slot must have under `flagMask` (live, and the kind and activity asked for). */
  readonly flagMask: number
  readonly flagWant: number
  readonly minTrust: number
  readonly minSemantic: number
  readonly heap: TopK
  readonly semanticWeight: number
  /** The text weight divided by the best text score of a match. */
  textWeight = 0
  /** List the matches in the candidate buffer instead of scoring them. */
  list = false

  constructor(
    q: EngineQuery,
    readonly semantic: Float32Array | null,
    readonly accept: ((doc: SearchDocument) => boolean) | null,
    readonly signals: Signals,
    order: Order
  ) {
    this.textQuery = q.terms.length > 0 || q.vector !== null
    this.flagMask = LIVE | (q.type === null ? 0 : SERVICE) | (q.active === null ? 0 : ACTIVE)
    this.flagWant = LIVE | (q.type === 'service' ? SERVICE : 0) | (q.active === true ? ACTIVE : 0)
    this.minTrust = q.minTrust
    this.minSemantic = q.minSemantic
    this.heap = new TopK(q.offset + q.limit, order)
    this.semanticWeight = semantic === null ? 0 : q.weights.semantic
  }
}

/** Which filter's slot list a query visits: the category, the developer or the tag at that index. */
type Facet = 'category' | 'developer' | number

interface Order {
  keys: Float64Array
  docs: readonly (SearchDocument | undefined)[]
}

/**
 * A number ordered as entity IDs are ordered as strings: "zns:<hex>" before "zns:svc:<hex>" ('s'
 * sorts after every hex digit), then by the first 12 hex digits (48 bits, exact in a double).
 * NaN for any other form (callers then compare the strings).
 */
function idOrder(entityId: string): number {
  const service = entityId.startsWith('zns:svc:')
  const hex = entityId.slice(service ? 8 : 4, service ? 20 : 16)
  if (!entityId.startsWith('zns:') || !/^[0-9a-f]{12}$/.test(hex)) return NaN
  return (service ? 2 ** 48 : 0) + Number.parseInt(hex, 16)
}

/**
 * The k best slots (score descending, entity ID ascending on ties) of a stream, in a binary
 * min-heap of slots and scores; a slot worse than the heap's root is rejected with one comparison.
 */
class TopK {
  private readonly slots: Int32Array
  private readonly scores: Float64Array
  private size = 0
  /** Scores below this cannot enter (the root's, once the heap is full): checked before a call. */
  floor = Number.NEGATIVE_INFINITY

  constructor(
    private readonly k: number,
    /** Breaks ties between equal scores. */
    private readonly order: Order
  ) {
    this.slots = new Int32Array(Math.max(0, k))
    this.scores = new Float64Array(Math.max(0, k))
  }

  /** Whether (sa, a) ranks below (sb, b): a lower score, or the same score and a greater entity ID. */
  private static worse(sa: number, a: number, sb: number, b: number, order: Order): boolean {
    if (sa !== sb) return sa < sb
    const ka = order.keys[a] as number
    const kb = order.keys[b] as number
    // NaN keys (IDs of another form) and equal prefixes compare as strings.
    if (ka !== kb && !Number.isNaN(ka) && !Number.isNaN(kb)) return ka > kb
    return (order.docs[a] as SearchDocument).entityId > (order.docs[b] as SearchDocument).entityId
  }

  offer(slot: number, score: number): void {
    const { slots, scores, k, order } = this
    if (k <= 0) return
    if (this.size < k) {
      let i = this.size++
      while (i > 0) {
        const p = (i - 1) >> 1
        if (!TopK.worse(score, slot, scores[p] as number, slots[p] as number, order)) break
        slots[i] = slots[p] as number
        scores[i] = scores[p] as number
        i = p
      }
      slots[i] = slot
      scores[i] = score
      if (this.size === k) this.floor = scores[0] as number
      return
    }
    if (score < (scores[0] as number) || !TopK.worse(scores[0] as number, slots[0] as number, score, slot, order))
      return
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = -1
      let ms = score
      let mslot = slot
      if (l < k && TopK.worse(scores[l] as number, slots[l] as number, ms, mslot, order)) {
        m = l
        ms = scores[l] as number
        mslot = slots[l] as number
      }
      if (r < k && TopK.worse(scores[r] as number, slots[r] as number, ms, mslot, order)) {
        m = r
        ms = scores[r] as number
        mslot = slots[r] as number
      }
      if (m === -1) break
      slots[i] = mslot
      scores[i] = ms
      i = m
    }
    slots[i] = slot
    scores[i] = score
    this.floor = scores[0] as number
  }

  sorted(): number[] {
    const positions = Array.from({ length: this.size }, (_, i) => i)
    positions.sort((a, b) =>
      TopK.worse(
        this.scores[a] as number,
        this.slots[a] as number,
        this.scores[b] as number,
        this.slots[b] as number,
        this.order
      )
        ? 1
        : -1
    )
    return positions.map(i => this.slots[i] as number)
  }
}
