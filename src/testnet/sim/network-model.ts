/**
 * The simulated network between a simulation's nodes: how long each chunk of bytes takes from one
 * node to another. A chunk leaves once the sender's uplink has sent what was queued before it
 * (per-node upload bandwidth), travels the one-way latency between the two nodes' regions plus
 * jitter, and arrives no earlier than the chunk sent before it on the same connection (a stream
 * is ordered, as over TCP). A lost packet costs its chunk a retransmission, about one round trip
 * plus TCP's 200 ms minimum timeout, since libp2p's streams are reliable. While two nodes are
 * partitioned their connections stall, as over TCP: what they send waits and arrives after the
 * heal; new dials between them hang until they time out.
 *
 * What it leaves out: download bandwidth and congestion inside the network, TCP slow start and
 * window dynamics, and the exact retransmission backoff.
 */
import type { VirtualClock } from './virtual-clock.js'

export interface Region {
  name: string
  /** Share of the nodes placed in it; the shares are normalized. */
  share: number
}

export interface NetworkModelSpec {
  regions: Region[]
  /** One-way latency between regions, ms, by region index (symmetric; the diagonal is within a region). */
  latencyMs: number[][]
  /** Each chunk's extra delay, uniform in [0, jitterMs). */
  jitterMs: number
  /** Probability that a packet (1,460 bytes) is lost. */
  loss: number
  /** Upload bandwidth of every node, Mbit/s (0: unlimited). */
  uploadMbps: number
  /**
   * Time a node takes from a gossip copy passing the duplicate check (its IDONTWANT sent) to
   * forwarding it: decoding, the signature check and the store's commit, ms; each draw uniform in
   * [0.5, 1.5] × it. Absent or 0: none (virtual time does not see the CPU or the disk).
   */
  validationMs?: number
}

/**
 * A quiet node's time from a gossip copy to its application: the median on a 3-node testnet on the
 * 2-core development machine was 6.2 ms (p10 4.7 ms), mostly the store's commit.
 */
export const QUIET_NODE_VALIDATION_MS = 5

/** One region, 50 ms between any two nodes, 100 Mbit/s uploads, no loss: a default for quick runs. */
export const DEFAULT_NETWORK: NetworkModelSpec = {
  regions: [{ name: 'all', share: 1 }],
  latencyMs: [[50]],
  jitterMs: 0,
  loss: 0,
  uploadMbps: 100,
  validationMs: QUIET_NODE_VALIDATION_MS
}

/**
 * The network of Waku's 1,000-node study as we read its published parameters (100 ms between any two
 * nodes, 50 Mbit/s): to hold our figures against its 508 ms mean dissemination of 10 kB messages.
 */
export const WAKU_NETWORK: NetworkModelSpec = {
  regions: [{ name: 'all', share: 1 }],
  latencyMs: [[100]],
  jitterMs: 0,
  loss: 0,
  uploadMbps: 50,
  validationMs: QUIET_NODE_VALIDATION_MS
}

/**
 * Five regions with one-way latencies of the order public ping tables show between data centres
 * (half the round trip): for runs that ask where nodes are.
 */
export const WORLD_NETWORK: NetworkModelSpec = {
  regions: [
    { name: 'europe', share: 0.35 },
    { name: 'north-america', share: 0.3 },
    { name: 'asia', share: 0.2 },
    { name: 'south-america', share: 0.08 },
    { name: 'oceania', share: 0.07 }
  ],
  latencyMs: [
    [8, 45, 110, 100, 140],
    [45, 15, 85, 70, 95],
    [110, 85, 20, 150, 60],
    [100, 70, 150, 15, 160],
    [140, 95, 60, 160, 10]
  ],
  jitterMs: 5,
  loss: 0,
  uploadMbps: 100,
  validationMs: QUIET_NODE_VALIDATION_MS
}

export const NETWORK_PRESETS: Record<string, NetworkModelSpec> = {
  default: DEFAULT_NETWORK,
  waku: WAKU_NETWORK,
  world: WORLD_NETWORK
}

const PACKET_BYTES = 1460
const MIN_RTO_MS = 200

/** One direction of one connection: chunks arrive in the order they were sent. */
export class Pipe {
  private lastArrival = 0
  /** Chunks held while the two ends are partitioned. */
  private held: { bytes: number; deliver: () => void }[] = []
  closed = false

  constructor(
    private readonly network: SimNetwork,
    readonly from: number,
    readonly to: number
  ) {}

  /** Sends `bytes`; `deliver` runs at the receiver when they arrive. */
  send(bytes: number, deliver: () => void): void {
    if (this.closed) return
    if (!this.network.linked(this.from, this.to)) {
      if (this.held.length === 0) this.network.stalled.add(this)
      this.held.push({ bytes, deliver })
      return
    }
    this.transmit(bytes, deliver)
  }

  /** Sends what waited through a partition (the network calls this when it heals). */
  release(): void {
    const held = this.held
    this.held = []
    for (const chunk of held) this.transmit(chunk.bytes, chunk.deliver)
  }

  close(): void {
    this.closed = true
    this.held = []
  }

  private transmit(bytes: number, deliver: () => void): void {
    const arrival = Math.max(this.network.arrival(this.from, this.to, bytes), this.lastArrival)
    this.lastArrival = arrival
    this.network.clock.schedule(arrival - this.network.clock.now, () => {
      if (!this.closed) deliver()
    })
  }
}

export interface NodeTraffic {
  bytesSent: number
  chunksSent: number
}

export class SimNetwork {
  private readonly region: number[] = []
  private readonly uplinkFreeAt: number[] = []
  readonly traffic: NodeTraffic[] = []
  /** Partition group of each node; null when the network is whole. */
  private group: number[] | null = null
  readonly stalled = new Set<Pipe>()

  /** The model in force: a copy of the one given, which the console's loss and latency commands change. */
  readonly spec: NetworkModelSpec

  constructor(
    readonly clock: VirtualClock,
    spec: NetworkModelSpec,
    private readonly random: () => number
  ) {
    checkSpec(spec)
    this.spec = structuredClone(spec)
  }

  /** Changes the loss on every link, or sets one latency between any two nodes, from now on. */
  adjust(change: { loss?: number; latencyMs?: number }): void {
    const next = structuredClone(this.spec)
    if (change.loss !== undefined) next.loss = change.loss
    if (change.latencyMs !== undefined)
      next.latencyMs = next.latencyMs.map(row => row.map(() => change.latencyMs as number))
    checkSpec(next)
    Object.assign(this.spec, next)
  }

  get partitioned(): boolean {
    return this.group !== null
  }

  /** Places node `index` in a region drawn by the regions' shares; returns the region's index. */
  addNode(index: number): number {
    const total = this.spec.regions.reduce((sum, r) => sum + r.share, 0)
    let draw = this.random() * total
    let region = 0
    for (; region < this.spec.regions.length - 1; region++) {
      draw -= (this.spec.regions[region] as Region).share
      if (draw < 0) break
    }
    this.region[index] = region
    this.uplinkFreeAt[index] = 0
    this.traffic[index] = { bytesSent: 0, chunksSent: 0 }
    return region
  }

  regionOf(index: number): string {
    return (this.spec.regions[this.region[index] ?? 0] as Region).name
  }

  /** One-way latency between two nodes, ms (without jitter). */
  latency(a: number, b: number): number {
    return ((this.spec.latencyMs[this.region[a] ?? 0] as number[])[this.region[b] ?? 0] as number) ?? 0
  }

  /** Whether two nodes can exchange packets now. */
  linked(a: number, b: number): boolean {
    return this.group === null || this.group[a] === this.group[b]
  }

  /** Splits the nodes into groups (node → group number); packets cross no group boundary until healed. */
  partition(groupOf: number[]): void {
    this.group = [...groupOf]
  }

  heal(): void {
    this.group = null
    const stalled = [...this.stalled]
    this.stalled.clear()
    for (const pipe of stalled) pipe.release()
  }

  /** When `bytes` sent now from `from` arrive at `to` (absolute virtual ms), the uplink's queue taken. */
  arrival(from: number, to: number, bytes: number): number {
    const now = this.clock.now
    const { uploadMbps, jitterMs, loss } = this.spec
    const serialization = uploadMbps > 0 ? (bytes * 8) / (uploadMbps * 1000) : 0
    const departs = Math.max(now, this.uplinkFreeAt[from] ?? 0) + serialization
    this.uplinkFreeAt[from] = departs
    const traffic = this.traffic[from]
    if (traffic) {
      traffic.bytesSent += bytes
      traffic.chunksSent++
    }
    const oneWay = this.latency(from, to)
    let delay = oneWay + (jitterMs > 0 ? this.random() * jitterMs : 0)
    if (loss > 0) {
      const packets = Math.max(1, Math.ceil(bytes / PACKET_BYTES))
      // Each lost attempt costs a retransmission timeout; the chunk goes through once none is lost.
      while (this.random() < 1 - (1 - loss) ** packets) delay += Math.max(MIN_RTO_MS, 2 * oneWay + MIN_RTO_MS)
    }
    return departs + delay
  }
}

function checkSpec(spec: NetworkModelSpec): void {
  const n = spec.regions.length
  if (n === 0) throw new Error('a network model needs at least one region')
  if (spec.latencyMs.length !== n || spec.latencyMs.some(row => row.length !== n))
    throw new Error(`the latency matrix must be ${n} × ${n} (one row and column per region)`)
  if (spec.latencyMs.some(row => row.some(ms => !(ms >= 0)))) throw new Error('latencies are milliseconds, at least 0')
  if (!(spec.loss >= 0 && spec.loss < 1)) throw new Error('loss is a probability in [0, 1)')
  if (!(spec.jitterMs >= 0)) throw new Error('jitter is milliseconds, at least 0')
  if (!(spec.uploadMbps >= 0)) throw new Error('upload bandwidth is Mbit/s, at least 0 (0: unlimited)')
  if (spec.regions.some(r => !(r.share > 0))) throw new Error('every region needs a share above 0')
  if (spec.validationMs !== undefined && !(spec.validationMs >= 0))
    throw new Error('validationMs is milliseconds, at least 0')
}
