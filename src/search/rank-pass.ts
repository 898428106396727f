/**
 * The ranking of one query's candidates: a pass that admits the slots passing the filters and
 * trust, scores them (text, similarity and the cached query-independent part) into a heap of the
 * best `offset + limit` or lists them for reciprocal rank fusion, and the page of hits with their
 * breakdowns.
 */
import { facetCheck, type Facet, withFilter } from './candidate-slots.js'
import type { EngineHit, EngineQuery, KeptDocument } from './engine-query.js'
import { combine, freshness, RRF_K, round4, type RankingWeights, type ScoreBreakdown } from './ranking.js'
import { ACTIVE, LIVE, SERVICE, Signals, type SlotColumns } from './slot-columns.js'
import type { TextBest } from './text-index.js'
import { type Order, TopK } from './top-k.js'

/** One pass of the ranking: what admits a slot as a match, and what scores the matches into the heap. */
export class RankPass {
  /** Whether a match needs a text score or enough similarity (not so for a filter-only listing). */
  readonly textQuery: boolean
  /** The flags a slot must have under `flagMask` (live, and the kind and activity asked for). */
  readonly flagMask: number
  readonly flagWant: number
  readonly minTrust: number
  readonly minSemantic: number
  readonly heap: TopK
  readonly semanticWeight: number
  readonly order: Order
  /** The text weight divided by the best text score of a match. */
  textWeight = 0
  /** List the matches in the candidate buffer instead of scoring them. */
  list = false

  constructor(
    q: EngineQuery,
    readonly semantic: Float32Array | null,
    similarityOf: LazySimilarity | null,
    readonly accept: ((slot: number) => boolean) | null,
    readonly signals: Signals,
    order: Order
  ) {
    this.textQuery = q.terms.length > 0 || q.vector !== null
    this.flagMask = LIVE | (q.type === null ? 0 : SERVICE) | (q.active === null ? 0 : ACTIVE)
    this.flagWant = LIVE | (q.type === 'service' ? SERVICE : 0) | (q.active === true ? ACTIVE : 0)
    // The trust cache holds 32-bit floats: a score shown as 0.235 may be held as 0.23499999.
    // Rounding the bound the same way keeps every score at or above it (fround is monotonic).
    this.minTrust = Math.fround(q.minTrust)
    this.minSemantic = q.minSemantic
    this.order = order
    this.heap = new TopK(q.offset + q.limit, order)
    this.semanticWeight = semantic === null && similarityOf === null ? 0 : q.weights.semantic
  }
}

/**
 * Similarities with the query computed on demand (`of`: written at the listed slots of the
 * returned array, its other entries stale), for at most about `budget` matches past the first page.
 */
export interface LazySimilarity {
  of: (slots: Int32Array) => Float32Array
  budget: number
}

/**
 * Scores the slots that pass the filters and match the query (a text score, or similarity
 * reaching minSemantic) into a heap of the best `offset + limit`, in one pass over the visit
 * (every slot when it is null). The text relevance is divided by the best text score among the
 * matches: the best text score of all (`best`) when its slot passes the filters, as it usually
 * does, else the best among the visited text matches that pass.
 *
 * With `similarityOf` (and no `semantic`), the visit is the text matches and only they match:
 * similarities are computed for those whose score can reach the page, within a budget (see
 * boundedCandidates).
 */
export function rank(
  cols: SlotColumns,
  q: EngineQuery,
  best: TextBest,
  textHits: ArrayLike<number>,
  visit: ArrayLike<number> | null,
  covered: Facet | null,
  semantic: Float32Array | null,
  similarityOf: LazySimilarity | null = null,
  marked: ((slot: number) => boolean) | null = null
): { hits: EngineHit[]; total: number } {
  const w = q.weights
  const signals = new Signals(q)
  cols.refreshSignals(q, signals)
  const filter = covered === 'capability' ? null : q.filter
  const accept = bySlot(cols.docs, marked, withFilter(marked === null ? facetCheck(q, covered) : null, filter))
  const pass = new RankPass(q, semantic, similarityOf, accept, signals, { keys: cols.idKeys, docs: cols.docs })
  let maxText = 0
  if (q.terms.length > 0) {
    // The best slot is checked against every filter, whatever list is visited (a query that names
    // its entities visits only those).
    const everyFilter =
      covered === null ? pass.accept : bySlot(cols.docs, null, withFilter(facetCheck(q, null), q.filter))
    maxText =
      best.slot !== -1 && !q.only && admits(cols, pass, best.slot, everyFilter)
        ? best.score
        : bestAdmitted(cols, pass, visit ?? textHits)
  }
  const fused = q.fusion === 'rrf' && q.terms.length > 0 && semantic !== null
  pass.textWeight = maxText > 0 ? w.text / maxText : 0
  // Reciprocal rank fusion ranks all the matches first: they are listed instead of scored.
  pass.list = fused
  let total: number
  if (similarityOf !== null) {
    const bounded = boundedCandidates(cols, pass, visit ?? textHits, similarityOf)
    total = bounded.found
    semantic = bounded.semantic
  } else total = visit === null ? everyCandidate(cols, pass) : listedCandidates(cols, pass, visit)
  const { heap } = pass
  if (fused && semantic !== null) {
    const slots = cols.candidateBuffer.subarray(0, total)
    const relevance = fusedRelevance(slots, cols.textScores, semantic, w)
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as number
      const score = (relevance[i] as number) + (cols.staticScore[slot] as number)
      cols.scoreOf[slot] = score
      if (score >= heap.floor) heap.offer(slot, score)
    }
  }
  return { hits: page(cols, q, heap, maxText, semantic, fused), total }
}

/**
 * One predicate by slot: `marked` (the filter lists' conditions, when checked on marks by slot)
 * and `byDocument` (the other conditions, on the slot's document); null when there are none.
 */
function bySlot(
  docs: readonly (KeptDocument | undefined)[],
  marked: ((slot: number) => boolean) | null,
  byDocument: ((doc: KeptDocument) => boolean) | null
): ((slot: number) => boolean) | null {
  if (byDocument === null) return marked
  if (marked === null) return slot => byDocument(docs[slot] as KeptDocument)
  return slot => marked(slot) && byDocument(docs[slot] as KeptDocument)
}

/** The best text score among the listed slots that pass the filters. */
function bestAdmitted(cols: SlotColumns, pass: RankPass, slots: ArrayLike<number>): number {
  const textScores = cols.textScores
  let max = 0
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i] as number
    const t = textScores[slot] as number
    if (t > max && admits(cols, pass, slot, pass.accept)) max = t
  }
  return max
}

/** Whether a slot with a text score passes the pass's flags and trust and `accept`. */
function admits(
  cols: SlotColumns,
  { flagMask, flagWant, minTrust, signals }: RankPass,
  slot: number,
  accept: ((slot: number) => boolean) | null
): boolean {
  if (((cols.flags[slot] as number) & flagMask) !== flagWant) return false
  if (accept !== null && !accept(slot)) return false
  let trust = cols.trustCache[slot] as number
  if (Number.isNaN(trust)) trust = cols.computeSignals(slot, signals)
  return trust >= minTrust
}

/**
 * Every slot through the admission of `pass`, the matches scored into its heap (or listed);
 * returns how many matched. Two loops, one per shape of visit, each in its own function: V8
 * compiles each for its one shape, which at 1M documents made the pass over every slot about a
 * quarter faster than one loop for both.
 */
function everyCandidate(cols: SlotColumns, pass: RankPass): number {
  const { flags, textScores, trustCache, staticScore, docs } = cols
  const { semantic, textQuery, flagMask, flagWant, accept, heap, textWeight, semanticWeight, list } = pass
  const { minTrust, minSemantic, signals } = pass
  // Reused between queries: the candidates are read before the next query starts.
  const out = cols.candidateBuffer
  let found = 0
  for (let slot = 0; slot < docs.length; slot++) {
    if (((flags[slot] as number) & flagMask) !== flagWant) continue
    const t = textScores[slot] as number
    const similarity = semantic === null ? 0 : (semantic[slot] as number)
    if (textQuery && t === 0 && (semantic === null || similarity < minSemantic)) continue
    if (accept !== null && !accept(slot)) continue
    let trust = trustCache[slot] as number
    if (Number.isNaN(trust)) trust = cols.computeSignals(slot, signals)
    if (trust < minTrust) continue
    if (list) out[found] = slot
    found++
    const score = textWeight * t + semanticWeight * Math.max(0, similarity) + (staticScore[slot] as number)
    if (score >= heap.floor && !list) heap.offer(slot, score)
  }
  return found
}

/** The same as everyCandidate, over the listed slots only. */
function listedCandidates(cols: SlotColumns, pass: RankPass, visit: ArrayLike<number>): number {
  const { flags, textScores, trustCache, staticScore } = cols
  const { semantic, textQuery, flagMask, flagWant, accept, heap, textWeight, semanticWeight, list } = pass
  const { minTrust, minSemantic, signals } = pass
  const out = cols.candidateBuffer
  let found = 0
  for (let i = 0; i < visit.length; i++) {
    const slot = visit[i] as number
    if (((flags[slot] as number) & flagMask) !== flagWant) continue
    const t = textScores[slot] as number
    const similarity = semantic === null ? 0 : (semantic[slot] as number)
    if (textQuery && t === 0 && (semantic === null || similarity < minSemantic)) continue
    if (accept !== null && !accept(slot)) continue
    let trust = trustCache[slot] as number
    if (Number.isNaN(trust)) trust = cols.computeSignals(slot, signals)
    if (trust < minTrust) continue
    if (list) out[found] = slot
    found++
    const score = textWeight * t + semanticWeight * Math.max(0, similarity) + (staticScore[slot] as number)
    if (score >= heap.floor && !list) heap.offer(slot, score)
  }
  return found
}

/**
 * What a similarity can reach: embeddings are unit vectors, and their int8 copies put a cosine
 * up to a few hundredths off (the margin also covers the partial sum rounding apart from the full one).
 */
export const MAX_SIMILARITY = 1.05

/**
 * listedCandidates over text matches, with the similarities computed only where they can change
 * the page. A first pass admits the matches and keeps each one's score without its similarity part
 * (which adds between 0 and semanticWeight); the best `offset + limit` by that partial score are
 * scored in full, which sets the heap's floor; then every match whose partial score plus
 * semanticWeight reaches that floor is, or when those are more than the budget, about the budget's
 * worth with the best partial scores (the page is then approximate: a match ranked lower by words,
 * trust, freshness and availability together can be missed for its similarity alone).
 */
function boundedCandidates(
  cols: SlotColumns,
  pass: RankPass,
  visit: ArrayLike<number>,
  similarity: LazySimilarity
): { found: number; semantic: Float32Array | null } {
  const { flags, textScores, trustCache, staticScore } = cols
  const { flagMask, flagWant, accept, heap, textWeight, semanticWeight, minTrust, signals } = pass
  // The admitted matches and their partial scores, side by side.
  const kept = cols.candidateBuffer
  const partials = cols.scoreOf
  const partialBest = new TopK(heap.k, pass.order)
  let found = 0
  for (let i = 0; i < visit.length; i++) {
    const slot = visit[i] as number
    if (((flags[slot] as number) & flagMask) !== flagWant) continue
    const t = textScores[slot] as number
    if (t === 0) continue
    if (accept !== null && !accept(slot)) continue
    let trust = trustCache[slot] as number
    if (Number.isNaN(trust)) trust = cols.computeSignals(slot, signals)
    if (trust < minTrust) continue
    const partial = textWeight * t + (staticScore[slot] as number)
    kept[found] = slot
    partials[found] = partial
    found++
    // Which k set the floor only needs be good, not the best: ties need not be broken.
    if (partial > partialBest.floor) partialBest.offer(slot, partial)
  }
  if (found === 0 || heap.k === 0) return { found, semantic: null }
  const first = Int32Array.from(partialBest.sorted())
  let semantic = similarity.of(first)
  offerScored(cols, pass, first, semantic)
  const scored = new Set(first)
  const reach = Math.max(heap.floor - semanticWeight * MAX_SIMILARITY, budgetCut(partials, found, similarity.budget))
  const rest = cols.visitBuffer
  let n = 0
  for (let i = 0; i < found; i++) {
    if ((partials[i] as number) < reach) continue
    const slot = kept[i] as number
    if (!scored.has(slot)) rest[n++] = slot
  }
  if (n > 0) {
    const listed = rest.subarray(0, n)
    semantic = similarity.of(listed)
    offerScored(cols, pass, listed, semantic)
  }
  return { found, semantic }
}

/**
 * Scores the slots in full (their similarities in `semantic`) into the pass's heap: the same sum,
 * in the same order, as the other passes, so equal scores tie the same way.
 */
export function offerScored(cols: SlotColumns, pass: RankPass, slots: Int32Array, semantic: Float32Array): void {
  const { heap } = pass
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i] as number
    const score = fullScore(cols, pass, slot, semantic)
    if (score >= heap.floor) heap.offer(slot, score)
  }
}

/** A slot's full score, its similarity in `semantic` (by slot): the sum every pass makes, in the same order. */
export function fullScore(cols: SlotColumns, pass: RankPass, slot: number, semantic: Float32Array): number {
  return (
    pass.textWeight * (cols.textScores[slot] as number) +
    pass.semanticWeight * Math.max(0, semantic[slot] as number) +
    (cols.staticScore[slot] as number)
  )
}

/** How many partial scores budgetCut reads, at most. */
const CUT_SAMPLE = 4096

/**
 * About the `budget`-th highest of `partials[0, count)`, estimated from an evenly spaced sample
 * (-Infinity when the budget covers them all).
 */
function budgetCut(partials: Float64Array, count: number, budget: number): number {
  if (count <= budget) return Number.NEGATIVE_INFINITY
  const stride = Math.max(1, Math.floor(count / CUT_SAMPLE))
  const sample = new Float64Array(Math.ceil(count / stride))
  for (let i = 0, j = 0; i < count; i += stride) sample[j++] = partials[i] as number
  sample.sort()
  const rank = Math.floor(budget / stride)
  return rank >= sample.length ? Number.NEGATIVE_INFINITY : (sample[sample.length - 1 - rank] as number)
}

/** The heap's hits after the offset, each with its breakdown. */
export function page(
  cols: SlotColumns,
  q: EngineQuery,
  heap: TopK,
  maxText: number,
  semantic: Float32Array | null,
  fused: boolean
): EngineHit[] {
  const { textScores, trustCache, scoreOf } = cols
  const w = q.weights
  return heap
    .sorted()
    .slice(q.offset)
    .map(slot => {
      const active = cols.isActive(slot)
      const breakdown: ScoreBreakdown = {
        text_relevance: round4(maxText > 0 ? (textScores[slot] as number) / maxText : 0),
        semantic_similarity: round4(Math.max(0, semantic ? (semantic[slot] as number) : 0)),
        trust_score: round4(trustCache[slot] as number),
        freshness: round4(freshness(cols.lastChange[slot] as number, q.now, q.halfLifeDays)),
        availability: active ? 1 : 0
      }
      return {
        doc: cols.docs[slot] as KeptDocument,
        active,
        score: round4(fused ? (scoreOf[slot] as number) : combine(breakdown, w)),
        breakdown
      }
    })
}

/**
 * Reciprocal rank fusion of the text and semantic rankings of the candidates:
 *   (w_text / (k + rank_text) + w_semantic / (k + rank_semantic)) / (1 / (k + 1)),   k = 60
 * which is w_text + w_semantic for a document first in both. A document without a text match
 * (or with similarity ≤ 0) takes no part in that ranking. Returned by candidate index.
 */
function fusedRelevance(
  slots: Int32Array,
  textScores: Float32Array,
  semantic: Float32Array,
  w: RankingWeights
): Float32Array {
  const fused = new Float32Array(slots.length)
  const addRanks = (value: (slot: number) => number, weight: number): void => {
    const order = Array.from(slots.keys()).filter(i => value(slots[i] as number) > 0)
    order.sort((a, b) => value(slots[b] as number) - value(slots[a] as number))
    order.forEach((i, rank) => {
      fused[i] = (fused[i] as number) + (weight * (RRF_K + 1)) / (RRF_K + rank + 1)
    })
  }
  addRanks(slot => textScores[slot] as number, w.text)
  addRanks(slot => semantic[slot] as number, w.semantic)
  return fused
}
