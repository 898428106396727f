/**
 * A read of an entity this node does not hold yet waits for gossip, then looks it up in the mesh;
 * when the registration arrives by gossip meanwhile, the read answers at its arrival, not when the
 * lookup ends.
 */
import test from 'ava'
import { agent, developer, developerRegistration, specRegistration } from '../helpers/identities.js'
import { http, tcpAddress, testNodes } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const nodes = testNodes()
test.after.always(nodes.stopAll)

test('a read waiting on a network lookup answers as soon as gossip brings the entity', async t => {
  const mesh = { enabled: true, target_peers: 0, dht_announce_interval_seconds: 3600 }
  const a = await nodes.start({ host: 'a.registry.test', p2p: mesh })
  const b = await nodes.start({ host: 'b.registry.test', p2p: { ...mesh, bootstrap: [tcpAddress(a)] } })
  const c = await nodes.start({ host: 'c.registry.test', p2p: { ...mesh, bootstrap: [tcpAddress(a)] } })
  const owner = developer(57)
  t.is((await http(a.url, 'POST', '/v1/developers', { body: developerRegistration(owner) })).status, 201)
  await until('the developer reached B and C', async () =>
    (await Promise.all([b, c].map(n => http(n.url, 'GET', `/v1/developers/${owner.id}`)))).every(r => r.status === 200)
  )

  // Nodes in one process: the read may be handled after the record arrived, or its lookup may end
  // with a 404 first; then there was nothing to race, and the next entity is tried.
  const locator = b.node.mesh!.locator
  for (let index = 0; index < 5; index++) {
    const bot = agent(owner, index)
    const foundBefore = locator.stats.found
    const read = http(b.url, 'GET', `/v1/entities/${bot.agentId}`).then(r => ({ ...r, at: performance.now() }))
    // Time for B to handle the read and start waiting before the entity exists anywhere.
    await new Promise(resolve => setTimeout(resolve, 30))
    const posted = performance.now()
    t.is((await http(a.url, 'POST', '/v1/entities', { body: specRegistration(owner, bot) })).status, 201)
    const reply = await read
    t.log(`entity ${index}: read answered ${reply.status} ${Math.round(reply.at - posted)} ms after the POST was sent`)
    // 404: the lookup ended first; no `source`: the record was held before the read was handled.
    if (reply.status === 404 || reply.body.source === undefined) continue
    t.is(reply.status, 200, JSON.stringify(reply.body))
    t.is(reply.body.entity_id, bot.agentId)
    t.is(locator.stats.found, foundBefore, 'answered before the lookup found it: gossip brought it')
    return
  }
  t.fail('no read was pending on its lookup when its entity arrived')
})
