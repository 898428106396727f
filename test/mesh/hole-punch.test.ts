/**
 * What a node does with a connection that reached it through a relay, on loopback (any machine): it
 * dials the peer back directly when it can, and drops the relayed connection. The punch itself
 * needs both sides' SYNs to be dropped until both are sent, as stateful filters do; loopback answers
 * an early one with a reset, so it is tested through real filters in test/testnet/reach.test.ts.
 */
import test from 'ava'
import { isRelayed } from '../../src/mesh/reachability.js'
import { tcpAddress, testNodes, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const nodes = testNodes()
test.after.always(nodes.stopAll)

const kinds = (from: TestNode, to: TestNode): string[] =>
  from.node
    .mesh!.libp2p.getConnections()
    .filter(c => c.remotePeer.toString() === to.node.mesh!.peerId)
    .map(c => (isRelayed(c) ? 'relayed' : 'direct'))

test('a node reached through a relay by a peer it can dial connects back directly and drops the relayed connection', async t => {
  const relay = await nodes.start({ name: 'relay', p2p: { enabled: true, target_peers: 0 } })
  const behind = { enabled: true, target_peers: 0, relay_client: 'always' as const, bootstrap: [tcpAddress(relay)] }
  const one = await nodes.start({ name: 'one', p2p: behind })
  // Node two announces a port nothing listens on, so only the relay, or a punch, reaches it.
  const two = await nodes.start({ name: 'two', p2p: { ...behind, announce: ['/ip4/127.0.0.1/tcp/9'] } })
  const circuit = `${tcpAddress(relay)}/p2p-circuit/p2p/${two.node.mesh!.peerId}`
  await until('node one reaches node two through the relay (once two holds a reservation)', () =>
    one.node.mesh!.addPeer(circuit).then(
      () => true,
      () => false
    )
  )
  await until(
    'a direct connection replaced the relayed one',
    () => kinds(one, two).join() === 'direct' && kinds(two, one).join() === 'direct',
    {
      timeoutMs: 30_000,
      detail: () => ({
        one: kinds(one, two),
        two: kinds(two, one),
        punches: [one.node.mesh!.holePunch.stats, two.node.mesh!.holePunch.stats]
      })
    }
  )
  // The dial back usually settles it; where another dial of libp2p's got there first, a punch may
  // have started and stopped once the direct connection appeared: never a failure either way.
  t.like(two.node.mesh!.holePunch.stats, { failed: 0, last_failure: null })
  const status = await fetch(`${two.url}/v1/network/status`).then(r => r.json())
  t.like(status.mesh, { connections: { relayed: 0 }, hole_punches: { failed: 0 } })
  const latency = await one.node.mesh!.libp2p.services.ping.ping(two.node.mesh!.libp2p.peerId)
  t.true(latency >= 0)
})
