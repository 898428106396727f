/**
 * The walk over the route table that both API descriptions (swagger.ts, openapi.ts) make: one place
 * decides which routes are listed and what parameters, error statuses and operation IDs they have,
 * so the two documents cannot disagree on them. Each format then writes the parts its own way.
 */
import { ERRORS, type ErrorCode } from '../errors.js'
import type { RouteDefinition } from '../http/http.js'

export type JsonSchema = Record<string, unknown>

export interface ApiMeta {
  title: string
  description: string
}

export interface DescribedOperation {
  route: RouteDefinition
  /** Lowercase: both formats key a path's operations that way. */
  method: string
  operationId: string
  pathParams: string[]
  /** The route's query schema, one entry per property, still in TypeBox form. */
  queryParams: { name: string; required: boolean; schema: JsonSchema }[]
  /** Each error status the route can answer with and the codes behind it, after its declared responses. */
  errorStatuses: [status: number, codes: ErrorCode[]][]
}

/** The listed routes (hidden ones, the explorer's assets, left out) and the tags they use, in table order. */
export function describeRoutes(routes: readonly RouteDefinition[]): {
  tags: string[]
  operations: DescribedOperation[]
} {
  const tags = new Set<string>()
  const operations: DescribedOperation[] = []
  for (const route of routes) {
    if (route.hidden) continue
    tags.add(route.tag)
    const required = new Set((route.query?.required as string[] | undefined) ?? [])
    const byStatus = new Map<number, ErrorCode[]>()
    for (const code of route.errors ?? [])
      byStatus.set(ERRORS[code].status, [...(byStatus.get(ERRORS[code].status) ?? []), code])
    // Any limited route can be refused by the limiter, whatever its handler declares.
    if (route.limit !== 'none') byStatus.set(429, ['rate_limited'])
    operations.push({
      route,
      method: route.method.toLowerCase(),
      operationId: operationId(route),
      pathParams: [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => name as string),
      queryParams: Object.entries(route.query?.properties ?? {}).map(([name, schema]) => ({
        name,
        required: required.has(name),
        schema: schema as unknown as JsonSchema
      })),
      errorStatuses: [...byStatus]
    })
  }
  return { tags: [...tags], operations }
}

/** getV1EntitiesByEntityId for GET /v1/entities/{entity_id}: stable, unique per method and path. */
function operationId(route: RouteDefinition): string {
  const path = route.path
    .replace(/\{(\w+)\}/g, 'By_$1')
    .replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))
  return `${route.method.toLowerCase()}${path}`
}
