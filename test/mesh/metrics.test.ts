/**
 * /metrics of two real meshed nodes: peers, gossip, replication, sync and DHT lookups move; and
 * every metric name the docs and the example dashboard name is one the node exports.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import test from 'ava'
import { GOSSIP_TOPICS } from '../../src/mesh/gossip.js'
import { sealOperation } from '../../src/services/registry/operations.js'
import type { Operation } from '../../src/store/records.js'
import { encodeBatch, encodeOperation } from '../../src/wire/operations.js'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { scrape, type Scrape } from '../helpers/metrics.js'
import { http, tcpAddress, testNodes, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const MESH = { enabled: true, sync_interval_seconds: 5, dht_announce_interval_seconds: 0.05 }
const dev = developer(72)
const nodes = testNodes()
let a: TestNode
let b: TestNode

test.before(async () => {
  a = await nodes.start({ name: 'node-a', host: 'a.registry.test', metrics: { enabled: true }, p2p: MESH })
  b = await nodes.start({
    name: 'node-b',
    host: 'b.registry.test',
    metrics: { enabled: true },
    p2p: { ...MESH, bootstrap: [tcpAddress(a)] }
  })
  // Each subscribed to every topic of the other: a publication reaches it by gossip, not only by sync.
  for (const n of [a, b])
    await until(`${n.config.name} has its peer on every gossip topic`, () => {
      const pubsub = n.node.mesh!.libp2p.services.pubsub
      return Object.values(GOSSIP_TOPICS).every(topic => pubsub.getSubscribers(topic).length === 1) ? true : undefined
    })
})
test.after.always(() => nodes.stopAll())

/** Scrapes `n` until `ok` holds for what it reads; the last scrape. */
const scrapeUntil = (n: TestNode, what: string, ok: (s: Scrape) => boolean): Promise<Scrape> =>
  until(`${n.config.name}: ${what}`, async () => {
    const s = await scrape(n.url)
    return ok(s) ? s : undefined
  })

test.serial(
  'a registration on A shows on B as a peer, an accepted gossip message and an applied operation',
  async t => {
    const first = await scrape(b.url)
    t.true(first.value('registry_mesh_peers') >= 1, 'B counts A among its peers')
    t.true(first.value('registry_mesh_connections', { transport: 'tcp' }) >= 1)
    t.true(first.value('registry_mesh_known_peers') >= 1)

    const reg = await http(a.url, 'POST', '/v1/entities', { body: specRegistration(dev, agent(dev, 0)) })
    t.is(reg.status, 201, JSON.stringify(reg.body))
    const onB = await scrapeUntil(
      b,
      'gossip applied the registration',
      s => s.value('registry_gossip_operations_received_total', { outcome: 'applied' }) >= 1
    )
    t.true(onB.value('registry_gossip_messages_received_total', { outcome: 'accepted' }) >= 1)
    t.true(onB.value('registry_gossip_copies_received_total') >= 1)
    t.true(onB.value('registry_replication_operations_total', { outcome: 'applied' }) >= 1)
    t.true(onB.value('registry_gossip_rpc_bytes_total', { direction: 'received' }) > 0)
    const onA = await scrape(a.url)
    t.true(onA.value('registry_gossip_operations_published_total') >= 1)
    t.true(onA.value('registry_gossip_messages_published_total') >= 1)
    t.is(onA.value('registry_gossip_operations_received_total', { outcome: 'invalid' }), 0)
  }
)

test.serial('a forged operation and a duplicate relayed by A count as rejected, invalid and stale on B', async t => {
  const registered = agent(dev, 0)
  const original = a.node.store.operationsOf(registered.agentId).find(op => op.kind === 'entity.register') as Operation
  const body = JSON.parse(Buffer.from(original.body as Uint8Array).toString('utf8')) as Record<string, unknown>
  // Sealed by A as its own, but the owner's signature is over another key: B must refuse it.
  const other = agent(dev, 1)
  const forged = sealOperation(a.node.identity, {
    ...original,
    subject: other.agentId,
    body: Buffer.from(JSON.stringify({ ...body, public_key: other.publicKey })),
    accepted_at: new Date().toISOString()
  })
  const before = await scrape(b.url)
  const count = (s: Scrape) => ({
    rejected: s.value('registry_gossip_messages_received_total', { outcome: 'rejected' }),
    invalid: s.value('registry_replication_operations_total', { outcome: 'invalid' }),
    duplicate: s.value('registry_replication_stale_operations_total', { reason: 'duplicate' })
  })
  const was = count(before)
  // One message: the registration B already holds, and the forgery.
  await a.node.mesh!.libp2p.services.pubsub.publish(
    GOSSIP_TOPICS.entities,
    encodeBatch([original, forged].map(encodeOperation))
  )
  const after = await scrapeUntil(b, 'the message was rejected', s => count(s).rejected > was.rejected)
  const now = count(after)
  t.is(now.invalid - was.invalid, 1, 'the forgery is invalid')
  t.is(now.duplicate - was.duplicate, 1, 'the registration was a duplicate')
  t.is((await http(b.url, 'GET', `/v1/entities/${encodeURIComponent(other.agentId)}`)).status, 404)
})

test.serial('sync sessions and DHT lookups are counted', async t => {
  // The side with the lower peer ID opens a session when the connection opens; either side counts it.
  await until('a sync session completed', async () => {
    const [x, y] = await Promise.all([scrape(a.url), scrape(b.url)])
    const done = (s: Scrape) => s.value('registry_sync_sessions_total', { outcome: 'completed' })
    return done(x) >= 1 && done(y) >= 1 ? true : undefined
  })
  // An ID held nowhere: B asks the DHT for its home's records, finds none, and answers 404.
  const before = (await scrape(b.url)).value('registry_dht_lookups_total')
  const missing = agent(developer(73), 0)
  t.is((await http(b.url, 'GET', `/v1/entities/${encodeURIComponent(missing.agentId)}`)).status, 404)
  const after = await scrape(b.url)
  t.true(after.value('registry_dht_lookups_total') > before, 'the lookup is counted')
  t.is(after.value('registry_dht_lookups_total', { outcome: 'found' }), 0)
})

/** Metric names in a text: the node's prefixes, minus the API's fields that share one. */
function metricNames(text: string): string[] {
  const fields = new Set(['registry_id', 'registry_ids', 'registry_url'])
  return [...new Set(text.match(/\b(?:registry|process|nodejs)_[a-z0-9_]*[a-z0-9]\b/g) ?? [])].filter(
    name => !fields.has(name)
  )
}

async function markdownFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true })
  return entries.filter(e => e.isFile() && e.name.endsWith('.md')).map(e => join(e.parentPath, e.name))
}

test('every metric the docs and the example dashboard name is exported by a node', async t => {
  const exported = await scrape(b.url)
  const dashboard = JSON.parse(await readFile('docs/examples/grafana-dashboard.json', 'utf8')) as {
    panels: { title: string; type: string; targets?: { expr: string }[] }[]
  }
  const exprs = dashboard.panels.flatMap(p => (p.targets ?? []).map(target => ({ panel: p.title, expr: target.expr })))
  t.true(exprs.length >= 15, 'the dashboard has its panels')
  for (const { panel, expr } of exprs) {
    const names = metricNames(expr)
    t.true(names.length > 0, `panel ${panel} queries a metric`)
    for (const name of names) t.true(exported.declares(name), `panel ${panel}: ${name} is exported`)
  }
  const texts = [
    'docs/examples/prometheus.yml',
    'README.md',
    ...(await markdownFiles('docs')).filter(f => !f.endsWith('decisions.md'))
  ]
  let named = 0
  for (const file of texts)
    for (const name of metricNames(await readFile(file, 'utf8'))) {
      named++
      t.true(exported.declares(name), `${file}: ${name} is exported`)
    }
  t.true(named > 30, 'the reference names the metrics')
})
