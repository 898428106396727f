import test from 'ava'
import { startDnsServer } from '../helpers/dns-server.js'
import { connectedPeers, tcpAddress, testNodes, type TestNode } from '../helpers/node.js'
import { sleep, until } from '../helpers/wait.js'

const nodes = testNodes()
test.after.always(nodes.stopAll)

test('a /dnsaddr/ bootstrap entry is resolved through the configured DNS server, nested entries followed', async t => {
  const a = await nodes.start({ p2p: { enabled: true, target_peers: 0 } })
  const b = await nodes.start({ p2p: { enabled: true, target_peers: 0 } })
  const dns = await startDnsServer({
    '_dnsaddr.bootstrap.registry.test': [['dnsaddr=/dnsaddr/more.registry.test'], [`dnsaddr=${tcpAddress(a)}`]],
    '_dnsaddr.more.registry.test': [[`dnsaddr=${tcpAddress(b)}`]]
  })
  t.teardown(() => dns.close())
  const joiner = await nodes.start({
    p2p: {
      enabled: true,
      target_peers: 0,
      bootstrap: ['/dnsaddr/bootstrap.registry.test'],
      dns_servers: [dns.address]
    }
  })
  await until('the joiner connected to both listed peers', () => {
    const peers = connectedPeers(joiner)
    return peers.has(a.node.mesh!.peerId) && peers.has(b.node.mesh!.peerId)
  })
  t.pass()
})

test('a peer added by a /dnsaddr/ name connects every peer the name lists; a name with no records is unreachable', async t => {
  const a = await nodes.start({ p2p: { enabled: true, target_peers: 0 } })
  const b = await nodes.start({ p2p: { enabled: true, target_peers: 0 } })
  const dns = await startDnsServer({
    '_dnsaddr.added.registry.test': [[`dnsaddr=${tcpAddress(a)}`], [`dnsaddr=${tcpAddress(b)}`]]
  })
  t.teardown(() => dns.close())
  const joiner = await nodes.start({ p2p: { enabled: true, target_peers: 0, dns_servers: [dns.address] } })
  const view = await joiner.node.mesh!.addPeer('/dnsaddr/added.registry.test')
  t.true([a.node.mesh!.peerId, b.node.mesh!.peerId].includes(view.peer_id))
  await until('the joiner connected to both listed peers', () => connectedPeers(joiner).size === 2)
  const missing = await t.throwsAsync(joiner.node.mesh!.addPeer('/dnsaddr/missing.registry.test'))
  t.like(missing, { code: 'peer_unreachable' })
  t.regex(missing!.message, /name no address/)
})

test('a /dnsaddr/ entry that does not resolve leaves the node running and its other bootstrap peers connected', async t => {
  const a = await nodes.start({ p2p: { enabled: true, target_peers: 0 } })
  const dns = await startDnsServer({})
  t.teardown(() => dns.close())
  const joiner = await nodes.start({
    p2p: {
      enabled: true,
      target_peers: 0,
      bootstrap: ['/dnsaddr/nowhere.registry.test', tcpAddress(a)],
      dns_servers: [dns.address]
    }
  })
  await until('the joiner connected to its literal bootstrap peer', () =>
    connectedPeers(joiner).has(a.node.mesh!.peerId)
  )
  t.is(connectedPeers(joiner).size, 1)
})

test('nodes bootstrapped only to node 0 connect to their target peer count; one that loses them finds them again', async t => {
  const target = 4
  // DHT announcements off, so what connects nodes after start is the DHT's self-lookup and discovery.
  const base = { enabled: true, discovery_interval_seconds: 0.5, dht_announce_interval_seconds: 3600 }
  const first = await nodes.start({ p2p: { ...base, target_peers: target } })
  const others: TestNode[] = []
  for (let i = 1; i < 5; i++)
    others.push(await nodes.start({ p2p: { ...base, target_peers: target, bootstrap: [tcpAddress(first)] } }))
  const seeker = await nodes.start({ p2p: { ...base, target_peers: target, bootstrap: [tcpAddress(first)] } })
  const all = [first, ...others, seeker]
  const started = Date.now()
  await until('every node reached the target', () => all.every(n => connectedPeers(n).size >= target), {
    timeoutMs: 60_000,
    detail: () => all.map(n => connectedPeers(n).size)
  })
  t.log(`peer counts ${all.map(n => connectedPeers(n).size).join(', ')} after ${Date.now() - started} ms`)

  // The seeker loses every peer but node 0. (libp2p also re-dials the DHT's closest peers, which in
  // a mesh this small are all of them: the two race; the count is what must come back.)
  const firstId = first.node.mesh!.peerId
  for (const connection of seeker.node.mesh!.libp2p.getConnections())
    if (connection.remotePeer.toString() !== firstId) await connection.close()
  const lost = Date.now()
  await until('the seeker is back at the target', () => connectedPeers(seeker).size >= target, {
    timeoutMs: 30_000,
    detail: () => connectedPeers(seeker).size
  })
  t.log(`the seeker had ${connectedPeers(seeker).size} peers again after ${Date.now() - lost} ms`)
  t.true(seeker.node.mesh!.discovery.stats.rounds > 0)
})

test('with an allow list the target counts as the peers it names: no rounds once they are connected', async t => {
  const base = { enabled: true, discovery_interval_seconds: 0.2, dht_announce_interval_seconds: 3600 }
  const first = await nodes.start({ p2p: { ...base, target_peers: 0 } })
  const other = await nodes.start({ p2p: { ...base, target_peers: 0, bootstrap: [tcpAddress(first)] } })
  const fenced = await nodes.start({
    p2p: { ...base, target_peers: 8, bootstrap: [tcpAddress(first)], allow_peers: [first.node.mesh!.peerId] }
  })
  await until('the fenced node is connected to the one peer it allows', () =>
    connectedPeers(fenced).has(first.node.mesh!.peerId)
  )
  const rounds = fenced.node.mesh!.discovery.stats.rounds
  // Bounded negative check: ten intervals without a round, and no peer but the allowed one.
  await sleep(2000)
  t.is(fenced.node.mesh!.discovery.stats.rounds, rounds)
  t.deepEqual([...connectedPeers(fenced)], [first.node.mesh!.peerId])
  t.false(connectedPeers(other).has(fenced.node.mesh!.peerId))
})
