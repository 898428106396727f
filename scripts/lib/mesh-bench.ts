/**
 * Helpers of the mesh benchmarks (propagation.ts, convergence.ts): node processes with the mesh on
 * loopback, keep-alive HTTP, the activity stream of each node, /proc samples (CPU, RSS), the
 * machine's load and other benchmarks running beside this one, and percentiles.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import {
  CLI_BUILT,
  CLI_FROM_SOURCES,
  cpuSeconds,
  REPO,
  spawnNode,
  TSX_IMPORT,
  type NodeProcess
} from './node-process.js'
import { parseSignature } from '../../src/identity/encoding.js'
import { generateKeyPair, sign, verifyRaw } from '../../src/identity/keys.js'
import { percentile, report } from './report.js'

/** Progress, on stderr (stdout holds only the figures). */
export const log = (text: string): void => {
  process.stderr.write(`${text}\n`)
}

/** The one `sleep` of the scripts: every benchmark imports it from here. */
export const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms))

/**
 * Wall-clock time in epoch milliseconds, comparable with the nodes' ISO timestamps (Date.now(), not
 * performance.timeOrigin + performance.now(), which is about 1 ms off the wall clock here).
 */
export const nowMs = (): number => Date.now()

// ---------------------------------------------------------------------------------------------
// The machine

export function machineLoad(): string {
  return loadavg()
    .map(l => l.toFixed(2))
    .join(' ')
}

/** Other processes running a benchmark script (anything with scripts/bench/ in its command line), not this one or its children. */
export async function otherBenchmarks(): Promise<string[]> {
  const mine = new Set([process.pid, process.ppid])
  const found: string[] = []
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || mine.has(pid)) continue
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').then(
      t => t.split('\0').join(' ').trim(),
      () => ''
    )
    if (/scripts\/bench\//.test(cmd) && !cmd.includes('propagation.ts') && !cmd.includes('convergence.ts'))
      found.push(`${pid} ${cmd.slice(0, 160)}`)
    else if (/scripts\/bench\/(propagation|convergence)\.ts/.test(cmd)) {
      // Another run of a mesh benchmark: only counts when it is not our own parent (npm run).
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid !== process.pid) found.push(`${pid} ${cmd.slice(0, 160)}`)
    }
  }
  return found
}

/**
 * Reports the machine's load and the other benchmarks running now, then watches for others while
 * this one runs (every `everyMs`); `after()` reports the load at the end and every benchmark seen
 * meanwhile, so a run disturbed by another says so.
 */
export async function reportMachine(everyMs = 5000): Promise<{ after: () => void }> {
  report('machine_load_before', machineLoad(), '(1, 5, 15-minute load averages; 2 cores)')
  reportMachineSpeed()
  const others = await otherBenchmarks()
  report('other_benchmarks_running', others.length, others.length ? `(${others.join(' | ')})` : '')
  const found = new Map<string, string>()
  const tick = async (): Promise<void> => {
    for (const line of await otherBenchmarks()) found.set(line.slice(0, line.indexOf(' ')), line)
  }
  void tick()
  const timer = setInterval(() => {
    void tick()
  }, everyMs)
  timer.unref()
  return {
    after: () => {
      clearInterval(timer)
      report('machine_load_after', machineLoad(), '')
      const during = [...found.values()]
      report(
        'other_benchmarks_during_run',
        during.length,
        during.length ? `(${during.join(' | ')}): the figures above shared the machine with them` : ''
      )
    }
  }
}

/** The kernel's CPU pressure (share of time some runnable task waited for a CPU), `avg60` in percent; NaN without PSI. */
export async function cpuPressure(): Promise<number> {
  const text = await readFile('/proc/pressure/cpu', 'utf8').catch(() => '')
  return Number(/^some avg10=[\d.]+ avg60=([\d.]+)/m.exec(text)?.[1] ?? NaN)
}

/** Resident memory of a process in MiB (VmRSS), NaN once it is gone. */
export async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) / 1024
}

export async function cpuOf(pid: number): Promise<number> {
  return cpuSeconds(pid).catch(() => NaN)
}

// ---------------------------------------------------------------------------------------------
// HTTP

export interface Reply {
  status: number
  text: string
  ms: number
  at: number
  /** The first attempt failed on a reused keep-alive socket the server had closed, and the request was sent again. */
  retried: boolean
}

/**
 * One HTTP request over a keep-alive agent. A request whose connection was reset (ECONNRESET,
 * EPIPE, "socket hang up": mostly a keep-alive socket the server closed while idle, a race every
 * keep-alive client has) is sent once more; `retried` says so, and callers of non-idempotent
 * requests judge the reply (a registration answered 409 entity_exists on the retry was accepted
 * by the first attempt).
 */
export async function call(
  agent: Agent,
  base: URL,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
  timeoutMs = 60_000
): Promise<Reply> {
  const started = performance.now()
  const first = await attempt(agent, base, method, path, body, headers, timeoutMs)
  if (first.status !== 0 || !/ECONNRESET|EPIPE|socket hang up/.test(first.text))
    return { status: first.status, text: first.text, ms: performance.now() - started, at: nowMs(), retried: false }
  const second = await attempt(agent, base, method, path, body, headers, timeoutMs)
  return { status: second.status, text: second.text, ms: performance.now() - started, at: nowMs(), retried: true }
}

function attempt(
  agent: Agent,
  base: URL,
  method: string,
  path: string,
  body: string | undefined,
  headers: Record<string, string>,
  timeoutMs: number
): Promise<{ status: number; text: string }> {
  return new Promise(resolve => {
    const h: Record<string, string | number> = {
      ...headers,
      ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    }
    let settled = false
    const req = request(
      { agent, host: base.hostname, port: base.port, path, method, headers: h, timeout: timeoutMs },
      res => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => done(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')))
        res.on('error', err => done(0, String(err)))
      }
    )
    const done = (status: number, text: string): void => {
      if (!settled) {
        settled = true
        resolve({ status, text })
      }
    }
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', err => done(0, String(err)))
    req.end(body)
  })
}

export async function getJson<T = any>(agent: Agent, base: URL, path: string): Promise<T> {
  const reply = await call(agent, base, 'GET', path, undefined, {}, 30_000)
  if (reply.status !== 200) throw new Error(`GET ${path} on ${base.host}: ${reply.status} ${reply.text.slice(0, 300)}`)
  return JSON.parse(reply.text) as T
}

// ---------------------------------------------------------------------------------------------
// Node processes

export interface MeshNode {
  index: number
  name: string
  data: string
  proc: NodeProcess
  base: URL
  peerId: string
  /** The TCP multiaddr, ending in /p2p/<peer id>. */
  tcp: string
}

export interface MeshNodeOptions {
  index: number
  name: string
  /** A data directory to reuse (a restart); otherwise a fresh temporary one. */
  data?: string
  bootstrap: readonly string[]
  /** Flags passed to every node (after the defaults, so they override). */
  extra?: readonly string[]
  /** Another copy of src/ to run the node from (its cli.ts through tsx). */
  nodeSrc?: string
  logLevel?: string
  /** Node runtime flags before the entry point, e.g. --cpu-prof --cpu-prof-dir=DIR. */
  runtimeArgs?: readonly string[]
}

/**
 * Node arguments that run the CLI of `nodeSrc` (a src/ directory, or a built cli.js), else the built
 * one when BENCH_NODE_BUILT is set (as `npm start` runs it: no tsx compiling modules in every node),
 * else the working tree's src/.
 */
export function cliEntry(nodeSrc?: string): string[] {
  if (nodeSrc?.endsWith('.js')) return [nodeSrc]
  if (nodeSrc) return ['--import', TSX_IMPORT, join(nodeSrc, 'cli.ts')]
  return process.env.BENCH_NODE_BUILT ? CLI_BUILT : CLI_FROM_SOURCES
}

/**
 * Prints `machine_ed25519_verify`: microseconds per Ed25519 verification in a loop (the node's own
 * backend), a reference for the machine's speed, which varies over time on a shared host, so that
 * figures taken apart can be compared.
 */
export function reportMachineSpeed(rounds = 2000): void {
  const keys = generateKeyPair()
  const message = Buffer.from('x'.repeat(600))
  const signature = parseSignature(sign(keys, message))!
  for (let i = 0; i < 200; i++) verifyRaw(keys.publicKey, message, signature)
  const started = performance.now()
  for (let i = 0; i < rounds; i++) verifyRaw(keys.publicKey, message, signature)
  const microseconds = ((performance.now() - started) * 1000) / rounds
  report(
    'machine_ed25519_verify',
    microseconds.toFixed(1),
    "µs (in a loop: the machine's speed, to compare runs taken apart)"
  )
}

/** Starts a node with the mesh on 127.0.0.1 (ephemeral TCP and WebSocket ports) and an ephemeral HTTP port. */
export async function startMeshNode(o: MeshNodeOptions): Promise<MeshNode> {
  const data = o.data ?? (await mkdtemp(join(tmpdir(), `bench-mesh-${o.name}-`)))
  const args = [
    '--data',
    data,
    '--http-port',
    '0',
    '--p2p',
    '--p2p-host',
    '127.0.0.1',
    '--p2p-port',
    '0',
    '--name',
    o.name,
    '--host',
    `${o.name}.bench.test`,
    '--no-rate-limit',
    '--log-level',
    o.logLevel ?? 'warn',
    ...o.bootstrap.flatMap(b => ['--bootstrap', b]),
    ...(o.extra ?? [])
  ]
  // Twenty nodes starting on two shared cores (or under a profiler) can take longer than the default 30 s.
  const proc = await spawnNode(args, {
    entry: [...(o.runtimeArgs ?? []), ...cliEntry(o.nodeSrc)],
    startTimeoutMs: 120_000
  })
  const base = new URL(proc.url)
  const agent = new Agent({ keepAlive: false })
  const status = await getJson<{ peer_id: string; addresses: string[] }>(agent, base, '/v1/network/status')
  const tcp = status.addresses.find(a => !a.includes('/ws'))
  if (!tcp) throw new Error(`${o.name} reports no TCP address: ${status.addresses.join(' ')}`)
  return { index: o.index, name: o.name, data, proc, base, peerId: status.peer_id, tcp }
}

/** SIGTERM, then SIGKILL after `graceMs`. */
export async function stopNode(node: MeshNode, graceMs = 15_000): Promise<number | null> {
  if (node.proc.child.exitCode !== null || node.proc.child.signalCode !== null) return node.proc.child.exitCode
  node.proc.child.kill('SIGTERM')
  const timer = setTimeout(() => node.proc.child.kill('SIGKILL'), graceMs)
  const code = await node.proc.exited
  clearTimeout(timer)
  return code
}

export async function removeData(node: MeshNode): Promise<void> {
  await rm(node.data, { recursive: true, force: true })
}

/** Connected peers of a node, by PeerId. */
export async function connectedPeers(agent: Agent, node: MeshNode): Promise<string[]> {
  const list = await getJson<{ peers: { peer_id: string; connected: boolean }[] }>(
    agent,
    node.base,
    '/v1/network/peers'
  )
  return list.peers.filter(p => p.connected).map(p => p.peer_id)
}

/** Degrees and whether the graph of connections among `nodes` is connected (edges as either side sees them). */
export async function meshShape(
  agent: Agent,
  nodes: readonly MeshNode[]
): Promise<{ degrees: number[]; edges: number; connected: boolean; components: number }> {
  const byPeer = new Map(nodes.map(n => [n.peerId, n.index]))
  const adjacency = new Map<number, Set<number>>(nodes.map(n => [n.index, new Set<number>()]))
  for (const n of nodes) {
    for (const peer of await connectedPeers(agent, n)) {
      const other = byPeer.get(peer)
      if (other === undefined) continue
      adjacency.get(n.index)!.add(other)
      adjacency.get(other)!.add(n.index)
    }
  }
  const degrees = nodes.map(n => adjacency.get(n.index)!.size)
  const seen = new Set<number>()
  let components = 0
  for (const n of nodes) {
    if (seen.has(n.index)) continue
    components++
    const stack = [n.index]
    seen.add(n.index)
    while (stack.length > 0) {
      for (const next of adjacency.get(stack.pop()!)!)
        if (!seen.has(next)) {
          seen.add(next)
          stack.push(next)
        }
    }
  }
  return { degrees, edges: degrees.reduce((a, b) => a + b, 0) / 2, connected: components === 1, components }
}

// ---------------------------------------------------------------------------------------------
// Activity stream

export interface ActivityEvent {
  type: string
  /** The node's event time, epoch ms (from its ISO timestamp: millisecond resolution). */
  at: number
  /** When this process received the frame (nowMs()). */
  receivedAt: number
  data: Record<string, unknown>
}

/** A subscriber of one node's `/v1/ws/activity`; calls `onEvent` for every event frame. */
export class ActivityTap {
  readonly opened: Promise<void>
  dropped = 0
  frames = 0
  closed = false
  private readonly ws: WebSocket

  constructor(
    readonly node: MeshNode,
    onEvent: (node: MeshNode, event: ActivityEvent) => void
  ) {
    this.ws = new WebSocket(`ws://${node.base.host}/v1/ws/activity`)
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('message', () => resolve()) // the hello
      this.ws.once('error', reject)
    })
    this.ws.on('message', (raw: Buffer) => {
      const receivedAt = nowMs()
      this.frames++
      let frame: { type: string; timestamp: string; data?: Record<string, unknown> }
      try {
        frame = JSON.parse(raw.toString('utf8'))
      } catch {
        return
      }
      if (frame.type === 'events_dropped') {
        this.dropped += Number((frame.data as { count?: number } | undefined)?.count ?? 1)
        return
      }
      if (frame.type === 'hello') return
      onEvent(node, { type: frame.type, at: Date.parse(frame.timestamp), receivedAt, data: frame.data ?? {} })
    })
    this.ws.on('close', () => {
      this.closed = true
    })
    this.ws.on('error', () => {
      /* reported as closed */
    })
  }

  close(): void {
    this.ws.close()
  }
}

// ---------------------------------------------------------------------------------------------
// Figures

export interface Summary {
  n: number
  p50: number
  p90: number
  p99: number
  max: number
  min: number
  mean: number
}

export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b)
  const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length)
  return {
    n: sorted.length,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted.at(-1) ?? NaN,
    min: sorted[0] ?? NaN,
    mean
  }
}

export const ms1 = (x: number): string => (Number.isFinite(x) ? x.toFixed(1) : String(x))

/** Repo root, for printing which sources ran. */
export { REPO }
