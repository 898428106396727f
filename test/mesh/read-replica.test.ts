/**
 * A read-only replica (`replica_of`) of another node's registry, as behind a load balancer: it
 * serves the registry's entities, search and names (short form, FQAN, by ID) from what the mesh
 * brings, and refuses writes, onboarding and heartbeats with 503 read_only_replica naming the
 * registry's own node.
 */
import test from 'ava'
import { agent, developer, developerRegistration, signSpec, specRegistration } from '../helpers/identities.js'
import { heartbeatOnce, http, tcpAddress, testNodes, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const HOST = 'registry.example.test'
const nodes = testNodes()
test.after.always(nodes.stopAll)

let primary: TestNode
let replica: TestNode

test.before(async () => {
  const mesh = { enabled: true, sync_interval_seconds: 5, dht_announce_interval_seconds: 0.05 }
  primary = await nodes.start({ host: HOST, name: 'primary', p2p: mesh })
  replica = await nodes.start({
    host: HOST,
    name: 'replica',
    replica_of: primary.url,
    p2p: { ...mesh, bootstrap: [tcpAddress(primary)] }
  })
})

test.serial("the replica answers the registry's reads, names included, and refuses its writes", async t => {
  const owner = developer(71)
  const bot = agent(owner, 0)
  t.is((await http(primary.url, 'POST', '/v1/developers', { body: developerRegistration(owner) })).status, 201)
  const claim = signSpec(owner.keyPair, { developer_id: owner.id, handle: 'acme', public_key: owner.publicKey })
  t.is((await http(primary.url, 'POST', '/v1/handles', { body: claim })).status, 201)
  const registration = specRegistration(owner, bot, { entity_name: 'translator', summary: 'translates text' })
  const created = await http(primary.url, 'POST', '/v1/entities', { body: registration })
  t.is(created.status, 201, JSON.stringify(created.body))

  const resolved = await until('the replica resolves the short form', async () => {
    const r = await http(replica.url, 'GET', '/v1/resolve/acme/translator')
    return r.status === 200 ? r.body : undefined
  })
  t.is(resolved.entity_id, bot.agentId)
  t.is(resolved.fqan, `${HOST}/acme/translator`)
  const byFqan = await http(replica.url, 'GET', `/v1/resolve?fqan=${encodeURIComponent(`${HOST}/acme/translator`)}`)
  t.is(byFqan.body.entity_id, bot.agentId)
  t.is((await http(replica.url, 'GET', `/v1/resolve/agent/${bot.agentId}`)).body.fqan, `${HOST}/acme/translator`)
  const found = await until('the replica finds it by search', async () => {
    const r = await http(replica.url, 'POST', '/v1/search', { body: { query: 'translates' } })
    return r.body.results?.length ? r.body.results : undefined
  })
  t.is(found[0].entity_id, bot.agentId)

  // Writes: the replica names where they go, and keeps nothing of them.
  const other = agent(owner, 1)
  for (const [method, path, body] of [
    ['POST', '/v1/entities', specRegistration(owner, other, { entity_name: 'second' })],
    ['POST', '/v1/developers', developerRegistration(developer(72))],
    ['POST', '/v1/handles', claim],
    ['POST', '/v1/onboarding/request?state=0123456789abcdef', undefined]
  ] as const) {
    const r = await http(replica.url, method, path, body === undefined ? {} : { body })
    t.is(r.status, 503, `${method} ${path}`)
    t.is(r.body.error, 'read_only_replica')
    t.is(r.body.primary_url, primary.url)
  }
  t.is((await http(replica.url, 'GET', `/v1/entities/${other.agentId}`)).status, 404)
  // Heartbeats belong to the entity's home registry, which the replica is not.
  const refused = await heartbeatOnce(replica.url, bot).then(
    ack => new Error(`acknowledged: ${JSON.stringify(ack)}`),
    (err: Error) => err
  )
  t.regex(refused.message, /421/)
})
