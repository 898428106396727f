/**
 * The `hash` embedding backend: signed feature hashing of the analyzer's tokens beside the averaged
 * static word vectors of those tokens. No model download, no I/O after the word table is read
 * (once per process), deterministic across runs, processes and machines.
 *
 * A vector has two parts, each L2-normalised and then weighted so that the cosine of two texts is
 * half the cosine of their hashed parts plus half the cosine of their word parts (WORD_SHARE):
 *
 *   hashed part (the first dimension − W slots): features of the text after analyze() (stopwords
 *     dropped, Porter-stemmed):
 *       unigram  each token                                              weight 1
 *       bigram   each pair of neighbouring tokens ("a b")                weight 0.5
 *       synonym  the representative of each synonym group a token (or a
 *                multi-word entry such as "large language model") is in weight 0.5
 *     Exact words and the synonym table: "summary of documents" and "summarize PDFs" share no stem
 *     (summari/summar, document/pdf) but both add the representatives "summar" and "pdf".
 *   word part (the last W = min(64, dimension / 2) slots): the SIF-weighted mean of the tokens' rows
 *     in the shipped GloVe table (src/search/word-vectors.ts). Words that are related without being
 *     synonyms ("flights" and "airline", "novel" and "book") land near each other, which is what
 *     lets a paraphrase meet a record it shares no word with.
 * A text with no word in the table has only its hashed part (at full length); a text with no token
 * at all gives the zero vector.
 *
 * Hashing: FNV-1a 32-bit over the feature's UTF-16 code units, then murmur3's fmix32 finaliser so
 * every bit is well mixed. Bits 0–30 modulo the hashed part's size pick the slot and bit 31 the
 * sign, so collisions cancel out on average instead of piling up. Bigrams are hashed as "a b": a
 * token never holds a space, so they cannot collide by construction with a unigram's string.
 */
import { ANALYZER_FINGERPRINT, analyze, synonymRepresentatives } from '../analyzer.js'
import { type WordVectors, wordVectors } from '../word-vectors.js'
import type { Embedder } from './embedder.js'

const UNIGRAM_WEIGHT = 1
const BIGRAM_WEIGHT = 0.5
const SYNONYM_WEIGHT = 0.5
/** Share of the cosine that comes from the word part (the rest from the hashed part). */
const WORD_SHARE = 0.5
/** The word part's size: a prefix of the table's rows (their dimensions are in order of variance). */
const MAX_WORD_DIMENSIONS = 64

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
  /** Slots of the hashed part ([0, hashed)); the word part is [hashed, dimension). */
  private readonly hashed: number
  private readonly words: WordVectors
  private readonly wordDimensions: number

  constructor(dimension: number) {
    if (!Number.isInteger(dimension) || dimension < 64 || dimension > 4096 || (dimension & (dimension - 1)) !== 0) {
      throw new RangeError(`hash embedder dimension must be a power of two from 64 to 4096, got ${dimension}`)
    }
    this.words = wordVectors()
    this.dimension = dimension
    this.wordDimensions = Math.min(MAX_WORD_DIMENSIONS, this.words.dimension, dimension / 2)
    this.hashed = dimension - this.wordDimensions
    this.id = `hash-v2:${dimension}:${ANALYZER_FINGERPRINT}:${this.words.id}`
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map(text => this.embedOne(text))
  }

  /** The synchronous core of embed() for one text. */
  embedOne(text: string): Float32Array {
    return this.embedTokens(analyze(text))
  }

  /**
   * The vector of a text already analyzed (its analyze() tokens, in order). `into`, when given, is
   * zeroed and filled instead of a new array (the search index embeds every upsert into one buffer).
   */
  embedTokens(tokens: readonly string[], into?: Float32Array): Float32Array {
    const v = into ? into.fill(0) : new Float32Array(this.dimension)
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i]!
      this.add(v, token, UNIGRAM_WEIGHT)
      if (i > 0) this.add(v, `${tokens[i - 1]} ${token}`, BIGRAM_WEIGHT)
      const row = this.words.row(token)
      if (row >= 0) this.words.addTo(v, this.hashed, this.wordDimensions, row, this.words.weight(row))
    }
    for (const representative of synonymRepresentatives(tokens)) this.add(v, representative, SYNONYM_WEIGHT)
    // Each part to unit length, then weighted: the cosine is (1 − WORD_SHARE) · hashed + WORD_SHARE · words.
    const hashedNorm = norm(v, 0, this.hashed)
    const wordNorm = norm(v, this.hashed, this.dimension)
    const both = hashedNorm > 0 && wordNorm > 0
    scale(v, 0, this.hashed, hashedNorm > 0 ? (both ? Math.sqrt(1 - WORD_SHARE) : 1) / hashedNorm : 0)
    scale(v, this.hashed, this.dimension, wordNorm > 0 ? (both ? Math.sqrt(WORD_SHARE) : 1) / wordNorm : 0)
    return v
  }

  private add(v: Float32Array, feature: string, weight: number): void {
    const h = hash32(feature)
    const slot = (h & 0x7fffffff) % this.hashed
    v[slot] = (v[slot] as number) + (h & 0x80000000 ? -weight : weight)
  }
}

function norm(v: Float32Array, from: number, to: number): number {
  let sum = 0
  for (let i = from; i < to; i++) sum += (v[i] as number) ** 2
  return Math.sqrt(sum)
}

function scale(v: Float32Array, from: number, to: number, factor: number): void {
  for (let i = from; i < to; i++) v[i] = (v[i] as number) * factor
}
