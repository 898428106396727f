/**
 * `/dnsaddr/<name>` entries: a community publishes its bootstrap peers as TXT records
 * `dnsaddr=<multiaddr>` under `_dnsaddr.<name>`, and a record may name another `/dnsaddr/` (libp2p's
 * convention). Resolution is libp2p's own (its dnsaddr resolver over @multiformats/dns); what is ours
 * is the DNS servers it asks (p2p.dns_servers) and the recursion over the whole list, because
 * libp2p's dialler takes the resolved addresses as the addresses of one peer and keeps the first
 * that answers, where a bootstrap list names many peers.
 */
import { Resolver } from 'node:dns/promises'
import { dns, type DNS, type DNSResponse, type QueryOptions, RecordType } from '@multiformats/dns'
import type { Logger } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import { dnsaddrResolver } from 'libp2p'

/** libp2p's own limit on nested /dnsaddr/ records. */
const MAX_DEPTH = 32
/** Addresses one entry may expand to: a published list is a handful of peers, not a flood to dial. */
export const MAX_DNSADDR_ADDRESSES = 64
/** One try of this long per server: a dead server must not hold up the bootstrap dials for long. */
const QUERY_TIMEOUT_MS = 5000

export const isDnsaddr = (ma: Multiaddr): boolean => ma.getComponents().some(c => c.name === 'dnsaddr')

/**
 * The DNS the mesh resolves with: the system resolvers when `servers` is empty, else those servers
 * (`ip` or `ip:port`, as node:dns takes them). Throws a readable error for an invalid server address.
 */
export function meshDns(servers: readonly string[]): DNS {
  const resolver = new Resolver({ timeout: QUERY_TIMEOUT_MS, tries: 1 })
  try {
    if (servers.length > 0) resolver.setServers([...servers])
  } catch (err) {
    throw new Error(`p2p.dns_servers is invalid (${servers.join(', ')}): ${(err as Error).message}`)
  }
  const query = async (fqdn: string, options: QueryOptions = {}): Promise<DNSResponse> => {
    const types = options.types === undefined ? [RecordType.A] : [options.types].flat()
    const cancel = (): void => resolver.cancel()
    options.signal?.addEventListener('abort', cancel)
    try {
      const answers = await Promise.all(
        types.map(async type => {
          const data = await lookup(resolver, fqdn, type)
          // node:dns does not report TTLs; @multiformats/dns caches each answer for a minute.
          return data.map(value => ({ name: fqdn, type, TTL: 60, data: value }))
        })
      )
      return {
        Status: 0,
        TC: false,
        RD: true,
        RA: true,
        AD: false,
        CD: false,
        Question: types.map(type => ({ name: fqdn, type })),
        Answer: answers.flat()
      }
    } finally {
      options.signal?.removeEventListener('abort', cancel)
    }
  }
  return dns({ resolvers: { '.': query } })
}

/** One record type of a name; a name that does not exist or has no such records has none (libp2p's resolver expects an empty answer then). */
async function lookup(resolver: Resolver, fqdn: string, type: RecordType): Promise<string[]> {
  try {
    return type === RecordType.TXT
      ? (await resolver.resolveTxt(fqdn)).map(strings => strings.join(''))
      : type === RecordType.A
        ? await resolver.resolve4(fqdn)
        : type === RecordType.AAAA
          ? await resolver.resolve6(fqdn)
          : type === RecordType.CNAME
            ? await resolver.resolveCname(fqdn)
            : []
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOTFOUND' || code === 'ENODATA') return []
    throw err
  }
}

/**
 * The addresses a `/dnsaddr/` entry stands for, nested entries followed (each name once); other
 * addresses come back as they are. A name with no TXT records resolves to nothing; a DNS failure
 * throws. At most MAX_DNSADDR_ADDRESSES addresses.
 */
export async function expandDnsaddr(
  ma: Multiaddr,
  resolver: DNS,
  log: Logger,
  signal?: AbortSignal
): Promise<Multiaddr[]> {
  const out: Multiaddr[] = []
  const seen = new Set<string>()
  const walk = async (address: Multiaddr, depth: number): Promise<void> => {
    if (out.length >= MAX_DNSADDR_ADDRESSES) return
    if (!isDnsaddr(address)) {
      out.push(address)
      return
    }
    const key = address.toString()
    if (seen.has(key)) return
    seen.add(key)
    if (depth >= MAX_DEPTH) throw new Error(`${key}: more than ${MAX_DEPTH} nested /dnsaddr/ records`)
    for (const next of await dnsaddrResolver.resolve(address, { dns: resolver, log, signal }))
      await walk(next, depth + 1)
  }
  await walk(ma, 0)
  return out.slice(0, MAX_DNSADDR_ADDRESSES)
}
