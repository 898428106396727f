/**
 * Connection resets of HTTP writes under keep-alive load (an earlier report: ECONNRESET on 11 of
 * 12k registrations). Goal: 64 keep-alive connections × 10k writes, 0 resets.
 *
 *   node --import tsx scripts/bench/keepalive-resets.ts [--http-server uws,node] [--writes 10000]
 *        [--connections 64] [--rate 0] [--scenarios steady,split,idle] [--client plain|hinted|retry]
 *        [--split-writes 1000] [--idle-rounds 2] [--pipeline-depth 2] [--pipeline-writes 1024]
 *        [--node-arg=--FLAG=V …]
 *
 * `--writes` is the total (10k writes spread over the 64 connections, about 156 each), not per
 * connection. A write is a signed registration (POST /v1/entities, scripts/lib/registration-bodies.ts),
 * each one new, so every answer should be 201. For each front in `--http-server`, a fresh node
 * (no p2p, no rate limit) and these scenarios, each on its own keep-alive Agent (maxSockets
 * `--connections`; node:http's LIFO reuse):
 *
 *   steady    `--writes` writes, closed loop (`--connections` in flight) or open loop at `--rate`/s.
 *   split     the body sent in two TCP chunks 5 ms apart (headers + first half, then the rest).
 *   idle      the keep-alive race: a burst of `--connections` writes, the connections left idle
 *             until the server closes idle keep-alive connections (a probe connection, used right
 *             after the burst, tells when: its FIN), and at that very moment a second burst reuses
 *             them, as a client whose loop was busy when the FINs came in would. `--idle-rounds` times.
 *   pipeline  (not in the default set) raw sockets, `--pipeline-depth` requests written back to back
 *             before any answer (HTTP/1.1 pipelining; node:http, browsers, Go and curl never do it).
 *             uWS refuses "async pipelining": a request arriving while an earlier one on the same
 *             connection is still unanswered closes the connection, both unanswered.
 *
 * `--client`: plain = `new Agent({ keepAlive, maxSockets })` as the other benchmarks make it (no idle
 * timeout: node:http then ignores a server's `Keep-Alive: timeout=N` hint); hinted = the same with
 * `timeout: 60000`, so node:http closes an idle connection at min(60 s, hint − 1 s); retry = plain,
 * and a write that failed before any answer on a reused connection is sent once more (node's
 * documented `req.reusedSocket` pattern, RFC 9112 §9.3.1). A reset is a write that got no answer:
 * ECONNRESET ("socket hang up" too), EPIPE. Prints `name: value unit` lines: per front and scenario
 * the statuses and socket errors, `keepalive_resets_<front>: R of N writes`, and over everything
 * `keepalive_resets: R of N writes`. Exits 1 when R > 0.
 */
import { Agent, request } from 'node:http'
import { connect } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { machineLoad, sleep } from '../lib/mesh-bench.js'
import { spawnNode, type NodeProcess } from '../lib/node-process.js'
import { makeBodies, type PostOutcome as Outcome, sendRegistration } from '../lib/registration-bodies.js'
import { report } from '../lib/report.js'

const { values: args } = parseArgs({
  options: {
    'http-server': { type: 'string', default: 'uws,node' },
    writes: { type: 'string', default: '10000' },
    connections: { type: 'string', default: '64' },
    rate: { type: 'string', default: '0' },
    scenarios: { type: 'string', default: 'steady,split,idle' },
    client: { type: 'string', default: 'plain' },
    'split-writes': { type: 'string', default: '1000' },
    'pipeline-depth': { type: 'string', default: '2' },
    'pipeline-writes': { type: 'string', default: '1024' },
    'idle-rounds': { type: 'string', default: '2' },
    'node-arg': { type: 'string', multiple: true, default: [] }
  }
})
const fronts = args['http-server'].split(',').filter(Boolean)
const scenarios = new Set(args.scenarios.split(',').filter(Boolean))
const connections = Number(args.connections)
const writes = Number(args.writes)
const rate = Number(args.rate)
const splitWrites = Number(args['split-writes'])
const depth = Math.max(1, Number(args['pipeline-depth']))
const pipelineWrites = Number(args['pipeline-writes'])
const idleRounds = Number(args['idle-rounds'])
const client = args.client
if (!['plain', 'hinted', 'retry'].includes(client)) throw new Error(`--client plain|hinted|retry, not ${client}`)

/** What one write came to: an HTTP status, or the socket error's code. */
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED'])

class Tally {
  readonly statuses = new Map<number, number>()
  readonly errors = new Map<string, number>()
  resets = 0
  resetsOnReused = 0
  retried = 0
  count = 0
  add(o: Outcome): void {
    this.count++
    if (o.status !== undefined) {
      this.statuses.set(o.status, (this.statuses.get(o.status) ?? 0) + 1)
      return
    }
    this.errors.set(o.error, (this.errors.get(o.error) ?? 0) + 1)
    if (RESET_CODES.has(o.error)) {
      this.resets++
      if (o.reused) this.resetsOnReused++
    }
  }
  merge(t: Tally): void {
    for (const [k, v] of t.statuses) this.statuses.set(k, (this.statuses.get(k) ?? 0) + v)
    for (const [k, v] of t.errors) this.errors.set(k, (this.errors.get(k) ?? 0) + v)
    this.resets += t.resets
    this.resetsOnReused += t.resetsOnReused
    this.retried += t.retried
    this.count += t.count
  }
  print(tag: string): void {
    report(
      `${tag}_statuses`,
      [...this.statuses]
        .sort((a, b) => a[0] - b[0])
        .map(([s, n]) => `${s}×${n}`)
        .join(' ') || 'none',
      ''
    )
    report(
      `${tag}_socket_errors`,
      [...this.errors].map(([e, n]) => `${e}×${n}`).join(' ') || 'none',
      this.retried ? `(${this.retried} writes retried)` : ''
    )
    report(`${tag}_resets`, `${this.resets} of ${this.count}`, `writes (${this.resetsOnReused} on a reused connection)`)
  }
}

const errorCode = (err: NodeJS.ErrnoException): string => err.code ?? err.message

/** `sendRegistration`, retried once when it failed before any answer on a reused connection (`--client retry`). */
async function write(agent: Agent, url: URL, body: string, tally: Tally, split = false): Promise<void> {
  let outcome = await sendRegistration(agent, url, body, split)
  if (client === 'retry' && outcome.error !== undefined && outcome.reused && RESET_CODES.has(outcome.error)) {
    tally.retried++
    outcome = await sendRegistration(agent, url, body, split)
  }
  tally.add(outcome)
}

const newAgent = (): Agent =>
  new Agent({ keepAlive: true, maxSockets: connections, ...(client === 'hinted' ? { timeout: 60_000 } : {}) })

/** `bodies` over `connections` keep-alive connections: closed loop, or open loop at `rate`/s. */
async function load(url: URL, bodies: string[], split: boolean): Promise<Tally> {
  const agent = newAgent()
  const tally = new Tally()
  if (rate > 0) {
    const started = performance.now()
    const inflight: Promise<void>[] = []
    for (let i = 0; i < bodies.length; i++) {
      const wait = started + (i * 1000) / rate - performance.now()
      if (wait > 1) await sleep(wait)
      inflight.push(write(agent, url, bodies[i]!, tally, split))
    }
    await Promise.all(inflight)
  } else {
    let next = 0
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < bodies.length) await write(agent, url, bodies[next++]!, tally, split)
      })
    )
  }
  agent.destroy()
  return tally
}

const requestBytes = (body: string): string =>
  `POST /v1/entities HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`

/**
 * One raw connection that writes `batch.length` requests back to back, then reads the answers
 * (status line and Content-Length bodies); requests left unanswered when it closes count as errors.
 */
function pipelined(url: URL, batch: string[]): Promise<Outcome[]> {
  return new Promise(resolve => {
    const outcomes: Outcome[] = []
    let buffered = Buffer.alloc(0)
    let error: string | undefined
    const socket = connect(Number(url.port), url.hostname)
    const finish = (): void => {
      while (outcomes.length < batch.length)
        outcomes.push({ error: error ?? 'ECONNRESET', reused: outcomes.length > 0 })
      socket.destroy()
      resolve(outcomes)
    }
    socket.on('connect', () => socket.write(batch.map(requestBytes).join('')))
    socket.on('data', chunk => {
      buffered = Buffer.concat([buffered, chunk])
      for (;;) {
        const headEnd = buffered.indexOf('\r\n\r\n')
        if (headEnd === -1) break
        const head = buffered.subarray(0, headEnd).toString('latin1')
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
        if (buffered.length < headEnd + 4 + length) break
        outcomes.push({ status: Number(head.slice(9, 12)), reused: outcomes.length > 0 })
        buffered = buffered.subarray(headEnd + 4 + length)
        if (outcomes.length === batch.length) {
          finish()
          return
        }
      }
    })
    socket.on('error', err => {
      error = errorCode(err)
    })
    socket.on('close', finish)
  })
}

async function pipeline(url: URL, bodies: string[]): Promise<Tally> {
  const tally = new Tally()
  let next = 0
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < bodies.length) {
        const batch = bodies.slice(next, next + depth)
        next += batch.length
        for (const o of await pipelined(url, batch)) tally.add(o)
      }
    })
  )
  return tally
}

/** A raw connection that sends one GET; resolves when the server closes it, idle, with the time from its answer. */
function idleProbe(url: URL): { answered: Promise<number>; closed: Promise<number> } {
  const socket = connect(Number(url.port), url.hostname)
  socket.setNoDelay(true)
  let answeredAt = 0
  let resolveAnswered!: (t: number) => void
  const answered = new Promise<number>(r => {
    resolveAnswered = r
  })
  const closed = new Promise<number>(resolve => {
    socket.on('connect', () => socket.write('GET /v1/info HTTP/1.1\r\nHost: bench\r\n\r\n'))
    socket.once('data', () => {
      answeredAt = performance.now()
      resolveAnswered(answeredAt)
    })
    socket.on('error', () => {})
    // 'end' is the server's FIN: the moment it closes idle keep-alive connections.
    socket.on('end', () => resolve(performance.now() - answeredAt))
    socket.on('close', () => resolve(performance.now() - answeredAt))
  })
  return { answered, closed }
}

/**
 * The keep-alive race, lined up: every round a burst of `connections` writes leaves that many idle
 * connections in the agent; a probe connection used right after tells when the server closes idle
 * ones (its FIN), and the next burst goes out in the same tick, before the agent has seen the FINs
 * of its own connections, as it would from a client whose event loop was busy at that moment.
 */
async function idle(url: URL, bodies: string[]): Promise<{ tally: Tally; idleMs: number[] }> {
  const agent = newAgent()
  const tally = new Tally()
  const idleMs: number[] = []
  let next = 0
  const burst = (): Promise<unknown> =>
    Promise.all(Array.from({ length: connections }, () => write(agent, url, bodies[next++]!, tally)))
  for (let round = 0; round < idleRounds; round++) {
    // Fills the agent with `connections` idle connections (new ones where the last round's were lost).
    await burst()
    const probe = idleProbe(url)
    await probe.answered
    idleMs.push(await Promise.race([probe.closed, sleep(30_000).then(() => NaN)]))
    // Nothing awaited between the probe's FIN and this burst: the agent's connections are still "free".
    await burst()
  }
  agent.destroy()
  return { tally, idleMs }
}

/** The server's Keep-Alive response header (what a client is told about idle connections). */
function keepAliveHeader(url: URL): Promise<string> {
  return new Promise(resolve => {
    const agent = new Agent({ keepAlive: true })
    request({ agent, host: url.hostname, port: url.port, path: '/health' }, res => {
      res.resume()
      res.on('end', () => {
        agent.destroy()
        resolve(`${res.headers['keep-alive'] ?? 'none'} (Connection: ${res.headers.connection ?? 'none'})`)
      })
    })
      .on('error', err => resolve(errorCode(err)))
      .end()
  })
}

report('machine_load_before', machineLoad(), `(${cpus().length} cores)`)
const perFront =
  writes +
  (scenarios.has('split') ? splitWrites : 0) +
  (scenarios.has('pipeline') ? pipelineWrites : 0) +
  (scenarios.has('idle') ? connections * 2 * idleRounds : 0)
const genStart = performance.now()
const all = makeBodies(perFront * fronts.length, 2_000_000).map(b => b.body)
console.error(`generated ${all.length} signed registrations in ${((performance.now() - genStart) / 1000).toFixed(1)} s`)
let offset = 0
const take = (n: number): string[] => {
  const out = all.slice(offset, offset + n)
  offset += n
  return out
}

const overall = new Tally()
for (const front of fronts) {
  const data = await mkdtemp(join(tmpdir(), `bench-keepalive-${front}-`))
  const node: NodeProcess = await spawnNode([
    '--data',
    data,
    '--http-port',
    '0',
    '--no-rate-limit',
    '--no-p2p',
    '--http-server',
    front,
    ...(args['node-arg'] ?? [])
  ])
  const url = new URL(node.url)
  const total = new Tally()
  const tag = (s: string): string => `${front}_${s}`
  report(tag('keep_alive_header'), await keepAliveHeader(url), '')
  if (scenarios.has('steady')) {
    const started = performance.now()
    const t = await load(url, take(writes), false)
    report(
      tag('steady_duration'),
      ((performance.now() - started) / 1000).toFixed(1),
      `s (${rate > 0 ? `open loop at ${rate}/s` : 'closed loop'}, ${connections} keep-alive connections)`
    )
    t.print(tag('steady'))
    total.merge(t)
  }
  if (scenarios.has('split')) {
    const t = await load(url, take(splitWrites), true)
    t.print(tag('split'))
    total.merge(t)
  }
  if (scenarios.has('pipeline')) {
    const t = await pipeline(url, take(pipelineWrites))
    t.print(tag(`pipeline_depth${depth}`))
    total.merge(t)
  }
  if (scenarios.has('idle')) {
    const { tally, idleMs } = await idle(url, take(connections * 2 * idleRounds))
    report(tag('idle_server_closed_after'), idleMs.map(ms => (ms / 1000).toFixed(2)).join(', '), 's idle (the probe)')
    tally.print(tag('idle'))
    total.merge(tally)
  }
  report(`keepalive_resets_${front}`, `${total.resets} of ${total.count}`, `writes (client ${client})`)
  overall.merge(total)
  node.child.kill('SIGTERM')
  await node.exited
  await rm(data, { recursive: true, force: true })
}
report(
  'keepalive_resets',
  `${overall.resets} of ${overall.count}`,
  `writes (${fronts.join(' + ')}; ${[...scenarios].join(', ')}; client ${client})`
)
report('machine_load_after', machineLoad(), '')
process.exitCode = overall.resets > 0 ? 1 : 0
