/**
 * The spec's ranking: a weighted sum of five signals, each normalised to [0, 1].
 *   text relevance   BM25F score (+5.0 per exact quoted phrase) divided by the best score among
 *                    the matches of the query, so the best text match is 1
 *   semantic         cosine similarity of L2-normalised embeddings, negatives clamped to 0
 *   trust            the trust score (src/services/registry/trust.ts), already in [0, 1]
 *   freshness        2^(−age / half-life), age since the later of updated_at and last_heartbeat
 *   availability     1 for active entities, 0 for inactive ones (the liveness state)
 *
 * The optional `rrf` fusion replaces the first two terms (w_text · text + w_semantic · semantic)
 * by reciprocal rank fusion of the text and semantic rankings (k = 60), scaled so that a document
 * first in both gets w_text + w_semantic; the breakdown still shows the raw signals.
 */
export type Fusion = 'weighted' | 'rrf'
export const RRF_K = 60

export interface RankingWeights {
  text: number
  semantic: number
  trust: number
  freshness: number
  availability: number
}

export const PHRASE_BONUS = 5.0

export interface ScoreBreakdown {
  text_relevance: number
  semantic_similarity: number
  trust_score: number
  freshness: number
  availability: number
}

export function freshness(lastChangeMs: number, nowMs: number, halfLifeDays: number): number {
  const ageDays = Math.max(0, nowMs - lastChangeMs) / 86_400_000
  return 2 ** (-ageDays / halfLifeDays)
}

export function combine(b: ScoreBreakdown, w: RankingWeights): number {
  return (
    w.text * b.text_relevance +
    w.semantic * b.semantic_similarity +
    w.trust * b.trust_score +
    w.freshness * b.freshness +
    w.availability * b.availability
  )
}

export function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000
}
