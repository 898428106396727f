/**
 * Cost per operation (issue 16): node CPU per registration and per received gossip operation,
 * and the registration latency, at fixed offered rates with the mesh on.
 *
 *   npm run bench:cost -- [--rates 1000,2000] [--seconds 15] [--preload 3000] [--no-peer] [--no-p2p]
 *                         [--connections 64] [--node-arg=--FLAG=V …] [--dump PREFIX]
 *
 * Two node processes on loopback: A takes the registrations (open loop, signed bodies made before
 * the nodes start), B is meshed with A (bootstrapped to it) and receives every operation by
 * gossip. Before measuring, `--preload` registrations put A in service (its DHT announcements of
 * home buckets, a one-time cost per bucket, are done; the store and index are not empty), and the
 * idle cost of each node is measured over 3 s. For each rate: A's and B's CPU over the phase (from
 * /proc, every thread: HTTP, verification, store, search index, embedding, gossip, the idle
 * background) divided by the operations, split by thread; A's reply latency p50/p99; how long after
 * the last reply B held them all. `--no-peer` runs A alone, its mesh on but without a peer (as `npm
 * start` does); `--no-p2p` runs A with no libp2p at all, for comparison.
 * `--dump PREFIX` writes each phase's replies to PREFIX-<rate>.tsv (after a line with the phase's
 * start in milliseconds since the epoch: milliseconds from that start at sending, then the reply's
 * latency, -1 for a refusal), to see when the slow ones came.
 * Propagation across 5 and 20 nodes is bench:propagation's. Prints `name: value unit` lines;
 * BENCH_COST_LOGS=1 prints the nodes' output at the end.
 */
import { Agent } from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { machineLoad, reportMachineSpeed, sleep } from '../lib/mesh-bench.js'
import {
  cpuSeconds,
  cpuSecondsByThread,
  cpuSecondsSplit,
  spawnNode,
  tcpAddressOf,
  type NodeProcess
} from '../lib/node-process.js'
import { makeBodies, postRegistration } from '../lib/registration-bodies.js'
import { percentile, report } from '../lib/report.js'

const { values: args } = parseArgs({
  options: {
    rates: { type: 'string', default: '1000,2000' },
    seconds: { type: 'string', default: '15' },
    preload: { type: 'string', default: '3000' },
    peer: { type: 'boolean', default: true },
    p2p: { type: 'boolean', default: true },
    connections: { type: 'string', default: '64' },
    'node-arg': { type: 'string', multiple: true, default: [] },
    dump: { type: 'string' }
  },
  allowNegative: true
})
const rates = args.rates.split(',').map(Number)
const seconds = Number(args.seconds)

report('machine_load_before', machineLoad(), `(${cpus().length} cores)`)
reportMachineSpeed()
let offset = 0
const take = (n: number) => {
  const out = makeBodies(n, offset)
  offset += n
  return out
}
const preload = take(Math.max(1, Number(args.preload)))
const phases = rates.map(rate => take(Math.ceil(rate * seconds)))

const dirs = await Promise.all([0, 1].map(i => mkdtemp(join(tmpdir(), `bench-cost-${i}-`))))
const common = ['--no-rate-limit', '--http-port', '0', '--metrics', ...(args['node-arg'] ?? [])]
const a: NodeProcess = await spawnNode(['--data', dirs[0]!, ...common, ...(args.p2p ? [] : ['--no-p2p'])])
let b: NodeProcess | null = null
if (args.peer && args.p2p) {
  b = await spawnNode(['--data', dirs[1]!, ...common, '--bootstrap', await tcpAddressOf(a)])
}
const nodes = b ? [a, b] : [a]

const holds = async (node: NodeProcess, id: string) => (await fetch(`${node.url}/v1/entities/${id}`)).status === 200
interface Status {
  entities: { agents: number }
  mesh: {
    gossip?: {
      published: number
      messages_published: number
      first_received: number
      duplicates: number
      lost: number
      operations_received: Record<string, number>
    }
  }
}
const status = async (n: NodeProcess) => (await (await fetch(`${n.url}/v1/network/status`)).json()) as Status
const agents = async (n: NodeProcess) => (await status(n)).entities.agents
const agent = new Agent({ keepAlive: true, maxSockets: Number(args.connections) })

/**
 * Offers `bodies` at `rate` per second (open loop); resolves with the latencies of the 201s, the
 * count of others, and each reply as [ms from `startedAt` (epoch ms) at sending, latency or -1 when refused].
 */
async function offer(
  bodies: ReturnType<typeof take>,
  rate: number
): Promise<{ latencies: number[]; refused: number; replies: [number, number][]; startedAt: number }> {
  const url = new URL(a.url)
  const latencies: number[] = []
  const replies: [number, number][] = []
  let refused = 0
  const started = performance.now()
  const inflight: Promise<void>[] = []
  for (let i = 0; i < bodies.length; i++) {
    const wait = started + (i * 1000) / rate - performance.now()
    if (wait > 1) await sleep(wait)
    const t0 = performance.now()
    inflight.push(
      postRegistration(agent, url, bodies[i]!.body).then(status => {
        const latency = performance.now() - t0
        replies.push([t0 - started, status === 201 ? latency : -1])
        if (status === 201) latencies.push(latency)
        else refused++
      })
    )
  }
  await Promise.all(inflight)
  return { latencies, refused, replies, startedAt: performance.timeOrigin + started }
}

/**
 * Waits until B holds as many agents as A (gossip may deliver out of order), at most 30 s after it
 * holds the last one; resolves with how many it still lacks then.
 */
async function bHoldsAll(last: string): Promise<number> {
  if (!b) return 0
  while (!(await holds(b, last))) await sleep(20)
  const expected = await agents(a)
  const deadline = performance.now() + 30_000
  let held = await agents(b)
  while (held < expected && performance.now() < deadline) {
    await sleep(20)
    held = await agents(b)
  }
  return expected - held
}

// In service: the preload at a modest rate, until B holds it, then the nodes settle (A's DHT
// announcements of home buckets are paced at 20 a second; past 1,000 entities each node moves its
// search index to its worker at the first quiet second).
await offer(preload, 500)
const preloadMissing = await bHoldsAll(preload[preload.length - 1]!.id)
if (preloadMissing > 0) report('preload_b_missing', preloadMissing, 'registrations 30 s after B held the last one')
const busy = async (n: NodeProcess): Promise<boolean> => {
  const c0 = await cpuSeconds(n.child.pid!)
  await sleep(1000)
  return (await cpuSeconds(n.child.pid!)) - c0 >= 0.05
}
for (let i = 0, quiet = 0; i < 60 && quiet < 3; i++)
  quiet = (await Promise.all(nodes.map(busy))).includes(true) ? 0 : quiet + 1
report('preloaded', preload.length, 'registrations before measuring')

const idle = await Promise.all(
  nodes.map(async n => {
    const c0 = await cpuSeconds(n.child.pid!)
    await sleep(3000)
    return ((await cpuSeconds(n.child.pid!)) - c0) / 3
  })
)
for (const [i, name] of ['a', 'b'].slice(0, nodes.length).entries())
  report(`idle_cpu_${name}`, (idle[i]! * 100).toFixed(1), '% of one core')

for (const [p, rate] of rates.entries()) {
  const phase = phases[p]!
  const cpu0 = await Promise.all(nodes.map(n => cpuSeconds(n.child.pid!)))
  const threads0 = await Promise.all(nodes.map(n => cpuSecondsByThread(n.child.pid!)))
  const split0 = await Promise.all(nodes.map(n => cpuSecondsSplit(n.child.pid!)))
  const started = performance.now()
  const { latencies, refused, replies, startedAt } = await offer(phase, rate)
  if (args.dump)
    await writeFile(
      `${args.dump}-${rate}.tsv`,
      `# phase start ${startedAt.toFixed(1)} ms since the epoch\n` +
        replies
          .sort((x, y) => x[0] - y[0])
          .map(([at, ms]) => `${at.toFixed(1)}\t${ms.toFixed(1)}\n`)
          .join('')
    )
  const replied = performance.now()
  const missing = await bHoldsAll(phase[phase.length - 1]!.id)
  const delivered = performance.now()
  const cpu1 = await Promise.all(nodes.map(n => cpuSeconds(n.child.pid!)))
  const threads1 = await Promise.all(nodes.map(n => cpuSecondsByThread(n.child.pid!)))
  const split1 = await Promise.all(nodes.map(n => cpuSecondsSplit(n.child.pid!)))
  const elapsed = (delivered - started) / 1000
  latencies.sort((x, y) => x - y)
  const tag = `at_${rate}`
  report(
    `${tag}_acknowledged`,
    latencies.length,
    `of ${phase.length} (${refused} refused), offered over ${((replied - started) / 1000).toFixed(1)} s`
  )
  report(`${tag}_latency_p50`, percentile(latencies, 0.5).toFixed(1), 'ms')
  report(`${tag}_latency_p99`, percentile(latencies, 0.99).toFixed(1), 'ms')
  for (const [i, name] of ['a', 'b'].slice(0, nodes.length).entries()) {
    const used = cpu1[i]! - cpu0[i]!
    const label = i === 0 ? `${tag}_cpu_per_registration_a` : `${tag}_cpu_per_received_operation_b`
    report(
      label,
      ((used * 1000) / phase.length).toFixed(3),
      `ms (${((used / elapsed) * 100).toFixed(0)} % of a core over ${elapsed.toFixed(1)} s)`
    )
    const split = [...threads1[i]!]
      .map(([thread, s]) => [thread, ((s - (threads0[i]!.get(thread) ?? 0)) * 1000) / phase.length] as const)
      .filter(([, ms]) => ms >= 0.005)
      .sort((x, y) => y[1] - x[1])
    const perOp = (seconds: number): string => ((seconds * 1000) / phase.length).toFixed(3)
    report(
      `${tag}_cpu_user_system_${name}`,
      `${perOp(split1[i]!.user - split0[i]!.user)} / ${perOp(split1[i]!.system - split0[i]!.system)}`,
      'ms per operation in user / kernel mode'
    )
    report(
      `${tag}_cpu_by_thread_${name}`,
      split.map(([thread, ms]) => `${thread} ${ms.toFixed(3)}`).join(', '),
      'ms per operation'
    )
  }
  for (const [i, name] of ['a', 'b'].slice(0, nodes.length).entries()) {
    const g = (await status(nodes[i]!)).mesh.gossip
    if (!g) continue
    const outcomes = Object.entries(g.operations_received).filter(([, n]) => n > 0)
    report(
      `${tag}_gossip_${name}`,
      `published ${g.published} in ${g.messages_published} messages, received ${g.first_received} first copies ` +
        `(${g.duplicates} duplicates, ${g.lost} lost), operations ${outcomes.map(o => o.join(' ')).join(', ') || 'none'}`,
      'since start'
    )
  }
  const metrics = await (await fetch(`${a.url}/metrics`)).text()
  const lag = /^nodejs_eventloop_lag_max_seconds (\S+)/m.exec(metrics)?.[1]
  if (lag) report(`${tag}_a_event_loop_lag_max`, (Number(lag) * 1000).toFixed(0), 'ms')
  if (b && missing > 0) report(`${tag}_b_missing`, missing, 'registrations 30 s after B held the last one')
  else if (b) report(`${tag}_b_held_all_after`, ((delivered - replied) / 1000).toFixed(2), 's after the last reply')
  await sleep(2000)
}
report('machine_load_after', machineLoad(), '')
if (process.env.BENCH_COST_LOGS) for (const n of nodes) console.log(n.output().slice(-4000))
for (const n of nodes) n.child.kill('SIGTERM')
await Promise.all(nodes.map(n => n.exited))
await Promise.all(dirs.map(d => rm(d, { recursive: true, force: true })))
