/**
 * The `hash` embedding backend: signed feature hashing of the analyzer's tokens. No model, no I/O,
 * deterministic across runs, processes and machines.
 *
 * Features of a text (after analyze(): stopwords dropped, Porter-stemmed):
 *   unigram  each token                                              weight 1
 *   bigram   each pair of neighbouring tokens ("a b")                weight 0.5
 *   synonym  the representative of each synonym group a token (or a
 *            multi-word entry such as "large language model") is in weight 0.5
 * The synonym feature is what lets paraphrases meet: "summary of documents" and "summarize PDFs"
 * share no stem (summari/summar, document/pdf) but both add the representatives "summar" and
 * "pdf", so their cosine is well above that of unrelated texts.
 *
 * Hashing: FNV-1a 32-bit over the feature's UTF-16 code units, then murmur3's fmix32 finaliser so
 * every bit is well mixed. The low log2(dimension) bits pick the slot and bit 31 (never a slot bit,
 * dimension ≤ 4096) picks the sign, so collisions cancel out on average instead of piling up.
 * Bigrams are hashed as "a b": a token never holds a space, so they cannot collide by construction
 * with a unigram's string.
 */
import { ANALYZER_FINGERPRINT, analyze, synonymRepresentatives } from '../analyzer.js'
import { type Embedder, l2normalize } from './embedder.js'

const UNIGRAM_WEIGHT = 1
const BIGRAM_WEIGHT = 0.5
const SYNONYM_WEIGHT = 0.5

/** FNV-1a 32-bit of the string's UTF-16 code units, finalised with murmur3 fmix32. */
export function hash32(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

export class HashEmbedder implements Embedder {
  readonly id: string
  readonly dimension: number
  private readonly mask: number

  constructor(dimension = 256) {
    if (!Number.isInteger(dimension) || dimension < 64 || dimension > 4096 || (dimension & (dimension - 1)) !== 0) {
      throw new RangeError(`hash embedder dimension must be a power of two from 64 to 4096, got ${dimension}`)
    }
    this.dimension = dimension
    this.mask = dimension - 1
    this.id = `hash-v1:${dimension}:${ANALYZER_FINGERPRINT}`
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map(text => this.embedOne(text))
  }

  /** The synchronous core of embed() for one text. */
  embedOne(text: string): Float32Array {
    const v = new Float32Array(this.dimension)
    const tokens = analyze(text)
    for (let i = 0; i < tokens.length; i++) {
      this.add(v, tokens[i]!, UNIGRAM_WEIGHT)
      if (i > 0) this.add(v, `${tokens[i - 1]} ${tokens[i]}`, BIGRAM_WEIGHT)
    }
    for (const representative of synonymRepresentatives(tokens)) this.add(v, representative, SYNONYM_WEIGHT)
    return l2normalize(v)
  }

  private add(v: Float32Array, feature: string, weight: number): void {
    const h = hash32(feature)
    const slot = h & this.mask
    v[slot] = (v[slot] as number) + (h & 0x80000000 ? -weight : weight)
  }
}
