/**
 * A mass silence: N home entities registered, none sending a heartbeat, then one inactivity sweep
 * turns them all inactive (a load without heartbeats, or a node restarted after downtime). Prints
 * the node's CPU per transition (every thread, and the HTTP thread alone), how long the sweep took,
 * and the latency of one-at-a-time searches before and during it.
 *
 *   npm run bench:sweep -- [--entities 50000] [--sweep-interval 40] [--connections 64] [--peer]
 *
 * The entities are loaded with the inactivity threshold out of reach; the node is then restarted on
 * the same data with a threshold of 1 s, so its first sweep (--sweep-interval seconds after the
 * start) finds every entity silent. Since a sweep spreads what is past its first 1,000 transitions
 * over half the interval, the sweep time follows --sweep-interval. `--peer` also runs a second node
 * meshed with the first through both phases, and prints what it spends per status change it
 * receives and applies, and when its search shows them all. Prints `name: value unit` lines.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { call, machineLoad, sleep } from '../lib/mesh-bench.js'
import { cpuSecondsByThread, spawnNode, tcpAddressOf, type NodeProcess } from '../lib/node-process.js'
import { makeBodies, postRegistration } from '../lib/registration-bodies.js'
import { percentile, report } from '../lib/report.js'

const { values: args } = parseArgs({
  options: {
    entities: { type: 'string', default: '50000' },
    'sweep-interval': { type: 'string', default: '40' },
    connections: { type: 'string', default: '64' },
    peer: { type: 'boolean', default: false }
  }
})
const N = Number(args.entities)
const connections = Number(args.connections)

const agent = new Agent({ keepAlive: true, maxSockets: 1 })

/** A POST of `body` as JSON; its status and parsed reply. */
async function post(
  base: URL,
  path: string,
  body: unknown
): Promise<{ status: number; json: Record<string, unknown> }> {
  const reply = await call(agent, base, 'POST', path, JSON.stringify(body))
  return { status: reply.status, json: reply.status === 0 ? {} : (JSON.parse(reply.text) as Record<string, unknown>) }
}

const counted = async (base: URL, status: 'any' | 'active'): Promise<number> =>
  Number((await post(base, '/v1/search', { type: 'any', status, max_results: 1 })).json.total_found)

/** One-at-a-time searches (one common and one rare word each) while `more()` holds; their latencies, sorted. */
async function searches(base: URL, more: (done: number) => Promise<boolean>): Promise<number[]> {
  const ms: number[] = []
  do {
    for (let i = 0; i < 20; i++) {
      const started = performance.now()
      const { status } = await post(base, '/v1/search', {
        query: `documents number ${Math.floor(Math.random() * N)}`,
        status: 'any',
        max_results: 10
      })
      if (status !== 200) throw new Error(`search answered ${status}`)
      ms.push(performance.now() - started)
    }
  } while (await more(ms.length))
  return ms.sort((a, b) => a - b)
}

function reportLatency(name: string, sorted: number[]): void {
  report(`${name}_searches`, sorted.length, 'one at a time')
  report(`${name}_p50`, percentile(sorted, 0.5).toFixed(1), 'ms')
  report(`${name}_p95`, percentile(sorted, 0.95).toFixed(1), 'ms')
}

async function load(base: URL): Promise<void> {
  const bodies = makeBodies(N)
  const writeAgent = new Agent({ keepAlive: true, maxSockets: connections })
  let next = 0
  let failed = 0
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < bodies.length) {
        const status = await postRegistration(writeAgent, base, bodies[next++]!.body)
        if (status !== 201) failed++
      }
    })
  )
  writeAgent.destroy()
  if (failed > 0) throw new Error(`${failed} registrations failed`)
}

/** Starts a node on `data` whose first sweep finds every entity silent; resolves once search counts them all. */
async function silentNode(data: string): Promise<{ node: NodeProcess; base: URL }> {
  const node = await spawnNode(
    ['--data', data, ...NODE_ARGS, '--inactive-after-seconds', '1', '--sweep-interval-seconds', args['sweep-interval']],
    { startTimeoutMs: 120_000 }
  )
  const base = new URL(node.url)
  while ((await counted(base, 'any')) < N) await sleep(200)
  return { node, base }
}

/** Resolves once the first sweep has begun, with the time and CPU counters read just before it. */
async function sweepBegins(base: URL, pid: number): Promise<{ startedAt: number; cpu: Map<string, number> }> {
  let cpu = await cpuSecondsByThread(pid)
  let startedAt = performance.now()
  for (;;) {
    await sleep(50)
    if ((await counted(base, 'active')) < N) return { startedAt, cpu }
    cpu = await cpuSecondsByThread(pid)
    startedAt = performance.now()
  }
}

/** Polls search's count of `status` entities until `done(count)` holds, or ten minutes have passed. */
async function untilCounted(
  base: URL,
  status: 'any' | 'active',
  done: (count: number) => boolean,
  everyMs = 200
): Promise<void> {
  for (const end = performance.now() + 600_000; performance.now() < end; await sleep(everyMs))
    if (done(await counted(base, status))) return
}

/** CPU seconds since `before`: every thread, and the HTTP (main) thread alone. */
async function cpuSince(
  pid: number,
  before: Map<string, number>
): Promise<{ all: number; main: number; busiest: string }> {
  const after = await cpuSecondsByThread(pid)
  let all = 0
  const spent: [string, number][] = []
  for (const [thread, seconds] of after) {
    const delta = seconds - (before.get(thread) ?? 0)
    all += delta
    spent.push([thread, delta])
  }
  const busiest = spent
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([thread, seconds]) => `${thread} ${seconds.toFixed(2)} s`)
    .join(', ')
  return { all, main: (after.get('main') ?? 0) - (before.get('main') ?? 0), busiest }
}

/** A node meshed with `home` on `data`; resolves once search there counts `count` entities. */
async function peerOf(home: NodeProcess, data: string, count: number): Promise<{ node: NodeProcess; base: URL }> {
  const node = await spawnNode(['--data', data, ...NODE_ARGS, '--bootstrap', await tcpAddressOf(home)], {
    startTimeoutMs: 120_000
  })
  const base = new URL(node.url)
  await untilCounted(base, 'any', n => n >= count)
  return { node, base }
}

async function stop(node: NodeProcess): Promise<void> {
  node.child.kill('SIGTERM')
  await node.exited
}

const NODE_ARGS = ['--http-port', '0', '--no-rate-limit']

async function main(): Promise<void> {
  report('machine_load_before', machineLoad(), '(1, 5, 15-minute load averages)')
  const data = await mkdtemp(join(tmpdir(), 'bench-sweep-'))
  const copy = `${data}-copy`
  const peerData = `${data}-peer`
  const running: NodeProcess[] = []
  try {
    const loading = await spawnNode(['--data', data, ...NODE_ARGS, '--inactive-after-seconds', '1000000'])
    running.push(loading)
    const loadingPeer = args.peer ? await peerOf(loading, peerData, 0) : null
    if (loadingPeer) running.push(loadingPeer.node)
    await load(new URL(loading.url))
    if (loadingPeer) {
      await untilCounted(loadingPeer.base, 'any', n => n >= N)
      await stop(loadingPeer.node)
    }
    await stop(loading)
    await cp(data, copy, { recursive: true })
    report('entities', N, `home entities, silent; the first sweep ${args['sweep-interval']} s after the start`)

    // CPU, on a node doing nothing else.
    const quiet = await silentNode(data)
    running.push(quiet.node)
    const peer = args.peer ? await peerOf(quiet.node, peerData, N) : null
    if (peer) running.push(peer.node)
    const pid = quiet.node.child.pid!
    const { startedAt, cpu: before } = await sweepBegins(quiet.base, pid)
    const peerBefore = peer ? await cpuSecondsByThread(peer.node.child.pid!) : null
    while ((await counted(quiet.base, 'active')) > 0) await sleep(50)
    const sweepSeconds = (performance.now() - startedAt) / 1000
    if (peer) {
      await untilCounted(peer.base, 'active', n => n === 0, 50)
      report('peer_all_inactive_after', ((performance.now() - startedAt) / 1000).toFixed(1), 's after the sweep began')
    }
    // What the sweep left queued (index patches, gossip) runs in the next moments.
    await sleep(2000)
    const cpu = await cpuSince(pid, before)
    report('sweep_time', sweepSeconds.toFixed(1), `s for ${N} transitions`)
    report('cpu_per_transition', ((cpu.all * 1e6) / N).toFixed(0), 'µs (every thread)')
    report('cpu_per_transition_http_thread', ((cpu.main * 1e6) / N).toFixed(0), 'µs')
    report('cpu_busiest_threads', cpu.busiest, '(CPU seconds over the sweep)')
    if (peer && peerBefore) {
      const received = await cpuSince(peer.node.child.pid!, peerBefore)
      report('peer_still_active', await counted(peer.base, 'active'), 'entities its search still counts active')
      const stats = (await (await fetch(`${peer.node.url}/v1/network/status`)).json()) as {
        mesh: { gossip?: { operations_received: Record<string, number> } }
      }
      const outcomes = Object.entries(stats.mesh.gossip?.operations_received ?? {}).filter(([, n]) => n > 0)
      report('peer_gossip_outcomes', outcomes.map(o => o.join(' ')).join(', ') || 'none', 'operations since its start')
      report('peer_cpu_per_received_transition', ((received.all * 1e6) / N).toFixed(0), 'µs (every thread)')
      report('peer_cpu_per_received_transition_http_thread', ((received.main * 1e6) / N).toFixed(0), 'µs')
      await stop(peer.node)
    }
    await stop(quiet.node)

    // Searches, on the same data again.
    const searched = await silentNode(copy)
    running.push(searched.node)
    reportLatency('before_sweep', await searches(searched.base, async done => done < 1000))
    await sweepBegins(searched.base, searched.node.child.pid!)
    reportLatency(
      'during_sweep',
      await searches(searched.base, async () => (await counted(searched.base, 'active')) > 0)
    )
  } finally {
    for (const node of running) if (node.child.exitCode === null) await stop(node)
    agent.destroy()
    await rm(data, { recursive: true, force: true })
    await rm(copy, { recursive: true, force: true })
    await rm(peerData, { recursive: true, force: true })
  }
  report('machine_load_after', machineLoad(), '')
}

await main()
