/**
 * The testnet library's public shapes (options, the view of a node, link faults, network modes)
 * and its error; testnet.ts re-exports them, and its parts share them without importing it.
 */

export type NetworkMode = 'netns' | 'process'

export interface TestnetOptions {
  nodes: number
  /** full, ring, star or random:<degree> (default full). */
  topology?: string
  /** Fixes random topologies and seeded entities (default 1). */
  seed?: number
  /** netns, process, or auto: netns where the machine allows it (default auto). */
  network?: NetworkMode | 'auto'
  /**
   * Nodes behind a stateful packet filter that refuses inbound connections from other nodes (netns
   * mode, where the kernel has nftables): they dial out, nobody dials them, as behind a home NAT.
   */
  private?: readonly number[]
  /** Parent of the nodes' data directories (default: a new temporary directory). */
  dataRoot?: string
  /** Keep the data directories after stop(). */
  keep?: boolean
  /** Write each node's gossip trace to <traceDir>/node-<i>.jsonl. */
  traceDir?: string
  /** Period of each node's sync rounds (default 10 s: testnets heal faster than the 60 s default). */
  syncIntervalSeconds?: number
  /** More `registry-node start` flags for every node. */
  nodeArgs?: readonly string[]
  /** Heartbeat period of the testnet's echo entities (default 10 s). */
  entityHeartbeatSeconds?: number
  /** Node.js flags for every node process, before the entry point (`--cpu-prof`, `--cpu-prof-dir=DIR`). */
  runtimeArgs?: readonly string[]
  /** Node arguments that run the CLI (`['dist/cli.js']`); default: the way this process runs (the sources through tsx, or dist/). */
  cli?: readonly string[]
  logLevel?: string
  /** Progress lines (the CLI prints them). */
  log?: (line: string) => void
}

export interface TestnetNode {
  index: number
  name: string
  dataDir: string
  /** Base URL of the node's HTTP API. */
  url: string
  peerId: string
  /** TCP multiaddr ending in /p2p/<peer id>. */
  multiaddr: string
  state: 'running' | 'paused' | 'stopped'
  traceFile: string | null
}

export interface LinkFaults {
  /** Probability in [0, 1] that a packet (netns) or a gossip copy (process) is lost. */
  loss?: number
  /** Added latency per hop, ms. */
  latencyMs?: number
  /** Spread of that latency, ms: each packet's delay uniform in latencyMs ± jitterMs. Needs netns mode and netem. */
  jitterMs?: number
  /**
   * Each node's upload rate to the other nodes, Mbit/s, all its links together (the simulation's
   * per-node upload bandwidth); `between` does not narrow it. Needs netns mode.
   */
  bandwidthMbit?: number
  /** Only these links (both directions); every link when absent. Needs netns mode. */
  between?: [number, number][]
}

/** Where each fault asked of setLinkFaults acts; what acts nowhere is in `unsupported`, with the reason. */
export interface LinkFaultModes {
  loss?: NetworkMode
  latency?: NetworkMode
  jitter?: 'netns'
  bandwidth?: 'netns'
  /** Present only when something asked for is not applied. */
  unsupported?: string[]
}

/** What a node's status says of its sync digests (GET /v1/network/status `sync`), with its entity count. */
export interface SyncState {
  digest: string
  operations: number
  /** digest_changed_at as a Date.now() (the node's clock, which is this machine's). */
  changedAt: number
  entities: number
}

/** Testnet.waitForConvergence: the state every running node reached, and when each reached it. */
export interface Convergence {
  digest: string
  operations: number
  entities: number
  /** By node index: ms from the reference instant to the node's last change of that state; null for nodes not running. */
  perNodeMs: (number | null)[]
  /** The slowest node's. */
  ms: number
}

export class TestnetError extends Error {
  override name = 'TestnetError'
}
