/**
 * Exact vector index: one Float32Array of slot × dimension, L2-normalised vectors, cosine as a
 * dot product. The scan is the reference that an approximate index must match (recall@10).
 */
export class FlatVectorIndex {
  private vectors: Float32Array
  private present: Uint8Array

  constructor(readonly dimension: number, capacity = 1024) {
    this.vectors = new Float32Array(capacity * dimension)
    this.present = new Uint8Array(capacity)
  }

  set(slot: number, vector: Float32Array): void {
    if (vector.length !== this.dimension) throw new RangeError(`vector of ${vector.length} dimensions, index has ${this.dimension}`)
    this.ensure(slot + 1)
    this.vectors.set(vector, slot * this.dimension)
    this.present[slot] = 1
  }

  remove(slot: number): void {
    if (slot < this.present.length) this.present[slot] = 0
  }

  has(slot: number): boolean {
    return this.present[slot] === 1
  }

  /** Cosine similarity of a stored vector with `query` (0 when the slot has none). */
  similarity(slot: number, query: Float32Array): number {
    if (this.present[slot] !== 1) return 0
    const v = this.vectors
    const base = slot * this.dimension
    let sum = 0
    for (let i = 0; i < this.dimension; i++) sum += (v[base + i] as number) * (query[i] as number)
    return sum
  }

  /** Dot product of a stored vector with `other[offset … offset + dimension)`. */
  dotWith(slot: number, other: Float32Array, offset: number): number {
    const v = this.vectors
    const base = slot * this.dimension
    let sum = 0
    for (let i = 0; i < this.dimension; i++) sum += (v[base + i] as number) * (other[offset + i] as number)
    return sum
  }

  /** Adds a stored vector into `target` at `offset` (k-means centroids). */
  addTo(slot: number, target: Float32Array, offset: number): void {
    const base = slot * this.dimension
    for (let i = 0; i < this.dimension; i++) target[offset + i] = (target[offset + i] as number) + (this.vectors[base + i] as number)
  }

  copyTo(slot: number, target: Float32Array, offset: number): void {
    target.set(this.vectors.subarray(slot * this.dimension, (slot + 1) * this.dimension), offset)
  }

  /** Similarity of every slot below `slots` with `query`, written into `out` (0 where no vector). */
  scoreAll(query: Float32Array, slots: number, out: Float32Array): void {
    const v = this.vectors
    const d = this.dimension
    const present = this.present
    const n = Math.min(slots, present.length)
    for (let slot = 0; slot < n; slot++) {
      if (present[slot] !== 1) { out[slot] = 0; continue }
      const base = slot * d
      let sum = 0
      for (let i = 0; i < d; i++) sum += (v[base + i] as number) * (query[i] as number)
      out[slot] = sum
    }
  }

  private ensure(slots: number): void {
    if (slots <= this.present.length) return
    let size = this.present.length
    while (size < slots) size *= 2
    const vectors = new Float32Array(size * this.dimension)
    vectors.set(this.vectors)
    this.vectors = vectors
    const present = new Uint8Array(size)
    present.set(this.present)
    this.present = present
  }
}
