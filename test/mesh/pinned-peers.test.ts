import test from 'ava'
import { connectedPeers, tcpAddress, testNodes } from '../helpers/node.js'
import { sleep, until } from '../helpers/wait.js'

const nodes = testNodes()
test.after.always(nodes.stopAll)

test('a bootstrap peer down at start is connected seconds after it comes back, well within the re-dial interval', async t => {
  const peer = await nodes.start({ p2p: { enabled: true, target_peers: 0 } })
  const address = tcpAddress(peer)
  const port = Number(/\/tcp\/(\d+)\//.exec(address)?.[1])
  await peer.stop(true)
  // The re-dial interval is the default 30 s: only the early rounds after a failed dial can connect in time.
  const joiner = await nodes.start({ p2p: { enabled: true, target_peers: 0, bootstrap: [address] } })
  await sleep(2500)
  t.is(connectedPeers(joiner).size, 0)
  const back = await nodes.start({ p2p: { enabled: true, target_peers: 0, port } }, peer.dataDir)
  t.is(tcpAddress(back), address, 'the same peer on the same port')
  const started = Date.now()
  await until('the joiner connected to the peer back up', () => connectedPeers(joiner).has(back.node.mesh!.peerId), {
    timeoutMs: 20_000
  })
  t.log(`connected ${Date.now() - started} ms after the peer came back`)
})
