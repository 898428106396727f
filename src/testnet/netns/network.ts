/**
 * The handle on one built testnet (NetnsNetwork): node names and addresses, partitions, link faults
 * and destroy(), turned into per-node shaping commands on the capabilities the probe found.
 */
import { ipToInt } from './addresses.js'
import { buildBridge } from './bridge.js'
import { lossThreshold } from './drop-program.js'
import { droppedPackets, installFirewall } from './firewall.js'
import { bin, listNamespaces, listRootLinks, mapLimit, PARALLEL } from './iproute.js'
import { releaseFiles } from './ownership.js'
import {
  installShaping,
  LOSS_PRIO,
  PARTITION_PRIO,
  removeDropFilter,
  removeShaping,
  replaceBlackholeRoutes,
  replaceDropFilter
} from './shaping.js'
import { teardownPrefix } from './teardown.js'
import { type LinkFaults, type NetnsCapabilities, NetnsError, type NetnsNetwork } from './types.js'

export class Network implements NetnsNetwork {
  readonly subnet: string
  readonly hostAddress: string
  private readonly routes = new Map<number, string[]>() // blackhole routes per node (fallback partition)
  private lossOn = false
  private shapingOn = false
  private destroyed = false

  constructor(
    readonly prefix: string,
    readonly count: number,
    private readonly base: string,
    private readonly dir: string,
    readonly capabilities: NetnsCapabilities
  ) {
    this.subnet = `${base}.0/24`
    this.hostAddress = `${base}.254`
  }

  private index(i: number): number {
    if (!Number.isInteger(i) || i < 0 || i >= this.count)
      throw new RangeError(`node ${i}: expected 0..${this.count - 1}`)
    return i
  }

  address(i: number): string {
    return `${this.base}.${this.index(i) + 1}`
  }

  namespace(i: number): string {
    return `${this.prefix}n${this.index(i)}`
  }

  wrap(i: number, argv: string[]): string[] {
    return [bin('ip'), 'netns', 'exec', this.namespace(i), ...argv]
  }

  private nodes(): number[] {
    return Array.from({ length: this.count }, (_, i) => i)
  }

  private alive(): void {
    if (this.destroyed) throw new NetnsError(`testnet ${this.prefix} was destroyed`)
  }

  /** Builds the switch, the host link and every node; throws on the first failure (caller tears down). */
  async build(): Promise<void> {
    await buildBridge(this, this.capabilities.loss)
  }

  async partition(groups: number[][]): Promise<void> {
    this.alive()
    const groupOf = new Array<number>(this.count).fill(groups.length)
    const seen = new Set<number>()
    groups.forEach((group, g) => {
      for (const i of group) {
        this.index(i)
        if (seen.has(i)) throw new NetnsError(`partition: node ${i} is in more than one group`)
        seen.add(i)
        groupOf[i] = g
      }
    })
    const blocked = (i: number): number[] => this.nodes().filter(j => groupOf[j] !== groupOf[i])
    await this.applyPartition(blocked)
  }

  async heal(): Promise<void> {
    this.alive()
    await this.applyPartition(() => [])
  }

  private async applyPartition(blocked: (i: number) => number[]): Promise<void> {
    if (this.capabilities.partitionMethod === 'tc-drop') {
      await mapLimit(this.nodes(), PARALLEL, async i => {
        const peers = blocked(i)
        if (peers.length === 0) {
          await removeDropFilter(this.namespace(i), PARTITION_PRIO)
        } else {
          await replaceDropFilter(this.namespace(i), PARTITION_PRIO, this.addressInts(peers), null)
        }
      })
      return
    }
    await mapLimit(this.nodes(), PARALLEL, async i => {
      const wanted = blocked(i).map(j => `${this.address(j)}/32`)
      await replaceBlackholeRoutes(this.namespace(i), this.routes.get(i) ?? [], wanted)
      this.routes.set(i, wanted)
    })
  }

  async setLinkFaults(faults: LinkFaults): Promise<{ applied: string[]; unsupported: string[] }> {
    this.alive()
    const loss = faults.lossPercent ?? 0
    const latency = faults.latencyMs ?? 0
    const jitter = faults.jitterMs ?? 0
    const bandwidth = faults.bandwidthMbit ?? 0
    if (!Number.isFinite(loss) || loss < 0 || loss > 100) throw new RangeError(`lossPercent ${loss}: expected 0..100`)
    if (!Number.isFinite(latency) || latency < 0) throw new RangeError(`latencyMs ${latency}: expected >= 0`)
    // A delay cannot go below zero: netem would clip it, and the jitter would not be what was asked.
    if (!Number.isFinite(jitter) || jitter < 0 || jitter > latency)
      throw new RangeError(`jitterMs ${jitter}: expected 0..latencyMs (${latency})`)
    if (!Number.isFinite(bandwidth) || bandwidth < 0)
      throw new RangeError(`bandwidthMbit ${bandwidth}: expected >= 0 (0: unlimited)`)
    const targets = new Map<number, Set<number>>(this.nodes().map(i => [i, new Set<number>()]))
    if (faults.between === undefined) {
      for (const i of this.nodes()) for (const j of this.nodes()) if (i !== j) targets.get(i)?.add(j)
    } else {
      for (const [a, b] of faults.between) {
        this.index(a)
        this.index(b)
        if (a === b) throw new NetnsError(`link ${a}<->${b}: a node has no link to itself`)
        targets.get(a)?.add(b)
        targets.get(b)?.add(a)
      }
    }
    const where =
      faults.between === undefined
        ? 'all node-to-node links'
        : `links ${faults.between.map(([a, b]) => `${a}<->${b}`).join(', ')}`
    await this.clearLinkFaults()
    const applied: string[] = []
    const unsupported: string[] = []
    const threshold = lossThreshold(loss)
    if (loss > 0 && threshold !== 0) {
      if (!this.capabilities.loss) {
        unsupported.push(`loss ${loss}%: ${this.reason(/^no packet loss/) ?? 'not supported here'}`)
      } else {
        this.lossOn = true
        await mapLimit(this.nodes(), PARALLEL, async i => {
          const dsts = [...(targets.get(i) ?? [])]
          if (dsts.length === 0) return
          await replaceDropFilter(this.namespace(i), LOSS_PRIO, this.addressInts(dsts), threshold)
        })
        applied.push(`loss ${loss}% in each direction on ${where}`)
      }
    }
    let delayed = false
    if (latency > 0) {
      if (!this.capabilities.latency) {
        const why = this.reason(/no latency/) ?? 'not supported here'
        unsupported.push(`latency ${latency} ms: ${why}`)
        if (jitter > 0) unsupported.push(`jitter ${jitter} ms: ${why}`)
      } else delayed = true
    }
    let limit: number | null = null
    if (bandwidth > 0) {
      if (!this.capabilities.bandwidth)
        unsupported.push(`bandwidth ${bandwidth} Mbit/s: ${this.reason(/no bandwidth/) ?? 'not supported here'}`)
      else limit = bandwidth
    }
    if (delayed || limit !== null) {
      this.shapingOn = true
      await mapLimit(this.nodes(), PARALLEL, async i => {
        const dsts = delayed ? [...(targets.get(i) ?? [])] : []
        if (dsts.length === 0 && limit === null) return
        await installShaping(this.namespace(i), {
          bandwidthMbit: limit,
          delay:
            dsts.length === 0
              ? null
              : { latencyMs: latency, jitterMs: jitter, destinations: dsts.map(j => this.address(j)) },
          hostAddress: this.hostAddress
        })
      })
      if (delayed) {
        applied.push(`latency ${latency} ms one way, in each direction, on ${where}`)
        if (jitter > 0)
          applied.push(`jitter ${jitter} ms (each packet's delay uniform in ${latency} ± ${jitter} ms) on ${where}`)
      }
      if (limit !== null) applied.push(`bandwidth ${limit} Mbit/s on each node's uplink to the other nodes`)
    }
    return { applied, unsupported }
  }

  private addressInts(nodes: readonly number[]): number[] {
    return nodes.map(j => ipToInt(this.address(j)))
  }

  private reason(pattern: RegExp): string | undefined {
    return this.capabilities.reasons.find(r => pattern.test(r))
  }

  async clearLinkFaults(): Promise<void> {
    if (this.destroyed) return
    const loss = this.lossOn
    const shaping = this.shapingOn
    await mapLimit(this.nodes(), PARALLEL, async i => {
      if (loss) await removeDropFilter(this.namespace(i), LOSS_PRIO)
      if (shaping) await removeShaping(this.namespace(i))
    })
    this.lossOn = false
    this.shapingOn = false
  }

  async refuseInbound(nodes: readonly number[]): Promise<void> {
    this.alive()
    for (const i of nodes) this.index(i)
    if (nodes.length === 0) return
    if (!this.capabilities.firewall)
      throw new NetnsError(`refuseInbound: ${this.reason(/^no firewall/) ?? 'no packet filter here'}`)
    await mapLimit([...new Set(nodes)], PARALLEL, i => installFirewall(this.namespace(i), this.hostAddress))
  }

  refusedPackets(i: number): Promise<number | null> {
    return droppedPackets(this.namespace(this.index(i)))
  }

  async destroy(): Promise<void> {
    this.destroyed = true
    const { errors } = await teardownPrefix(this.prefix)
    const left = [...(await listNamespaces()), ...(await listRootLinks())].filter(n => n.startsWith(this.prefix))
    if (left.length > 0) {
      const why = errors.length > 0 ? ` (${errors.join('; ')})` : ''
      throw new NetnsError(`destroy ${this.prefix}: still present: ${left.join(', ')}${why}`)
    }
    await releaseFiles(this.dir, this.prefix)
  }
}
