import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { canonicalJson } from '../../src/identity/canonical-json.js'
import { sign } from '../../src/identity/keys.js'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { startHttpsServer } from '../helpers/https-server.js'
import { http, startTestNode } from '../helpers/node.js'

test('enrich fetches live cards for the page; card skills feed the skills filter; /card proxies with verification', async t => {
  const dev = developer(41)
  const a = agent(dev, 1)
  const card: Record<string, unknown> = {
    entity_id: a.agentId,
    version: '1.0.0',
    skills: [{ id: 'poetry', name: 'Poetry writing', tags: ['verse'] }]
  }
  card.signature = sign(a.keyPair, canonicalJson(card))
  let hits = 0
  const server = await startHttpsServer((req, res) => {
    hits++
    if (req.url === '/.well-known/agent-card.json') {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(card))
    } else {
      res.statusCode = 404
      res.end()
    }
  })
  const dir = await mkdtemp(join(tmpdir(), 'cards-'))
  const caFile = join(dir, 'ca.pem')
  await writeFile(caFile, server.certPem)
  // Card fetches get 20 s (5 s by default): the HTTPS stand-in answers at once, a busy machine may be slow to get there.
  const n = await startTestNode({ cards: { allow_private_addresses: true, ca_file: caFile, timeout_ms: 20_000 } })
  try {
    t.is(
      (
        await http(n.url, 'POST', '/v1/entities', {
          body: specRegistration(dev, a, { name: 'Muse', summary: 'Writes things', entity_url: server.url })
        })
      ).status,
      201
    )
    await n.node.search.idle()
    t.is(
      (await http(n.url, 'POST', '/v1/search', { body: { skills: ['poetry'] } })).body.total_found,
      0,
      'no card cached yet'
    )
    const enriched = await http(n.url, 'POST', '/v1/search', {
      body: { query: 'muse', enrich: true, timeout_ms: 20_000 }
    })
    t.is(enriched.status, 200)
    t.deepEqual(enriched.body.results[0].card, card)
    t.is(enriched.body.results[0].card_verification, 'verified')
    t.is(
      (await http(n.url, 'POST', '/v1/search', { body: { skills: ['poetry'] } })).body.total_found,
      1,
      'the cached card declares the skill'
    )
    const proxied = await http(n.url, 'GET', `/v1/entities/${a.agentId}/card`)
    t.is(proxied.status, 200)
    t.deepEqual(proxied.body, card)
    t.is(proxied.headers.get('x-card-verification'), 'verified')
    t.is(hits, 1, 'served from the 1-hour cache')
  } finally {
    await n.stop()
    await server.close()
    await rm(dir, { recursive: true, force: true })
  }
})

test('the card proxy refuses loopback entity URLs unless the operator allows them', async t => {
  const dev = developer(42)
  const a = agent(dev, 1)
  const n = await startTestNode()
  try {
    await http(n.url, 'POST', '/v1/entities', { body: specRegistration(dev, a, { entity_url: 'https://127.0.0.1:9' }) })
    const res = await http(n.url, 'GET', `/v1/entities/${a.agentId}/card`)
    t.like(res, { status: 502, body: { error: 'card_address_refused' } })
    const enriched = await http(n.url, 'POST', '/v1/search', { body: { developer_id: dev.id, enrich: true } })
    t.is(enriched.body.results[0].card, null)
    t.truthy(enriched.body.results[0].card_error)
  } finally {
    await n.stop()
  }
})
