/**
 * Which IP addresses the node refuses to fetch entity cards from (SSRF guard): loopback, private,
 * link-local (cloud metadata), unspecified, CGNAT, multicast and reserved ranges, documentation and
 * benchmarking ranges, and IPv6 forms that embed an IPv4 address (IPv4-mapped, NAT64, 6to4), which
 * are judged by the IPv4 address they carry.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net'

const IPV4_RANGES: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // CGNAT (also Alibaba's metadata 100.100.100.200)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (Oracle's metadata 192.0.0.192)
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4] // reserved, broadcast
]

const IPV6_RANGES: readonly (readonly [string, number])[] = [
  ['::', 96], // unspecified, loopback, IPv4-compatible (deprecated)
  ['100::', 64], // discard
  ['64:ff9b:1::', 48], // local-use NAT64
  ['2001::', 32], // Teredo (embeds an obfuscated address)
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fd00:ec2::254', 128], // AWS metadata over IPv6 (inside fc00::/7; listed for the record)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8] // multicast
]

const blocked = new BlockList()
for (const [net, prefix] of IPV4_RANGES) blocked.addSubnet(net, prefix, 'ipv4')
for (const [net, prefix] of IPV6_RANGES) blocked.addSubnet(net, prefix, 'ipv6')

/** The 16 bytes of an IPv6 address (zone ID already removed), or null when it does not parse. */
function ipv6Bytes(text: string): Uint8Array | null {
  let head = text
  const tail: number[] = []
  const lastColon = head.lastIndexOf(':')
  const last = head.slice(lastColon + 1)
  if (last.includes('.')) {
    if (!isIPv4(last)) return null
    for (const part of last.split('.')) tail.push(Number(part))
    head = `${head.slice(0, lastColon + 1)}0:0` // two zero groups stand for the embedded IPv4 address; its bytes are written over them below
  }
  const halves = head.split('::')
  if (halves.length > 2) return null
  const groups = (s: string): string[] => (s === '' ? [] : s.split(':'))
  const left = groups(halves[0] as string)
  const right = halves.length === 2 ? groups(halves[1] as string) : []
  const missing = 8 - left.length - right.length
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null
  const all = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...right]
  const bytes = new Uint8Array(16)
  for (let i = 0; i < 8; i++) {
    const g = all[i] as string
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return null
    const n = parseInt(g, 16)
    bytes[i * 2] = n >> 8
    bytes[i * 2 + 1] = n & 0xff
  }
  if (tail.length === 4) bytes.set(tail, 12)
  return bytes
}

const v4 = (b: Uint8Array, at: number): string => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`

/** The IPv4 address an IPv6 address carries (IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16), if any. */
function embeddedIPv4(b: Uint8Array): string | null {
  const zeros = (from: number, to: number): boolean => b.subarray(from, to).every(x => x === 0)
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4(b, 12)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return v4(b, 12)
  if (b[0] === 0x20 && b[1] === 0x02) return v4(b, 2)
  return null
}

/**
 * True when the node must not connect to `ip`. Anything that is not a valid IP address (an
 * IPv6 literal may come with brackets or a zone ID) is also forbidden: the guard fails closed.
 */
export function isForbiddenAddress(ip: string): boolean {
  let text = ip.trim()
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1)
  const zone = text.indexOf('%')
  if (zone !== -1) text = text.slice(0, zone)
  if (isIPv4(text)) return blocked.check(text, 'ipv4')
  if (!isIPv6(text)) return true
  if (blocked.check(text, 'ipv6')) return true
  const bytes = ipv6Bytes(text)
  if (bytes === null) return true
  const inner = embeddedIPv4(bytes)
  return inner !== null && blocked.check(inner, 'ipv4')
}
