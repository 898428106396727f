import type { EntityCatalog } from '../../services/registry/catalog.js'
import type { SearchService } from '../../services/search/search.js'
import { RegistryError } from '../../errors.js'
import { CategoriesAnswer, CountsQuery, SearchRequest, SearchResponse, TagsAnswer } from '../../wire/search.js'
import { json, type RequestContext, type RouteDefinition } from '../../http/http.js'

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
      summary: 'Categories in use, most used first: {categories: [names]}, or with ?counts=true [{name, count}]',
      tag,
      limit: 'read',
      query: CountsQuery,
      responses: { 200: { description: '{categories} or [{name, count}]', schema: CategoriesAnswer } },
      errors: ['invalid_query'],
      handler: ctx => {
        const counts = catalog.categoryCounts()
        return json(200, wantsCounts(ctx) ? counts : { categories: counts.map(c => c.name) })
      }
    },
    {
      method: 'GET',
      path: '/v1/tags',
      summary: 'Tags in use, most used first: {tags: [names]}, or with ?counts=true [{tag, count}]',
      tag,
      limit: 'read',
      query: CountsQuery,
      responses: { 200: { description: '{tags} or [{tag, count}]', schema: TagsAnswer } },
      errors: ['invalid_query'],
      handler: ctx => {
        const counts = catalog.tagCounts()
        return json(200, wantsCounts(ctx) ? counts : { tags: counts.map(c => c.tag) })
      }
    }
  ]
}

/**
 * The spec allows either answer. Deployed clients read the origin registry's `{categories: [..]}`
 * and `{tags: [..]}`, so that is the default; the counts stay one flag away.
 */
function wantsCounts(ctx: RequestContext): boolean {
  const value = ctx.query.get('counts')
  if (value === null || value === '' || value === 'false') return false
  if (value === 'true') return true
  throw new RegistryError('invalid_query', 'counts must be true or false.', 'counts')
}
