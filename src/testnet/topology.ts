/**
 * Testnet topologies: which pairs of nodes connect. `full` (every pair), `ring` (i with i ± 1),
 * `star` (node 0 with every other) and `random:<d>` (every node dials d distinct others picked at
 * random, plus a ring when that leaves the graph split, so gossip can reach everyone).
 */
import { seededRandom } from './random.js'

export type Edge = readonly [number, number]

export interface Topology {
  /** As given: full, ring, star, random:3. */
  name: string
  edges: Edge[]
}

const TOPOLOGY_PATTERN = /^(full|ring|star|random:(\d+))$/

export class TopologyError extends Error {
  override name = 'TopologyError'
}

export function parseTopology(spec: string): { kind: 'full' | 'ring' | 'star' | 'random'; degree: number } {
  const m = TOPOLOGY_PATTERN.exec(spec.trim())
  if (!m) throw new TopologyError(`topology ${JSON.stringify(spec)}: expected full, ring, star or random:<degree>`)
  if (m[2] !== undefined) {
    const degree = Number(m[2])
    if (degree < 1) throw new TopologyError('random:<degree> needs a degree of at least 1')
    return { kind: 'random', degree }
  }
  return { kind: m[1] as 'full' | 'ring' | 'star', degree: 0 }
}

/** The edges (i < j) of `spec` over `n` nodes; `seed` fixes random topologies. */
export function buildTopology(spec: string, n: number, seed = 1): Topology {
  const { kind, degree } = parseTopology(spec)
  const edges = new Set<string>()
  const add = (a: number, b: number): void => {
    if (a !== b) edges.add(a < b ? `${a},${b}` : `${b},${a}`)
  }
  if (kind === 'full') for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) add(i, j)
  if (kind === 'star') for (let i = 1; i < n; i++) add(0, i)
  if (kind === 'ring') for (let i = 0; i < n; i++) add(i, (i + 1) % n)
  if (kind === 'random') {
    const random = seededRandom(seed)
    for (let i = 0; i < n; i++) {
      const others = Array.from({ length: n }, (_, j) => j).filter(j => j !== i)
      for (let k = 0; k < Math.min(degree, others.length); k++) {
        const pick = k + Math.floor(random() * (others.length - k))
        ;[others[k], others[pick]] = [others[pick] as number, others[k] as number]
        add(i, others[k] as number)
      }
    }
    if (!connected(n, [...edges].map(toEdge))) for (let i = 0; i < n; i++) add(i, (i + 1) % n)
  }
  return { name: spec, edges: [...edges].map(toEdge).sort((a, b) => a[0] - b[0] || a[1] - b[1]) }
}

const toEdge = (key: string): Edge => key.split(',').map(Number) as unknown as Edge

export function neighbours(topology: Topology, i: number): number[] {
  return topology.edges.flatMap(([a, b]) => (a === i ? [b] : b === i ? [a] : []))
}

export function connected(n: number, edges: readonly Edge[]): boolean {
  if (n <= 1) return true
  const seen = new Set([0])
  const stack = [0]
  while (stack.length > 0) {
    const at = stack.pop() as number
    for (const [a, b] of edges) {
      const next = a === at ? b : b === at ? a : -1
      if (next >= 0 && !seen.has(next)) {
        seen.add(next)
        stack.push(next)
      }
    }
  }
  return seen.size === n
}
