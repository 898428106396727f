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
