/**
 * Transitive trust: EigenTrust with pre-trusted identities, which is personalized PageRank over the
 * attestation graph. Trust starts at the seeds; each round, every identity passes (1 − restart) of
 * its trust along its edges in proportion to them and the rest returns to the seeds, as does the
 * trust of an identity that attests no one:
 *
 *   t' = (1 − α) · (Cᵀ t + dangling(t) · p) + α · p,   p uniform over the seeds
 *
 * The scores sum to 1. An identity no path from a seed reaches holds 0 whatever it and its
 * accomplices attest, so a Sybil ring gains only what the seeded part of the graph gives it, and
 * its statements about others (bad-mouthing included) move nothing outside itself. Deterministic:
 * the same graph, seeds and start vector give bit-identical scores (fixed order of every sum).
 */
import type { TrustGraph } from './trust-graph.js'

export interface PropagationOptions {
  /** α: the share of trust that returns to the seeds each round (EigenTrust's a, PageRank's 1 − d). */
  restart?: number
  /** Stop when the L1 change of a round is below this. */
  tolerance?: number
  maxRounds?: number
  /** Scores to start from (a previous result: a few rounds then absorb a small change of the graph). */
  start?: Float64Array
}

export interface Propagation {
  scores: Float64Array
  rounds: number
  /** L1 change of the last round. */
  change: number
}

export const DEFAULT_RESTART = 0.15
const DEFAULT_TOLERANCE = 1e-10
const DEFAULT_MAX_ROUNDS = 200

export function propagate(graph: TrustGraph, seeds: ArrayLike<number>, options: PropagationOptions = {}): Propagation {
  const n = graph.size
  const restart = options.restart ?? DEFAULT_RESTART
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE
  const maxRounds = options.maxRounds ?? DEFAULT_MAX_ROUNDS
  const seedList = uniqueSeeds(seeds, n)
  let t = new Float64Array(n)
  if (seedList.length === 0) return { scores: t, rounds: 0, change: 0 }
  const seedShare = 1 / seedList.length
  if (options.start && options.start.length === n) t.set(options.start)
  else for (const s of seedList) t[s] = seedShare
  normalize(t, seedList, seedShare)

  const { rowStart, columns, weights, rowTotals } = graph
  // Rows replaced since the arrays were built, found by index rather than a map lookup per row and round.
  const replacedAt = new Int32Array(n).fill(-1)
  const replacedRows = [...graph.replaced]
  replacedRows.forEach(([i], r) => {
    replacedAt[i] = r
  })
  let next = new Float64Array(n)
  let rounds = 0
  let change = Infinity
  while (rounds < maxRounds && change > tolerance) {
    next.fill(0)
    let dangling = 0
    for (let i = 0; i < n; i++) {
      const ti = t[i]!
      if (ti === 0) continue
      if (rowTotals[i] === 0) {
        dangling += ti
        continue
      }
      const passed = ((1 - restart) * ti) / rowTotals[i]!
      if (replacedAt[i]! >= 0) {
        const row = replacedRows[replacedAt[i]!]![1]
        for (let k = 0; k < row.columns.length; k++) next[row.columns[k]!]! += passed * row.weights[k]!
      } else for (let k = rowStart[i]!; k < rowStart[i + 1]!; k++) next[columns[k]!]! += passed * weights[k]!
    }
    const back = (restart + (1 - restart) * dangling) * seedShare
    for (const s of seedList) next[s]! += back
    change = 0
    for (let i = 0; i < n; i++) change += Math.abs(next[i]! - t[i]!)
    ;[t, next] = [next, t]
    rounds++
  }
  return { scores: t, rounds, change }
}

/** Seeds in ascending order, each once, within the graph. */
function uniqueSeeds(seeds: ArrayLike<number>, n: number): number[] {
  return [...new Set(Array.from(seeds))].filter(s => Number.isInteger(s) && s >= 0 && s < n).sort((a, b) => a - b)
}

/** A start vector that does not sum to 1 (another graph's, or none) is scaled, or replaced by the seeds'. */
function normalize(t: Float64Array, seeds: readonly number[], seedShare: number): void {
  let sum = 0
  for (let i = 0; i < t.length; i++) {
    if (!(t[i]! >= 0) || !Number.isFinite(t[i]!)) t[i] = 0
    sum += t[i]!
  }
  if (sum > 0) for (let i = 0; i < t.length; i++) t[i]! /= sum
  else for (const s of seeds) t[s] = seedShare
}

/** Identities with as much trust as this many average identities, or more, score 1 on the [0, 1] scale. */
export const FULL_TRUST_MULTIPLE = 100

/**
 * A score on [0, 1] for display and ranking: logarithmic in the score relative to the average
 * identity's (1 / n), so that an identity holding the average scores log 2 / log 101 ≈ 0.15 and one
 * holding 100 times it or more scores 1; 0 stays 0. Rounded to 6 decimals, as stored and compared.
 */
export function scaledScore(score: number, identities: number): number {
  if (!(score > 0) || identities <= 0) return 0
  const scaled = Math.log1p(score * identities) / Math.log1p(FULL_TRUST_MULTIPLE)
  return Math.round(Math.min(1, scaled) * 1e6) / 1e6
}

/**
 * Scores for `next`, a graph that differs from the one `previous` was computed on only in the rows
 * of `changed` (attestations added): instead of rounds over every edge, the difference those rows
 * make is pushed along the edges from where it arises (forward push on the residual of the previous
 * scores), at each identity until what is left is below `relative` of its score (or of the average
 * score, 1 / n, if that is larger). The work follows the change: the subjects of the new
 * attestations and the few hops after them, not the whole graph. Scores then differ from a full
 * computation on `next` by at most about `relative` each; the hourly full computation restores
 * exactness (and equality across nodes).
 */
export function repair(
  previous: { graph: TrustGraph; scores: Float64Array },
  next: TrustGraph,
  changed: Iterable<number>,
  seeds: ArrayLike<number>,
  options: { restart?: number; relative?: number } = {}
): { scores: Float64Array; pushes: number } {
  const n = next.size
  const restart = options.restart ?? DEFAULT_RESTART
  const relative = options.relative ?? 1e-3
  const seedList = uniqueSeeds(seeds, n)
  if (seedList.length === 0 || previous.scores.length !== n) return { scores: propagate(next, seeds).scores, pushes: 0 }
  const scores = Float64Array.from(previous.scores)
  const floor = 1 / Math.max(1, n)
  const threshold = (v: number): number => relative * Math.max(previous.scores[v]!, floor)
  const residual = new Float64Array(n)
  const queued = new Uint8Array(n)
  let queue: number[] = []
  const add = (v: number, amount: number): void => {
    residual[v]! += amount
    if (queued[v] === 0 && Math.abs(residual[v]!) > threshold(v)) {
      queued[v] = 1
      queue.push(v)
    }
  }
  /** Spreads `amount` over `graph`'s row `u` (the seeds for a row without edges). */
  const spread = (graph: TrustGraph, u: number, amount: number): void => {
    const total = graph.rowTotals[u]!
    if (total === 0) {
      for (const s of seedList) add(s, amount / seedList.length)
      return
    }
    const { columns, weights } = graph.row(u)
    for (let k = 0; k < columns.length; k++) add(columns[k]!, (amount * weights[k]!) / total)
  }
  for (const i of new Set(changed)) {
    const passed = (1 - restart) * previous.scores[i]!
    if (passed === 0) continue
    spread(previous.graph, i, -passed)
    spread(next, i, passed)
  }
  let pushes = 0
  while (queue.length > 0) {
    const round = queue
    queue = []
    for (const u of round) {
      queued[u] = 0
      const r = residual[u]!
      if (Math.abs(r) <= threshold(u)) continue
      residual[u] = 0
      scores[u]! += r
      spread(next, u, (1 - restart) * r)
      pushes++
    }
  }
  return { scores, pushes }
}
