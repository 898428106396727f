import { multiaddr } from '@multiformats/multiaddr'
import test from 'ava'
import type { Logger } from '@libp2p/interface'
import { expandDnsaddr, MAX_DNSADDR_ADDRESSES, meshDns } from '../../src/mesh/dnsaddr.js'
import { startDnsServer } from '../helpers/dns-server.js'

const PEER_A = '12D3KooWQCuvWhyyfoyY22heHeRvbH3F3WBpsDGRGSXt3f2uW2C8'
const PEER_B = '12D3KooWNtR4227L65nmmJmuE6VfSnsS4nWspAzkQ3toDtFjYa63'
// libp2p's resolver takes a logger and writes nothing to it.
const log = Object.assign(() => {}, { error: () => {}, trace: () => {}, enabled: false }) as unknown as Logger

test('nested and cyclic /dnsaddr/ records are each followed once; a /p2p/ suffix keeps only that peer', async t => {
  const server = await startDnsServer({
    '_dnsaddr.list.test': [['dnsaddr=/dnsaddr/more.test'], [`dnsaddr=/ip4/127.0.0.1/tcp/4001/p2p/${PEER_A}`]],
    '_dnsaddr.more.test': [['dnsaddr=/dnsaddr/list.test'], [`dnsaddr=/ip4/127.0.0.2/tcp/4001/p2p/${PEER_B}`]]
  })
  t.teardown(() => server.close())
  const dns = meshDns([server.address])
  const all = await expandDnsaddr(multiaddr('/dnsaddr/list.test'), dns, log)
  t.deepEqual(all.map(String).sort(), [
    `/ip4/127.0.0.1/tcp/4001/p2p/${PEER_A}`,
    `/ip4/127.0.0.2/tcp/4001/p2p/${PEER_B}`
  ])
  const one = await expandDnsaddr(multiaddr(`/dnsaddr/more.test/p2p/${PEER_B}`), dns, log)
  t.deepEqual(one.map(String), [`/ip4/127.0.0.2/tcp/4001/p2p/${PEER_B}`])
  // Literal addresses pass through; a name with no records stands for nothing.
  t.deepEqual((await expandDnsaddr(multiaddr('/ip4/127.0.0.1/tcp/1'), dns, log)).map(String), ['/ip4/127.0.0.1/tcp/1'])
  t.deepEqual(await expandDnsaddr(multiaddr('/dnsaddr/missing.test'), dns, log), [])
})

test('a long list is cut at the limit', async t => {
  // Nested lists of 9, as a UDP answer holds a dozen addresses at most (the test server has no TCP).
  const records: Record<string, string[][]> = { '_dnsaddr.big.test': [] }
  for (let list = 0; list < 8; list++) {
    records['_dnsaddr.big.test']!.push([`dnsaddr=/dnsaddr/part${list}.test`])
    records[`_dnsaddr.part${list}.test`] = Array.from({ length: 9 }, (_, i) => [
      `dnsaddr=/ip4/127.0.${list}.${i + 1}/tcp/4001`
    ])
  }
  t.true(8 * 9 > MAX_DNSADDR_ADDRESSES)
  const server = await startDnsServer(records)
  t.teardown(() => server.close())
  const found = await expandDnsaddr(multiaddr('/dnsaddr/big.test'), meshDns([server.address]), log)
  t.is(found.length, MAX_DNSADDR_ADDRESSES)
})

test('an invalid DNS server is a configuration error naming the setting', t => {
  t.throws(() => meshDns(['not-an-address']), { message: /^p2p\.dns_servers is invalid/ })
})
