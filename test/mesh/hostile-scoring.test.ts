/**
 * Gossip peer scoring against a hostile node, with real nodes on loopback: C is a registry node
 * whose libp2p node publishes replayed client signatures, registrations over its entity total on
 * A and B, and forged operations. A and B score it down, graylist it, hang up and refuse it, while
 * their own writes keep reaching each other.
 */
import test from 'ava'
import { GOSSIP_TOPICS, topicOf } from '../../src/mesh/gossip.js'
import { SCORE_THRESHOLDS, scoreOf } from '../../src/mesh/scoring.js'
import { sealOperation } from '../../src/services/registry/operations.js'
import type { Operation } from '../../src/store/records.js'
import { encodeBatch, encodeOperation } from '../../src/wire/operations.js'
import { agent, developer, sign, specRegistration } from '../helpers/identities.js'
import { scrape } from '../helpers/metrics.js'
import { http, tcpAddress, testNodes, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const MESH = { enabled: true, sync_interval_seconds: 5, dht_announce_interval_seconds: 0.05 }
const dev = developer(57)
const nodes = testNodes()
test.after.always(nodes.stopAll)

const served = async (n: TestNode, id: string): Promise<boolean> =>
  (await http(n.url, 'GET', `/v1/entities/${id}`)).status === 200

test('a node publishing replayed, over-quota and forged operations is graylisted and disconnected; honest gossip goes on', async t => {
  // A and B keep at most 3 entities homed at another registry: C's 4th and 5th are over its total.
  const honest = { ...MESH, max_entities_per_origin: 3 }
  const a = await nodes.start({ name: 'node-a', host: 'a.registry.test', metrics: { enabled: true }, p2p: honest })
  const b = await nodes.start({
    name: 'node-b',
    host: 'b.registry.test',
    p2p: { ...honest, bootstrap: [tcpAddress(a)] }
  })
  const c = await nodes.start({
    name: 'node-c',
    host: 'c.registry.test',
    p2p: { ...MESH, bootstrap: [tcpAddress(a), tcpAddress(b)] }
  })
  const cId = c.node.mesh!.peerId
  for (const n of [a, b, c])
    await until(`${n.config.name} has two peers on every gossip topic`, () => {
      const pubsub = n.node.mesh!.libp2p.services.pubsub
      return Object.values(GOSSIP_TOPICS).every(topic => pubsub.getSubscribers(topic).length === 2) ? true : undefined
    })
  const scoreOfC = [a, b].map(n => scoreOf(n.node.mesh!.libp2p.services.pubsub))
  const scoreOn = (i: number): number => (scoreOfC[i] as (p: string) => number)(cId)
  const scores = (): string => [a, b].map((n, i) => `${n.config.name} ${scoreOn(i).toFixed(2)}`).join(', ')
  /** Gossipsub recomputes scores once a heartbeat (1 s): waits until both have taken in what C did. */
  const untilScores = (what: string, below: number) =>
    until(`C's score below ${below} on A and B (${what})`, () => scoreOn(0) < below && scoreOn(1) < below, {
      detail: scores
    })
  const connectedToC = (n: TestNode): boolean =>
    n.node.mesh!.libp2p.getConnections().some(x => x.remotePeer.toString() === cId)

  // C's own entity, updated twice: the first update's client signature is what C replays.
  const x = agent(dev, 0)
  t.is((await http(c.url, 'POST', '/v1/entities', { body: specRegistration(dev, x) })).status, 201)
  const edit = async (summary: string): Promise<void> => {
    const raw = JSON.stringify({ summary })
    const res = await http(c.url, 'PUT', `/v1/entities/${x.agentId}`, {
      raw,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${sign(x.keyPair, raw)}` }
    })
    t.is(res.status, 200)
  }
  await edit('one')
  const captured = c.node.store.operationsOf(x.agentId).find(op => op.kind === 'entity.update') as Operation
  await edit('two')
  for (const n of [a, b])
    await until(`${n.config.name} shows the second edit`, async () =>
      (await http(n.url, 'GET', `/v1/entities/${x.agentId}`)).body.summary === 'two' ? true : undefined
    )
  t.log(`before: C's score on ${scores()}`)

  const pubsub = c.node.mesh!.libp2p.services.pubsub
  const publish = (op: Operation) => pubsub.publish(topicOf(op.kind), encodeBatch([encodeOperation(op)]))
  const started = Date.now()

  // 1. Replayed: the captured update sealed again as a new write, three times (three messages).
  const replayedBefore = [a, b].map(n => n.node.replication.staleReasons.replayed)
  for (let i = 0; i < 3; i++)
    await publish(sealOperation(c.node.identity, { ...captured, accepted_at: new Date(Date.now() + i).toISOString() }))
  for (const [i, n] of [a, b].entries())
    await until(`${n.config.name} refused three replays`, () =>
      n.node.replication.staleReasons.replayed - (replayedBefore[i] as number) >= 3 ? true : undefined
    )
  // Three replays cost −2 × 3² (a little less as the count decays): above the gossip threshold.
  await untilScores('3 replays', -15)
  t.log(`after 3 replays (+${Date.now() - started} ms): C's score on ${scores()}`)
  for (let i = 0; i < 2; i++) t.true(scoreOn(i) > SCORE_THRESHOLDS.gossipThreshold)
  for (const n of [a, b]) t.true(connectedToC(n), `${n.config.name} still talks to C after a few replays`)

  // 2. Over quota: C's 2nd and 3rd entities are kept, its 4th and 5th refused for good (rejected).
  const refusedBefore = [a, b].map(n => n.node.replication.counts.refused)
  for (let i = 1; i <= 4; i++) {
    t.is((await http(c.url, 'POST', '/v1/entities', { body: specRegistration(dev, agent(dev, i)) })).status, 201)
    if (i <= 2)
      for (const n of [a, b])
        await until(`${n.config.name} holds C's entity ${i}`, () => served(n, agent(dev, i).agentId))
  }
  for (const [i, n] of [a, b].entries())
    await until(`${n.config.name} refused C's registrations over its total`, () =>
      n.node.replication.counts.refused - (refusedBefore[i] as number) >= 2 ? true : undefined
    )
  // Two rejected messages: −10 × 2² more, below the publish threshold, above the graylist.
  await untilScores('2 over-quota registrations', -50)
  t.log(`after 2 over-quota registrations (+${Date.now() - started} ms): C's score on ${scores()}`)
  for (const [i, n] of [a, b].entries()) {
    t.true(scoreOn(i) > SCORE_THRESHOLDS.graylistThreshold)
    t.true(connectedToC(n), `${n.config.name} still talks to C`)
  }

  // 3. Forged: registrations sealed by C for entities whose owner never signed them.
  const forgedAt = Date.now()
  const register = c.node.store.operationsOf(x.agentId).find(op => op.kind === 'entity.register') as Operation
  const registerBody = JSON.parse(Buffer.from(register.body as Uint8Array).toString('utf8')) as Record<string, unknown>
  for (let i = 10; i < 14 && [a, b].some(connectedToC); i++) {
    const victim = agent(dev, i)
    await publish(
      sealOperation(c.node.identity, {
        ...register,
        subject: victim.agentId,
        body: Buffer.from(JSON.stringify({ ...registerBody, public_key: victim.publicKey, summary: 'Forged' })),
        accepted_at: new Date().toISOString()
      })
    ).catch(() => {})
  }

  // Graylisted and disconnected by both, within a bound.
  const disconnectedAt: number[] = []
  for (const n of [a, b]) {
    await until(`${n.config.name} hung up on C`, () => !connectedToC(n), 15_000)
    disconnectedAt.push(Date.now() - forgedAt)
  }
  t.log(
    `disconnected from C ${disconnectedAt[0]} ms (A), ${disconnectedAt[1]} ms (B) after its first forgery (+${Date.now() - started} ms from its first replay); C's score on ${scores()}`
  )
  for (const [i, n] of [a, b].entries()) {
    t.true(
      (scoreOfC[i] as (p: string) => number)(cId) < SCORE_THRESHOLDS.graylistThreshold,
      `${n.config.name} graylisted C`
    )
    t.true(
      n.node.mesh!.scoreGuard.graylisted().some(g => g.peer_id === cId),
      `${n.config.name} lists C as graylisted`
    )
  }
  // The score is recomputed each heartbeat (1 s) and checked each second: about 2 s, 15 s on a loaded machine.
  t.true(Math.max(...disconnectedAt) < 15_000)

  const metrics = await scrape(a.url)
  t.is(metrics.value('registry_gossip_graylisted_peers'), 1)
  t.true((metrics.value('registry_gossip_graylist_disconnects_total') as number) >= 1)

  // C cannot come back while its score has not recovered.
  const again = await c.node.mesh!.addPeer(tcpAddress(a)).then(
    () => 'connected',
    (err: Error) => err.message
  )
  t.not(again, 'connected', 'A refuses C')
  t.log(`C dialling A again: ${again}`)
  t.false(connectedToC(a))

  // Honest writes still travel between A and B, both ways.
  const fromA = agent(developer(58), 0)
  const fromB = agent(developer(59), 0)
  t.is((await http(a.url, 'POST', '/v1/entities', { body: specRegistration(developer(58), fromA) })).status, 201)
  t.is((await http(b.url, 'POST', '/v1/entities', { body: specRegistration(developer(59), fromB) })).status, 201)
  const honestAt = Date.now()
  await until('B holds the registration made on A', () => served(b, fromA.agentId))
  await until('A holds the registration made on B', () => served(a, fromB.agentId))
  t.log(`honest registrations reached the other node in ${Date.now() - honestAt} ms`)
  const honestScores = [
    scoreOf(a.node.mesh!.libp2p.services.pubsub)(b.node.mesh!.peerId),
    scoreOf(b.node.mesh!.libp2p.services.pubsub)(a.node.mesh!.peerId)
  ]
  t.log(`honest scores: B on A ${honestScores[0]?.toFixed(2)}, A on B ${honestScores[1]?.toFixed(2)}`)
  for (const s of honestScores) t.true((s as number) >= 0)
  const listed = (await http(a.url, 'GET', '/v1/network/peers')).body as {
    peers: { peer_id: string; gossip_score: number | null }[]
  }
  const bOnA = listed.peers.find(p => p.peer_id === b.node.mesh!.peerId)
  t.is(typeof bOnA?.gossip_score, 'number', "A's peer list shows its score of B")
  t.log(`GET /v1/network/peers on A: B's gossip_score ${bOnA?.gossip_score}`)
})

test('sync sessions beyond the per-peer limit are answered busy', async t => {
  const a = await nodes.start({
    name: 'sync-a',
    metrics: { enabled: true },
    p2p: { ...MESH, sync_max_per_peer_per_minute: 2 }
  })
  const b = await nodes.start({ name: 'sync-b', p2p: { ...MESH, bootstrap: [tcpAddress(a)] } })
  const aId = a.node.mesh!.libp2p.peerId
  await until('B is connected to A', () => b.node.mesh!.libp2p.getConnections(aId).length > 0)
  const sync = a.node.mesh!.sync
  const results: string[] = []
  for (let i = 0; i < 4; i++) {
    const result = await b.node.mesh!.sync.syncWith(aId)
    results.push(result ? 'completed' : 'refused')
  }
  t.log(`B's sessions with A: ${results.join(', ')}; A refused ${sync.totals.over_limit} over the limit`)
  // At most 2 of B's sessions in a minute are answered (one may already have run on connection).
  t.true(results.filter(r => r === 'completed').length <= 2)
  t.is(results.at(-1), 'refused')
  t.true(sync.totals.over_limit >= 2)
  t.is((await scrape(a.url)).value('registry_sync_sessions_total', { outcome: 'over_limit' }), sync.totals.over_limit)
  // A's own sessions with B are not limited by its limit on B.
  t.truthy(await sync.syncWith(b.node.mesh!.libp2p.peerId))
})
