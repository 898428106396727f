/**
 * The mesh on loopback: three real nodes (two bootstrapped from the first) find each other, exchange
 * hellos and pings, and show each other in /v1/network/peers; an operator adds a fourth node through
 * the admin route; a stopping node is reported and drops out; a peer whose hello lies about its
 * identity stays unverified.
 */
import test from 'ava'
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { lpStream } from '@libp2p/utils'
import { multiaddr } from '@multiformats/multiaddr'
import type { RegistryEvent } from '../../src/events/bus.js'
import { HELLO_PROTOCOL, decodeHello, encodeHello, registryKeyOf } from '../../src/mesh/peers.js'
import { parsePeerAddress } from '../../src/mesh/mesh.js'
import { bareLibp2p } from '../helpers/bare-libp2p.js'
import { http, startTestNode, tcpAddress, type TestNode } from '../helpers/node.js'
import { sleep, until } from '../helpers/wait.js'

const SECRET = 'whsec_mesh_test'
const MESH = { enabled: true }
let a: TestNode
let b: TestNode
let c: TestNode
const eventsOfA: RegistryEvent[] = []
let lastSeen: unknown

/** A TCP address of the node, ending in /p2p/<peer-id>. */
const peersOf = async (n: TestNode, query = ''): Promise<any[]> =>
  (await http(n.url, 'GET', `/v1/network/peers${query}`)).body.peers

test.before(async t => {
  const started = Date.now()
  a = await startTestNode({ name: 'node-a', p2p: MESH, onboarding: { webhook_secret: SECRET } })
  a.node.bus.subscribe(e => {
    if (e.type.startsWith('peer_')) eventsOfA.push(e)
  })
  ;[b, c] = await Promise.all([
    startTestNode({ name: 'node-b', p2p: { ...MESH, bootstrap: [tcpAddress(a)] } }),
    startTestNode({ name: 'node-c', p2p: { ...MESH, bootstrap: [tcpAddress(a)] } })
  ])
  // Everyone knows everyone (B and C meet through the DHT), with a hello and a ping behind each entry.
  for (const n of [a, b, c]) {
    await until(
      `${n.config.name} sees two verified, pinged peers`,
      async () => {
        const peers = await peersOf(n)
        lastSeen = peers
        return peers.length === 2 &&
          peers.every(p => p.verification_tier === 'peer-id' && typeof p.latency_ms === 'number')
          ? peers
          : undefined
      },
      { detail: () => lastSeen }
    )
  }
  t.log(`mesh of three formed in ${Date.now() - started} ms`)
})
test.after.always(async () => {
  await Promise.all([a?.stop(), b?.stop(), c?.stop()])
})

test.serial('three nodes on loopback list each other with the registry IDs their /v1/info states', async t => {
  const infos = new Map<string, any>()
  for (const n of [a, b, c]) infos.set(n.config.name, (await http(n.url, 'GET', '/v1/info')).body)
  for (const n of [a, b, c]) {
    const peers = await peersOf(n)
    const others = [a, b, c].filter(o => o !== n)
    t.deepEqual(peers.map(p => p.name).sort(), others.map(o => o.config.name).sort())
    for (const p of peers) {
      const info = infos.get(p.name)
      t.is(p.registry_id, info.registry_id)
      t.is(p.public_key, info.public_key)
      t.is(p.host, 'registry.test')
      t.is(p.version, info.version)
      t.is(typeof p.latency_ms, 'number')
      t.is(p.health, 'healthy')
      t.true(p.connected)
      t.is(p.agent_count, 0)
      t.regex(p.peer_id, /^12D3KooW/)
      t.true(p.address.endsWith(`/p2p/${p.peer_id}`))
      t.false(Number.isNaN(Date.parse(p.last_seen)))
    }
    t.is(infos.get(n.config.name).peer_count, 2)
  }
  // The PeerId and the registry ID name the same key.
  const key = registryKeyOf((await import('@libp2p/peer-id')).peerIdFromString(a.node.mesh!.peerId))
  t.is(key?.registryId, a.node.identity.registryId)
  t.true(eventsOfA.filter(e => e.type === 'peer_connected').length >= 2)
  t.true(eventsOfA.every(e => typeof e.data.peer_id === 'string' && typeof e.data.address === 'string'))
})

test.serial('network status and stats', async t => {
  const status = (await http(a.url, 'GET', '/v1/network/status')).body
  t.like(status, {
    registry_id: a.node.identity.registryId,
    name: 'node-a',
    host: 'registry.test',
    peer_id: a.node.mesh!.peerId,
    mesh: {
      enabled: true,
      peer_count: 2,
      known_peers: 2,
      gossip_announcements_per_min: 0,
      dht_mode: 'server',
      gossip: { published: 0, lost: 0 }
    },
    entities: { agents: 0, services: 0, developers: 0 },
    liveness: { home_entities: 0, active: 0, inactive: 0 }
  })
  t.true(Number.isInteger(status.uptime_seconds))
  // The sync digests summed up: nodes holding the same operations (none here) report the same digest.
  t.like(status.sync, { operations: 0, subjects: 0 })
  t.regex(status.sync.digest, /^[0-9a-f]{64}$/)
  t.regex(status.sync.digest_changed_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.is((await http(b.url, 'GET', '/v1/network/status')).body.sync.digest, status.sync.digest)
  t.true(status.addresses.some((x: string) => x.includes('/tcp/') && !x.includes('/ws')))
  t.true(status.addresses.some((x: string) => x.includes('/ws/')))
  const stats = (await http(a.url, 'GET', '/v1/network/stats')).body
  t.deepEqual(stats, {
    estimated_registries: 3,
    estimated_entities: 0,
    estimated_agents: 0,
    mesh_connectivity: 1,
    connected_peers: 2,
    known_peers: 2,
    gossip_announcements_per_min: 0
  })
})

test.serial('adding a peer needs the admin secret, dials at once, and a stopped peer drops out', async t => {
  const d = await startTestNode({ name: 'node-d', p2p: MESH })
  try {
    const address = tcpAddress(d)
    t.like(await http(a.url, 'POST', '/v1/network/peers', { body: { address } }), {
      status: 401,
      body: { error: 'admin_unauthorized' }
    })
    t.like(
      await http(a.url, 'POST', '/v1/network/peers', { body: { address }, headers: { authorization: 'Bearer nope' } }),
      { status: 401, body: { error: 'admin_unauthorized' } }
    )
    t.like(
      await http(b.url, 'POST', '/v1/network/peers', {
        body: { address },
        headers: { authorization: `Bearer ${SECRET}` }
      }),
      { status: 503, body: { error: 'admin_unavailable' } }
    )
    const admin = { authorization: `Bearer ${SECRET}` }
    t.like(await http(a.url, 'POST', '/v1/network/peers', { body: { address: 'nowhere' }, headers: admin }), {
      status: 400,
      body: { error: 'validation_failed', field: 'address' }
    })
    t.like(await http(a.url, 'POST', '/v1/network/peers', { body: {}, headers: admin }), {
      status: 400,
      body: { error: 'validation_failed', field: 'address' }
    })
    const refused = await http(a.url, 'POST', '/v1/network/peers', {
      body: { address: '/ip4/127.0.0.1/tcp/1' },
      headers: admin
    })
    t.like(refused, { status: 502, body: { error: 'peer_unreachable' } })

    // The spec's host:port form works too; the answer already carries the hello and a ping.
    const port = multiaddr(address)
      .getComponents()
      .find(x => x.name === 'tcp')!.value
    const added = await http(a.url, 'POST', '/v1/network/peers', {
      body: { address: `127.0.0.1:${port}`, name: 'ignored' },
      headers: admin
    })
    t.is(added.status, 201)
    t.like(added.body, {
      peer_id: d.node.mesh!.peerId,
      registry_id: d.node.identity.registryId,
      name: 'node-d',
      verification_tier: 'peer-id',
      connected: true,
      direction: 'outbound'
    })
    t.is(typeof added.body.latency_ms, 'number')
    t.true((await peersOf(a)).some(p => p.peer_id === d.node.mesh!.peerId))
    t.is((await http(a.url, 'GET', '/v1/info')).body.peer_count, 3)
  } finally {
    await d.stop()
  }
  const gone = await until('A notices D left', () =>
    eventsOfA.find(e => e.type === 'peer_disconnected' && e.data.peer_id === d.node.mesh!.peerId)
  )
  t.true(String(gone.data.address).endsWith(`/p2p/${d.node.mesh!.peerId}`))
  t.false((await peersOf(a)).some(p => p.peer_id === d.node.mesh!.peerId))
  const remembered = (await peersOf(a, '?all=true')).find(p => p.peer_id === d.node.mesh!.peerId)
  t.like(remembered, { health: 'disconnected', connected: false, name: 'node-d' })
  const stats = (await http(a.url, 'GET', '/v1/network/stats')).body
  t.like(stats, { connected_peers: 2, known_peers: 3, mesh_connectivity: 2 / 3 })
})

test.serial('mesh faults: admin only, validated, and blocking a peer cuts it off until unblocked', async t => {
  const admin = { authorization: `Bearer ${SECRET}` }
  t.like(await http(a.url, 'GET', '/v1/admin/mesh/faults'), { status: 401, body: { error: 'admin_unauthorized' } })
  t.like(await http(b.url, 'PUT', '/v1/admin/mesh/faults', { body: { loss: 0.5 }, headers: admin }), {
    status: 503,
    body: { error: 'admin_unavailable' }
  })
  t.like(await http(a.url, 'PUT', '/v1/admin/mesh/faults', { body: { loss: 2 }, headers: admin }), {
    status: 400,
    body: { error: 'validation_failed', field: 'loss' }
  })
  t.like(await http(a.url, 'PUT', '/v1/admin/mesh/faults', { body: { delay_ms: -1 }, headers: admin }), {
    status: 400,
    body: { error: 'validation_failed', field: 'delay_ms' }
  })
  t.like(await http(a.url, 'PUT', '/v1/admin/mesh/faults', { body: { partition: true }, headers: admin }), {
    status: 400,
    body: { error: 'validation_failed' }
  })
  t.deepEqual((await http(a.url, 'GET', '/v1/admin/mesh/faults', { headers: admin })).body, {
    blocked_peers: [],
    loss: 0,
    delay_ms: 0,
    mode: 'process'
  })

  const bPeer = b.node.mesh!.peerId
  const blocked = await http(a.url, 'PUT', '/v1/admin/mesh/faults', {
    body: { blocked_peers: [bPeer], delay_ms: 5 },
    headers: admin
  })
  t.deepEqual(blocked.body, { blocked_peers: [bPeer], loss: 0, delay_ms: 5, mode: 'process' })
  await until('A drops B', async () => ((await peersOf(a)).some(p => p.peer_id === bPeer) ? undefined : true))
  // B's bootstrap re-dials are refused while blocked.
  t.like(await http(a.url, 'POST', '/v1/network/peers', { body: { address: tcpAddress(b) }, headers: admin }), {
    status: 502,
    body: { error: 'peer_unreachable' }
  })

  t.like(
    (await http(a.url, 'PUT', '/v1/admin/mesh/faults', { body: { blocked_peers: [], delay_ms: 0 }, headers: admin }))
      .body,
    { blocked_peers: [], delay_ms: 0 }
  )
  t.is(
    (await http(a.url, 'POST', '/v1/network/peers', { body: { address: tcpAddress(b) }, headers: admin })).status,
    201
  )
  const status = (await http(a.url, 'GET', '/v1/network/status')).body
  t.deepEqual(Object.keys(status.mesh.gossip).sort(), [
    'bytes_received',
    'bytes_sent',
    'copies_received',
    'duplicates',
    'first_received',
    'lost',
    'messages_published',
    'operations_received',
    'published'
  ])
  t.true(status.mesh.gossip.bytes_sent > 0, 'gossipsub control traffic is counted')
  t.deepEqual(Object.keys(status.mesh.gossip.operations_received).sort(), [
    'applied',
    'deferred',
    'invalid',
    'rate_limited',
    'refused',
    'stale',
    'storage_full',
    'throttled',
    'too_old',
    'unsupported'
  ])
})

test.serial('a peer whose hello claims another registry stays unverified and its claims are not shown', async t => {
  const liar = await bareLibp2p({
    privateKey: await generateKeyPairFromSeed('Ed25519', new Uint8Array(32).fill(7))
  })
  const lie = encodeHello({
    registry_id: a.node.identity.registryId,
    name: 'impostor',
    host: 'registry.test',
    public_key: a.node.identity.publicKey,
    version: '9.9.9',
    entity_count: 1_000_000,
    agent_count: 1_000_000
  })
  let hellosAnswered = 0
  await liar.handle(HELLO_PROTOCOL, async stream => {
    const lp = lpStream(stream)
    await lp.read()
    await lp.write(lie)
    await stream.close()
    hellosAnswered++
  })
  try {
    await liar.dial(multiaddr(tcpAddress(a)))
    const seen = await until('A records the liar', async () =>
      (await peersOf(a)).find(p => p.peer_id === liar.peerId.toString())
    )
    // A asks for a hello on connect: wait until it has had the lie, then give it a moment to take
    // it in (nothing observable marks a hello refused: this is the negative check's bounded wait).
    await until('A has asked the liar for its hello and got the lie', () => hellosAnswered > 0)
    await sleep(300)
    const view = (await peersOf(a)).find(p => p.peer_id === liar.peerId.toString()) ?? seen
    t.is(view.verification_tier, 'unverified')
    t.is(
      view.registry_id,
      registryKeyOf(liar.peerId)!.registryId,
      'the registry ID shown is the one its key stands for'
    )
    t.is(view.name, null)
    t.is(view.agent_count, null)
    t.is((await http(a.url, 'GET', '/v1/network/stats')).body.estimated_agents, 0, 'unverified counts are not added up')
  } finally {
    await liar.stop()
  }
})

test('hello messages and peer addresses are checked', t => {
  const good = {
    registry_id: `zns:registry:${'a'.repeat(32)}`,
    name: 'n',
    host: 'h',
    public_key: `ed25519:${'A'.repeat(43)}=`,
    version: '1.0.0',
    entity_count: 0,
    agent_count: 0
  }
  t.deepEqual(decodeHello(encodeHello({ ...good, extra: 'ignored' } as typeof good)), { ...good, extra: 'ignored' })
  t.throws(() => decodeHello(encodeHello({ ...good, registry_id: 'x' })), { message: /registry_id/ })
  t.throws(() => decodeHello(encodeHello({ ...good, agent_count: -1 })), { message: /agent_count/ })
  t.throws(() => decodeHello(new TextEncoder().encode('{"registry_id":"x"}')), { message: /is required/ })
  t.throws(() => decodeHello(new Uint8Array([0xff, 0xfe])), { message: /UTF-8 JSON/ })
  t.is(parsePeerAddress('10.0.0.1:4001').toString(), '/ip4/10.0.0.1/tcp/4001')
  t.is(parsePeerAddress('[::1]:4001').toString(), '/ip6/::1/tcp/4001')
  t.is(parsePeerAddress('registry.example:4001').toString(), '/dns/registry.example/tcp/4001')
  t.throws(() => parsePeerAddress('registry.example'), { message: /host:port/ })
  t.throws(() => parsePeerAddress('/ip4/1.2.3.4/tcpx/1'), { message: /multiaddr/ })
})

test('without the mesh the network routes still answer', async t => {
  const solo = await startTestNode({ name: 'solo', p2p: { enabled: false }, onboarding: { webhook_secret: SECRET } })
  try {
    t.is(solo.node.mesh, null)
    t.deepEqual((await http(solo.url, 'GET', '/v1/network/peers')).body, { peers: [], count: 0 })
    t.like((await http(solo.url, 'GET', '/v1/network/status')).body, {
      peer_id: null,
      addresses: [],
      mesh: { enabled: false, peer_count: 0, dht_mode: null },
      sync: null
    })
    t.like((await http(solo.url, 'GET', '/v1/network/stats')).body, { estimated_registries: 1, mesh_connectivity: 0 })
    t.is((await http(solo.url, 'GET', '/v1/info')).body.peer_count, 0)
    const post = await http(solo.url, 'POST', '/v1/network/peers', {
      body: { address: '/ip4/127.0.0.1/tcp/1' },
      headers: { authorization: `Bearer ${SECRET}` }
    })
    t.like(post, { status: 503, body: { error: 'mesh_disabled' } })
  } finally {
    await solo.stop()
  }
})
