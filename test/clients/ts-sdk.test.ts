/**
 * The zyndai TypeScript SDK, both lines in use (0.5.0, which the MCP server is built on, and 0.5.6):
 * its registry client, agent and service runtime (registration, heartbeats, the signed A2A card),
 * name binding and its `zynd` CLI, as recorded against a node (test/fixtures/clients/ts-sdk-*,
 * docs/compatibility.md).
 */
import test from 'ava'
import { loadFixture, replay, type ReadSpec } from './replay.js'

/** What the SDK reads of each answer (src/, file:line of 0.5.6; 0.5.0 reads the same). */
const reads: ReadSpec = {
  // registry.ts:135-141; base.ts:381-388 falls back to PUT on "HTTP 409"
  'POST /v1/entities': ['entity_id'],
  // registry.ts:157 (404 → null); base.ts:61-78 diff; cli/info.ts:29-52; cli/status.ts:23-35
  'GET /v1/entities/{id}': [
    'name',
    'entity_id',
    'entity_type',
    'status',
    'entity_url',
    'category',
    'summary',
    'public_key',
    'home_registry',
    'last_heartbeat',
    'tags',
    'service_endpoint',
    'openapi_url'
  ],
  // entity-card-loader.ts:150-194; cli/name.ts:44-52
  'GET /v1/developers/{id}': ['dev_handle', 'name', 'home_registry'],
  // registry.ts:329-353 (getEntityFqan); cli/search.ts:78-117; cli/resolve.ts:21-38
  'POST /v1/search': [
    'total_found',
    'has_more',
    'results[].name',
    'results[].status',
    'results[].entity_id',
    'results[].summary',
    'results[].category',
    'results[].tags',
    'results[].entity_url',
    'results[].score',
    'results[].fqan'
  ],
  // registry.ts:280-300 returns the card whole
  'GET /v1/entities/{id}/card': ['name', 'url', 'preferredTransport', 'signatures'],
  // registry.ts:303-326
  'GET /v1/handles/{h}/available': ['handle', 'available', 'reason'],
  // registry.ts:374-404
  'GET /v1/names/{h}/{n}/available': ['developer', 'entity_name', 'available', 'reason'],
  // registry.ts:466-468
  'POST /v1/names': ['fqan'],
  // cli/auth.ts:33-46
  'GET /v1/info': ['developer_onboarding.mode', 'developer_onboarding.auth_url']
}

for (const version of ['0.5.0', '0.5.6'] as const)
  for (const session of ['registry', 'runtime', 'cli'] as const)
    test.serial(
      `zyndai TypeScript SDK ${version}, ${session} session: every request answers as the SDK reads it`,
      async t => {
        const matched = await replay(t, loadFixture(`ts-sdk-${version}/${session}.json`), reads)
        t.log(`${matched} SDK requests answered as recorded`)
        t.true(matched > 0)
      }
    )
