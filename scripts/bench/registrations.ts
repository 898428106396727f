/**
 * G4: signed registrations over the full path (HTTP → validate → 2 Ed25519 verifies → LMDB commit
 * and flush → 201), at a fixed offered rate, against a node in its own process.
 *
 *   npm run bench:registrations -- [--rate 1000] [--seconds 60] [--connections 64] [--kill9]
 *
 * --kill9 kills the node with SIGKILL halfway, restarts it on the same data and checks that every
 * acknowledged registration is there. Prints one `name: value unit` line per figure.
 */
import { Agent } from 'node:http'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { cpuSeconds, spawnNode, type NodeProcess } from '../lib/node-process.js'
import { makeBodies, postRegistration as post } from '../lib/registration-bodies.js'
import { percentile, report } from '../lib/report.js'

const { values: args } = parseArgs({
  options: {
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '60' },
    connections: { type: 'string', default: '64' },
    kill9: { type: 'boolean', default: false }
  }
})
const rate = Number(args.rate)
const seconds = Number(args.seconds)
const total = Math.ceil(rate * seconds)

/** Time from a registration's reply until search finds it (by ID), polling every 10 ms up to 5 s. */
async function searchableAfter(url: string, id: string): Promise<number> {
  const started = performance.now()
  while (performance.now() - started < 5000) {
    const res = await fetch(`${url}/v1/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ fqan: id, type: 'any', status: 'any' })
    })
    const body = (await res.json()) as { total_found?: number }
    if (body.total_found === 1) return performance.now() - started
    await new Promise(r => setTimeout(r, 10))
  }
  return Infinity
}

/**
 * Upper bound of a quantile of the node's own request-latency histogram for POST /v1/entities:
 * the time from request to reply inside the node, without the load generator's delays.
 */
function serverQuantile(metrics: string, q: number): string {
  const buckets: [number, number][] = []
  for (const line of metrics.split('\n')) {
    const m =
      /^registry_http_request_duration_seconds_bucket\{.*le="([^"]+)".*route="\/v1\/entities".*\} (\d+)/.exec(line) ??
      /^registry_http_request_duration_seconds_bucket\{.*route="\/v1\/entities".*le="([^"]+)".*\} (\d+)/.exec(line)
    if (m && /method="POST"/.test(line)) buckets.push([m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2])])
  }
  const total = buckets.find(([le]) => le === Infinity)?.[1] ?? 0
  const bound = buckets.find(([, count]) => count >= q * total)?.[0] ?? Infinity
  return bound === Infinity ? '>2500' : String(bound * 1000)
}

async function main(): Promise<void> {
  const genStart = performance.now()
  const bodies = makeBodies(total)
  console.error(`generated ${total} signed registrations in ${((performance.now() - genStart) / 1000).toFixed(1)} s`)
  const data = await mkdtemp(join(tmpdir(), 'bench-registrations-'))
  const nodeArgs = ['--data', data, '--http-port', '0', '--no-rate-limit', '--metrics']
  let node: NodeProcess = await spawnNode(nodeArgs)
  const url = new URL(node.url)
  const agent = new Agent({ keepAlive: true, maxSockets: Number(args.connections) })
  const latencies: number[] = []
  const acked: string[] = []
  let errors = 0
  let failedStatus = 0
  const clientLoop = monitorEventLoopDelay({ resolution: 10 })
  clientLoop.enable()
  const cpuBefore = await cpuSeconds(node.child.pid!)
  const started = performance.now()
  const killAt = args.kill9 ? Math.floor(total / 2) : -1
  const inflight: Promise<void>[] = []
  const searchable: Promise<number>[] = []
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate
    const wait = due - performance.now()
    if (wait > 1) await new Promise(r => setTimeout(r, wait))
    if (i === killAt) node.child.kill('SIGKILL')
    const { id, body } = bodies[i]!
    const t0 = performance.now()
    inflight.push(
      post(agent, url, body).then(status => {
        if (status === 201) {
          latencies.push(performance.now() - t0)
          acked.push(id)
          if (!args.kill9 && acked.length % 100 === 0) searchable.push(searchableAfter(node.url, id))
        } else if (status === 0) errors++
        else failedStatus++
      })
    )
  }
  await Promise.all(inflight)
  const elapsed = (performance.now() - started) / 1000
  const cpu = args.kill9 ? NaN : (await cpuSeconds(node.child.pid!)) - cpuBefore
  latencies.sort((a, b) => a - b)
  report('offered_rate', rate, 'req/s')
  report('duration', elapsed.toFixed(1), 's')
  report('acknowledged', acked.length, 'registrations')
  report('throughput', (acked.length / elapsed).toFixed(0), 'registrations/s')
  report('latency_p50', percentile(latencies, 0.5).toFixed(1), 'ms')
  report('latency_p99', percentile(latencies, 0.99).toFixed(1), 'ms')
  report('latency_max', (latencies[latencies.length - 1] ?? 0).toFixed(1), 'ms')
  report('non_201_responses', failedStatus, 'responses')
  report('connection_errors', errors, 'requests')
  if (!args.kill9) {
    report('server_cpu', ((cpu / elapsed) * 100).toFixed(0), '% of one core')
    const metrics = await (await fetch(`${node.url}/metrics`)).text()
    for (const q of [0.5, 0.99]) report(`server_side_latency_p${q * 100}_at_most`, serverQuantile(metrics, q), 'ms')
    const lagMax = /^nodejs_eventloop_lag_max_seconds (\S+)/m.exec(metrics)?.[1]
    if (lagMax) report('server_event_loop_lag_max', (Number(lagMax) * 1000).toFixed(0), 'ms')
    report('load_generator_event_loop_delay_max', (clientLoop.max / 1e6).toFixed(0), 'ms')
  }
  if (!args.kill9) {
    const delays = (await Promise.all(searchable)).sort((a, b) => a - b)
    report('searchable_after_reply_samples', delays.length, 'registrations (every 100th)')
    report('searchable_after_reply_p99', percentile(delays, 0.99).toFixed(1), 'ms (includes one search round trip)')
    report('searchable_after_reply_max', (delays[delays.length - 1] ?? NaN).toFixed(1), 'ms')
  }

  if (args.kill9) {
    await node.exited
    node = await spawnNode(nodeArgs)
    let missing = 0
    for (const id of acked) {
      const res = await fetch(`${node.url}/v1/entities/${id}`)
      await res.arrayBuffer()
      if (res.status !== 200) missing++
    }
    report('kill9_acknowledged_before_kill', acked.length, 'registrations')
    report('kill9_missing_after_restart', missing, 'registrations')
  }
  node.child.kill('SIGTERM')
  await node.exited
  agent.destroy()
  await rm(data, { recursive: true, force: true })
}

await main()
