import type { NodeConfig } from '../../config/settings.js'
import { RegistryError } from '../../errors.js'
import type { NodeIdentity } from '../../identity/node-identity.js'
import type { EntityCatalog } from '../../services/registry/catalog.js'
import type { DeveloperService } from '../../services/registry/developers.js'
import { NODE_VERSION } from '../../version.js'
import { Health, NodeInfo, type RuntimeInfo } from '../../wire/node.js'
import { json, type RouteDefinition } from '../../http/http.js'
import type { NodeMetrics } from '../metrics.js'
import { DASHBOARD_HTML } from '../dashboard-page.js'
import { buildOpenApiDocument, openApiServers } from '../openapi.js'
import type { ApiMeta } from '../route-description.js'
import { buildSwaggerDocument, loadSwaggerAssets, SWAGGER_INDEX_HTML } from '../swagger.js'

export interface NodeRouteComponents {
  config: NodeConfig
  identity: NodeIdentity
  catalog: EntityCatalog
  developers: DeveloperService
  metrics: NodeMetrics | null
  peerCount: () => number
  /** What runs this node (the server kind is known once the front is built). */
  runtime: () => RuntimeInfo
}

export function nodeRoutes(c: NodeRouteComponents): RouteDefinition[] {
  const authUrl = c.config.onboarding.auth_url || null
  return [
    {
      method: 'GET',
      path: '/health',
      summary: 'Liveness of this node',
      tag: 'node',
      limit: 'none',
      responses: { 200: { description: 'ok', schema: Health } },
      handler: () => json(200, { status: 'ok' })
    },
    {
      method: 'GET',
      path: '/dashboard',
      summary:
        'The node dashboard: identity, peers, counts, newest entities and the live activity stream (an HTML page on this API)',
      tag: 'node',
      limit: 'none',
      responses: { 200: { description: 'an HTML page' } },
      handler: () => ({ status: 200, body: DASHBOARD_HTML, contentType: 'text/html; charset=utf-8' })
    },
    {
      method: 'GET',
      path: '/v1/info',
      summary: 'Node identity, onboarding mode and counts',
      tag: 'node',
      limit: 'read',
      responses: { 200: { description: 'node info', schema: NodeInfo } },
      handler: () => {
        const agents = c.catalog.count('agent')
        const services = c.catalog.count('service')
        return json(200, {
          node_id: c.identity.registryId,
          registry_id: c.identity.registryId,
          name: c.config.name,
          host: c.config.host,
          version: NODE_VERSION,
          onboarding_mode: c.config.onboarding.mode,
          auth_url: authUrl,
          developer_onboarding: { mode: c.config.onboarding.mode, auth_url: authUrl },
          agent_count: agents,
          service_count: services,
          entity_count: agents + services,
          developer_count: c.developers.count,
          peer_count: c.peerCount(),
          public_key: c.identity.publicKey,
          runtime: c.runtime()
        })
      }
    }
  ]
}

/**
 * Routes that describe the API itself; built last so the documents cover every other route.
 * `publicUrl` is the node's `public_url` setting, the OpenAPI document's server when set.
 */
export function documentationRoutes(
  routes: readonly RouteDefinition[],
  metrics: NodeMetrics | null,
  publicUrl: string
): RouteDefinition[] {
  const docRoute: RouteDefinition = {
    method: 'GET',
    path: '/swagger/doc.json',
    summary: 'This API description (Swagger 2.0)',
    tag: 'node',
    limit: 'none',
    responses: { 200: { description: 'Swagger 2.0 document' } },
    handler: () => json(200, doc)
  }
  const openApiRoute: RouteDefinition = {
    method: 'GET',
    path: '/openapi.json',
    summary: "This API description (OpenAPI 3.1), its servers from public_url or the request's Host",
    tag: 'node',
    limit: 'none',
    responses: { 200: { description: 'OpenAPI 3.1 document' } },
    handler: ctx => json(200, { ...openApi, servers: openApiServers(publicUrl, ctx.headers.host) })
  }
  const metricsRoute: RouteDefinition = {
    method: 'GET',
    path: '/metrics',
    summary: 'Prometheus metrics (docs/reference/metrics.md); 404 metrics_disabled unless metrics.enabled',
    tag: 'node',
    limit: 'none',
    responses: { 200: { description: 'Prometheus text exposition' } },
    errors: ['metrics_disabled'],
    handler: async () => {
      // Answered, not left to route_not_found, so that a scraper's operator learns which setting to turn on.
      if (!metrics) throw new RegistryError('metrics_disabled')
      return { status: 200, body: await metrics.registry.metrics(), contentType: metrics.registry.contentType }
    }
  }
  const all = [...routes, docRoute, openApiRoute, metricsRoute]
  const meta: ApiMeta = {
    title: 'Registry node',
    description:
      'A peer-to-peer registry node for AI agents and services. Errors are {error, message, field?}; docs/reference/errors.md lists every code.'
  }
  const doc = buildSwaggerDocument(all, meta)
  const openApi = buildOpenApiDocument(all, meta)
  const assets = loadSwaggerAssets()
  const page =
    (body: string | Buffer, contentType: string): RouteDefinition['handler'] =>
    () => ({ status: 200, body, contentType })
  const hidden = (path: string, handler: RouteDefinition['handler']): RouteDefinition => ({
    method: 'GET',
    path,
    summary: 'API explorer',
    tag: 'node',
    limit: 'none',
    hidden: true,
    responses: { 200: { description: 'explorer' } },
    handler
  })
  all.push(hidden('/swagger/index.html', page(SWAGGER_INDEX_HTML, 'text/html; charset=utf-8')))
  all.push(
    hidden('/swagger', () => ({
      status: 302,
      body: '',
      contentType: 'text/plain',
      headers: { Location: '/swagger/index.html' }
    }))
  )
  for (const [file, asset] of assets) all.push(hidden(`/swagger/${file}`, page(asset.body, asset.contentType)))
  return all
}
