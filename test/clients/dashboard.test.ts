/**
 * The zyndai dashboard (the Next.js site that proxies a node from its server routes): the registry
 * browser, search, entity pages, live cards, network panel, names and handle checks, as recorded
 * against a node (test/fixtures/clients/dashboard/, docs/compatibility.md).
 */
import test from 'ava'
import { loadFixture, replay, type ReadSpec } from './replay.js'

const entityFields = ['entity_id', 'name', 'category', 'tags', 'summary', 'status', 'owner', 'entity_type']

/** What the dashboard reads of each answer (src/, file:line). */
const reads: ReadSpec = {
  // app/api/registry/categories/route.ts:21-24: only the strings of data.categories
  'GET /v1/categories': ['categories'],
  // app/api/registry/entities/route.ts:39-49; lib/landing/featuredAgents.ts:41-60, 96-119
  'GET /v1/entities': [
    'count',
    ...entityFields.map(f => `entities[].${f}`),
    'entities[].entity_pricing',
    'entities[].last_heartbeat'
  ],
  // app/api/registry/search/route.ts:62-73
  'POST /v1/search': ['total_found', 'offset', 'has_more', ...entityFields.map(f => `results[].${f}`)],
  // components/AgentDetailPage.tsx:229-458
  'GET /v1/entities/{id}': [
    ...entityFields,
    'entity_url',
    'registered_at',
    'home_registry',
    'developer_handle',
    'fqan',
    'public_key',
    'last_heartbeat',
    'schema_version'
  ],
  // AgentDetailPage.tsx:376-420 (the card as lib/api/agentdns.ts:88-125 types it)
  'GET /v1/entities/{id}/card': ['skills[].name', 'description', 'url'],
  // AgentDetailPage.tsx:469-477, lib/api/agentdns.ts:76-86
  'GET /v1/network/status': ['uptime', 'local_agents', 'peer_count', 'gossip_entries', 'cached_cards', 'node_type'],
  // components/Hero.tsx:15-18
  'GET /v1/network/stats': ['estimated_agents'],
  // app/api/zns/names/route.ts:45-50; app/api/developer/register/route.ts:126-127
  'GET /v1/developers/{id}': ['dev_handle'],
  // app/api/zns/names/route.ts:63-64: the array of bindings
  'GET /v1/handles/{h}/agents': ['[].entity_name', '[].entity_id'],
  // app/api/entities/sync/route.ts:168-214: `agents`, not `entities`
  'GET /v1/developers/{id}/entities': [
    'agents[].entity_id',
    'agents[].name',
    'agents[].fqan',
    'agents[].pricing_model'
  ],
  // app/api/developer/username-check/route.ts:72-79
  'GET /v1/handles/{h}/available': ['available', 'reason']
}

test.serial('zyndai dashboard 0e01f73, browse session: every node answer as the dashboard reads it', async t => {
  const matched = await replay(t, loadFixture('dashboard/browse.json'), reads)
  t.log(`${matched} dashboard requests answered as recorded`)
  t.true(matched > 0)
})
