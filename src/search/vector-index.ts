/**
 * The vector index: every document's L2-normalised embedding quantised to int8 (one scale per
 * vector), scanned in full for each query by a WebAssembly SIMD kernel (src/search/int8-dot.ts).
 *
 * Why a full scan and not a graph or IVF index: the scan of 100k × 128 dimensions takes about
 * 1 ms here (8 ms at 1M, bound by reading memory), total_found must count every document above
 * the similarity threshold (which an approximate index cannot), and an IVF index measured slower
 * than the float scan it was meant to beat (docs/decisions.md). Quantisation is the approximation: cosine
 * similarities are off by a few thousandths, and the benchmark measures recall@10 against an exact
 * float scan.
 */
import { Int8Matrix, quantize } from './int8-dot.js'
import type { SnapshotReader, SnapshotWriter } from '../util/snapshot-file.js'

export class VectorIndex {
  private readonly matrix: Int8Matrix
  private readonly buffer: Int8Array

  constructor(
    readonly dimension: number,
    options: { simd?: boolean } = {}
  ) {
    this.matrix = new Int8Matrix(dimension, options)
    this.buffer = new Int8Array(dimension)
  }

  get simd(): boolean {
    return this.matrix.simd
  }

  set(slot: number, vector: Float32Array): void {
    if (vector.length !== this.dimension)
      throw new RangeError(`vector of ${vector.length} dimensions, index has ${this.dimension}`)
    const { values, scale } = quantize(vector, this.buffer)
    this.matrix.set(slot, values, scale)
  }

  /** The slot's vector as stored (quantised), or null when it has none. */
  get(slot: number): Float32Array | null {
    return this.matrix.get(slot)
  }

  /** A removed (or never embedded) slot has scale 0, so its similarity is 0. */
  remove(slot: number): void {
    this.matrix.clear(slot)
  }

  /** Cosine similarities of `query` with slots [0, count); a view valid until the next call. */
  scan(query: Float32Array, count: number): Float32Array {
    return this.scanAbove(query, count, Number.POSITIVE_INFINITY).similarities
  }

  /**
   * Like `scan`, and also lists the slots whose similarity reaches `min`, in order; both are views
   * valid until the next call.
   */
  scanAbove(query: Float32Array, count: number, min: number): { similarities: Float32Array; above: Int32Array } {
    const { values, scale } = quantize(query, new Int8Array(this.dimension))
    return this.matrix.similar(values, scale, count, min)
  }

  /**
   * Cosine similarities of `query` with the listed slots (each below `count`), at those slots of
   * the returned view; the other entries are stale. Cheaper than `scan` for a small share of slots.
   */
  scanSlots(query: Float32Array, slots: ArrayLike<number>, count: number): Float32Array {
    this.matrix.ensure(count)
    const { values, scale } = quantize(query, new Int8Array(this.dimension))
    return this.matrix.similarSlots(values, scale, slots).subarray(0, count)
  }

  /** Writes the vectors of slots [0, count) under `prefix`. */
  save(out: SnapshotWriter, prefix: string, count: number): void {
    out.array(`${prefix}.vectors`, () => this.matrix.rows(count).vectors)
    out.array(`${prefix}.scales`, () => this.matrix.rows(count).scales)
  }

  restore(input: SnapshotReader, prefix: string): void {
    this.matrix.setRows(input.array(`${prefix}.vectors`, Int8Array), input.array(`${prefix}.scales`, Float32Array))
  }

  /** Cosine similarity of `query` with one slot. */
  similarity(slot: number, query: Float32Array): number {
    const rowScale = this.matrix.scale(slot)
    if (rowScale === 0) return 0
    const { values, scale } = quantize(query, new Int8Array(this.dimension))
    return this.matrix.dot(values, slot) * rowScale * scale
  }
}
