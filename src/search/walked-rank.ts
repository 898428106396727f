/**
 * The ranking of a query without filters whose words many documents hold. Rather than scoring
 * every match, it scores the documents of the query's short posting lists (with the bonus of its
 * quoted phrases, each holding a word of one), then walks the long ones from their highest weights
 * down (impact-walk.ts), and stops once no document not yet read
 * can reach the best `offset + limit` or, with an embedding, the similarity budget: the matches
 * with the best partial scores (text, trust, freshness and availability), among which the page is
 * chosen. A document not yet read holds only long lists' terms, so its text score is at most the
 * walk's bound, and its partial score that, weighted, plus the highest static score of any
 * (static-ceiling.ts).
 *
 * Text scores are the ones `search` gives (the same weights, added in the same term order; a long
 * list's weight of a document is read by slot), and the page is the one rank() gives (with an
 * embedding, the page among the budget's best partial scores, which rank() estimates from a
 * sample and this finds exactly).
 */
import type { EngineHit, EngineQuery } from './engine-query.js'
import { ImpactWalk, type WalkedTerm } from './impact-walk.js'
import { PHRASE_BONUS } from './ranking.js'
import { fullScore, type LazySimilarity, MAX_SIMILARITY, offerScored, page, RankPass } from './rank-pass.js'
import { LIVE, Signals, type SlotColumns } from './slot-columns.js'
import type { SlotWeights } from './slot-weights.js'
import { KthBest, TopK } from './top-k.js'
import { widened } from '../util/typed-arrays.js'

/** Calls `match` once for each document holding each of the query's quoted phrases (a document holding two phrases twice). */
export type PhraseMatches = (match: (slot: number) => void) => void

/** The partial score of a visited document that is not a candidate (filtered out, or already scored). */
const NOT_ADMITTED = Number.NEGATIVE_INFINITY

/**
 * Ranks the matches of `terms` (in the query's order; the long ones with their impact orders,
 * and their weights by slot when there are several terms). Returns the page, the total, and the
 * walk, whose visited slots have text scores written.
 */
export function rankByImpact(
  cols: SlotColumns,
  q: EngineQuery,
  terms: readonly WalkedTerm[],
  alive: Uint8Array,
  similarity: LazySimilarity | null,
  phraseMatches: PhraseMatches | null = null
): { hits: EngineHit[]; total: number; walk: ImpactWalk } {
  const signals = new Signals(q)
  cols.refreshSignals(q, signals)
  const order = { keys: cols.idKeys, docs: cols.docs }
  const pass = new RankPass(q, null, similarity, null, signals, order)
  const ceiling = cols.staticCeiling(signals)
  const { flags, trustCache, staticScore, textScores } = cols
  const { flagMask, flagWant, minTrust } = pass
  // What a document's partial score must reach to matter: the page's floor without an embedding,
  // else the lowest of the best partial scores, one more than the similarity budget (rank()'s cut,
  // see budgetCut) and at least the page.
  const partialBest = similarity === null ? pass.heap : new KthBest(Math.max(pass.heap.k, similarity.budget + 1))
  // With an embedding: the best `offset + limit` partial scores so far, and what a document's partial
  // score must reach to enter the page they make with their similarities (see pageReach).
  const leaders = similarity === null ? null : new TopK(pass.heap.k, order)
  let leadersMoved = false
  let reach = Number.NEGATIVE_INFINITY
  const walk = new ImpactWalk(alive, cols.facetMarks, cols.visitBuffer)
  const long = terms.filter(term => term.long)
  const short = terms.filter(term => !term.long)
  let maxText = 0
  let textWeight = 0
  // Whether the best text score is known (no document left can score higher), and with it textWeight.
  let settled = false
  // A visited document's partial score is kept at its visit's index (`partials`): read back in
  // visit order, in sequence rather than at random slots.
  const partials = cols.scoreOf
  // The walk meets live documents only: their flags are read when the query asks for more.
  const flagsAsked = flagMask !== LIVE
  const admit = (slot: number, visit: number): void => {
    partials[visit] = NOT_ADMITTED
    if (flagsAsked && ((flags[slot] as number) & flagMask) !== flagWant) return
    let trust = trustCache[slot] as number
    if (Number.isNaN(trust)) trust = cols.computeSignals(slot, signals)
    if (trust < minTrust) return
    const partial = textWeight * (textScores[slot] as number) + (staticScore[slot] as number)
    partials[visit] = partial
    if (leaders === null) {
      if (partial >= pass.heap.floor) pass.heap.offer(slot, partial)
      return
    }
    if (partial > partialBest.floor) (partialBest as KthBest).offer(partial)
    if (partial >= leaders.floor) {
      leaders.offer(slot, partial)
      leadersMoved = true
    }
  }
  const settle = (): void => {
    settled = true
    textWeight = maxText > 0 ? q.weights.text / maxText : 0
    pass.textWeight = textWeight
    for (let i = 0; i < walk.count; i++) admit(walk.visited[i] as number, i)
  }
  // A document the walk meets holds no short list's term: its score is its long lists' weights
  // (with one long list, the weight it was met with).
  const visit = (slot: number, { idf }: WalkedTerm, weight: number): void => {
    let text = 0
    if (long.length === 1) text = Math.fround(idf * weight)
    else
      for (const term of long) {
        const weight = (term.list.bySlot as SlotWeights).at(slot)
        if (weight !== 0) text = Math.fround(text + term.idf * weight)
      }
    textScores[slot] = text
    if (text > maxText) maxText = text
    if (settled) admit(slot, walk.count - 1)
  }
  let total = 0
  try {
    // The phrases' matches are met with the short lists' documents, and given their bonus once scored.
    if (short.length > 0 || phraseMatches !== null) {
      for (const term of short) walk.all(term, () => {})
      // Matching reads each candidate's words: done once. (A typed list: pushing 275,000 slots onto
      // an array cost ten times as much.)
      let matched = new Int32Array(1024)
      let count = 0
      phraseMatches?.(slot => {
        if (count === matched.length) matched = widened(matched, count * 2)
        matched[count++] = slot
      })
      for (let i = 0; i < count; i++) walk.include(matched[i] as number)
      scoreListed(terms, walk, textScores)
      for (let i = 0; i < count; i++) {
        const slot = matched[i] as number
        if (textScores[slot] !== 0) textScores[slot] = (textScores[slot] as number) + PHRASE_BONUS
      }
      for (let i = 0; i < walk.count; i++) {
        const text = textScores[walk.visited[i] as number] as number
        if (text > maxText) maxText = text
      }
      total = walk.count - countHolders(long, walk.visited.subarray(0, walk.count))
    }
    walk.byImpact(long, visit, bound => {
      if (!settled) {
        if (bound > maxText) return false
        settle()
      }
      const unmet = textWeight * bound + ceiling
      if (unmet < partialBest.floor) return true
      if (leaders === null) return false
      if (leadersMoved) {
        reach = pageReach(cols, pass, leaders, similarity as LazySimilarity)
        leadersMoved = false
      }
      return unmet < reach
    })
    if (!settled) settle()
  } finally {
    walk.clear()
  }
  total += longHolders(long, alive)
  if (similarity === null) return { hits: page(cols, q, pass.heap, maxText, null, false), total, walk }
  // Every document whose partial score reaches the cut was visited (the walk stopped below it).
  const cut = budgetCut(partialBest as KthBest, similarity.budget)
  const visited = walk.visited.subarray(0, walk.count)
  // The best `offset + limit` partial scores are scored in full first, which sets the heap's floor.
  const first = Int32Array.from((leaders as TopK).sorted())
  let semantic = similarity.of(first)
  offerScored(cols, pass, first, semantic)
  const scored = new Set(first)
  const least = Math.max(pass.heap.floor - pass.semanticWeight * MAX_SIMILARITY, cut)
  const rest = cols.candidateBuffer
  let n = 0
  for (let i = 0; i < visited.length; i++) {
    const partial = partials[i] as number
    if (partial !== NOT_ADMITTED && partial >= least && !scored.has(visited[i] as number))
      rest[n++] = visited[i] as number
  }
  if (n > 0) {
    semantic = similarity.of(rest.subarray(0, n))
    offerScored(cols, pass, rest.subarray(0, n), semantic)
  }
  return { hits: page(cols, q, pass.heap, maxText, semantic, false), total, walk }
}

/**
 * What a document's partial score must reach to enter the page that the `leaders` (the best
 * partial scores so far) make once scored in full: their lowest full score, less the most a
 * similarity adds (-Infinity while they are fewer than the page). A walk can stop below it
 * whatever the budget's cut: at the stop the leaders are candidates (their partial scores reach
 * both the cut and every document not yet met), so the page's final floor is at least theirs,
 * which no document below can reach (MAX_SIMILARITY's margin covers the rounding).
 */
function pageReach(cols: SlotColumns, pass: RankPass, leaders: TopK, similarity: LazySimilarity): number {
  const slots = Int32Array.from(leaders.sorted())
  if (slots.length < leaders.k) return Number.NEGATIVE_INFINITY
  const semantic = similarity.of(slots)
  let floor = Number.POSITIVE_INFINITY
  for (const slot of slots) floor = Math.min(floor, fullScore(cols, pass, slot, semantic))
  return floor - pass.semanticWeight * MAX_SIMILARITY
}

/**
 * The (budget + 1)-th best of the partial scores, as rank()'s budget cut; -Infinity when they
 * are no more than the budget.
 */
function budgetCut(partialBest: KthBest, budget: number): number {
  const held = partialBest.values()
  if (held.length <= budget) return Number.NEGATIVE_INFINITY
  if (partialBest.k === budget + 1) return partialBest.floor
  const sorted = Float64Array.from(held).sort()
  return sorted[sorted.length - 1 - budget] as number
}

/**
 * Writes the text scores of the visited documents (those of the short lists) term by term, in
 * the query's order as `search` adds them.
 */
function scoreListed(terms: readonly WalkedTerm[], walk: ImpactWalk, scores: Float32Array): void {
  const visited = walk.visited.subarray(0, walk.count)
  for (const { list, idf, long } of terms) {
    if (long) {
      const { codes, values } = list.bySlot as SlotWeights
      for (let i = 0; i < visited.length; i++) {
        const slot = visited[i] as number
        const weight = values[codes[slot] as number] as number
        if (weight !== 0) scores[slot] = Math.fround((scores[slot] as number) + idf * weight)
      }
      continue
    }
    const { slots, weights, length } = list
    for (let i = 0; i < length; i++) {
      const slot = slots[i] as number
      if (walk.met(slot)) scores[slot] = Math.fround((scores[slot] as number) + idf * (weights[i] as number))
    }
  }
}

/** How many of the slots hold a long list's term. */
function countHolders(long: readonly WalkedTerm[], slots: Int32Array): number {
  const held = long.map(({ list }) => (list.bySlot as SlotWeights).codes)
  let count = 0
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i] as number
    for (let j = 0; j < held.length; j++)
      if ((held[j] as Uint16Array)[slot] !== 0) {
        count++
        break
      }
  }
  return count
}

/**
 * How many live documents hold a long list's term: the longest list's count, then each other
 * list's documents no list counted before holds (a list given twice is counted once).
 */
function longHolders(long: readonly WalkedTerm[], alive: Uint8Array): number {
  const lists = [...new Set(long.map(({ list }) => list))].sort((a, b) => b.df - a.df)
  let count = lists[0]?.df ?? 0
  for (let j = 1; j < lists.length; j++) {
    const { slots, length } = lists[j] as (typeof lists)[number]
    const earlier = lists.slice(0, j).map(list => (list.bySlot as SlotWeights).codes)
    for (let i = 0; i < length; i++) {
      const slot = slots[i] as number
      if (!alive[slot]) continue
      let held = false
      for (let e = 0; e < earlier.length && !held; e++) held = (earlier[e] as Uint16Array)[slot] !== 0
      if (!held) count++
    }
  }
  return count
}
