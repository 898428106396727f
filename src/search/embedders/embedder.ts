/**
 * The semantic stage's view of an embedding backend (spec rule 7: `hash`, `onnx`, `http`): texts in,
 * L2-normalised vectors out, so cosine similarity is a dot product.
 */
export interface Embedder {
  /** Names the backend, its model and anything else that shapes the output (e.g. 'hash-v1:256:…');
   *  vectors stored under another id must be recomputed. */
  readonly id: string
  readonly dimension: number
  /** One L2-normalised vector per text, in order; a text with nothing to embed gives a zero vector. */
  embed(texts: readonly string[]): Promise<Float32Array[]>
  /** Releases what the backend holds (the onnx worker and its session); absent where nothing is held. */
  close?(): Promise<void>
}

/** Scales `v` to unit length in place and returns it; a zero vector stays zero. */
export function l2normalize(v: Float32Array): Float32Array {
  let sum = 0
  for (let i = 0; i < v.length; i++) {
    const x = v[i] as number
    sum += x * x
  }
  if (sum === 0) return v
  const scale = 1 / Math.sqrt(sum)
  for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) * scale
  return v
}

/** Dot product (cosine similarity for normalised vectors). Vectors must have the same length. */
export function dot(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new RangeError(`dot of vectors with ${a.length} and ${b.length} dimensions`)
  let sum = 0
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number)
  return sum
}
