/**
 * Attestations across real nodes: one accepted on A reaches B by gossip, a node that joins later
 * gets it by sync, and every node computes the same transitive scores.
 */
import { randomBytes } from 'node:crypto'
import test from 'ava'
import { agent, developer, developerRegistration, signSpec, specRegistration } from '../helpers/identities.js'
import { enc, http, tcpAddress, testNodes } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const nodes = testNodes()
test.after.always(nodes.stopAll)

test('an attestation reaches every node by gossip and by sync, and the scores are the same everywhere', async t => {
  const alice = developer(70)
  const bob = developer(71)
  const [a0, b0] = [agent(alice, 0), agent(bob, 0)]
  const mesh = { enabled: true, target_peers: 0, dht_announce_interval_seconds: 3600 }
  const trust = { seeds: [alice.id] }
  const a = await nodes.start({ host: 'a.registry.test', p2p: mesh, trust })
  const b = await nodes.start({ host: 'b.registry.test', p2p: { ...mesh, bootstrap: [tcpAddress(a)] }, trust })
  for (const dev of [alice, bob])
    t.is((await http(a.url, 'POST', '/v1/developers', { body: developerRegistration(dev) })).status, 201)
  for (const [dev, bot] of [
    [alice, a0],
    [bob, b0]
  ] as const)
    t.is((await http(a.url, 'POST', '/v1/entities', { body: specRegistration(dev, bot) })).status, 201)
  await until('both entities reached B', async () =>
    (await Promise.all([a0, b0].map(x => http(b.url, 'GET', `/v1/entities/${x.agentId}`)))).every(r => r.status === 200)
  )

  const statement = signSpec(a0.keyPair, {
    issuer: a0.agentId,
    subject: b0.agentId,
    kind: 'interaction',
    outcome: 'success',
    issued_at: new Date().toISOString(),
    nonce: randomBytes(16).toString('hex'),
    evidence: { message_id: 'call-1' }
  })
  const posted = await http(a.url, 'POST', '/v1/attestations', { body: statement })
  t.is(posted.status, 201, JSON.stringify(posted.body))
  const id: string = posted.body.attestation_id
  await until(
    'B holds the attestation (gossip)',
    async () => (await http(b.url, 'GET', `/v1/attestations/${enc(id)}`)).status === 200
  )

  const c = await nodes.start({ host: 'c.registry.test', p2p: { ...mesh, bootstrap: [tcpAddress(b)] }, trust })
  await until(
    'C, started later, holds the attestation (sync)',
    async () => (await http(c.url, 'GET', `/v1/attestations/${enc(id)}`)).status === 200
  )
  let explained = await Promise.all([a, b, c].map(n => http(n.url, 'GET', `/v1/entities/${enc(b0.agentId)}/trust`)))
  await until('every node has computed the scores', async () => {
    explained = await Promise.all([a, b, c].map(n => http(n.url, 'GET', `/v1/entities/${enc(b0.agentId)}/trust`)))
    return explained.every(r => r.status === 200 && r.body.transitive > 0)
  })
  t.deepEqual(explained[1]!.body, explained[0]!.body)
  t.deepEqual(explained[2]!.body, explained[0]!.body)
})
