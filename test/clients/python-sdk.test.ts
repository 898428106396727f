/**
 * The zyndai Python SDK 0.6.1 (zyndai-agent): its registry client, search, name binding, agent and
 * service runtime (registration, heartbeats, the signed A2A card) and A2A client, as recorded
 * against a node (test/fixtures/clients/python-sdk-0.6.1/, docs/compatibility.md).
 */
import test from 'ava'
import { loadFixture, replay, type ReadSpec } from './replay.js'

/** What the SDK reads of each answer (zyndai_agent/, file:line). */
const reads: ReadSpec = {
  // dns_registry.py:116; base.py:489 falls back to PUT on a 409
  'POST /v1/entities': ['entity_id'],
  // dns_registry.py:128-135, compared field by field by base.py:409-422 and :657-674
  'GET /v1/entities/{id}': [
    'entity_id',
    'name',
    'entity_url',
    'category',
    'tags',
    'summary',
    'service_endpoint',
    'openapi_url'
  ],
  // entity_card_loader.py:143-145
  'GET /v1/developers/{id}': ['dev_handle', 'name', 'home_registry'],
  // search.py:95-96, AgentSearchResponse (search.py:17-30); get_entity_fqan (dns_registry.py:433-438)
  'POST /v1/search': [
    'total_found',
    'results[].entity_id',
    'results[].name',
    'results[].summary',
    'results[].category',
    'results[].tags',
    'results[].entity_url',
    'results[].home_registry',
    'results[].score',
    'results[].status',
    'results[].fqan'
  ],
  // dns_registry.py:352-359 returns the card whole
  'GET /v1/entities/{id}/card': ['name', 'url', 'preferredTransport', 'signatures'],
  // dns_registry.py:410
  'POST /v1/names': ['fqan']
}

for (const session of ['registry', 'runtime', 'a2a'] as const) {
  test.serial(`zyndai Python SDK 0.6.1, ${session} session: every request answers as the SDK reads it`, async t => {
    const fixture = loadFixture(`python-sdk-0.6.1/${session}.json`)
    const matched = await replay(t, fixture, reads)
    t.log(`${matched} SDK requests answered as recorded`)
    t.true(matched > 0)
  })
}
