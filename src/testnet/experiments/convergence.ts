/**
 * `registry-node experiment convergence`: a testnet is split in two halves, each half registers
 * its own entities while apart, then the partition heals; the experiment measures how long until
 * every node holds every entity (sync on reconnect, then gossip). Writes into the results folder:
 *
 *   convergence.csv     one row per node: entities held when the partition healed, ms to converge
 *   summary.json        mode, counts, whether the halves really were apart, convergence time
 *   convergence-cdf.svg share of nodes converged over time since the heal
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EntityFactory } from '../entity-factory.js'
import { sleep, Testnet, type NetworkMode } from '../testnet.js'
import { cdfChart, percentiles, writeCsv, type Percentiles } from './report.js'

export interface ConvergenceOptions {
  nodes: number
  topology: string
  /** Entities registered before the partition (default 10). */
  before?: number
  /** Entities registered on each side while partitioned (default 20). */
  perSide?: number
  out: string
  seed?: number
  network?: NetworkMode | 'auto'
  /** More `registry-node start` flags for every node (`--node-arg=--commit-delay-ms=0`). */
  nodeArgs?: readonly string[]
  /** Give up after this long since the heal (default 120 s). */
  timeoutMs?: number
  log?: (line: string) => void
}

export interface ConvergenceSummary {
  experiment: 'convergence'
  started_at: string
  topology: string
  nodes: number
  network_mode: NetworkMode
  partition_mode: NetworkMode
  groups: number[][]
  entities: { before: number; per_side: number; total: number }
  /** Whether, before the heal, each node held exactly its side's entities. */
  partition_held: boolean
  converged: boolean
  /** From the heal until the last node held every entity, ms (null if it never did). */
  convergence_ms: number | null
  per_node_ms: Percentiles
}

export async function runConvergence(o: ConvergenceOptions): Promise<ConvergenceSummary> {
  const log = o.log ?? (() => {})
  const before = o.before ?? 10
  const perSide = o.perSide ?? 20
  const timeoutMs = o.timeoutMs ?? 120_000
  if (o.nodes < 2) throw new Error('convergence needs at least 2 nodes')
  await mkdir(o.out, { recursive: true })
  const half = Math.ceil(o.nodes / 2)
  const groups = [Array.from({ length: half }, (_, i) => i), Array.from({ length: o.nodes - half }, (_, i) => half + i)]
  const net = new Testnet({ nodes: o.nodes, topology: o.topology, log, ...(o.seed !== undefined ? { seed: o.seed } : {}), ...(o.network ? { network: o.network } : {}), ...(o.nodeArgs ? { nodeArgs: o.nodeArgs } : {}) })
  const factory = new EntityFactory(`convergence ${o.seed ?? 1}`)
  const total = before + 2 * perSide
  await net.start()
  try {
    await net.seedEntities(factory, before)
    await net.waitForEntities(before)
    const partitionMode = await net.partition(groups)
    log(`partitioned ${JSON.stringify(groups)} (${partitionMode} mode); registering ${perSide} entities on each side`)
    await net.seedEntities(factory, perSide, before, groups[0])
    await net.seedEntities(factory, perSide, before + perSide, groups[1])
    // Each side gets its own entities by gossip; the other side's must not arrive.
    await net.waitForEntities(before + perSide, 30_000)
    await sleep(2000)
    const held = await Promise.all(net.nodes.map(n => net.entityCount(n.index)))
    const partitionHeld = held.every(c => c === before + perSide)
    log(`before the heal the nodes hold ${held.join(', ')} entities (each side ${before + perSide}: ${partitionHeld ? 'apart' : 'NOT apart'})`)

    const healedAt = Date.now()
    await net.heal()
    const convergedAt: (number | null)[] = net.nodes.map(() => null)
    while (convergedAt.some(c => c === null) && Date.now() - healedAt < timeoutMs) {
      await Promise.all(net.nodes.map(async n => {
        if (convergedAt[n.index] !== null) return
        if (await net.entityCount(n.index) >= total) convergedAt[n.index] = Date.now() - healedAt
      }))
      await sleep(100)
    }
    const times = convergedAt.filter((c): c is number => c !== null)
    const converged = times.length === o.nodes
    const summary: ConvergenceSummary = {
      experiment: 'convergence',
      started_at: new Date(healedAt).toISOString(),
      topology: o.topology,
      nodes: o.nodes,
      network_mode: net.mode,
      partition_mode: partitionMode,
      groups,
      entities: { before, per_side: perSide, total },
      partition_held: partitionHeld,
      converged,
      convergence_ms: converged ? Math.max(...times) : null,
      per_node_ms: percentiles(times)
    }
    log(converged ? `converged ${summary.convergence_ms} ms after the heal` : `not converged after ${timeoutMs} ms`)
    await writeCsv(join(o.out, 'convergence.csv'), ['node', 'group', 'held_before_heal', 'converged_ms'],
      net.nodes.map(n => [n.name, groups[0]!.includes(n.index) ? 0 : 1, held[n.index] ?? null, convergedAt[n.index] ?? null]))
    await writeFile(join(o.out, 'summary.json'), JSON.stringify(summary, null, 2) + '\n')
    await writeFile(join(o.out, 'convergence-cdf.svg'), cdfChart(
      `Convergence after a partition heals: ${o.nodes} nodes, ${o.topology}, ${2 * perSide} entities registered apart`,
      'time since the heal (ms)',
      [{ label: `${o.topology} (${partitionMode} partition)`, values: times, reach: times.length / o.nodes }]
    ))
    return summary
  } finally {
    await net.stop()
  }
}
