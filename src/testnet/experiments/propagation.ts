/**
 * `registry-node experiment propagation`: for each topology, a testnet whose nodes write gossip
 * traces (`--trace`), M entity registrations published from random origins at a steady rate, then
 * from every node's trace the time each operation first arrived there. Writes into the results
 * folder:
 *
 *   traces/<topology>/node-<i>.jsonl   the raw traces (gossip-tap.ts describes the lines)
 *   propagation.csv                    one row per (topology, message, receiving node): latency,
 *                                      copies, hops
 *   summary.json                       per topology: delivery ratio, latency p50/p95/p99/max,
 *                                      hops, duplicates per node, bytes sent, fault modes
 *   latency-cdf.svg                    the latency CDF, one line per topology
 */
import { writeFile, mkdir } from 'node:fs/promises'
import { availableParallelism, loadavg } from 'node:os'
import { join } from 'node:path'
import { EntityFactory } from '../entity-factory.js'
import { seededRandom } from '../random.js'
import { sleep, Testnet, TestnetError, type LinkFaultModes, type LinkFaults, type NetworkMode } from '../testnet.js'
import { deliveriesFromTraces, type TraceLine } from './deliveries.js'
import { cdfChart, percentiles, readJsonLines, writeCsv, type Percentiles } from './report.js'

export interface PropagationOptions {
  nodes: number
  messages: number
  topologies: readonly string[]
  /** Results folder (created). */
  out: string
  /** Messages published per second (default 10). */
  rate?: number
  loss?: number
  latencyMs?: number
  /** Each node's uplink, Mbit/s: netns mode only (the run fails rather than go on without it). */
  bandwidthMbit?: number
  seed?: number
  network?: NetworkMode | 'auto'
  /** More `registry-node start` flags for every node (`--node-arg=--commit-delay-ms=0`). */
  nodeArgs?: readonly string[]
  /** How long to wait for the last deliveries after publishing (default 15 s). */
  settleMs?: number
  /** Node arguments that run the CLI (Testnet's `cli`). */
  cli?: readonly string[]
  log?: (line: string) => void
}

export interface TopologySummary {
  topology: string
  nodes: number
  edges: number
  messages: number
  network_mode: NetworkMode
  fault_modes: LinkFaultModes
  /** Receipts by gossip / (messages × (nodes − 1)). */
  delivery_ratio: number
  /** Share of nodes holding every message at the end (gossip or sync). */
  held_by_all_ratio: number
  latency_ms: Percentiles
  /** Hops from the origin on the receive tree (a node is one past the peer its first valid copy came from). */
  hops: Percentiles
  duplicates_per_node: { mean: number; max: number; per_message: number }
  bytes_sent: { total: number; per_message: number }
  publish_failures: number
}

export interface PropagationSummary {
  experiment: 'propagation'
  started_at: string
  parameters: {
    nodes: number
    messages: number
    rate: number
    loss: number
    latency_ms: number
    /** 0: unlimited. */
    bandwidth_mbit: number
    seed: number
  }
  /** The machine's cores and 1-minute load average before and after: figures from a busy machine say so. */
  machine: { cores: number; load_before: number; load_after: number }
  topologies: TopologySummary[]
}

interface Published {
  k: number
  entityId: string
  origin: number
}

const slug = (topology: string): string => topology.replace(/[^a-z0-9]+/gi, '-')

export async function runPropagation(o: PropagationOptions): Promise<PropagationSummary> {
  const log = o.log ?? (() => {})
  const rate = o.rate ?? 10
  const seed = o.seed ?? 1
  await mkdir(o.out, { recursive: true })
  const summary: PropagationSummary = {
    experiment: 'propagation',
    started_at: new Date().toISOString(),
    parameters: {
      nodes: o.nodes,
      messages: o.messages,
      rate,
      loss: o.loss ?? 0,
      latency_ms: o.latencyMs ?? 0,
      bandwidth_mbit: o.bandwidthMbit ?? 0,
      seed
    },
    machine: { cores: availableParallelism(), load_before: loadAverage(), load_after: 0 },
    topologies: []
  }
  const rows: (string | number | null)[][] = []
  const series: { label: string; values: number[]; reach: number }[] = []

  for (const [t, topology] of o.topologies.entries()) {
    const traceDir = join(o.out, 'traces', slug(topology))
    const net = new Testnet({
      nodes: o.nodes,
      topology,
      seed,
      traceDir,
      log,
      ...(o.network ? { network: o.network } : {}),
      ...(o.nodeArgs ? { nodeArgs: o.nodeArgs } : {}),
      ...(o.cli ? { cli: o.cli } : {})
    })
    log(`[${topology}] starting ${o.nodes} nodes`)
    await net.start()
    let faultModes: TopologySummary['fault_modes'] = {}
    const published: Published[] = []
    let failures = 0
    const bytesBefore: number[] = []
    const bytesAfter: number[] = []
    let heldByAll = 0
    try {
      if (o.bandwidthMbit && net.mode !== 'netns')
        throw new TestnetError(
          '--bandwidth needs netns mode (root and iproute2): a testnet of processes on loopback has no bandwidth shaping'
        )
      const faults: LinkFaults = {
        ...(o.loss ? { loss: o.loss } : {}),
        ...(o.latencyMs ? { latencyMs: o.latencyMs } : {}),
        ...(o.bandwidthMbit ? { bandwidthMbit: o.bandwidthMbit } : {})
      }
      if (faults.loss || faults.latencyMs || faults.bandwidthMbit) {
        faultModes = await net.setLinkFaults(faults)
        log(`[${topology}] faults: ${JSON.stringify(faultModes)}`)
        // Figures taken without a fault that was asked for would pass for figures with it.
        if (faultModes.unsupported) throw new TestnetError(`not possible here: ${faultModes.unsupported.join('; ')}`)
      }
      for (let i = 0; i < o.nodes; i++) bytesBefore[i] = await gossipBytes(net, i)
      // Entity numbers differ per topology, so no run repeats another's message IDs.
      const factory = new EntityFactory(`propagation ${seed} ${topology}`)
      const random = seededRandom(seed * 1000 + t)
      const started = Date.now()
      for (let k = 0; k < o.messages; k++) {
        const wait = started + (k * 1000) / rate - Date.now()
        if (wait > 0) await sleep(wait)
        const origin = Math.floor(random() * o.nodes)
        const { id, body } = factory.registration(k)
        const reply = await net.request(origin, 'POST', '/v1/entities', body).catch(() => ({ status: 0, body: null }))
        if (reply.status === 201 || reply.status === 200) published.push({ k, entityId: id, origin })
        else failures++
      }
      log(
        `[${topology}] published ${published.length} of ${o.messages} in ${Date.now() - started} ms; waiting for deliveries`
      )
      await net
        .waitForEntities(published.length, o.settleMs ?? 15_000)
        .catch(err => log(`[${topology}] ${(err as Error).message}`))
      const counts = await Promise.all(net.nodes.map(n => net.entityCount(n.index)))
      heldByAll = counts.filter(c => c >= published.length).length / o.nodes
      for (let i = 0; i < o.nodes; i++) bytesAfter[i] = await gossipBytes(net, i)
    } finally {
      await net.stop()
    }

    // Traces: when each message first arrived at each node, over which hop, and how many copies came.
    const traces = await Promise.all(net.nodes.map(n => readJsonLines<TraceLine>(join(traceDir, `${n.name}.jsonl`))))
    const deliveries = deliveriesFromTraces(
      traces,
      new Map(net.nodes.map(n => [n.peerId, n.index])),
      published.map(p => p.entityId),
      published.map(p => p.origin)
    )
    const messageOf = new Map<string, string>() // entity id → gossip message id
    const publishedAt = new Map<string, number>()
    for (const lines of traces)
      for (const line of lines)
        if (line.event === 'publish' && line.kind === 'entity.register' && typeof line.subject === 'string') {
          messageOf.set(line.subject, line.id)
          publishedAt.set(line.id, line.t)
        }
    const appliedAt = traces.map(lines => new Map(lines.filter(l => l.event === 'receive').map(l => [l.id, l.t])))
    const latencies: number[] = []
    const hops: number[] = []
    const duplicates = net.nodes.map(() => 0)
    let delivered = 0
    for (const d of deliveries) {
      const p = published[d.message] as Published
      const id = messageOf.get(p.entityId)
      const sentAt = id ? publishedAt.get(id) : undefined
      const applied = id ? appliedAt[d.node]?.get(id) : undefined
      duplicates[d.node]! += Math.max(0, d.copies - 1)
      if (d.latency_ms !== null) {
        latencies.push(round1(d.latency_ms))
        delivered++
      }
      if (d.hops !== null) hops.push(d.hops)
      rows.push([
        topology,
        p.k,
        p.entityId,
        `node-${p.origin}`,
        `node-${d.node}`,
        d.latency_ms === null ? null : round1(d.latency_ms),
        applied !== undefined && sentAt !== undefined ? round1(applied - sentAt) : null,
        d.copies,
        d.hops
      ])
    }
    const pairs = published.length * (o.nodes - 1)
    const totalBytes = bytesAfter.reduce((sum, b, i) => sum + b - (bytesBefore[i] ?? 0), 0)
    const dupTotal = duplicates.reduce((a, b) => a + b, 0)
    const result: TopologySummary = {
      topology,
      nodes: o.nodes,
      edges: net.topology.edges.length,
      messages: published.length,
      network_mode: net.mode,
      fault_modes: faultModes,
      delivery_ratio: pairs === 0 ? 0 : round4(delivered / pairs),
      held_by_all_ratio: round4(heldByAll),
      latency_ms: percentiles(latencies),
      hops: percentiles(hops),
      duplicates_per_node: {
        mean: round1(dupTotal / o.nodes),
        max: Math.max(0, ...duplicates),
        per_message: published.length === 0 ? 0 : round1(dupTotal / o.nodes / published.length)
      },
      bytes_sent: {
        total: totalBytes,
        per_message: published.length === 0 ? 0 : Math.round(totalBytes / published.length)
      },
      publish_failures: failures
    }
    summary.topologies.push(result)
    series.push({
      label: `${topology} (p50 ${result.latency_ms.p50 ?? '–'} ms)`,
      values: latencies,
      reach: result.delivery_ratio
    })
    log(
      `[${topology}] delivery ${(result.delivery_ratio * 100).toFixed(1)} %, latency p50 ${result.latency_ms.p50} ms p99 ${result.latency_ms.p99} ms, ${result.duplicates_per_node.per_message} duplicates per node per message, ${result.bytes_sent.per_message} bytes sent per message`
    )
  }

  summary.machine.load_after = loadAverage()
  await writeCsv(
    join(o.out, 'propagation.csv'),
    ['topology', 'message', 'entity_id', 'origin', 'node', 'latency_ms', 'applied_ms', 'copies', 'hops'],
    rows
  )
  await writeFile(join(o.out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`)
  const faults = [
    o.loss ? `loss ${o.loss * 100} %` : '',
    o.latencyMs ? `latency ${o.latencyMs} ms` : '',
    o.bandwidthMbit ? `uplinks ${o.bandwidthMbit} Mbit/s` : ''
  ]
    .filter(Boolean)
    .join(', ')
  await writeFile(
    join(o.out, 'latency-cdf.svg'),
    cdfChart(
      `Gossip propagation: ${o.nodes} nodes, ${o.messages} messages at ${rate}/s${faults ? `, ${faults}` : ''}`,
      'latency from publish to first arrival (ms)',
      series,
      'auto'
    )
  )
  return summary
}

async function gossipBytes(net: Testnet, i: number): Promise<number> {
  const status = await net.getJson<{ mesh: { gossip?: { bytes_sent: number } } }>(i, '/v1/network/status')
  return status.mesh.gossip?.bytes_sent ?? 0
}

const loadAverage = (): number => Math.round((loadavg()[0] ?? 0) * 100) / 100
const round1 = (x: number): number => Math.round(x * 10) / 10
const round4 = (x: number): number => Math.round(x * 10_000) / 10_000
