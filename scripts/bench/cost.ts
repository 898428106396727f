/**
 * Cost per operation (issue 16): node CPU per registration and per received gossip operation,
 * and the registration latency, at fixed offered rates with the mesh on.
 *
 *   npm run bench:cost -- [--rates 1000,2000] [--seconds 15] [--connections 64] [--node-arg=--FLAG=V …]
 *
 * Two node processes on loopback: A takes the registrations (open loop, signed bodies made before
 * the nodes start), B is meshed with A (bootstrapped to it) and receives every operation by
 * gossip. For each rate: A's and B's CPU over the phase (from /proc; all work included: HTTP,
 * verification, store, search index, embedding, gossip, the idle background) divided by the
 * operations, A's reply latency p50/p99, and how long after the last reply B held them all. The
 * idle cost of each node (CPU per second over 3 s before the first phase) is printed too.
 * Propagation across 5 and 20 nodes is bench:propagation's. Prints `name: value unit` lines.
 */
import { Agent } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { cpuSeconds, cpuSecondsByThread, spawnNode, type NodeProcess } from '../lib/node-process.js'
import { makeBodies, postRegistration } from '../lib/registration-bodies.js'
import { percentile, report } from '../lib/report.js'

const { values: args } = parseArgs({ options: { rates: { type: 'string', default: '1000,2000' }, seconds: { type: 'string', default: '15' }, connections: { type: 'string', default: '64' }, 'node-arg': { type: 'string', multiple: true, default: [] } } })
const rates = args.rates.split(',').map(Number)
const seconds = Number(args.seconds)
const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

report('machine_load_before', loadavg().map(l => l.toFixed(2)).join(' '), `(${cpus().length} cores)`)
const phases = rates.map(rate => Math.ceil(rate * seconds))
let offset = 1
const bodies = phases.map(n => { const out = makeBodies(n, offset); offset += n; return out })
const warmup = makeBodies(1, 0)[0]!

const dirs = await Promise.all([0, 1].map(i => mkdtemp(join(tmpdir(), `bench-cost-${i}-`))))
const common = ['--no-rate-limit', '--http-port', '0', '--metrics', ...(args['node-arg'] ?? [])]
const a: NodeProcess = await spawnNode(['--data', dirs[0]!, ...common])
// The start line: `registry-node p2p <peer id> at <multiaddr> …`.
let tcp: string | undefined
for (let i = 0; i < 200 && !tcp; i++, await sleep(50)) tcp = /(\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/\S+)/.exec(a.output())?.[1]
if (!tcp) throw new Error(`no TCP multiaddr for node A:\n${a.output()}`)
const b: NodeProcess = await spawnNode(['--data', dirs[1]!, ...common, '--bootstrap', tcp])

const holds = async (node: NodeProcess, id: string) => (await fetch(`${node.url}/v1/entities/${id}`)).status === 200
// Meshed: a registration at A reaches B by gossip.
const agent = new Agent({ keepAlive: true, maxSockets: Number(args.connections) })
await postRegistration(agent, new URL(a.url), warmup.body)
for (let i = 0; !(await holds(b, warmup.id)); i++) {
  if (i > 300) throw new Error('B never received the warm-up registration')
  await sleep(100)
}
await sleep(2000)

const idle = await Promise.all([a, b].map(async n => { const c0 = await cpuSeconds(n.child.pid!); await sleep(3000); return ((await cpuSeconds(n.child.pid!)) - c0) / 3 }))
report('idle_cpu_a', (idle[0]! * 100).toFixed(1), '% of one core')
report('idle_cpu_b', (idle[1]! * 100).toFixed(1), '% of one core')

for (const [p, rate] of rates.entries()) {
  const phase = bodies[p]!
  const url = new URL(a.url)
  const [a0, b0] = await Promise.all([cpuSeconds(a.child.pid!), cpuSeconds(b.child.pid!)])
  const threads0 = await Promise.all([a, b].map(n => cpuSecondsByThread(n.child.pid!)))
  const latencies: number[] = []
  let refused = 0
  const started = performance.now()
  const inflight: Promise<void>[] = []
  for (let i = 0; i < phase.length; i++) {
    const wait = started + (i * 1000) / rate - performance.now()
    if (wait > 1) await sleep(wait)
    const t0 = performance.now()
    inflight.push(postRegistration(agent, url, phase[i]!.body).then(status => { if (status === 201) latencies.push(performance.now() - t0); else refused++ }))
  }
  await Promise.all(inflight)
  const replied = performance.now()
  const last = phase[phase.length - 1]!.id
  while (!(await holds(b, last))) await sleep(20)
  // Gossip may deliver out of order: B holds every one when its count of agents is A's.
  const agents = async (n: NodeProcess) => ((await (await fetch(`${n.url}/v1/network/status`)).json()) as { entities: { agents: number } }).entities.agents
  const expected = await agents(a)
  for (let i = 0; i < 1500 && (await agents(b)) < expected; i++) await sleep(20)
  const delivered = performance.now()
  const elapsed = (delivered - started) / 1000
  const [a1, b1] = await Promise.all([cpuSeconds(a.child.pid!), cpuSeconds(b.child.pid!)])
  const threads1 = await Promise.all([a, b].map(n => cpuSecondsByThread(n.child.pid!)))
  latencies.sort((x, y) => x - y)
  const tag = `at_${rate}`
  report(`${tag}_acknowledged`, latencies.length, `of ${phase.length} (${refused} refused)`)
  report(`${tag}_latency_p50`, percentile(latencies, 0.5).toFixed(1), 'ms')
  report(`${tag}_latency_p99`, percentile(latencies, 0.99).toFixed(1), 'ms')
  report(`${tag}_cpu_per_registration_a`, (((a1 - a0) * 1000) / phase.length).toFixed(3), `ms (A at ${(((a1 - a0) / elapsed) * 100).toFixed(0)} % of a core)`)
  report(`${tag}_cpu_per_received_operation_b`, (((b1 - b0) * 1000) / phase.length).toFixed(3), `ms (B at ${(((b1 - b0) / elapsed) * 100).toFixed(0)} % of a core)`)
  for (const [i, name] of ['a', 'b'].entries()) {
    const split = [...threads1[i]!].map(([thread, s]) => [thread, ((s - (threads0[i]!.get(thread) ?? 0)) * 1000) / phase.length] as const).filter(([, ms]) => ms >= 0.005).sort((x, y) => y[1] - x[1])
    report(`${tag}_cpu_by_thread_${name}`, split.map(([thread, ms]) => `${thread} ${ms.toFixed(3)}`).join(', '), 'ms per operation')
  }
  const metrics = await (await fetch(`${a.url}/metrics`)).text()
  const lag = /^nodejs_eventloop_lag_max_seconds (\S+)/m.exec(metrics)?.[1]
  if (lag) report(`${tag}_a_event_loop_lag_max`, (Number(lag) * 1000).toFixed(0), 'ms')
  report(`${tag}_b_held_all_after`, ((delivered - replied) / 1000).toFixed(2), 's after the last reply')
  await sleep(2000)
}
report('machine_load_after', loadavg().map(l => l.toFixed(2)).join(' '), '')
for (const n of [a, b]) n.child.kill('SIGTERM')
await Promise.all([a.exited, b.exited])
await Promise.all(dirs.map(d => rm(d, { recursive: true, force: true })))
