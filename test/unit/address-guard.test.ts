import test from 'ava'
import { isForbiddenAddress } from '../../src/cards/address-guard.js'

const FORBIDDEN: readonly (readonly [string, string])[] = [
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback /8'],
  ['::1', 'IPv6 loopback'],
  ['10.0.0.1', 'private 10/8'],
  ['10.255.255.255', 'private 10/8 top'],
  ['172.16.0.1', 'private 172.16/12'],
  ['172.31.255.255', 'private 172.16/12 top'],
  ['192.168.1.1', 'private 192.168/16'],
  ['fc00::1', 'unique local fc00::/7'],
  ['fd12:3456::1', 'unique local fd'],
  ['169.254.169.254', 'cloud metadata'],
  ['169.254.0.1', 'link-local'],
  ['fe80::1', 'IPv6 link-local'],
  ['fe80::1%eth0', 'IPv6 link-local with zone'],
  ['febf:ffff::1', 'IPv6 link-local top'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'this network 0/8'],
  ['::', 'IPv6 unspecified'],
  ['100.64.0.1', 'CGNAT'],
  ['100.127.255.255', 'CGNAT top'],
  ['100.100.100.200', 'Alibaba metadata (CGNAT)'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast top'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['ff02::1', 'IPv6 multicast'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback (dotted)'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback (hex)'],
  ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
  ['::ffff:10.1.2.3', 'IPv4-mapped private'],
  ['0:0:0:0:0:ffff:c0a8:0101', 'IPv4-mapped 192.168.1.1, long form'],
  ['[::1]', 'bracketed IPv6 literal'],
  ['fd00:ec2::254', 'AWS metadata IPv6'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 of 169.254.169.254'],
  ['2002:7f00:0001::', '6to4 of 127.0.0.1'],
  ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
  ['192.0.0.192', 'Oracle metadata (192.0.0/24)'],
  ['192.0.2.10', 'documentation'],
  ['198.18.0.1', 'benchmarking'],
  ['2001:db8::1', 'IPv6 documentation'],
  ['not-an-ip', 'not an address (fails closed)'],
  ['', 'empty (fails closed)'],
  ['example.com', 'a name, not an address (fails closed)'],
  ['1.2.3', 'malformed IPv4 (fails closed)']
]

const ALLOWED: readonly (readonly [string, string])[] = [
  ['1.1.1.1', 'public IPv4'],
  ['8.8.8.8', 'public IPv4'],
  ['93.184.216.34', 'public IPv4'],
  ['172.15.255.255', 'just below 172.16/12'],
  ['172.32.0.1', 'just above 172.16/12'],
  ['100.63.255.255', 'just below CGNAT'],
  ['100.128.0.1', 'just above CGNAT'],
  ['169.253.255.255', 'just below link-local'],
  ['223.255.255.255', 'just below multicast'],
  ['2606:4700:4700::1111', 'public IPv6'],
  ['2001:4860:4860::8888', 'public IPv6'],
  ['::ffff:8.8.8.8', 'IPv4-mapped public'],
  ['64:ff9b::808:808', 'NAT64 of a public address'],
  ['2002:0808:0808::1', '6to4 of a public address']
]

for (const [ip, why] of FORBIDDEN) {
  test(`forbidden: ${ip || '(empty)'} (${why})`, t => {
    t.true(isForbiddenAddress(ip))
  })
}

for (const [ip, why] of ALLOWED) {
  test(`allowed: ${ip} (${why})`, t => {
    t.false(isForbiddenAddress(ip))
  })
}
