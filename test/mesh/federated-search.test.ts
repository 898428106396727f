/**
 * Federated search on loopback with real nodes: A asks the peers whose term filters match. B holds
 * an entity no other node has, C holds only unrelated words, D is a node process that stops
 * answering (SIGSTOP: its connections stay open, as with a hung or partitioned machine).
 *
 * Entities meant to stay on one node are planted straight into that node's store, without an
 * operation: gossip and sync carry operations, so replication leaves them where they are.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import type { RegistryEvent } from '../../src/events/bus.js'
import { formatKey } from '../../src/identity/encoding.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed } from '../../src/identity/keys.js'
import { analyze } from '../../src/search/analyzer.js'
import { TermFilter } from '../../src/search/term-filter.js'
import { spawnNode, type NodeProcess } from '../../scripts/lib/node-process.js'
import { storedEntity } from '../../scripts/lib/stored-records.js'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { http, startTestNode, tcpAddress, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const MESH = { enabled: true }
// Filters are rebuilt 100 ms after a change instead of 5 s. Peers get 20 s to answer a federated
// search that names no timeout_ms (1.5 s by default): the nodes share this busy test process.
const SEARCH = { bloom_rebuild_interval_ms: 100, federation_timeout_ms: 20_000 }
let a: TestNode
let b: TestNode
let c: TestNode
let d: NodeProcess | null = null
let dData = ''
let dPeerId = ''
let onB = ''
const eventsOfA: RegistryEvent[] = []
const eventsOfB: RegistryEvent[] = []

/** An active agent homed on `n`, written to its store only (no operation: it never replicates). */
async function plant(n: TestNode, name: string, summary: string, category = 'tools'): Promise<string> {
  const key = keyPairFromSeed(randomBytes(32))
  const id = deriveId('agent', key.publicKey)
  const record = storedEntity({
    entity_id: id,
    name,
    category,
    summary,
    public_key: formatKey(key.publicKey),
    home_registry: n.config.host,
    home_registry_id: n.node.identity.registryId
  })
  await n.node.store.commit(tx => tx.putEntity(record))
  n.node.bus.publish('agent_registered', { entity_id: id })
  return id
}

/** True once A holds a filter from the peer that contains the word's term. */
function filterAtAHas(peerId: string, word: string): boolean {
  const peer = a.node.mesh!.federation!.peers().find(p => p.peerId === peerId)
  if (!peer?.filter) return false
  const filter = TermFilter.decode(peer.filter, Buffer.from(peer.filter.filter, 'base64'))
  return filter.has(analyze(word)[0]!)
}

const search = async (n: TestNode, body: Record<string, unknown>) => {
  const started = performance.now()
  const reply = await http(n.url, 'POST', '/v1/search', { body })
  if (reply.status !== 200) throw new Error(`search: ${reply.status} ${JSON.stringify(reply.body)}`)
  return { body: reply.body, ms: performance.now() - started }
}

test.before(async () => {
  a = await startTestNode({ name: 'node-a', host: 'a.registry.test', p2p: MESH, search: SEARCH })
  a.node.bus.subscribe(e => {
    if (e.type.startsWith('search_')) eventsOfA.push(e)
  })
  ;[b, c] = await Promise.all([
    startTestNode({
      name: 'node-b',
      host: 'b.registry.test',
      p2p: { ...MESH, bootstrap: [tcpAddress(a)] },
      search: SEARCH
    }),
    startTestNode({
      name: 'node-c',
      host: 'c.registry.test',
      p2p: { ...MESH, bootstrap: [tcpAddress(a)] },
      search: SEARCH
    })
  ])
  b.node.bus.subscribe(e => {
    if (e.type.startsWith('search_')) eventsOfB.push(e)
  })
  onB = await plant(b, 'Quokka Oracle', 'Forecasts zyxquokka migrations for wildlife parks')
  await plant(c, 'Plumbus Maker', 'Builds plumbus units', 'finance')
  await until('A holds the filters of B and C with their planted words', () =>
    filterAtAHas(b.node.mesh!.peerId, 'zyxquokka') && filterAtAHas(c.node.mesh!.peerId, 'plumbus') ? true : undefined
  )
})

test.after.always(async () => {
  if (d) {
    d.child.kill('SIGCONT')
    d.child.kill('SIGKILL')
    await d.exited
  }
  if (dData) await rm(dData, { recursive: true, force: true })
  await Promise.all([a, b, c].filter(Boolean).map(n => n.stop()))
})

test.serial(
  'a federated search finds an entity only one peer holds; B answers from its own index and asks nobody',
  async t => {
    const local = await search(a, { query: 'zyxquokka' })
    t.is(local.body.total_found, 0, 'A itself does not hold it')
    t.is(local.body.search_stats.federated, undefined)

    const eventsBefore = eventsOfA.length
    const { body } = await search(a, { query: 'zyxquokka', federated: true })
    t.deepEqual(
      body.results.map((r: any) => r.entity_id),
      [onB]
    )
    const hit = body.results[0]
    t.is(hit.name, 'Quokka Oracle')
    t.is(hit.home_registry, 'b.registry.test')
    t.is(hit.source_registry_id, b.node.identity.registryId)
    t.is(hit.public_key, undefined, 'the wire-only members stay off the HTTP reply')
    t.is(hit.home, undefined)
    t.is(body.total_found, 1)
    t.is(body.federated_peer_count, 1)
    const stats = body.search_stats
    t.like(stats, {
      federated: true,
      local_results: 0,
      federated_results: 1,
      peers_queried: 1,
      peers_answered: 1,
      peers_failed: 0,
      peers_timed_out: 0,
      peers_skipped: 1
    })
    t.like(stats.peers[0], {
      peer_id: b.node.mesh!.peerId,
      registry_id: b.node.identity.registryId,
      name: 'node-b',
      outcome: 'answered',
      results: 1,
      total_found: 1
    })

    const mine = eventsOfA.slice(eventsBefore)
    t.like(mine.find(e => e.type === 'search_outgoing')?.data, { peer: b.node.mesh!.peerId, query: 'zyxquokka' })
    t.like(mine.find(e => e.type === 'search_result_incoming')?.data, {
      peer: b.node.mesh!.peerId,
      outcome: 'answered',
      results: 1
    })
    t.is(b.node.mesh!.federation!.protocol.answered, 1)
    t.false(
      eventsOfB.some(e => e.type === 'search_outgoing'),
      'B answered without asking anyone'
    )
  }
)

test.serial('a peer whose filter does not match is not asked', async t => {
  const answeredByC = c.node.mesh!.federation!.protocol.answered
  const { body } = await search(a, { query: 'plumbus', federated: true, type: 'any' })
  t.deepEqual(
    body.results.map((r: any) => r.name),
    ['Plumbus Maker']
  )
  t.deepEqual(
    body.search_stats.peers.map((p: any) => p.name),
    ['node-c']
  )
  t.is(body.search_stats.peers_skipped, 1, 'B ruled out by its filter')
  t.is(c.node.mesh!.federation!.protocol.answered, answeredByC + 1)

  const answeredByB = b.node.mesh!.federation!.protocol.answered
  const none = await search(a, { query: 'platypus', federated: true })
  t.is(none.body.search_stats.peers_queried, 0)
  t.is(none.body.search_stats.peers_skipped, 2)
  t.is(b.node.mesh!.federation!.protocol.answered, answeredByB)
  t.is(c.node.mesh!.federation!.protocol.answered, answeredByC + 1)

  // Conjunctive filters route too: C's filter lacks "tools", the category of B's entity.
  const byCategory = await search(a, { category: 'finance', federated: true })
  t.deepEqual(
    byCategory.body.search_stats.peers.map((p: any) => p.name),
    ['node-c']
  )
})

test.serial('a dead peer is reported as timed out at its deadline, and the search still answers', async t => {
  dData = await mkdtemp(join(tmpdir(), 'registry-node-dead-'))
  d = await spawnNode([
    '--data',
    dData,
    '--http-port',
    '0',
    '--no-rate-limit',
    '--name',
    'node-d',
    '--host',
    'd.registry.test',
    '--bloom-rebuild-interval-ms',
    '100',
    '--bootstrap',
    tcpAddress(a)
  ])
  dPeerId = await until('node D prints its peer ID', () => /registry-node p2p (\S+) at/.exec(d!.output())?.[1])
  const dev = developer(41)
  const reg = await http(d.url, 'POST', '/v1/entities', {
    body: specRegistration(dev, agent(dev, 0), { name: 'Deadbeat Quokka', summary: 'Also knows zyxquokka' })
  })
  t.is(reg.status, 201, JSON.stringify(reg.body))
  await until("A holds D's filter with its registration", () => (filterAtAHas(dPeerId, 'deadbeat') ? true : undefined))

  d.child.kill('SIGSTOP')
  // The deadline of every peer asked, B's too: generous enough for B on a busy machine.
  const timeoutMs = 5000
  // D never answers while stopped: that the search answers at all is the deadline at work.
  const { body, ms } = await search(a, { query: 'zyxquokka', federated: true, timeout_ms: timeoutMs })
  const byName = Object.fromEntries(body.search_stats.peers.map((p: any) => [p.name ?? p.peer_id, p]))
  t.is(byName['node-b']?.outcome, 'answered')
  const dead = body.search_stats.peers.find((p: any) => p.peer_id === dPeerId)
  t.truthy(dead, 'the reply names the dead peer')
  t.is(dead.outcome, 'timed_out')
  t.is(body.search_stats.peers_timed_out, 1)
  t.is(body.search_stats.peer_timeout_ms, timeoutMs)
  // At least the deadline (2 ms for timer rounding); how much more a busy machine adds is only logged.
  t.true(dead.latency_ms >= timeoutMs - 2, `the dead peer took ${dead.latency_ms} ms`)
  t.log(
    `search with a dead peer: ${ms.toFixed(0)} ms at the client (timeout ${timeoutMs} ms), peer latency ${dead.latency_ms} ms`
  )
  t.true(
    body.results.some((r: any) => r.entity_id === onB),
    "B's answer is still there"
  )
  t.like(eventsOfA.findLast(e => e.type === 'search_result_incoming' && e.data.peer === dPeerId)?.data, {
    outcome: 'timed_out'
  })
})

test.serial('a peer that left (its connections closed) is no longer asked', async t => {
  const cPeerId = c.node.mesh!.peerId
  await c.stop()
  await until('A no longer lists C', () =>
    a.node.mesh!.federation!.peers().some(p => p.peerId === cPeerId) ? undefined : true
  )
  const { body } = await search(a, { query: 'plumbus', federated: true, timeout_ms: 2000 })
  t.is(body.search_stats.peers_queried, 0)
  t.deepEqual(body.search_stats.peers, [])
})
