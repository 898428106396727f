/**
 * Deliveries from gossip traces, shared by the propagation experiment in real processes and in
 * simulation: per message and receiving node, the time from the publish to the first copy, the
 * hops it took (the receive tree: a node is one hop past the peer its first valid copy came from)
 * and the copies that came after (duplicates); and the figures summed up from them.
 */
import { percentiles, type Percentiles } from './report.js'

/** The trace lines read here (gossip-tap.ts writes them; `t` in ms on one clock for all nodes). */
export interface TraceLine {
  t: number
  event: string
  id: string
  kind?: unknown
  subject?: unknown
  from?: unknown
}

export interface DeliveryRow {
  message: number
  origin: number
  node: number
  /** ms from the publish to the first copy; null: never arrived by gossip. */
  latency_ms: number | null
  hops: number | null
  copies: number
}

export interface PropagationFigures {
  messages: number
  published: number
  /** First copies received / (published × (nodes − 1)). */
  delivery_ratio: number
  latency_ms: Percentiles & { mean: number | null }
  hops: Percentiles & { mean: number | null }
  /** Copies beyond the first, per node and message: mean over all pairs, and the range of per-node means. */
  duplicates_per_node_per_message: { mean: number; min: number; max: number }
  /** Bytes every node sent during the run, per message. */
  bytes_per_message: number
}

/** Per message (subjects[k], published on origins[k]) and receiving node: first arrival, hops and copies. */
export function deliveriesFromTraces(
  traces: readonly (readonly TraceLine[])[],
  indexOfPeer: ReadonlyMap<string, number>,
  subjects: readonly string[],
  origins: readonly number[]
): DeliveryRow[] {
  const messageOf = new Map<string, { k: number; publishedAt: number }>()
  const subjectIndex = new Map(subjects.map((s, k) => [s, k]))
  traces.forEach(lines => {
    for (const line of lines) {
      if (line.event !== 'publish' || line.kind !== 'entity.register') continue
      const k = subjectIndex.get(String(line.subject))
      if (k !== undefined && !messageOf.has(line.id)) messageOf.set(line.id, { k, publishedAt: line.t })
    }
  })
  const idOf: (string | undefined)[] = []
  for (const [id, { k }] of messageOf) idOf[k] = id
  // First copy time and copy count per (node, message id); the peer the first valid copy came from.
  const first = traces.map(() => new Map<string, number>())
  const copies = traces.map(() => new Map<string, number>())
  const receives: { t: number; node: number; id: string; from: number }[] = []
  traces.forEach((lines, node) => {
    for (const line of lines) {
      if (line.event === 'copy') {
        copies[node]?.set(line.id, (copies[node]?.get(line.id) ?? 0) + 1)
        if (!first[node]?.has(line.id)) first[node]?.set(line.id, line.t)
      } else if (line.event === 'receive') {
        const from = indexOfPeer.get(String(line.from))
        if (from !== undefined) receives.push({ t: line.t, node, id: line.id, from })
      }
    }
  })
  // Hops: in arrival order, one past the sender's own.
  receives.sort((a, b) => a.t - b.t)
  const hops = new Map<string, number>()
  subjects.forEach((_, k) => {
    const id = idOf[k]
    if (id) hops.set(`${id} ${origins[k]}`, 0)
  })
  for (const r of receives) {
    const key = `${r.id} ${r.node}`
    if (hops.has(key)) continue
    const previous = hops.get(`${r.id} ${r.from}`)
    if (previous !== undefined) hops.set(key, previous + 1)
  }
  const rows: DeliveryRow[] = []
  subjects.forEach((_, k) => {
    const id = idOf[k]
    const publishedAt = id ? messageOf.get(id)?.publishedAt : undefined
    for (let node = 0; node < traces.length; node++) {
      if (node === origins[k]) continue
      const arrived = id ? first[node]?.get(id) : undefined
      rows.push({
        message: k,
        origin: origins[k] as number,
        node,
        latency_ms: arrived !== undefined && publishedAt !== undefined ? round3(arrived - publishedAt) : null,
        hops: id ? (hops.get(`${id} ${node}`) ?? null) : null,
        copies: id ? (copies[node]?.get(id) ?? 0) : 0
      })
    }
  })
  return rows
}

export function propagationFigures(
  rows: DeliveryRow[],
  messages: number,
  published: number,
  nodes: number,
  bytes: number
): PropagationFigures {
  const latencies = rows.flatMap(r => (r.latency_ms === null ? [] : [r.latency_ms]))
  const hops = rows.flatMap(r => (r.hops === null ? [] : [r.hops]))
  const perNode = new Map<number, { duplicates: number; pairs: number }>()
  for (const r of rows) {
    const entry = perNode.get(r.node) ?? { duplicates: 0, pairs: 0 }
    entry.duplicates += Math.max(0, r.copies - 1)
    entry.pairs++
    perNode.set(r.node, entry)
  }
  const nodeMeans = [...perNode.values()].map(e => e.duplicates / e.pairs)
  const duplicates = rows.reduce((sum, r) => sum + Math.max(0, r.copies - 1), 0)
  const pairs = published * (nodes - 1)
  return {
    messages,
    published,
    delivery_ratio: pairs === 0 ? 0 : round4(latencies.length / pairs),
    latency_ms: { ...percentiles(latencies), mean: mean(latencies) },
    hops: { ...percentiles(hops), mean: mean(hops) },
    duplicates_per_node_per_message: {
      mean: rows.length === 0 ? 0 : round3(duplicates / rows.length),
      min: nodeMeans.length === 0 ? 0 : round3(Math.min(...nodeMeans)),
      max: nodeMeans.length === 0 ? 0 : round3(Math.max(...nodeMeans))
    },
    bytes_per_message: published === 0 ? 0 : Math.round(bytes / published)
  }
}

const mean = (values: readonly number[]): number | null =>
  values.length === 0 ? null : round3(values.reduce((a, b) => a + b, 0) / values.length)
const round3 = (x: number): number => Math.round(x * 1000) / 1000
const round4 = (x: number): number => Math.round(x * 10_000) / 10_000
