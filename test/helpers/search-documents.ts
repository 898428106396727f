import type { SearchDocument } from '../../src/search/search-engine.js'

/** An active agent in `tools` with no tags, developer or capabilities, as the engine indexes it; `over` changes any part. */
export function searchDoc(entityId: string, over: Partial<SearchDocument> = {}): SearchDocument {
  return {
    entityId,
    type: 'agent',
    category: 'tools',
    tags: [],
    developerId: null,
    active: true,
    registeredAt: 0,
    lastChange: 0,
    uptime: 1,
    capabilities: { skills: [], protocols: [], languages: [], models: [] },
    ...over
  }
}

/** A seeded linear congruential generator of numbers in [0, 1). */
export function lcg(seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

/** Embeddings are unit vectors: a similarity is at most 1. */
export function unit(v: Float32Array): Float32Array {
  const norm = Math.hypot(...v)
  return v.map(x => x / norm)
}
