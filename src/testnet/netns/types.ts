/**
 * The public shapes of the netns module (../netns.ts): what this machine supports, link faults, the
 * handle on one testnet's namespaces, the result of a stale sweep, and the error its parts throw.
 */

export interface NetnsCapabilities {
  /** Namespaces, veth pairs and a bridge can be created: createNetnsNetwork() and partition() work. */
  namespaces: boolean
  /** Probabilistic (and 100 %) packet loss via tc: setLinkFaults({ lossPercent }). */
  loss: boolean
  /** Added delay and jitter (needs the netem qdisc, and htb): setLinkFaults({ latencyMs, jitterMs }). */
  latency: boolean
  /** A rate limit on each node's uplink (needs htb): setLinkFaults({ bandwidthMbit }). */
  bandwidth: boolean
  /** nftables with connection tracking works inside a namespace: refuseInbound() works. */
  firewall: boolean
  /** How partition() drops packets: tc filters where loss works, else blackhole routes. */
  partitionMethod: 'tc-drop' | 'blackhole-route' | 'none'
  /** Why something above is false, from the kernel's or the tool's own error messages. */
  reasons: string[]
}

export interface LinkFaults {
  /** 0..100, per direction. */
  lossPercent?: number
  /** One-way delay in milliseconds, per direction. */
  latencyMs?: number
  /** netem's jitter: each packet's delay is uniform in latencyMs ± jitterMs (at most latencyMs). */
  jitterMs?: number
  /**
   * Each node's upload rate to the other nodes, Mbit/s: one limit for all its links together, as a
   * home uplink; `between` does not narrow it, and traffic to the host is not limited.
   */
  bandwidthMbit?: number
  /** Node pairs the faults apply to (both directions); all node pairs when omitted. */
  between?: [number, number][]
}

export interface NetnsNetwork {
  readonly prefix: string
  readonly count: number
  readonly subnet: string
  readonly hostAddress: string
  readonly capabilities: NetnsCapabilities
  address(i: number): string
  namespace(i: number): string
  wrap(i: number, argv: string[]): string[]
  partition(groups: number[][]): Promise<void>
  heal(): Promise<void>
  setLinkFaults(faults: LinkFaults): Promise<{ applied: string[]; unsupported: string[] }>
  clearLinkFaults(): Promise<void>
  /** Puts these nodes behind a stateful filter: they dial out, but nodes cannot dial them (the host can). */
  refuseInbound(nodes: readonly number[]): Promise<void>
  /** Packets each node's filter dropped (null: the node has none). */
  refusedPackets(i: number): Promise<number | null>
  destroy(): Promise<void>
}

export interface StaleCleanup {
  /** Prefixes whose namespaces, links and files were removed. */
  removed: string[]
  /** Prefixes left alone because their owner process is alive. */
  kept: string[]
  /** Processes still running inside the removed namespaces (not killed). */
  orphanPids: number[]
}

export class NetnsError extends Error {
  override name = 'NetnsError'
}
