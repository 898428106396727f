/**
 * The propagation experiment in simulation: M registrations published from random nodes at a
 * steady rate, and from the nodes' gossip traces, per message and node, the virtual time from the
 * publish to the first copy, the hops it took (the receive tree: a node is one hop past the peer
 * its first valid copy came from) and the copies that came after (duplicates).
 */
import { EntityFactory } from '../entity-factory.js'
import {
  type DeliveryRow,
  deliveriesFromTraces,
  type PropagationFigures,
  propagationFigures
} from '../experiments/deliveries.js'
import { seededRandom } from '../random.js'
import type { Simulation } from './simulation.js'

export type { DeliveryRow, PropagationFigures }

export interface SimPropagationOptions {
  messages: number
  /** Messages published per second of virtual time. */
  rate: number
  /** Virtual time allowed after the last publish for the last deliveries. */
  settleMs: number
  seed: number
  log?: (line: string) => void
}

export async function runSimPropagation(
  sim: Simulation,
  o: SimPropagationOptions
): Promise<{ figures: PropagationFigures; rows: DeliveryRow[] }> {
  const log = o.log ?? (() => {})
  const factory = new EntityFactory(`simulation ${o.seed}`)
  const random = seededRandom(o.seed * 1000 + 17)
  const nodes = sim.nodes.length
  const origins: number[] = []
  const subjects: string[] = []
  let settled = 0
  let failures = 0
  const bytesBefore = sim.network.traffic.reduce((sum, t) => sum + t.bytesSent, 0)
  const traceStart = sim.nodes.map(n => n.trace.length)
  const heldBefore = sim.nodes.map(n => n.node?.store.entityCount() ?? 0)
  for (let k = 0; k < o.messages; k++) {
    const origin = Math.floor(random() * nodes)
    const { id, body } = factory.registration(k)
    origins.push(origin)
    subjects.push(id)
    sim.clock.schedule((k * 1000) / o.rate, () => {
      const node = sim.nodes[origin]?.node
      if (!node) {
        failures++
        settled++
        return
      }
      node.entities
        .register({ raw: Buffer.from(body), body: JSON.parse(body) as unknown, path: '/v1/entities' })
        .catch(() => {
          failures++
        })
        .finally(() => {
          settled++
        })
    })
  }
  const publishMs = (o.messages * 1000) / o.rate
  await sim.runUntil(() => settled === o.messages, publishMs + 60_000)
  const deadline = sim.clock.now + o.settleMs
  // Runs until every running node holds every message (beyond what it held before), or the settle time is over.
  await sim.runUntil(
    // Checked at every step of the clock: no list of the running nodes is made for it.
    () =>
      sim.nodes.every(
        n =>
          n.state !== 'running' ||
          (n.node?.store.entityCount() ?? 0) >= (heldBefore[n.index] ?? 0) + o.messages - failures
      ),
    Math.max(0, deadline - sim.clock.now)
  )
  log(
    `published ${o.messages - failures} of ${o.messages} over ${Math.round(publishMs)} ms of virtual time; traces read at ${Math.round(sim.clock.elapsed)} ms`
  )
  const bytes = sim.network.traffic.reduce((sum, t) => sum + t.bytesSent, 0) - bytesBefore
  const rows = deliveriesFromTraces(
    sim.nodes.map((n, i) => n.trace.slice(traceStart[i])),
    new Map(sim.nodes.map(n => [n.peerId, n.index])),
    subjects,
    origins
  )
  return { figures: propagationFigures(rows, o.messages, o.messages - failures, nodes, bytes), rows }
}
