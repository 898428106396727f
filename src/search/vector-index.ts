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
