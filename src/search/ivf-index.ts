/**
 * An inverted-file (IVF) approximate index over the exact vector store: vectors are grouped
 * around k centroids (spherical k-means on a sample), and a query scans only the `nprobe`
 * groups whose centroids are nearest. Recall against the exact scan is measured by
 * `npm run bench:search`; the engine uses it only when configured.
 */
import type { FlatVectorIndex } from './vector-index.js'

export interface IvfOptions {
  /** Number of groups; default √n. */
  lists?: number
  /** Groups scanned per query. */
  nprobe: number
  /** Vectors sampled to train the centroids. */
  sample?: number
  iterations?: number
}

export class IvfIndex {
  private centroids = new Float32Array(0)
  private k = 0
  private readonly members: number[][] = []
  private assignment = new Int32Array(0)
  private position = new Int32Array(0)
  trained = false

  constructor(private readonly store: FlatVectorIndex, private readonly options: IvfOptions) {}

  get lists(): number { return this.k }

  /** Trains the centroids on a sample of `slots` and assigns every slot. */
  train(slots: readonly number[], random: () => number = Math.random): void {
    const d = this.store.dimension
    const k = Math.max(1, Math.min(slots.length, this.options.lists ?? Math.round(Math.sqrt(slots.length))))
    const sampleSize = Math.min(slots.length, this.options.sample ?? Math.max(k * 40, 10_000))
    const sample: number[] = []
    for (let i = 0; i < slots.length && sample.length < sampleSize; i++) {
      // Reservoir-free sampling: take each slot with the probability that fills the sample evenly.
      if (random() < (sampleSize - sample.length) / (slots.length - i)) sample.push(slots[i] as number)
    }
    const centroids = new Float32Array(k * d)
    for (let c = 0; c < k; c++) this.store.copyTo(sample[Math.floor((c * sample.length) / k)] as number, centroids, c * d)
    const owner = new Int32Array(sample.length)
    for (let iter = 0; iter < (this.options.iterations ?? 6); iter++) {
      sample.forEach((slot, i) => { owner[i] = this.nearest(centroids, k, slot) })
      centroids.fill(0)
      sample.forEach((slot, i) => this.store.addTo(slot, centroids, (owner[i] as number) * d))
      for (let c = 0; c < k; c++) normalize(centroids, c * d, d)
    }
    this.centroids = centroids
    this.k = k
    this.members.length = 0
    for (let c = 0; c < k; c++) this.members.push([])
    this.assignment = new Int32Array(Math.max(1024, (Math.max(...slots, 0) + 1) * 2)).fill(-1)
    this.position = new Int32Array(this.assignment.length)
    for (const slot of slots) this.insert(slot)
    this.trained = true
  }

  /** Files a slot (new or changed vector) under its nearest centroid. */
  insert(slot: number): void {
    if (!this.trained && this.k === 0) return
    this.remove(slot)
    if (slot >= this.assignment.length) {
      const grow = (a: Int32Array, fill: number) => { const n = new Int32Array(Math.max(slot + 1, a.length * 2)).fill(fill); n.set(a); return n }
      this.assignment = grow(this.assignment, -1)
      this.position = grow(this.position, 0)
    }
    const c = this.nearest(this.centroids, this.k, slot)
    const list = this.members[c] as number[]
    this.assignment[slot] = c
    this.position[slot] = list.length
    list.push(slot)
  }

  remove(slot: number): void {
    if (slot >= this.assignment.length) return
    const c = this.assignment[slot] as number
    if (c < 0) return
    const list = this.members[c] as number[]
    const at = this.position[slot] as number
    const last = list.pop() as number
    if (last !== slot) { list[at] = last; this.position[last] = at }
    this.assignment[slot] = -1
  }

  /** The slots of the `nprobe` groups nearest to `query`. */
  candidates(query: Float32Array): number[] {
    const d = this.store.dimension
    const scores: [number, number][] = []
    for (let c = 0; c < this.k; c++) {
      let s = 0
      for (let i = 0; i < d; i++) s += (this.centroids[c * d + i] as number) * (query[i] as number)
      scores.push([s, c])
    }
    scores.sort((a, b) => b[0] - a[0])
    const out: number[] = []
    for (const [, c] of scores.slice(0, this.options.nprobe)) for (const slot of this.members[c] as number[]) out.push(slot)
    return out
  }

  private nearest(centroids: Float32Array, k: number, slot: number): number {
    let best = 0
    let bestScore = -Infinity
    for (let c = 0; c < k; c++) {
      const s = this.store.dotWith(slot, centroids, c * this.store.dimension)
      if (s > bestScore) { bestScore = s; best = c }
    }
    return best
  }
}

function normalize(v: Float32Array, offset: number, d: number): void {
  let sum = 0
  for (let i = 0; i < d; i++) sum += (v[offset + i] as number) ** 2
  const norm = Math.sqrt(sum)
  if (norm > 0) for (let i = 0; i < d; i++) v[offset + i] = (v[offset + i] as number) / norm
}
