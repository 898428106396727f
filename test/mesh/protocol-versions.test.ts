/**
 * Protocol versions in the hello: a real node meets stand-in peers (bare libp2p nodes with identify)
 * whose crafted hellos announce other versions or lack a capability. An incompatible peer is named in
 * one log line and hung up on; a peer lacking federated search is kept but never asked to search,
 * though its identify lists the search protocol; one that offers it is asked.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { identify } from '@libp2p/identify'
import type { Libp2p } from '@libp2p/interface'
import { lpStream } from '@libp2p/utils'
import { multiaddr } from '@multiformats/multiaddr'
import test from 'ava'
import { pino } from 'pino'
import { assess, LEGACY_OFFER } from '../../src/mesh/compatibility.js'
import { meshOffer } from '../../src/mesh/mesh.js'
import { decodeHello, encodeHello, HELLO_PROTOCOL, registryKeyOf } from '../../src/mesh/peers.js'
import { SEARCH_PROTOCOL } from '../../src/mesh/search-protocol.js'
import { startRegistryNode, type RegistryNode } from '../../src/node.js'
import type { PeerView } from '../../src/wire/network.js'
import { bareLibp2p } from '../helpers/bare-libp2p.js'
import { http, testConfig } from '../helpers/node.js'
import { sleep, until } from '../helpers/wait.js'

let node: RegistryNode
let dir: string
const lines: { msg: string; peer_id?: string; level: number }[] = []
const stand: Libp2p[] = []

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'protocol-versions-'))
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
  node = await startRegistryNode(testConfig(dir, { name: 'versions', p2p: { enabled: true } }), { logger })
})

test.after.always(async () => {
  await Promise.allSettled(stand.map(s => s.stop()))
  await node?.stop()
  await rm(dir, { recursive: true, force: true })
})

const address = (): string => node.mesh!.addresses().find(x => !x.includes('/ws'))!

/** A stand-in peer answering and sending `hello` (its registry ID and key filled in), counting searches. */
async function standIn(
  seed: number,
  hello: Record<string, unknown>
): Promise<{ peer: Libp2p; searches: () => number }> {
  const peer = await bareLibp2p({
    privateKey: await generateKeyPairFromSeed('Ed25519', new Uint8Array(32).fill(seed)),
    services: { identify: identify() }
  })
  stand.push(peer)
  const key = registryKeyOf(peer.peerId)!
  const bytes = encodeHello({
    registry_id: key.registryId,
    public_key: key.publicKey,
    name: `stand-in-${seed}`,
    host: `${seed}.registry.test`,
    entity_count: 0,
    agent_count: 0,
    version: '0.0.0',
    ...hello
  } as never)
  await peer.handle(HELLO_PROTOCOL, async stream => {
    const lp = lpStream(stream)
    await lp.read()
    await lp.write(bytes)
    await stream.close()
  })
  let searches = 0
  await peer.handle(SEARCH_PROTOCOL, async stream => {
    searches++
    const lp = lpStream(stream)
    await lp.read()
    await lp.write(
      new TextEncoder().encode(
        JSON.stringify({ registry_id: key.registryId, results: [], total_found: 0, latency_ms: 1 })
      )
    )
    await stream.close()
  })
  await peer.dial(multiaddr(address()))
  return { peer, searches: () => searches }
}

async function viewOf(peer: Libp2p): Promise<PeerView | undefined> {
  const { body } = await http<{ peers: PeerView[] }>(node.url, 'GET', '/v1/network/peers?all=true')
  return body.peers.find(p => p.peer_id === peer.peerId.toString())
}

const ours = () => meshOffer({ federation: true })

test('offers compare by protocol major and exact topic; a hello without lists stands for 0.2.0', t => {
  // 0.2.0 had everything of today but attestations (0.5), which are left unused with it.
  const attestations = ['/zns/ops/attestations/1', 'attestations']
  t.like(assess(ours(), {}), { compatibility: 'partial', missing: attestations }, 'a 0.2.0 hello (no lists)')
  t.deepEqual(assess(ours(), LEGACY_OFFER).missing, attestations)
  const newerMinor = ours().protocols.map(p => p.replace('/zns/sync/1.0.0', '/zns/sync/1.4.2'))
  t.is(assess(ours(), { protocols: newerMinor, capabilities: ours().capabilities }).compatibility, 'full')
  const nextMajor = assess(ours(), {
    protocols: ours().protocols.map(p => p.replace('/zns/sync/1.0.0', '/zns/sync/2.0.0')),
    capabilities: ours().capabilities
  })
  t.like(nextMajor, { compatibility: 'incompatible', required: ['/zns/sync/1.x'], offered: ['/zns/sync/2.0.0'] })
  const otherTopic = assess(ours(), {
    protocols: ours().protocols.map(p => p.replace('/zns/ops/status/2', '/zns/ops/status/3')),
    capabilities: ours().capabilities
  })
  t.like(otherTopic, { compatibility: 'partial', missing: ['/zns/ops/status/2'] })
  t.deepEqual(
    assess(ours(), { protocols: ours().protocols }).missing,
    ours().capabilities,
    'lists without capabilities offer none'
  )
})

test('the hello’s lists are optional and bounded', t => {
  const hello = {
    registry_id: `zns:registry:${'a'.repeat(32)}`,
    name: 'n',
    host: 'h',
    public_key: `ed25519:${'A'.repeat(43)}=`,
    version: '0.3.0',
    entity_count: 0,
    agent_count: 0
  }
  t.deepEqual(decodeHello(encodeHello(hello)), hello, 'a 0.2.0 hello, without lists')
  const lists = { protocols: [...ours().protocols], capabilities: [...ours().capabilities] }
  t.deepEqual(decodeHello(encodeHello({ ...hello, ...lists })), { ...hello, ...lists })
  t.throws(() => decodeHello(encodeHello({ ...hello, protocols: Array(65).fill('/zns/x/1.0.0') })), {
    message: /protocols/
  })
  t.throws(() => decodeHello(encodeHello({ ...hello, capabilities: ['x'.repeat(65)] })), { message: /capabilities/ })
  t.throws(() => decodeHello(encodeHello({ ...hello, protocols: 'all' } as never)), { message: /protocols/ })
})

test.serial(
  'a peer announcing an incompatible sync version is refused with one log line naming what it lacks',
  async t => {
    const hello = {
      version: '3.1.0',
      protocols: ['/zns/hello/1.0.0', '/zns/sync/2.0.0', '/zns/fetch/1.0.0'],
      capabilities: ['fetch']
    }
    const { peer } = await standIn(21, hello)
    const id = peer.peerId.toString()
    const refusals = () => lines.filter(l => l.peer_id === id && l.level === 40)
    await until('the node refuses the peer', () => refusals().length > 0)
    t.is(
      refusals()[0]!.msg,
      `peer ${id} (version 3.1.0) is incompatible: it lacks /zns/sync/1.x (it speaks /zns/sync/2.0.0); refusing it`
    )
    await until('the node hangs up', () => peer.getConnections().length === 0)
    const view = await viewOf(peer)
    t.like(view, { connected: false, version: '3.1.0', compatibility: 'incompatible', capabilities: ['fetch'] })
    t.true(view!.missing.includes('/zns/sync/1.x'))
    t.true(view!.missing.includes('federated-search'))

    // It comes back (a peer that keeps dialling): refused again, not logged again.
    await peer.dial(multiaddr(address()))
    await until('hung up on again', async () => peer.getConnections().length === 0)
    await sleep(200)
    t.is(refusals().length, 1)
  }
)

test.serial('a peer whose identify lists only newer majors of hello and sync is refused without a hello', async t => {
  const peer = await bareLibp2p({
    privateKey: await generateKeyPairFromSeed('Ed25519', new Uint8Array(32).fill(24)),
    services: { identify: identify() },
    nodeInfo: { name: 'registry-node', version: '4.0.0', userAgent: 'registry-node/4.0.0' }
  })
  stand.push(peer)
  let hellos = 0
  for (const id of ['/zns/hello/2.0.0', '/zns/sync/2.0.0'])
    await peer.handle(id, async stream => {
      hellos++
      stream.abort(new Error('not expected'))
    })
  await peer.dial(multiaddr(address()))
  const id = peer.peerId.toString()
  await until('the node refuses the peer', () => lines.some(l => l.peer_id === id && l.level === 40))
  t.deepEqual(
    lines.filter(l => l.peer_id === id && l.level === 40).map(l => l.msg),
    [
      `peer ${id} (version registry-node/4.0.0) is incompatible: it lacks /zns/hello/1.x, /zns/sync/1.x (it speaks /zns/hello/2.0.0, /zns/sync/2.0.0); refusing it`
    ]
  )
  await until('the node hangs up', () => peer.getConnections().length === 0)
  t.like(await viewOf(peer), { compatibility: 'incompatible', missing: ['/zns/hello/1.x', '/zns/sync/1.x'] })
  t.is(hellos, 0, 'the node opened neither of the versions it does not speak')
})

test.serial('a peer lacking federated search is kept but not asked; one offering it is asked', async t => {
  const all = ours()
  const without = await standIn(22, {
    version: '0.2.9',
    protocols: all.protocols.filter(p => p !== SEARCH_PROTOCOL),
    capabilities: all.capabilities.filter(c => c !== 'federated-search')
  })
  const withIt = await standIn(23, { version: '0.3.0', ...all })
  await until('both hellos are in', async () => {
    const [a, b] = await Promise.all([viewOf(without.peer), viewOf(withIt.peer)])
    return a?.compatibility === 'partial' && b?.compatibility === 'full'
  })
  const view = await viewOf(without.peer)
  t.like(view, { connected: true, compatibility: 'partial', version: '0.2.9' })
  t.deepEqual(view!.missing, ['/zns/search/1.x', 'federated-search'])
  const notice = lines.filter(
    l => l.peer_id === without.peer.peerId.toString() && l.level === 30 && /lacks/.test(l.msg)
  )
  t.deepEqual(
    notice.map(l => l.msg),
    [`peer ${without.peer.peerId} (version 0.2.9) lacks /zns/search/1.x, federated-search: not used with it`]
  )
  // Both list the search protocol in identify; wait until the node knows, then search.
  await until('identify shows both handle the search protocol', async () => {
    const stores = await Promise.all([without, withIt].map(s => node.mesh!.libp2p.peerStore.get(s.peer.peerId)))
    return stores.every(p => p.protocols.includes(SEARCH_PROTOCOL))
  })
  await until('the capable peer is searchable', () =>
    node.mesh!.federation!.peers().some(p => p.peerId === withIt.peer.peerId.toString())
  )
  const { status } = await http(node.url, 'POST', '/v1/search', { body: { query: 'anything', federated: true } })
  t.is(status, 200)
  t.is(withIt.searches(), 1, 'the peer offering federated search is asked')
  t.is(without.searches(), 0, 'the peer lacking it is not')
  t.false(node.mesh!.federation!.peers().some(p => p.peerId === without.peer.peerId.toString()))
})
