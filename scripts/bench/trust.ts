/**
 * Transitive trust at scale (issue 58): builds the attestation graph of `--identities` identities
 * and `--attestations` attestations and propagates trust from the seeds, then adds `--added`
 * attestations and propagates again from the previous scores, as the node does when attestations
 * arrive.
 *
 *   npm run bench:trust -- [--identities 1000000] [--attestations 10000000] [--seeds 0.01]
 *                          [--added 1000] [--seed 58]
 *
 * The synthetic graph: issuers drawn uniformly, subjects from a Zipf-like popularity (a few entities
 * attested by many, most by few), weights 1–5 (a settled payment weighs most), seeds the first
 * `--seeds` share of identities (developers with a verified handle). Times the build (edges summed
 * and each issuer's row normalized) and the rounds separately, on this thread, and the RSS growth
 * over the whole computation. Prints `name: value unit` lines.
 */
import { parseArgs } from 'node:util'
import { propagate, repair } from '../../src/trust/propagation.js'
import { TrustGraph, type TrustEdges } from '../../src/trust/trust-graph.js'
import { machineLoad, reportMachineSpeed } from '../lib/mesh-bench.js'
import { seededRandom } from '../lib/random.js'
import { report } from '../lib/report.js'

const { values: args } = parseArgs({
  options: {
    identities: { type: 'string', default: '1000000' },
    attestations: { type: 'string', default: '10000000' },
    seeds: { type: 'string', default: '0.01' },
    added: { type: 'string', default: '1000' },
    seed: { type: 'string', default: '58' }
  }
})
const n = Number(args.identities)
const m = Number(args.attestations)
const added = Number(args.added)
const random = seededRandom(Number(args.seed))

report('machine_load_before', machineLoad(), '')
reportMachineSpeed()

/** Subjects by popularity: index ⌊n · u^3⌋ puts most attestations on the lowest indexes. */
function synthetic(count: number): TrustEdges {
  const from = new Uint32Array(count)
  const to = new Uint32Array(count)
  const weight = new Float64Array(count)
  for (let k = 0; k < count; k++) {
    from[k] = Math.floor(random() * n)
    to[k] = Math.min(n - 1, Math.floor(n * random() ** 3))
    weight[k] = 1 + Math.floor(random() * 5)
  }
  return { from, to, weight }
}

const rss = (): number => process.memoryUsage().rss / 2 ** 20
const base = synthetic(m)
const seeds = Array.from({ length: Math.max(1, Math.floor(n * Number(args.seeds))) }, (_, i) => i)
const rssBefore = rss()
let peak = rssBefore
const sample = setInterval(() => {
  peak = Math.max(peak, rss())
}, 50)

let started = performance.now()
const graph = TrustGraph.build(n, base)
const buildMs = performance.now() - started
started = performance.now()
const first = propagate(graph, seeds)
const propagateMs = performance.now() - started
peak = Math.max(peak, rss())
report('identities', n, '')
report('attestations', m, `(${graph.edgeCount} distinct issuer → subject edges)`)
report('build', (buildMs / 1000).toFixed(2), 's (edges summed, rows sorted and normalized)')
report(
  'propagate',
  (propagateMs / 1000).toFixed(2),
  `s (${first.rounds} rounds, last change ${first.change.toExponential(1)})`
)
report(
  'compute_total',
  ((buildMs + propagateMs) / 1000).toFixed(2),
  's (goal ≤ 60 s at 1M identities, 10M attestations)'
)

const more = synthetic(added)
started = performance.now()
const rebuilt = graph.withAdded(more)
const rebuildMs = performance.now() - started
started = performance.now()
const second = repair({ graph, scores: first.scores }, rebuilt, more.from, seeds)
const warmMs = performance.now() - started
peak = Math.max(peak, rss())
clearInterval(sample)
report('added_attestations', added, '')
report(
  'added_reflected_after',
  ((rebuildMs + warmMs) / 1000).toFixed(2),
  `s (their issuers' rows merged in ${(rebuildMs / 1000).toFixed(2)} s, the previous scores repaired by ${second.pushes} pushes in ${(warmMs / 1000).toFixed(2)} s; goal ≤ 1 s)`
)
report(
  'rss_growth',
  (peak - rssBefore).toFixed(0),
  `MiB (peak ${peak.toFixed(0)} MiB, the synthetic edges included before: ${rssBefore.toFixed(0)} MiB)`
)
