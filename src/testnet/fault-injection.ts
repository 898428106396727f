/**
 * Partitions, packet loss, latency, jitter and bandwidth for a testnet, each routed to where it can
 * act: the kernel (netns mode, via netns.ts) or the nodes' own fault switches (`PUT
 * /v1/admin/mesh/faults`, mesh/faults.ts) in process mode, or where the kernel lacks what a fault
 * needs. Jitter and bandwidth have no process-mode stand-in: without the kernel they are reported
 * unsupported, not imitated.
 */
// Types only: netns.js itself is loaded in netns mode.
import type { NetnsNetwork } from './netns.js'
import {
  type LinkFaultModes,
  type LinkFaults,
  type NetworkMode,
  TestnetError,
  type TestnetNode
} from './testnet-types.js'

interface ProcessFaults {
  blocked_peers?: string[]
  loss?: number
  delay_ms?: number
}

/** What fault injection needs of its testnet. */
export interface FaultScope {
  /** The testnet's namespaces; null in process mode. */
  netns(): NetnsNetwork | null
  nodes(): readonly TestnetNode[]
  /** Indexes of running nodes. */
  running(): number[]
  /** Node i; throws a TestnetError when there is none. */
  node(i: number): TestnetNode
  request(i: number, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>
}

export class FaultInjector {
  constructor(private readonly scope: FaultScope) {}

  /**
   * Splits the mesh: nodes in different groups exchange nothing. Nodes left out of every group form
   * one more group. Returns the mode it ran in.
   */
  async partition(groups: readonly (readonly number[])[]): Promise<NetworkMode> {
    const nodes = this.scope.nodes()
    const netns = this.scope.netns()
    const listed = new Set(groups.flat())
    const all = [...groups.map(g => [...g]), nodes.map(s => s.index).filter(i => !listed.has(i))].filter(
      g => g.length > 0
    )
    if (netns) {
      await netns.partition(all)
      return 'netns'
    }
    const groupOf = new Map(all.flatMap((g, k) => g.map(i => [i, k] as const)))
    await Promise.all(
      this.scope.running().map(i =>
        this.setProcessFaults(i, {
          blocked_peers: nodes.filter(s => groupOf.get(s.index) !== groupOf.get(i)).map(s => s.peerId)
        })
      )
    )
    return 'process'
  }

  /** Ends a partition; dialling the edges again is the testnet's part. */
  async heal(): Promise<void> {
    const netns = this.scope.netns()
    if (netns) await netns.heal()
    else await Promise.all(this.scope.running().map(i => this.setProcessFaults(i, { blocked_peers: [] })))
  }

  /**
   * Loss, latency and jitter on every link (or the chosen ones), bandwidth on every node's uplink;
   * says where each acts (netns packets or process gossip) and what acts nowhere. Replaces earlier
   * link faults.
   */
  async setLinkFaults(faults: LinkFaults): Promise<LinkFaultModes> {
    const netns = this.scope.netns()
    const modes: LinkFaultModes = {}
    const unsupported: string[] = []
    let processFaults: { loss?: number; delay_ms?: number } = {}
    if (faults.between) {
      // In-process faults act on every copy a node receives: they cannot single out one link.
      if (!netns)
        throw new TestnetError(
          'faults on chosen links need netns mode (process-mode loss and latency apply to every link)'
        )
      for (const pair of faults.between) for (const i of pair) this.scope.node(i)
    }
    if (netns) {
      const result = await netns.setLinkFaults({
        ...(faults.loss ? { lossPercent: faults.loss * 100 } : {}),
        ...(faults.latencyMs ? { latencyMs: faults.latencyMs } : {}),
        ...(faults.jitterMs ? { jitterMs: faults.jitterMs } : {}),
        ...(faults.bandwidthMbit ? { bandwidthMbit: faults.bandwidthMbit } : {}),
        ...(faults.between ? { between: faults.between } : {})
      })
      if (faults.between && result.unsupported.length > 0)
        throw new TestnetError(`not possible on chosen links here: ${result.unsupported.join('; ')}`)
      const appliedAs = (kind: string): boolean => result.applied.some(a => a.startsWith(kind))
      if (faults.loss) modes.loss = appliedAs('loss') ? 'netns' : 'process'
      if (faults.latencyMs) modes.latency = appliedAs('latency') ? 'netns' : 'process'
      if (faults.jitterMs && appliedAs('jitter')) modes.jitter = 'netns'
      if (faults.bandwidthMbit && appliedAs('bandwidth')) modes.bandwidth = 'netns'
      // Loss and latency fall back to the nodes' switches; jitter and bandwidth have none.
      unsupported.push(...result.unsupported.filter(u => u.startsWith('jitter') || u.startsWith('bandwidth')))
    } else {
      if (faults.loss) modes.loss = 'process'
      if (faults.latencyMs) modes.latency = 'process'
      if (faults.jitterMs)
        unsupported.push(
          `jitter ${faults.jitterMs} ms: process mode holds every gossip copy for the same time (jitter needs netns mode and netem)`
        )
      if (faults.bandwidthMbit)
        unsupported.push(
          `bandwidth ${faults.bandwidthMbit} Mbit/s: process mode has no bandwidth shaping (it needs netns mode)`
        )
    }
    if (modes.loss === 'process') processFaults.loss = faults.loss
    if (modes.latency === 'process') processFaults = { ...processFaults, delay_ms: Math.round(faults.latencyMs ?? 0) }
    if (Object.keys(processFaults).length > 0)
      await Promise.all(this.scope.running().map(i => this.setProcessFaults(i, processFaults)))
    if (unsupported.length > 0) modes.unsupported = unsupported
    return modes
  }

  async clearLinkFaults(): Promise<void> {
    await this.scope.netns()?.clearLinkFaults()
    await Promise.all(this.scope.running().map(i => this.setProcessFaults(i, { loss: 0, delay_ms: 0 })))
  }

  private async setProcessFaults(i: number, faults: ProcessFaults): Promise<void> {
    const reply = await this.scope.request(i, 'PUT', '/v1/admin/mesh/faults', faults)
    if (reply.status !== 200)
      throw new TestnetError(`faults on ${this.scope.node(i).name}: ${reply.status} ${JSON.stringify(reply.body)}`)
  }
}
