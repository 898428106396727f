/**
 * The punch protocol on loopback (any machine): two nodes connected only through a third one's relay
 * replace that connection with a direct one, and the registrations still flow over it. Through real
 * stateful filters, in network namespaces: test/testnet/reach.test.ts.
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

test('two nodes connected through a relay punch a direct connection and drop the relayed one', async t => {
  const relay = await nodes.start({ name: 'relay', p2p: { enabled: true, target_peers: 0 } })
  const behind = { enabled: true, target_peers: 0, relay_client: 'always' as const, bootstrap: [tcpAddress(relay)] }
  const one = await nodes.start({ name: 'one', p2p: behind })
  const two = await nodes.start({ name: 'two', p2p: behind })
  const circuit = (n: TestNode): string | undefined =>
    n.node.mesh!.addresses().find(a => a.includes(`/p2p/${relay.node.mesh!.peerId}/p2p-circuit`))
  await until('node two holds a reservation on the relay', () => circuit(two) !== undefined)

  await one.node.mesh!.addPeer(circuit(two) as string)
  await until(
    'a direct connection replaced the relayed one',
    () => kinds(one, two).join() === 'direct' && kinds(two, one).join() === 'direct',
    { timeoutMs: 30_000, detail: () => ({ one: kinds(one, two), two: kinds(two, one) }) }
  )
  t.like(two.node.mesh!.holePunch.stats, { attempted: 1, succeeded: 1, failed: 0 })
  t.is(one.node.mesh!.holePunch.stats.attempted, 0, 'the side the relay reached starts the punch')

  // The punched connection carries the mesh's protocols as any other.
  const status = await fetch(`${two.url}/v1/network/status`).then(r => r.json())
  t.like(status.mesh, { connections: { relayed: 0 }, hole_punches: { succeeded: 1 } })
  const latency = await one.node.mesh!.libp2p.services.ping.ping(two.node.mesh!.libp2p.peerId)
  t.true(latency >= 0)
})
