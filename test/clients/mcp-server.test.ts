/**
 * The zyndai MCP server 5.1.0 (built on the TypeScript SDK 0.5.0), driven through its tools as an
 * LLM desktop client would: personas registered, priced, updated, deregistered and registered
 * again; search, list, get, resolve and calls; the persona runner's registration and heartbeats.
 * Recorded against a node (test/fixtures/clients/mcp-server-5.1.0/, docs/compatibility.md).
 */
import test from 'ava'
import { loadFixture, replay, type ReadSpec } from './replay.js'

/** What the server (src/) and its SDK (0.5.0, src/) read of each answer, file:line. */
const reads: ReadSpec = {
  // SDK registry.ts:135-141 → MCP persona-registration.ts:105-133
  'POST /v1/entities': ['entity_id'],
  // SDK base.ts:60-77 (runner upsert); MCP persona-runner.ts:280-335, registry-client.ts:100-117
  'GET /v1/entities/{id}': ['name', 'entity_url', 'category', 'tags', 'summary', 'url', 'additionalInterfaces'],
  // SDK entity-card-loader.ts:172-180
  'GET /v1/developers/{id}': ['dev_handle', 'name', 'home_registry'],
  // MCP registry-client.ts:76-99, agent-caller.ts:200-296, format.ts:56-209; SDK a2a/client.ts:343-368
  'GET /v1/entities/{id}/card': [
    'url',
    'preferredTransport',
    'additionalInterfaces',
    'capabilities.pushNotifications',
    'entity_id',
    'name',
    'description',
    'skills[].id',
    'skills[].name'
  ],
  // MCP format.ts:12-48 (search, list); registry-client.ts:216-222, resolve-fqan.ts:46-55
  'POST /v1/search': [
    'total_found',
    'results[].name',
    'results[].entity_id',
    'results[].summary',
    'results[].category',
    'results[].tags',
    'results[].score',
    'results[].status',
    'results[].entity_url',
    'results[].home_registry'
  ],
  // MCP auth-flow.ts:62-66
  'GET /v1/info': ['developer_onboarding.mode', 'developer_onboarding.auth_url']
}

for (const session of ['persona-lifecycle', 'discovery-calls'] as const)
  test.serial(`zyndai MCP server 5.1.0, ${session} session: every request answers as the server reads it`, async t => {
    const matched = await replay(t, loadFixture(`mcp-server-5.1.0/${session}.json`), reads)
    t.log(`${matched} server requests answered as recorded`)
    t.true(matched > 0)
  })
