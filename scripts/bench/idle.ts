/**
 * Idle cost (issue 16, goal 4): CPU of each node of an idle testnet on loopback.
 *
 *   npm run bench:idle -- [--nodes 10] [--settle 30] [--seconds 90] [--entities 0] [--node-arg=--FLAG=V …]
 *
 * Starts `--nodes` node processes, node i bootstrapped to node 0 and to node i − 1 (a connected
 * mesh, not a clique; kad-dht adds connections of its own), registers `--entities` entities spread
 * over them (so they hold records and announce their home buckets), lets the mesh settle for
 * `--settle` s, then measures every node's CPU (/proc, all threads) over `--seconds` s. Prints
 * `name: value unit` lines: per node, and the median and the highest.
 */
import { Agent } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { machineLoad, sleep } from '../lib/mesh-bench.js'
import { cpuSeconds, spawnNode, type NodeProcess } from '../lib/node-process.js'
import { makeBodies, postRegistration } from '../lib/registration-bodies.js'
import { percentile, report } from '../lib/report.js'

const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '10' },
    settle: { type: 'string', default: '30' },
    seconds: { type: 'string', default: '90' },
    entities: { type: 'string', default: '0' },
    'node-arg': { type: 'string', multiple: true, default: [] }
  }
})
const count = Number(args.nodes)
process.setMaxListeners(count + 10)

report('machine_load_before', machineLoad(), `(${cpus().length} cores)`)
const dirs = await Promise.all(Array.from({ length: count }, (_, i) => mkdtemp(join(tmpdir(), `bench-idle-${i}-`))))
const nodes: NodeProcess[] = []
const addresses: string[] = []
for (let i = 0; i < count; i++) {
  const bootstrap = [...new Set([addresses[0], addresses[i - 1]].filter((x): x is string => x !== undefined))].flatMap(
    a => ['--bootstrap', a]
  )
  const node = await spawnNode([
    '--data',
    dirs[i]!,
    '--no-rate-limit',
    '--http-port',
    '0',
    ...bootstrap,
    ...(args['node-arg'] ?? [])
  ])
  let tcp: string | undefined
  for (let k = 0; k < 200 && !tcp; k++, await sleep(50))
    tcp = /(\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/\S+)/.exec(node.output())?.[1]
  if (!tcp) throw new Error(`no TCP multiaddr for node ${i}:\n${node.output()}`)
  nodes.push(node)
  addresses.push(tcp)
}
report('nodes', count, 'processes')

const entities = makeBodies(Number(args.entities))
const agent = new Agent({ keepAlive: true, maxSockets: 8 })
await Promise.all(entities.map((e, i) => postRegistration(agent, new URL(nodes[i % count]!.url), e.body)))
if (entities.length > 0) report('entities', entities.length, 'registered, spread over the nodes')

await sleep(Number(args.settle) * 1000)
const seconds = Number(args.seconds)
const before = await Promise.all(nodes.map(n => cpuSeconds(n.child.pid!)))
await sleep(seconds * 1000)
const after = await Promise.all(nodes.map(n => cpuSeconds(n.child.pid!)))
const shares = after.map((c, i) => ((c - before[i]!) / seconds) * 100)
const peers = await Promise.all(
  nodes.map(
    async n =>
      ((await (await fetch(`${n.url}/v1/network/status`)).json()) as { mesh: { peer_count: number } }).mesh.peer_count
  )
)
report(
  'idle_cpu_per_node',
  shares.map(s => s.toFixed(2)).join(' '),
  `% of one core over ${seconds} s, after ${args.settle} s to settle`
)
const sorted = [...shares].sort((x, y) => x - y)
report('idle_cpu_median', percentile(sorted, 0.5).toFixed(2), '% of one core')
report('idle_cpu_max', sorted[sorted.length - 1]!.toFixed(2), '% of one core')
report('peers_per_node', peers.join(' '), 'connected')
report('machine_load_after', machineLoad(), '')
for (const n of nodes) n.child.kill('SIGTERM')
await Promise.all(nodes.map(n => n.exited))
await Promise.all(dirs.map(d => rm(d, { recursive: true, force: true })))
