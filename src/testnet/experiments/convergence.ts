/**
 * `registry-node experiment convergence`: for each topology, a testnet is split in two halves, each
 * half registers its own entities while apart, then the partition heals; the experiment measures
 * how long until every node holds the same operations (sync on reconnect, then gossip). Converged
 * means every node reports the same sync digest (GET /v1/network/status `sync`); each node's time is
 * from the heal to its own digest_changed_at for that state, so the figures do not depend on how
 * often the experiment asks. Writes into the results folder:
 *
 *   convergence.csv     one row per topology and node: entities held at the heal and at the end, ms to converge
 *   summary.json        per topology: modes, whether the halves really were apart, convergence time
 *   convergence-cdf.svg share of nodes converged over time since the heal, one line per topology
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EntityFactory } from '../entity-factory.js'
import { sleep, Testnet, TestnetError, type NetworkMode } from '../testnet.js'
import { cdfChart, percentiles, writeCsv, type CdfSeries, type Percentiles } from './report.js'

export interface ConvergenceOptions {
  nodes: number
  topologies: readonly string[]
  /** Entities registered before the partition (default 10). */
  before?: number
  /** Entities registered on each side while partitioned (default 20). */
  perSide?: number
  out: string
  seed?: number
  network?: NetworkMode | 'auto'
  /** More `registry-node start` flags for every node (`--node-arg=--sync-interval-seconds=5`). */
  nodeArgs?: readonly string[]
  /** Give up after this long since the heal (default 120 s). */
  timeoutMs?: number
  log?: (line: string) => void
}

export interface ConvergenceRun {
  topology: string
  network_mode: NetworkMode
  partition_mode: NetworkMode
  /** Whether, before the heal, each node held exactly what its side registered within its reach (nothing from the other side). */
  partition_held: boolean
  held_before_heal: number[]
  /** Every node reported the same sync digest, holding every entity, before the deadline. */
  converged: boolean
  /** From the heal until the last node applied the last change of the converged state, ms (null if never). */
  convergence_ms: number | null
  per_node_ms: Percentiles
  /** The sync digest every node reported (null if they never agreed) and the operations it covers. */
  digest: string | null
  operations: number | null
  /** Entities each node held at the end (a check on the digests: each should be the total). */
  held_after: number[]
}

export interface ConvergenceSummary {
  experiment: 'convergence'
  started_at: string
  nodes: number
  groups: number[][]
  entities: { before: number; per_side: number; total: number }
  /** How convergence is decided and timed. */
  measure: string
  runs: ConvergenceRun[]
}

export async function runConvergence(o: ConvergenceOptions): Promise<ConvergenceSummary> {
  const log = o.log ?? (() => {})
  const before = o.before ?? 10
  const perSide = o.perSide ?? 20
  if (o.nodes < 2) throw new Error('convergence needs at least 2 nodes')
  await mkdir(o.out, { recursive: true })
  const half = Math.ceil(o.nodes / 2)
  const groups = [Array.from({ length: half }, (_, i) => i), Array.from({ length: o.nodes - half }, (_, i) => half + i)]
  const summary: ConvergenceSummary = {
    experiment: 'convergence',
    started_at: new Date().toISOString(),
    nodes: o.nodes,
    groups,
    entities: { before, per_side: perSide, total: before + 2 * perSide },
    measure:
      "equal sync digests on every node; each node's time from the heal to its own digest_changed_at of that state",
    runs: []
  }
  const rows: (string | number | null)[][] = []
  const series: CdfSeries[] = []
  for (const topology of o.topologies) {
    const { run, convergedAt } = await convergeOnce(o, topology, groups, summary.entities, log)
    summary.runs.push(run)
    rows.push(
      ...convergedAt.map((ms, i) => [
        topology,
        `node-${i}`,
        groups[0]!.includes(i) ? 0 : 1,
        run.held_before_heal[i] ?? null,
        run.held_after[i] ?? null,
        ms
      ])
    )
    series.push({
      label: `${topology} (${run.convergence_ms ?? '–'} ms)`,
      values: convergedAt.filter((c): c is number => c !== null),
      reach: convergedAt.filter(c => c !== null).length / o.nodes
    })
  }
  await writeCsv(
    join(o.out, 'convergence.csv'),
    ['topology', 'node', 'group', 'held_before_heal', 'held_after', 'converged_ms'],
    rows
  )
  await writeFile(join(o.out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`)
  await writeFile(
    join(o.out, 'convergence-cdf.svg'),
    cdfChart(
      `Convergence after a partition heals: ${o.nodes} nodes, ${2 * perSide} entities registered apart`,
      'time since the heal (ms)',
      series,
      'auto'
    )
  )
  return summary
}

async function convergeOnce(
  o: ConvergenceOptions,
  topology: string,
  groups: number[][],
  entities: ConvergenceSummary['entities'],
  log: (line: string) => void
): Promise<{ run: ConvergenceRun; convergedAt: (number | null)[] }> {
  const timeoutMs = o.timeoutMs ?? 120_000
  const net = new Testnet({
    nodes: o.nodes,
    topology,
    log,
    ...(o.seed !== undefined ? { seed: o.seed } : {}),
    ...(o.network ? { network: o.network } : {}),
    ...(o.nodeArgs ? { nodeArgs: o.nodeArgs } : {})
  })
  // Entity numbers differ per topology, so no run repeats another's operations.
  const factory = new EntityFactory(`convergence ${o.seed ?? 1} ${topology}`)
  await net.start()
  try {
    await net.seedEntities(factory, entities.before)
    await net.waitForConvergence(Date.now(), { entities: entities.before })
    const partitionMode = await net.partition(groups)
    log(
      `[${topology}] partitioned ${JSON.stringify(groups)} (${partitionMode} mode); registering ${entities.per_side} entities on each side`
    )
    await net.seedEntities(factory, entities.per_side, entities.before, groups[0])
    await net.seedEntities(factory, entities.per_side, entities.before + entities.per_side, groups[1])
    // Each node gets what was registered in its part of its side (a star's leaves cut off from the
    // hub have only their own); nothing from the other side may arrive.
    const expected = expectedWhileApart(net.topology.edges, groups, entities)
    const started = Date.now()
    let held = await Promise.all(net.nodes.map(n => net.entityCount(n.index)))
    while (held.some((c, i) => c < expected[i]!) && Date.now() - started < 30_000) {
      await sleep(250)
      held = await Promise.all(net.nodes.map(n => net.entityCount(n.index)))
    }
    await sleep(2000)
    held = await Promise.all(net.nodes.map(n => net.entityCount(n.index)))
    const partitionHeld = held.every((c, i) => c === expected[i])
    log(
      `[${topology}] before the heal the nodes hold ${held.join(', ')} entities (expected ${expected.join(', ')}: ${partitionHeld ? 'apart' : 'NOT as expected'})`
    )

    const healedAt = Date.now()
    await net.heal()
    const agreed = await net
      .waitForConvergence(healedAt, { entities: entities.total, timeoutMs })
      .catch((err: unknown) => (err instanceof TestnetError ? null : Promise.reject(err)))
    let convergedAt: (number | null)[]
    let heldAfter: number[]
    if (agreed) {
      convergedAt = agreed.perNodeMs
      heldAfter = net.nodes.map(() => agreed.entities)
    } else {
      // Not every node agreed: those holding every entity are timed all the same, from their own clocks.
      const states = await Promise.all(net.nodes.map(n => net.syncState(n.index)))
      convergedAt = states.map(s => (s.entities >= entities.total ? Math.max(0, s.changedAt - healedAt) : null))
      heldAfter = states.map(s => s.entities)
    }
    const times = convergedAt.filter((c): c is number => c !== null)
    const run: ConvergenceRun = {
      topology,
      network_mode: net.mode,
      partition_mode: partitionMode,
      partition_held: partitionHeld,
      held_before_heal: held,
      converged: agreed !== null,
      convergence_ms: agreed ? agreed.ms : null,
      per_node_ms: percentiles(times),
      digest: agreed?.digest ?? null,
      operations: agreed?.operations ?? null,
      held_after: heldAfter
    }
    log(
      run.converged
        ? `[${topology}] converged ${run.convergence_ms} ms after the heal`
        : `[${topology}] not converged after ${timeoutMs} ms`
    )
    return { run, convergedAt }
  } finally {
    await net.stop()
  }
}

/**
 * Entities each node should hold while the sides are apart: those registered before, plus the
 * ones registered (round-robin over its side, as Testnet.seedEntities does) on nodes it can still
 * reach within its side.
 */
function expectedWhileApart(
  edges: readonly (readonly [number, number])[],
  groups: number[][],
  entities: ConvergenceSummary['entities']
): number[] {
  const expected: number[] = []
  for (const group of groups) {
    const perNode = new Map(group.map(i => [i, 0]))
    for (let k = 0; k < entities.per_side; k++)
      perNode.set(group[k % group.length]!, perNode.get(group[k % group.length]!)! + 1)
    const inGroup = new Set(group)
    for (const start of group) {
      const reached = new Set([start])
      const stack = [start]
      while (stack.length > 0) {
        const at = stack.pop()!
        for (const [a, b] of edges) {
          const next = a === at ? b : b === at ? a : -1
          if (next >= 0 && inGroup.has(next) && !reached.has(next)) {
            reached.add(next)
            stack.push(next)
          }
        }
      }
      expected[start] = entities.before + [...reached].reduce((sum, i) => sum + perNode.get(i)!, 0)
    }
  }
  return expected
}
