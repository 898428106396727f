/**
 * The loops that add one query term's BM25F contribution to the documents' text scores (see
 * TextIndex.search): over its posting list, or, for a filter list's documents, through the list's
 * weights by slot (see impact-walk.ts). Both add the same `idf × weight` to the same score, so the
 * caller may pick either per term and every document's score stays the same sum in the same order.
 */
import type { Postings } from './postings.js'
import type { SlotWeights } from './slot-weights.js'

/**
 * A term is scored through its weights by slot for a filter list's documents when its list is
 * longer than this many times the filter list: a listed document costs two reads at random slots,
 * where a posting costs one read in sequence and a mark read at a random slot.
 */
const BY_SLOT_OVER = 2

/** What the scoring of a query's terms has found so far: slots scored, and the best score and its slot. */
export interface ScoringRun {
  count: number
  bestScore: number
  bestSlot: number
}

/** A term's idf (times its weight in the query) among `n` live documents. */
export function idfOf(list: Postings, n: number, weight: number): number {
  return Math.log(1 + (n - list.df + 0.5) / (list.df + 0.5)) * weight
}

/** Whether a list is better scored through its weights by slot for `listed` documents. */
export function scoredBySlot(list: Postings, listed: number): boolean {
  return list.length > listed * BY_SLOT_OVER
}

/**
 * Adds `idf × weight` for each posting of a live document (and with `only`, indexed by slot, one
 * whose entry is not 0) to `scores`, listing each newly scored slot in `touched`.
 */
export function addPostingScores(
  list: Postings,
  idf: number,
  alive: Uint8Array,
  only: Uint8Array | null,
  scores: Float32Array,
  touched: Int32Array,
  run: ScoringRun
): void {
  let { count, bestScore, bestSlot } = run
  const { slots, weights, length } = list
  for (let i = 0; i < length; i++) {
    const slot = slots[i] as number
    if (!alive[slot] || (only !== null && !only[slot])) continue
    const previous = scores[slot] as number
    // Every contribution is positive (idf > 0, weight > 0), so 0 means "not yet scored".
    if (previous === 0) touched[count++] = slot
    const score = Math.fround(previous + idf * (weights[i] as number))
    scores[slot] = score
    // Scores only grow, so the highest score written is the best final one (and its slot the best's).
    if (score > bestScore) {
      bestScore = score
      bestSlot = slot
    }
  }
  run.count = count
  run.bestScore = bestScore
  run.bestSlot = bestSlot
}

/**
 * addPostingScores for the `listed` slots only, for several terms in turn (`bySlots[t]`, each a
 * term's weight by slot, 0 where it is not held, and `idfs[t]`): each listed document is read once
 * for every three terms, its terms added in order as one term at a time would add them.
 */
export function addListedScores(
  bySlots: readonly SlotWeights[],
  idfs: readonly number[],
  listed: ArrayLike<number>,
  alive: Uint8Array,
  scores: Float32Array,
  touched: Int32Array,
  run: ScoringRun
): void {
  for (let from = 0; from < bySlots.length; from += 3)
    addThreeListedScores(bySlots.slice(from, from + 3), idfs.slice(from, from + 3), listed, alive, scores, touched, run)
}

type TermWeights = Pick<SlotWeights, 'codes' | 'values'>

/** Weights by slot of no term: never read (only a term's own tables are). */
const NO_WEIGHTS: TermWeights = { codes: new Uint16Array(0), values: new Float32Array(1) }

/**
 * addListedScores for one to three terms, their tables held in locals: at a million documents
 * about 0.92 of the time of a loop over the terms, for the same scores.
 */
function addThreeListedScores(
  bySlots: readonly SlotWeights[],
  idfs: readonly number[],
  listed: ArrayLike<number>,
  alive: Uint8Array,
  scores: Float32Array,
  touched: Int32Array,
  run: ScoringRun
): void {
  const terms = bySlots.length
  const held = (t: number): TermWeights => bySlots[t] ?? NO_WEIGHTS
  const { codes: c0, values: v0 } = held(0)
  const { codes: c1, values: v1 } = held(1)
  const { codes: c2, values: v2 } = held(2)
  const [f0 = 0, f1 = 0, f2 = 0] = idfs
  let { count, bestScore, bestSlot } = run
  for (let i = 0; i < listed.length; i++) {
    const slot = listed[i] as number
    if (!alive[slot]) continue
    const previous = scores[slot] as number
    let score = previous
    const code0 = c0[slot] as number
    if (code0 !== 0) score = Math.fround(score + f0 * (v0[code0] as number))
    if (terms > 1) {
      const code = c1[slot] as number
      if (code !== 0) score = Math.fround(score + f1 * (v1[code] as number))
    }
    if (terms > 2) {
      const code = c2[slot] as number
      if (code !== 0) score = Math.fround(score + f2 * (v2[code] as number))
    }
    if (score === previous) continue
    if (previous === 0) touched[count++] = slot
    scores[slot] = score
    if (score > bestScore) {
      bestScore = score
      bestSlot = slot
    }
  }
  run.count = count
  run.bestScore = bestScore
  run.bestSlot = bestSlot
}
