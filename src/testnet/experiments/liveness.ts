/**
 * `registry-node experiment liveness`: a testnet whose nodes write gossip traces, K echo entities
 * heartbeating to their homes, then a fraction F of them stopped, as a crash would, and later
 * started again. From every node's trace: how long after its stop each node showed each stopped
 * entity inactive (its home publishes the node-signed status operation after the inactivity
 * threshold; the others apply it when it arrives), and how long after its restart each node showed
 * it active again. Writes into the results folder:
 *
 *   traces/node-<i>.jsonl   the raw traces (gossip-tap.ts describes the lines)
 *   liveness.csv            one row per (stopped entity, node): inactive_ms, active_ms
 *   summary.json            parameters, machine, percentiles of both, and how many were seen
 *   liveness-cdf.svg        the two CDFs
 *
 * A status operation carries no status in the trace, but its order does: the first one for an
 * entity after its stop is `inactive`, the first after its restart `active`.
 */
import { writeFile, mkdir } from 'node:fs/promises'
import { availableParallelism, loadavg } from 'node:os'
import { join } from 'node:path'
import { seededRandom } from '../random.js'
import { sleep, Testnet, type NetworkMode } from '../testnet.js'
import { cdfChart, percentiles, readJsonLines, writeCsv, type Percentiles } from './report.js'

export interface LivenessOptions {
  nodes: number
  entities: number
  /** Share of the entities stopped, (0, 1]. */
  kill: number
  topology?: string
  out: string
  /** The nodes' inactivity threshold (default 6 s) and sweep period (default 0.5 s). */
  inactiveAfterSeconds?: number
  sweepSeconds?: number
  /** The entities' heartbeat period (default 2 s). */
  heartbeatSeconds?: number
  seed?: number
  network?: NetworkMode | 'auto'
  nodeArgs?: readonly string[]
  log?: (line: string) => void
}

/** What the liveness experiment measures, in processes and in simulation. */
export interface LivenessTimes {
  /** Stop → the node shows it inactive, over every (stopped entity, node). */
  inactive_ms: Percentiles
  /** The same at the entity's home node only (no gossip in it). */
  inactive_at_home_ms: Percentiles
  /** Restart → the node shows it active again. */
  active_ms: Percentiles
  /** (entity, node) pairs seen inactive / active in the traces, of stopped × nodes. */
  seen_inactive: number
  seen_active: number
  pairs: number
}

export interface LivenessSummary extends LivenessTimes {
  experiment: 'liveness'
  started_at: string
  parameters: {
    nodes: number
    entities: number
    stopped: number
    topology: string
    inactive_after_seconds: number
    sweep_seconds: number
    heartbeat_seconds: number
    seed: number
  }
  machine: { cores: number; load_before: number; load_after: number }
  network_mode: NetworkMode
}

interface TraceLine {
  t: number
  event: string
  kind?: string
  subject?: string
  /** The entities of a batch of status changes. */
  subjects?: string[]
}

export async function runLiveness(o: LivenessOptions): Promise<LivenessSummary> {
  const log = o.log ?? (() => {})
  if (!(o.kill > 0 && o.kill <= 1)) throw new RangeError('--kill is a share of the entities in (0, 1]')
  const inactiveAfter = o.inactiveAfterSeconds ?? 6
  const sweep = o.sweepSeconds ?? 0.5
  const heartbeat = o.heartbeatSeconds ?? 2
  const seed = o.seed ?? 1
  const topology = o.topology ?? 'full'
  const traceDir = join(o.out, 'traces')
  await mkdir(o.out, { recursive: true })
  const net = new Testnet({
    nodes: o.nodes,
    topology,
    seed,
    traceDir,
    log,
    entityHeartbeatSeconds: heartbeat,
    nodeArgs: [
      '--inactive-after-seconds',
      String(inactiveAfter),
      '--sweep-interval-seconds',
      String(sweep),
      ...(o.nodeArgs ?? [])
    ],
    ...(o.network ? { network: o.network } : {})
  })
  const startedAt = new Date().toISOString()
  const loadBefore = loadAverage()
  log(`starting ${o.nodes} nodes (${topology})`)
  await net.start()
  const stoppedAt = new Map<string, number>()
  const restartedAt = new Map<string, number>()
  const homeOf = new Map<string, number>()
  try {
    const entities = await net.entities.add(o.entities)
    for (const e of entities) homeOf.set(e.entityId, e.home)
    const ids = entities.map(e => e.entityId)
    log(`${ids.length} entities heartbeating every ${heartbeat} s; waiting until every node shows them active`)
    await waitForStatus(net, ids, 'active', 60_000)
    const random = seededRandom(seed)
    const chosen = entities
      .map(e => ({ e, r: random() }))
      .sort((a, b) => a.r - b.r)
      .slice(0, Math.max(1, Math.round(o.kill * entities.length)))
      .map(x => x.e)
    for (const e of chosen) {
      await net.entities.stop(e.index)
      stoppedAt.set(e.entityId, Date.now())
    }
    log(
      `stopped ${chosen.length} entities; waiting until every node shows them inactive (threshold ${inactiveAfter} s)`
    )
    await waitForStatus(net, [...stoppedAt.keys()], 'inactive', (inactiveAfter + sweep) * 1000 + 60_000)
    for (const e of chosen) {
      await net.entities.restart(e.index)
      restartedAt.set(e.entityId, Date.now())
    }
    log(`restarted them; waiting until every node shows them active`)
    await waitForStatus(net, [...restartedAt.keys()], 'active', 60_000)
    // The last status operations reach the traces' files.
    await sleep(500)
  } finally {
    await net.stop()
  }

  const traces = await Promise.all(net.nodes.map(n => readJsonLines<TraceLine>(join(traceDir, `${n.name}.jsonl`))))
  const rows: (string | number | null)[][] = []
  const inactive: number[] = []
  const inactiveAtHome: number[] = []
  const active: number[] = []
  for (const [id, stopped] of stoppedAt) {
    const restarted = restartedAt.get(id) ?? Infinity
    for (const node of net.nodes) {
      // At the home the operation is published; elsewhere it is applied when it arrives.
      const times = traces[node.index]!.filter(
        l =>
          (l.kind === 'entity.status'
            ? l.subject === id
            : l.kind === 'entity.status.batch' && l.subjects?.includes(id)) &&
          (l.event === 'publish' || l.event === 'receive')
      ).map(l => l.t)
      const down = times.find(t => t >= stopped && t < restarted)
      const up = times.find(t => t >= restarted)
      const downMs = down === undefined ? null : round1(down - stopped)
      const upMs = up === undefined ? null : round1(up - restarted)
      if (downMs !== null) {
        inactive.push(downMs)
        if (homeOf.get(id) === node.index) inactiveAtHome.push(downMs)
      }
      if (upMs !== null) active.push(upMs)
      rows.push([id, `node-${homeOf.get(id)}`, node.name, downMs, upMs])
    }
  }
  const summary: LivenessSummary = {
    experiment: 'liveness',
    started_at: startedAt,
    parameters: {
      nodes: o.nodes,
      entities: o.entities,
      stopped: stoppedAt.size,
      topology,
      inactive_after_seconds: inactiveAfter,
      sweep_seconds: sweep,
      heartbeat_seconds: heartbeat,
      seed
    },
    machine: { cores: availableParallelism(), load_before: loadBefore, load_after: loadAverage() },
    network_mode: net.mode,
    inactive_ms: percentiles(inactive),
    inactive_at_home_ms: percentiles(inactiveAtHome),
    active_ms: percentiles(active),
    seen_inactive: inactive.length,
    seen_active: active.length,
    pairs: stoppedAt.size * o.nodes
  }
  await writeCsv(join(o.out, 'liveness.csv'), ['entity_id', 'home', 'node', 'inactive_ms', 'active_ms'], rows)
  await writeFile(join(o.out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`)
  await writeFile(
    join(o.out, 'liveness-cdf.svg'),
    cdfChart(
      `Liveness: ${o.nodes} nodes, ${stoppedAt.size} of ${o.entities} entities stopped, inactive after ${inactiveAfter} s`,
      'time from stop (inactive) or restart (active) until a node shows it (ms)',
      [
        {
          label: `inactive (p50 ${summary.inactive_ms.p50 ?? '–'} ms)`,
          values: inactive,
          reach: summary.pairs === 0 ? 0 : inactive.length / summary.pairs
        },
        {
          label: `active again (p50 ${summary.active_ms.p50 ?? '–'} ms)`,
          values: active,
          reach: summary.pairs === 0 ? 0 : active.length / summary.pairs
        }
      ],
      'auto'
    )
  )
  log(
    `inactive: p50 ${summary.inactive_ms.p50} ms, max ${summary.inactive_ms.max} ms (${inactive.length} of ${summary.pairs}); active again: p50 ${summary.active_ms.p50} ms, max ${summary.active_ms.max} ms (${active.length} of ${summary.pairs})`
  )
  return summary
}

/** Waits until every running node shows every one of `ids` with `status`. */
async function waitForStatus(
  net: Testnet,
  ids: readonly string[],
  status: 'active' | 'inactive',
  timeoutMs: number
): Promise<void> {
  const started = Date.now()
  const wanted = new Set(ids)
  for (;;) {
    const missing = await Promise.all(
      net.running().map(async i => {
        const seen = await statuses(net, i)
        return [...wanted].filter(id => seen.get(id) !== status).length
      })
    )
    if (missing.every(m => m === 0)) return
    if (Date.now() - started > timeoutMs)
      throw new Error(`after ${timeoutMs} ms, entities not yet ${status} per node: ${missing.join(', ')}`)
    await sleep(250)
  }
}

/** Status of every entity node i lists (paged). */
async function statuses(net: Testnet, i: number): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  for (let offset = 0; ; offset += 200) {
    const page = await net.getJson<{ entities: { entity_id: string; status: string }[] }>(
      i,
      `/v1/entities?limit=200&offset=${offset}`
    )
    for (const e of page.entities) out.set(e.entity_id, e.status)
    if (page.entities.length < 200) return out
  }
}

const loadAverage = (): number => Math.round((loadavg()[0] ?? 0) * 100) / 100
const round1 = (x: number): number => Math.round(x * 10) / 10
