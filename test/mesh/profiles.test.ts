/**
 * The private profile on a real mesh: a node loaded with `--profile private` connects, either way,
 * only to the peers its allow list names, and serves no relay.
 */
import { multiaddr } from '@multiformats/multiaddr'
import test from 'ava'
import { loadConfig } from '../../src/config/load.js'
import { tcpAddress, testNodes, type TestNode } from '../helpers/node.js'
import { sleep, until } from '../helpers/wait.js'

const nodes = testNodes()
test.after.always(nodes.stopAll)

const connectedPeers = (n: TestNode): Set<string> =>
  new Set(n.node.mesh!.libp2p.getConnections().map(c => c.remotePeer.toString()))

const RELAY_HOP = '/libp2p/circuit/relay/0.2.0/hop'

test('a private-profile node connects to the peer on its allow list and refuses one that is not, either way', async t => {
  const quiet = { enabled: true, target_peers: 0, dht_announce_interval_seconds: 3600 }
  const listed = await nodes.start({ p2p: quiet })
  const stranger = await nodes.start({ p2p: quiet })
  const loaded = await loadConfig({
    argv: [
      '--profile',
      'private',
      '--allow-peer',
      listed.node.mesh!.peerId,
      '--bootstrap',
      tcpAddress(listed),
      '--bootstrap',
      tcpAddress(stranger)
    ],
    env: {}
  })
  const closed = await nodes.start({
    profile: loaded.profile,
    p2p: { ...loaded.p2p, enabled: true, host: '127.0.0.1', port: 0, discovery_interval_seconds: 0.2 }
  })
  t.like(closed.config.p2p, { relay_server: false, relay_client: 'off', reachability_check: false })
  const seen = new Set<string>()
  closed.node.mesh!.libp2p.addEventListener('peer:connect', event => seen.add(event.detail.toString()))

  await until('the private node is connected to the peer it allows', () =>
    connectedPeers(closed).has(listed.node.mesh!.peerId)
  )
  // The stranger dials in: the private node hangs up once noise has named the stranger.
  await stranger.node.mesh!.libp2p.dial(multiaddr(tcpAddress(closed))).then(
    async connection => {
      await until('the refused connection is closed', () => connection.status !== 'open' || undefined, 10_000)
    },
    () => {}
  )
  // Bounded negative check: its bootstrap re-dials and discovery rounds (every 0.2 s) never reach the stranger.
  await sleep(2000)
  t.false(connectedPeers(closed).has(stranger.node.mesh!.peerId))
  t.false(seen.has(stranger.node.mesh!.peerId), 'no connection to the stranger ever opened')
  t.false(connectedPeers(stranger).has(closed.node.mesh!.peerId))
  t.true(connectedPeers(listed).has(closed.node.mesh!.peerId), 'the allowed peer sees the private node too')
  t.false(closed.node.mesh!.libp2p.getProtocols().includes(RELAY_HOP), 'no relay served')
  t.true(listed.node.mesh!.libp2p.getProtocols().includes(RELAY_HOP), 'the default node serves one')
})
