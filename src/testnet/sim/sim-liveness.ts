/**
 * The liveness experiment in simulation (experiments/liveness.ts runs it with processes): K
 * entities registered at seeded random home nodes heartbeat to them on virtual time, a seeded
 * share of them stops at once, and from every node's gossip trace, per (stopped entity, node), how
 * long after the stop the node showed it inactive (its home publishes the node-signed status
 * operation after the inactivity threshold, the others apply it when it arrives) and how long
 * after the restart it showed it active again.
 *
 * A simulated entity has no process, server or socket: its heartbeats go straight to its home's
 * liveness service, signed as the testnet's entities sign them (heartbeat-client.ts), and its
 * restart is its next heartbeat (a real entity's restart finds its registration unchanged).
 */
import type { NodeConfig } from '../../config/settings.js'
import { heartbeatFrame } from '../../entity/heartbeat-client.js'
import { EntityFactory } from '../entity-factory.js'
import type { LivenessTimes } from '../experiments/liveness.js'
import { percentiles } from '../experiments/report.js'
import { seededRandom } from '../random.js'
import type { Simulation, TraceRecord } from './simulation.js'
import type { VirtualTimer } from './virtual-clock.js'

export interface SimLivenessOptions {
  entities: number
  /** Share of the entities stopped, (0, 1]. */
  kill: number
  heartbeatMs: number
  /** The nodes' inactivity threshold (their settings carry it: see livenessSettings); checked against them. */
  inactiveAfterMs: number
  /** The longest the stopped entities stay stopped while the nodes are to show them inactive. */
  stoppedMs: number
  /** Virtual time allowed for the registrations to reach every node, and after the restart. */
  timeoutMs: number
  seed: number
  log?: (line: string) => void
}

export interface LivenessFigures extends LivenessTimes {
  stopped: number
  heartbeats: number
  /** Heartbeats a home refused (none are expected: a refusal would fake a silence). */
  heartbeats_refused: number
}

export interface LivenessRow {
  entity_id: string
  home: number
  node: number
  /** null: the node never showed it inactive (or active again). */
  inactive_ms: number | null
  active_ms: number | null
}

interface SimEntity {
  index: number
  id: string
  home: number
  timer: VirtualTimer | null
}

export async function runSimLiveness(
  sim: Simulation,
  o: SimLivenessOptions
): Promise<{ figures: LivenessFigures; rows: LivenessRow[] }> {
  if (!(o.kill > 0 && o.kill <= 1)) throw new RangeError('kill is a share of the entities in (0, 1]')
  const log = o.log ?? (() => {})
  const configured = sim.nodes[0]?.node?.config.liveness.inactive_after_seconds
  if (configured !== undefined && configured * 1000 !== o.inactiveAfterMs)
    throw new Error(`the nodes run with inactive_after_seconds ${configured}, not ${o.inactiveAfterMs / 1000}`)
  const factory = new EntityFactory(`simulated liveness ${o.seed}`)
  const random = seededRandom(o.seed * 1000 + 29)
  const n = sim.nodes.length
  const entities: SimEntity[] = Array.from({ length: o.entities }, (_, index) => ({
    index,
    id: factory.registration(index).id,
    home: Math.floor(random() * n),
    timer: null
  }))
  const ids = entities.map(e => e.id)
  const counts = { heartbeats: 0, refused: 0 }
  const beat = (e: SimEntity): void => {
    const node = sim.nodes[e.home]?.node
    if (!node) return
    counts.heartbeats++
    // The per-entity socket's form: the entity is the socket's, the frame carries the timestamp alone.
    const frame = heartbeatFrame(e.id, factory.keyPair(e.index), 'deployed', new Date())
    node.liveness.heartbeat(frame, e.id).catch(() => {
      counts.refused++
    })
  }
  const startBeating = (e: SimEntity, firstInMs: number): void => {
    e.timer = sim.clock.schedule(firstInMs, () => {
      beat(e)
      e.timer = sim.clock.schedule(o.heartbeatMs, () => beat(e), [], true)
    })
  }
  const stopBeating = (e: SimEntity): void => {
    if (e.timer) sim.clock.clear(e.timer)
    e.timer = null
  }

  try {
    const writes = entities.map(e => {
      const { body } = factory.registration(e.index)
      const node = sim.nodes[e.home]?.node
      if (!node) throw new Error(`node ${e.home} is not running`)
      return node.entities.register({ raw: Buffer.from(body), body: JSON.parse(body) as unknown, path: '/v1/entities' })
    })
    await sim.drive(Promise.all(writes), 60_000, 'the registrations')
    // Entities started at different times: each beats at its own phase of the period.
    for (const e of entities) startBeating(e, random() * o.heartbeatMs)
    if (!(await waitForStatus(sim, ids, 'active', o.timeoutMs)))
      throw new Error(`the ${o.entities} entities did not reach every node within ${o.timeoutMs} ms`)
    // Every entity has beaten once at least: its silence is counted from a heartbeat, not its registration.
    await sim.run(o.heartbeatMs)
    const chosen = entities
      .map(e => ({ e, r: random() }))
      .sort((a, b) => a.r - b.r)
      .slice(0, Math.max(1, Math.round(o.kill * entities.length)))
      .map(x => x.e)
    const stoppedAt = sim.clock.elapsed
    const atStop = sim.nodes.map(node => node.trace.length)
    for (const e of chosen) stopBeating(e)
    log(`stopped ${chosen.length} of ${o.entities} entities; waiting for every node to show them inactive`)
    const down = chosen.map(e => e.id)
    const allInactive = await waitForStatus(sim, down, 'inactive', o.stoppedMs)
    log(
      allInactive
        ? `every node shows them inactive ${Math.round(sim.clock.elapsed - stoppedAt)} ms after the stop (threshold ${o.inactiveAfterMs} ms)`
        : `not every node shows them inactive after ${o.stoppedMs} ms`
    )
    const restartedAt = sim.clock.elapsed
    const atRestart = sim.nodes.map(node => node.trace.length)
    for (const e of chosen) {
      // A restarted entity beats at once, then every period.
      beat(e)
      startBeating(e, o.heartbeatMs)
    }
    const allActive = await waitForStatus(sim, down, 'active', o.timeoutMs)
    log(
      allActive
        ? `every node shows them active again ${Math.round(sim.clock.elapsed - restartedAt)} ms after the restart`
        : `not every node shows them active again after ${o.timeoutMs} ms`
    )
    const rows = measure(sim, chosen, { at: stoppedAt, from: atStop }, { at: restartedAt, from: atRestart })
    return { figures: figuresOf(rows, chosen.length, n, counts), rows }
  } finally {
    for (const e of entities) stopBeating(e)
  }
}

/** The nodes' liveness settings for a run: `configure` of the simulation (sim-runs.ts: simulatedRuns). */
export function livenessSettings(inactiveAfterMs: number, sweepMs: number): (config: NodeConfig) => void {
  return config => {
    config.liveness = {
      ...config.liveness,
      inactive_after_seconds: inactiveAfterMs / 1000,
      sweep_interval_seconds: sweepMs / 1000
    }
  }
}

/** The status node `i` shows: its own liveness for its home entities, the record's for the others. */
function statusAt(sim: Simulation, i: number, id: string): string | undefined {
  const node = sim.nodes[i]?.node
  if (!node) return undefined
  return node.liveness.current(id)?.status ?? node.store.getEntity(id)?.status
}

/**
 * Runs until every running node shows each of `ids` with `status`, at most `limitMs`. A pair once
 * seen stays done (the status cannot turn back before the next phase): a step asks only the rest,
 * and stops at the first that is not there yet.
 */
async function waitForStatus(
  sim: Simulation,
  ids: readonly string[],
  status: 'active' | 'inactive',
  limitMs: number
): Promise<boolean> {
  const pending = new Set(sim.running().flatMap(node => ids.map(id => ({ node: node.index, id }))))
  return sim.runUntil(() => {
    for (const pair of pending) {
      if (statusAt(sim, pair.node, pair.id) !== status) return false
      pending.delete(pair)
    }
    return true
  }, limitMs)
}

/** Whether a trace record is a status operation naming `id` as it was published or first received. */
function statusOf(r: TraceRecord, id: string): boolean {
  if (r.event !== 'publish' && r.event !== 'receive') return false
  if (r.kind === 'entity.status') return r.subject === id
  return r.kind === 'entity.status.batch' && Array.isArray(r.subjects) && r.subjects.includes(id)
}

/** A moment of the run: its virtual time, and where each node's trace stood then. */
interface Mark {
  at: number
  from: number[]
}

/**
 * From the traces, as the real experiment reads its files: the first status operation for an
 * entity after its stop is its `inactive`, the first after its restart its `active`. The phases
 * are told apart by the traces' positions, not their times: the last node can apply the inactive
 * change at the very virtual instant the restart follows it, and the home publishes the active one
 * at that instant too.
 */
function measure(sim: Simulation, stopped: SimEntity[], stop: Mark, restart: Mark): LivenessRow[] {
  const rows: LivenessRow[] = []
  const first = (trace: TraceRecord[], from: number, to: number, id: string): number | undefined =>
    trace.slice(from, to).find(r => statusOf(r, id))?.t
  for (const e of stopped)
    for (const node of sim.nodes) {
      const atRestart = restart.from[node.index] ?? node.trace.length
      const down = first(node.trace, stop.from[node.index] ?? 0, atRestart, e.id)
      const up = first(node.trace, atRestart, node.trace.length, e.id)
      rows.push({
        entity_id: e.id,
        home: e.home,
        node: node.index,
        inactive_ms: down === undefined ? null : round1(down - stop.at),
        active_ms: up === undefined ? null : round1(up - restart.at)
      })
    }
  return rows
}

function figuresOf(
  rows: LivenessRow[],
  stopped: number,
  nodes: number,
  counts: { heartbeats: number; refused: number }
): LivenessFigures {
  const inactive = rows.flatMap(r => (r.inactive_ms === null ? [] : [r.inactive_ms]))
  const atHome = rows.flatMap(r => (r.inactive_ms === null || r.node !== r.home ? [] : [r.inactive_ms]))
  const active = rows.flatMap(r => (r.active_ms === null ? [] : [r.active_ms]))
  return {
    stopped,
    inactive_ms: percentiles(inactive),
    inactive_at_home_ms: percentiles(atHome),
    active_ms: percentiles(active),
    seen_inactive: inactive.length,
    seen_active: active.length,
    pairs: stopped * nodes,
    heartbeats: counts.heartbeats,
    heartbeats_refused: counts.refused
  }
}

const round1 = (x: number): number => Math.round(x * 10) / 10
