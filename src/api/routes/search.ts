import type { EntityCatalog } from '../../services/catalog.js'
import type { SearchService } from '../../services/search.js'
import { CategoryCounts, SearchRequest, SearchResponse, TagCounts } from '../../wire/search.js'
import { json, type RouteDefinition } from '../http.js'

export function searchRoutes(search: SearchService, catalog: EntityCatalog): RouteDefinition[] {
  const tag = 'search'
  return [
    {
      method: 'POST',
      path: '/v1/search',
      summary: 'Hybrid search (BM25 + semantic + trust, freshness, availability); filters combine with AND',
      tag,
      limit: 'read',
      body: SearchRequest,
      responses: { 200: { description: 'ranked results', schema: SearchResponse } },
      errors: ['invalid_json', 'validation_failed', 'fqan_invalid'],
      handler: async ctx => json(200, await search.search(ctx.raw.length > 0 ? ctx.json() : {}))
    },
    {
      method: 'GET',
      path: '/v1/categories',
      summary: 'Categories in use with counts, most used first',
      tag,
      limit: 'read',
      responses: { 200: { description: '[{name, count}]', schema: CategoryCounts } },
      handler: () => json(200, catalog.categoryCounts())
    },
    {
      method: 'GET',
      path: '/v1/tags',
      summary: 'Tags in use with counts, most used first',
      tag,
      limit: 'read',
      responses: { 200: { description: '[{tag, count}]', schema: TagCounts } },
      handler: () => json(200, catalog.tagCounts())
    }
  ]
}
