/**
 * The convergence experiment in simulation: the nodes split in two halves by a partition (their
 * connections stall, as over TCP), each half registers its own entities, the partition heals,
 * and each node is timed from the heal to the last change of its sync digest once every node holds
 * the same one (the digest sync itself reconciles: equal exactly when the nodes hold the same
 * operations).
 */
import { EntityFactory } from '../entity-factory.js'
import { percentiles, type Percentiles } from '../experiments/report.js'
import type { Simulation } from './simulation.js'

export interface SimConvergenceOptions {
  /** Entities registered before the partition. */
  before: number
  /** Entities registered on each side while apart. */
  perSide: number
  /** Virtual time the halves stay apart after their registrations. */
  apartMs: number
  /** Virtual time allowed after the heal. */
  timeoutMs: number
  seed: number
  log?: (line: string) => void
}

export interface ConvergenceFigures {
  converged: boolean
  /** Whether, before the heal, no node held anything the other half registered. */
  apart: boolean
  /** From the heal to the slowest node's last digest change, ms (null: not converged). */
  convergence_ms: number | null
  per_node_ms: Percentiles
  operations: number
}

/** One node's part: its half, what it held at the heal and at the end, and when it converged. */
export interface ConvergenceRow {
  node: number
  group: number
  held_before_heal: number
  held_after: number
  /** From the heal to the node's last digest change (null: not converged). */
  converged_ms: number | null
}

export async function runSimConvergence(
  sim: Simulation,
  o: SimConvergenceOptions
): Promise<{ figures: ConvergenceFigures; perNode: ConvergenceRow[] }> {
  const log = o.log ?? (() => {})
  const factory = new EntityFactory(`simulated convergence ${o.seed}`)
  const n = sim.nodes.length
  const half = Math.ceil(n / 2)
  const groupOf = sim.nodes.map(node => (node.index < half ? 0 : 1))
  let k = 0
  const register = async (count: number, origins: number[]): Promise<void> => {
    const writes: Promise<unknown>[] = []
    for (let i = 0; i < count; i++) {
      const origin = origins[i % origins.length] as number
      const { body } = factory.registration(k++)
      const node = sim.nodes[origin]?.node
      if (node)
        writes.push(
          node.entities.register({ raw: Buffer.from(body), body: JSON.parse(body) as unknown, path: '/v1/entities' })
        )
    }
    await sim.drive(Promise.all(writes), 60_000, 'the registrations')
  }
  const held = (): number[] => sim.nodes.map(node => node.node?.store.entityCount() ?? 0)
  const all = sim.nodes.map(node => node.index)
  await register(o.before, all)
  await sim.runUntil(() => held().every(c => c >= o.before), 60_000)
  sim.network.partition(groupOf)
  await register(
    o.perSide,
    all.filter(i => groupOf[i] === 0)
  )
  await register(
    o.perSide,
    all.filter(i => groupOf[i] === 1)
  )
  await sim.run(o.apartMs)
  const beforeHeal = held()
  const apart = beforeHeal.every(c => c <= o.before + o.perSide)
  log(`apart for ${o.apartMs} ms: the nodes hold ${Math.min(...beforeHeal)}–${Math.max(...beforeHeal)} entities`)
  const healedAt = sim.clock.now
  sim.network.heal()
  const total = o.before + 2 * o.perSide
  const digests = (): (string | null)[] => sim.nodes.map(node => node.node?.digests.summary().digest ?? null)
  const converged = await sim.runUntil(() => {
    if (held().some(c => c < total)) return false
    const d = digests()
    return d.every(x => x !== null && x === d[0])
  }, o.timeoutMs)
  const perNodeMs = sim.nodes.map(node => {
    const changedAt = node.node?.digests.summary().changedAt
    return converged && changedAt !== undefined ? Math.max(0, changedAt - healedAt) : null
  })
  const times = perNodeMs.filter((t): t is number => t !== null)
  const heldAfter = held()
  return {
    figures: {
      converged,
      apart,
      convergence_ms: converged ? Math.round(Math.max(...times) * 1000) / 1000 : null,
      per_node_ms: percentiles(times),
      operations: sim.nodes[0]?.node?.digests.summary().operations ?? 0
    },
    perNode: sim.nodes.map((node, i) => ({
      node: node.index,
      group: groupOf[i] as number,
      held_before_heal: beforeHeal[i] ?? 0,
      held_after: heldAfter[i] ?? 0,
      converged_ms: perNodeMs[i] ?? null
    }))
  }
}
