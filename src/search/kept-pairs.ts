/**
 * When the text index's phrase pairs (phrase-pairs.ts) are built: at the first phrase of common
 * words that asks, or ahead of it (`prepare`, when the search thread is quiet); and again once a
 * tenth of the documents were added since the last build or check, when the common words are
 * others now.
 */
import { commonTermIds, PhrasePairs } from './phrase-pairs.js'

/** What the pairs are built from: the text index's posting lists, counts and term sequences. */
export interface PairSource {
  postings(): readonly ({ length: number } | undefined)[]
  /** Documents added so far, and live now. */
  adds(): number
  liveCount(): number
  live(): Parameters<typeof PhrasePairs.build>[2]
}

export class KeptPairs {
  pairs: PhrasePairs | null = null
  /** The source's `adds` at the last build or check. */
  private builtAt = 0
  /** How many times the pairs were built (for tests and logs). */
  builds = 0

  constructor(private readonly source: PairSource) {}

  /** The pair candidates of a phrase of common words (term numbers), built first when due. */
  candidates(ids: Uint32Array, walkFrom: number): Uint32Array | null {
    if (this.pairs === null || (!this.pairs.covers(ids) && this.grown()))
      this.build(commonTermIds(this.source.postings(), walkFrom))
    return (this.pairs as PhrasePairs).candidates(ids)
  }

  /** Builds the pairs before a phrase asks for them, when due; true when built. */
  prepare(walkFrom: number): boolean {
    if (this.pairs !== null && !this.grown()) return false
    const common = commonTermIds(this.source.postings(), walkFrom)
    if (common.length === 0 || this.pairs?.coversExactly(common)) {
      this.builtAt = this.source.adds()
      return false
    }
    this.build(common)
    return true
  }

  private grown(): boolean {
    return this.source.adds() - this.builtAt >= this.source.liveCount() / 10
  }

  private build(common: readonly number[]): void {
    this.builds++
    this.pairs = PhrasePairs.build(common, this.source.postings().length, this.source.live())
    this.builtAt = this.source.adds()
  }
}
