/**
 * Linux network namespaces for local testnets, so partitions and packet loss act on real packets
 * (existing TCP connections included) instead of on the application's own fault switches.
 * Needs root and iproute2 (`ip`, `tc`); nftables (`nft`) only for refuseInbound(). Nothing changes
 * in the root namespace (no iptables, nft or sysctl changes there).
 *
 * ```ts
 * probeNetns(): Promise<NetnsCapabilities>        // never throws; creates and deletes a throwaway namespace
 *   { namespaces, loss, latency, bandwidth, firewall, partitionMethod: 'tc-drop' | 'blackhole-route' | 'none', reasons }
 * createNetnsNetwork(count, { subnet? }): Promise<NetnsNetwork>   // 1..253 nodes
 *   .prefix              'rn7a3f-': random per testnet; every namespace and root-namespace link starts with it
 *   .subnet              '10.211.X.0/24', a /24 of 10.211.0.0/16 not in use (ip addr, ip route, other testnets)
 *   .hostAddress         '10.211.X.254': the root namespace's address on the testnet's bridge
 *   .address(i)          '10.211.X.(i+1)': node i's address (its only interface besides lo is eth0)
 *   .namespace(i)        node i's namespace name, `${prefix}n${i}`
 *   .wrap(i, argv)       ['/usr/sbin/ip','netns','exec',namespace(i),...argv]: spawn argv inside node i's namespace
 *   .partition(groups)   nodes in different groups exchange no packets (silently dropped, both ways)
 *   .heal()              undoes partition()
 *   .setLinkFaults({ lossPercent?, latencyMs?, jitterMs?, bandwidthMbit?, between? }) -> { applied, unsupported }
 *   .clearLinkFaults()
 *   .refuseInbound(nodes) a stateful nftables filter in each node's namespace: replies and the host pass,
 *                        new connections from other nodes are dropped (needs capabilities.firewall)
 *   .refusedPackets(i)   packets node i's filter dropped, or null
 *   .destroy()           deletes everything; idempotent
 * cleanupStaleNetns(prefixPattern = /^rn[0-9a-f]{4}-/): removes what crashed runs left behind
 * ```
 *
 * Layout. Each testnet has a "switch" namespace `${prefix}sw` holding a bridge `br0`; every node
 * namespace `${prefix}n${i}` has lo up and a veth `eth0` whose other end (`n${i}`) is a port of
 * that bridge. The root namespace joins through one veth, `${prefix}h` (address hostAddress/24,
 * other end `host` on the bridge), so the testnet tool and tests reach address(i) directly. The
 * bridge lives in its own namespace rather than the root one so the host's firewall cannot touch
 * node-to-node traffic: with br_netfilter loaded (net.bridge.bridge-nf-call-iptables = 1, as here)
 * bridged frames go through iptables FORWARD, where e.g. Docker's DROP policy would eat them. The
 * switch namespace starts without rules, and bridge-nf-call-* is also set to 0 in it (best effort,
 * those sysctls are per namespace). IPv6 address generation is off on the veths: IPv4 only.
 *
 * Faults act on each node's eth0 egress, so only node-to-node traffic is affected; traffic between
 * a node and hostAddress (HTTP from the testnet tool) never is.
 * - partition(groups): a node drops every IPv4 packet it sends to a node of another group. Both
 *   ends do this, so nothing crosses either way, for new and for established connections alike;
 *   after heal() TCP's retransmissions carry on with the connections that have not timed out.
 *   Groups: arrays of node indices; nodes listed in no group form one more group together (so
 *   partition([[0]]) cuts node 0 off from everyone else). Each call replaces the previous one.
 *   Mechanism: a classic-BPF tc filter in direct-action mode on a clsact qdisc (returns
 *   TC_ACT_SHOT). Where cls_bpf is missing, blackhole routes in each node's namespace instead:
 *   packets are dropped too, but the sender's socket sees EINVAL at once (connect fails
 *   immediately; established connections retransmit into the void until healed).
 * - setLinkFaults({ lossPercent, latencyMs, jitterMs, bandwidthMbit, between }): on all node-to-node
 *   links, or only the given pairs (both directions of each). lossPercent applies to each direction
 *   independently (a round trip loses 1-(1-p)^2): the same BPF filter, drawing the kernel's
 *   per-packet random number (SKF_AD_RANDOM). latencyMs is one way, added to each direction (RTT
 *   grows 2x), jitterMs netem's spread around it: an htb tree on eth0 whose class for the chosen
 *   destinations (u32 dst match) has a netem leaf; only where the kernel has netem, otherwise
 *   reported in `unsupported`. bandwidthMbit caps each node's whole uplink to the other nodes (not
 *   per link, and `between` does not narrow it): the rate and ceil of the htb class both node
 *   classes hang from; traffic to hostAddress has a class of its own outside the cap. Each call
 *   replaces the previous faults; partition and link faults are independent (partition is checked
 *   first).
 *
 * Cleanup. Every testnet (and every probe) first writes an owner file `${prefix}owner.json`
 * (pid and process start time) and a subnet lock into /run/registry-node-netns (or
 * $TMPDIR/registry-node-netns); destroy() removes them last. cleanupStaleNetns() removes the
 * namespaces and root-namespace links of every prefix matching the pattern whose owner process is
 * gone (or that has no owner file), and their files; live testnets, including this process's, are
 * kept. It does not kill processes still running inside stale namespaces (their eth0 goes away
 * with the switch namespace); it reports their pids. Callers should stop their node processes
 * before destroy() for the same reason.
 *
 * This file is the public face; the parts are in netns/, one concern a file.
 */
import { reserveSubnet } from './netns/addresses.js'
import { Network } from './netns/network.js'
import { releaseFiles, reservePrefix } from './netns/ownership.js'
import { probedCapabilities } from './netns/probe.js'
import { teardownPrefix } from './netns/teardown.js'
import { NetnsError, type NetnsNetwork } from './netns/types.js'

export { DEFAULT_PREFIX_PATTERN } from './netns/ownership.js'
export { probeNetns } from './netns/probe.js'
export { cleanupStaleNetns } from './netns/teardown.js'
export {
  type LinkFaults,
  type NetnsCapabilities,
  NetnsError,
  type NetnsNetwork,
  type StaleCleanup
} from './netns/types.js'

const MAX_NODES = 253

/**
 * Creates `count` node namespaces on a fresh /24 (options.subnet, e.g. '10.211.7.0/24', or a free
 * one of 10.211.0.0/16). On failure everything created so far is removed before the error is thrown.
 */
export async function createNetnsNetwork(count: number, options: { subnet?: string } = {}): Promise<NetnsNetwork> {
  if (!Number.isInteger(count) || count < 1 || count > MAX_NODES) {
    throw new RangeError(`node count ${count}: expected 1..${MAX_NODES}`)
  }
  const caps = await probedCapabilities()
  if (!caps.namespaces) throw new NetnsError(`network namespaces unavailable: ${caps.reasons.join('; ')}`)
  const { prefix, dir } = await reservePrefix()
  try {
    const base = await reserveSubnet(dir, prefix, options.subnet)
    const network = new Network(prefix, count, base, dir, caps)
    await network.build()
    return network
  } catch (err) {
    await teardownPrefix(prefix).catch(() => undefined)
    await releaseFiles(dir, prefix)
    throw err
  }
}
