/**
 * A stateful packet filter in a node's namespace that refuses inbound connections, as a home router
 * or a cloud NAT does: replies to what the node opened pass, new connections from other nodes are
 * dropped. Connections from the root namespace (hostAddress: the testnet tool's HTTP requests and
 * the operator's curl) still pass, so the node stays observable. nftables, inside the node's own
 * namespace only; the root namespace's rules are never touched.
 */
import { bin, type CommandResult, firstLine, run } from './iproute.js'
import { NetnsError } from './types.js'

const TABLE = 'registry_testnet'

/**
 * The rule set. `ct state established,related` admits what the node itself opened (and a TCP
 * simultaneous open, whose inbound SYN matches the outbound one's conntrack entry); everything
 * else from a node address is dropped silently, so a dialler times out as behind a real NAT.
 */
export function firewallRules(hostAddress: string): string {
  const rules = [
    'type filter hook input priority filter',
    'policy accept',
    'ct state established,related accept',
    'iif "lo" accept',
    `ip saddr ${hostAddress} accept`,
    'counter drop'
  ]
  return `table inet ${TABLE} { chain input { ${rules.join('; ')}; }; }`
}

async function nft(namespace: string, args: string[], input?: string): Promise<CommandResult> {
  // nft takes a whole rule set as one command-line argument, as it would read it from a file.
  return run([bin('ip'), 'netns', 'exec', namespace, bin('nft'), ...args, ...(input === undefined ? [] : [input])])
}

/** Installs (or replaces) the filter in `namespace`; throws with nft's own message on failure. */
export async function installFirewall(namespace: string, hostAddress: string): Promise<void> {
  await removeFirewall(namespace)
  const r = await nft(namespace, [], firewallRules(hostAddress))
  if (r.code !== 0) throw new NetnsError(`firewall in ${namespace}: ${firstLine(r.stderr)}`)
}

export async function removeFirewall(namespace: string): Promise<void> {
  await nft(namespace, ['delete', 'table', 'inet', TABLE])
}

/** Packets the filter dropped in `namespace` (connection attempts it refused), or null without a filter. */
export async function droppedPackets(namespace: string): Promise<number | null> {
  const r = await nft(namespace, ['list', 'table', 'inet', TABLE])
  if (r.code !== 0) return null
  const m = /counter packets (\d+)/.exec(r.stdout)
  return m ? Number(m[1]) : 0
}
