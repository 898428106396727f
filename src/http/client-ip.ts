import { BlockList, isIP } from 'node:net'

function normalize(address: string): string {
  const a = address.trim()
  return a.toLowerCase().startsWith('::ffff:') && isIP(a.slice(7)) === 4 ? a.slice(7) : a
}

/**
 * The client address: the socket peer, unless the peer is a configured trusted proxy, in which
 * case the right-most X-Forwarded-For entry that is not itself a trusted proxy.
 */
export class ClientIpResolver {
  private readonly trusted = new BlockList()
  private readonly any: boolean

  constructor(trustedProxies: readonly string[]) {
    for (const entry of trustedProxies) {
      const [address, prefix] = entry.split('/') as [string, string | undefined]
      const family = isIP(address)
      if (family === 0) throw new Error(`trusted proxy ${entry} is not an IP address or CIDR`)
      const type = family === 4 ? 'ipv4' : 'ipv6'
      if (prefix === undefined) this.trusted.addAddress(address, type)
      else this.trusted.addSubnet(address, Number(prefix), type)
    }
    this.any = trustedProxies.length > 0
  }

  private isTrusted(address: string): boolean {
    const family = isIP(address)
    return family !== 0 && this.trusted.check(address, family === 4 ? 'ipv4' : 'ipv6')
  }

  resolve(socketAddress: string, forwardedFor: string | undefined): string {
    const peer = normalize(socketAddress)
    if (!this.any || !forwardedFor || !this.isTrusted(peer)) return peer
    const hops = forwardedFor
      .split(',')
      .map(normalize)
      .filter(h => isIP(h) !== 0)
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] as string
      if (!this.isTrusted(hop)) return hop
    }
    return hops[0] ?? peer
  }
}
