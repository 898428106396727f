/**
 * G5: signed heartbeats over WebSocket against a node in its own process: many connections of
 * both kinds, verified heartbeats per second, send-to-ack latency, the node's CPU and memory per
 * connection, then a flood of invalid signatures at 10 × the valid rate while the valid load goes on.
 *
 *   npm run bench:heartbeats -- [--entities 15000] [--rate 5000] [--seconds 30] [--warmup 5]
 *       [--entity-sockets N/7.5] [--mux-sockets ⌈rest/13⌉ | --per-mux 13] [--entity-form deployed|spec]
 *       [--flood a,b|a|b|none] [--flood-seconds 20] [--flood-factor 10] [--flood-a-sockets 10]
 *       [--flood-b-sockets auto] [--flood-batch 10] [--flood-address 127.0.0.2] [--no-reconnect] [--drain 120] [--profile]
 *       [--node-arg=--flag ...] [--node-src DIR] [--workers 2] [--connections 32] [--http-server auto|uws|node]
 *
 * Setup (not measured). A node on a temporary data directory with `--no-rate-limit` (only so the
 * registrations load quickly; heartbeat sockets have their own limits, which stay at the node's
 * defaults: 1 frame/s per entity with bursts of 10, 50 entities per multiplexed connection, 60 s
 * skew; `--node-arg` passes anything else and is printed). N entities are registered over HTTP as
 * spec-form agent registrations with their own keys (signed in worker threads, like
 * search-node.ts), then the node is left to become idle (search indexing and embedding done).
 *
 * Connections. The first `--entity-sockets` entities each get a per-entity socket
 * `/v1/entities/{id}/ws` and send the deployed frame `{timestamp, signature over timestamp}`
 * (`--entity-form spec` sends `{agent_id, timestamp, signature over agent_id + timestamp}`
 * instead, to show what the form costs); the rest are spread round-robin over `--mux-sockets`
 * multiplexed sockets `/v1/heartbeat` (at most 50 each, the node's cap) that send the spec frame,
 * one WebSocket frame per heartbeat. Defaults for 15,000 entities at 5,000/s: 2,000 per-entity
 * sockets + 1,000 multiplexed sockets of 13 entities = 3,000 connections, every entity beating
 * every 3 s.
 *
 * Load. Every heartbeat of a segment (below) is signed before the segment starts (worker threads,
 * while the node is idle), for its planned send time, which is also its timestamp (ms precision, unique per entity and beat),
 * so the client only sends pre-built strings. Each entity has a random phase in the period, so
 * sends are spread evenly; a 1 ms timer sends whatever is due. An ack names the entity and
 * echoes the timestamp, which identifies the beat; latency = ack received − frame sent (client
 * clock). This bounds "receipt to state change" from above: LivenessService.apply() sets
 * last_seen (the state change; for an inactive entity it also commits the status transition)
 * before it returns the ack. With the default 300 s inactivity window every entity stays active,
 * so the state change measured here is the in-memory last-seen update, not a status transition.
 *
 * Segments and phases. The run is split into segments of continuous valid load, each signed for
 * its own timeline and followed by a drain (until every valid heartbeat of the segment has been
 * answered, at most --drain seconds, then until the node is idle), so that a flood's backlog does
 * not spill into what is measured next; a flood segment whose node did not drain gets the next
 * flood a fresh node (registered and connected again, its setup figures prefixed node2_):
 *   baseline: warmup (--warmup s) · steady (--seconds)
 *   flood_a_segment: pre_a (5 s; the flood connections open) · flood_a (--flood-seconds) · recovery_a (15 s)
 *   flood_b_segment: pre_b · flood_b · recovery_b, the same.
 * Beats belong to the phase they were sent in.
 * Per phase: heartbeats sent, acks received per second, latency p50/p95/p99/max over all sent
 * beats (a beat answered with an error frame, e.g. `overloaded`, or not answered at all has no
 * latency: a percentile landing on one prints "not acknowledged"; both are counted, errors by
 * code; an error frame names the entity, not the beat, so it is put on the entity's oldest
 * unanswered beat), the node's CPU
 * (/proc utime+stime of the whole process; 200% = both cores), split by thread (/proc/<pid>/task:
 * the main thread, the busiest other one, which under load is the verification worker, and the
 * rest), CPU per ack, and RSS; the client's CPU, its event-loop delay and how late it sent (so a
 * slow client shows).
 * Headroom: we read "≥ 30% CPU headroom" as node CPU ≤ 70% of the machine (140% of one core);
 * both shares are printed.
 * Memory per connection: the node's VmRSS with no sockets open (idle, after the load) and
 * after all connections are open (idle again), divided by the connections.
 *
 * Flood (in a separate client process, so its CPU is counted apart and its event loop does not
 * delay the valid client): heartbeats for registered entities, with the current timestamp and a
 * well-formed Ed25519 signature by a wrong key (random bytes would often fail the S < L check
 * without a full verify; a real attacker sends a signature that costs one), on multiplexed sockets,
 * `--flood-batch` heartbeats per WebSocket frame (an array, which the node accepts there), from
 * the local address `--flood-address` (127.0.0.2 by default: another host, as an attacker's would
 * be; 127.0.0.1 puts it on the valid clients' address, which shares the node's per-address budget
 * for connections on probation with them). The
 * offered flood rate is `--flood-factor` × `--rate`:
 *   (a) `--flood-a-sockets` connections, each far over its 50 frames/s; a connection the node
 *       closes is reopened at once (an attacker would; `--no-reconnect` to stop) and its share
 *       goes to the others meanwhile, so the offered rate is kept up and each new connection's
 *       burst allowance shows;
 *   (b) enough connections that each stays within its own rate (50 frames/s, under the node's
 *       token bucket), the harder case: every frame has to be verified. These are reopened too
 *       when the node closes them (it closes a connection after 50 rejections in a row).
 * Reported per flood: frames offered, sent (handed to the socket; frames are skipped while a
 * socket has > 1 MiB unsent or is closed), replies by code (signature_invalid, rate_limited, …),
 * frames without a reply (the node drops the rest of an array frame after a rate_limited reply),
 * connections closed by the node by code and reason (1008: rate exceeded, or too many rejected
 * heartbeats in a row), reconnects, and the valid heartbeats' rate and latency during the flood.
 * Finally the node's shutdown time after SIGTERM (it is killed after 30 s).
 *
 * After the run: GET /v1/entities/{id} for 10 entities (5 of each socket kind) must show status
 * active and a last_heartbeat between the send and the ack of the entity's last acknowledged beat.
 *
 * --node-src runs the node from another copy of src/ (e.g. `git archive HEAD src | tar -x -C DIR`,
 * with node_modules linked beside it), to measure a fixed version while src/ is being edited.
 *
 * --profile starts the node with --cpu-prof and prints the main thread's top self-time functions
 * in the steady and flood phases (the signature verification worker is not profiled; the profiler
 * adds its own overhead, so take the other figures from a run without it).
 *
 * One client process (plus the flood process) shares the machine's 2 cores with the node: its
 * CPU is printed, and every figure of the node is measured under that competition.
 * Prints one `name: value unit` line per figure (progress goes to stderr). Always exits 0 once
 * the run completes: benchmarks never fail on timing.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { isMainThread, parentPort, type Worker } from 'node:worker_threads'
import WebSocket from 'ws'
import { loadConfig } from '../../src/config/load.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed, sign, type KeyPair } from '../../src/identity/keys.js'
import { signedRegistration } from '../../src/testnet/entity-factory.js'
import { sleep } from '../lib/mesh-bench.js'
import {
  CLI_FROM_SOURCES,
  cpuSeconds,
  memoryMiB,
  REPO,
  spawnNode,
  TSX_IMPORT,
  type NodeProcess
} from '../lib/node-process.js'
import { seededRandom } from '../lib/random.js'
import { percentile, report } from '../lib/report.js'
import { startWorker } from '../lib/workers.js'

const entitySeed = (i: number): Buffer => createHash('sha256').update(`bench-heartbeats entity ${i}`).digest()

// ---------------------------------------------------------------------------------------------
// Signing worker threads. Each owns a contiguous range of entities and keeps their keys between jobs.

type SignRequest =
  | { type: 'register'; from: number; to: number }
  | { type: 'beats'; wallT0: number; periodMs: number; beats: number; offsets: number[]; spec: boolean[] }
type RegisterReply = { ids: string[]; bodies: string[] }

/** The timestamp of entity e's k-th beat: its planned send time, ms from the run's start. */
const plannedMs = (offset: number, k: number, periodMs: number): number => Math.round(offset + k * periodMs)

if (!isMainThread) {
  let keys: { keyPair: KeyPair; id: string }[] = []
  parentPort!.on('message', (job: SignRequest) => {
    if (job.type === 'register') {
      keys = []
      const bodies: string[] = []
      for (let i = job.from; i < job.to; i++) {
        const keyPair = keyPairFromSeed(entitySeed(i))
        const body = signedRegistration(keyPair, {
          name: `Heartbeat bench agent ${i}`,
          type: 'agent',
          category: 'tools',
          summary: `Benchmark agent ${i} that only sends heartbeats`,
          tags: ['bench', 'heartbeat'],
          entity_url: `https://hb${i}.bench.example`
        })
        const id = deriveId('agent', keyPair.publicKey)
        keys.push({ keyPair, id })
        bodies.push(JSON.stringify(body))
      }
      parentPort!.postMessage({ ids: keys.map(k => k.id), bodies } satisfies RegisterReply)
    } else {
      const frames: string[] = []
      for (let e = 0; e < keys.length; e++) {
        const { keyPair, id } = keys[e]!
        const offset = job.offsets[e]!
        const spec = job.spec[e]!
        for (let k = 0; k < job.beats; k++) {
          const timestamp = new Date(job.wallT0 + plannedMs(offset, k, job.periodMs)).toISOString()
          frames.push(
            spec
              ? `{"agent_id":"${id}","timestamp":"${timestamp}","signature":"${sign(keyPair, id + timestamp)}"}`
              : `{"timestamp":"${timestamp}","signature":"${sign(keyPair, timestamp)}"}`
          )
        }
      }
      parentPort!.postMessage(frames)
    }
  })
}

function ask<T>(worker: Worker, job: SignRequest): Promise<T> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err)
    worker.once('error', onError)
    worker.once('message', (reply: T) => {
      worker.off('error', onError)
      resolve(reply)
    })
    worker.postMessage(job)
  })
}

// ---------------------------------------------------------------------------------------------
// WebSocket helpers

const WS_OPTIONS = { perMessageDeflate: false, skipUTF8Validation: true } as const

function openSocket(url: string, localAddress?: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { ...WS_OPTIONS, ...(localAddress ? { localAddress } : {}) })
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws))
    ws.once('error', reject)
    ws.once('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (d: Buffer) => {
        body += d.toString()
      })
      res.on('end', () => {
        reject(new Error(`upgrade refused for ${url}: ${res.statusCode} ${body.slice(0, 300)}`))
        ws.terminate()
      })
    })
  })
}

/** Opens every URL, `concurrency` handshakes at a time; `onOpen` runs before the next one starts. */
async function openAll(
  urls: readonly string[],
  concurrency: number,
  onOpen: (ws: WebSocket, i: number) => void,
  localAddress?: string
): Promise<WebSocket[]> {
  const sockets = new Array<WebSocket>(urls.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(concurrency, urls.length) }, async () => {
      while (next < urls.length) {
        const i = next++
        const ws = await openSocket(urls[i]!, localAddress)
        onOpen(ws, i)
        sockets[i] = ws
      }
    })
  )
  return sockets
}

// ---------------------------------------------------------------------------------------------
// The flood: a child process (this file with --flood-child) driven over IPC.

interface FloodPlan {
  mode: 'a' | 'b'
  url: string
  sockets: number
  rate: number
  batch: number
  reconnect: boolean
  address: string
}
type FloodCommand =
  | { cmd: 'init'; ids: string[] }
  | ({ cmd: 'prepare' } & FloodPlan)
  | { cmd: 'go' }
  | { cmd: 'stop' }
  | { cmd: 'collect' }
  | { cmd: 'exit' }

interface FloodStats {
  mode: 'a' | 'b'
  sockets: number
  openMs: number
  sendingMs: number
  offered: number
  sent: number
  messages: number
  skippedClosed: number
  skippedBackpressure: number
  replies: Record<string, number>
  closedByNode: Record<string, number>
  reconnects: number
  connectFailures: number
  eventLoopDelayMaxMs: number
}
type FloodReply = { type: 'ready'; openMs: number } | { type: 'stats'; stats: FloodStats }

async function floodChild(): Promise<void> {
  const send = (m: FloodReply) => process.send!(m)
  const wrongKey = keyPairFromSeed(createHash('sha256').update('bench-heartbeats flood key').digest())
  const signatures = Array.from({ length: 64 }, (_, i) => sign(wrongKey, `not the entity's key ${i}`))
  let ids: string[] = []
  let plan: FloodPlan | null = null
  let sockets: (WebSocket | null)[] = []
  let stats: FloodStats | null = null
  let ready = false
  let wantGo = false
  let running = false
  let collecting = false
  let goAt = 0
  let sentMessages = 0
  let stoppedAt = 0
  let pick = 1
  let loop: IntervalHistogram | null = null

  const onMessage = (data: Buffer): void => {
    const s = stats!
    let code: string
    if (data.indexOf('"signature_invalid"') !== -1) code = 'signature_invalid'
    else if (data.indexOf('"rate_limited"') !== -1) code = 'rate_limited'
    else if (data.indexOf('"type":"ack"') !== -1) code = 'ack'
    else {
      try {
        code = String((JSON.parse(data.toString()) as { error?: unknown }).error ?? 'unknown')
      } catch {
        code = 'unparsable'
      }
    }
    s.replies[code] = (s.replies[code] ?? 0) + 1
  }
  const attach = (ws: WebSocket, c: number): void => {
    ws.on('message', onMessage)
    ws.on('error', () => {})
    ws.on('close', (code, reason) => {
      if (sockets[c] !== ws) return
      sockets[c] = null
      if (collecting || !stats) return
      const key = `${code}${reason.length ? ` "${reason.toString()}"` : ''}`
      stats.closedByNode[key] = (stats.closedByNode[key] ?? 0) + 1
      if (plan!.reconnect && running) reopen(c)
    })
  }
  const url = () => `${plan!.url.replace(/^http/, 'ws')}/v1/heartbeat`
  const reopen = (c: number): void => {
    openSocket(url(), plan!.address).then(
      ws => {
        if (collecting || !running) {
          ws.terminate()
          return
        }
        stats!.reconnects++
        attach(ws, c)
        sockets[c] = ws
      },
      () => {
        stats!.connectFailures++
        if (running) setTimeout(() => reopen(c), 100)
      }
    )
  }

  const tick = (): void => {
    if (!running) return
    const p = plan!
    const s = stats!
    const elapsed = performance.now() - goAt
    const perMessageMs = (1000 * p.batch) / p.rate
    const due = Math.floor(elapsed / perMessageMs) + 1
    if (due > sentMessages) {
      const timestamp = new Date().toISOString()
      while (sentMessages < due) {
        let c = sentMessages % p.sockets
        let ws = sockets[c]
        // (a) pushes its whole rate through whichever of its connections are open, and holds what
        // is due while none is (it goes out as soon as one reopens); (b) keeps every connection
        // within its own rate, so a closed connection's share is skipped until it reopens.
        for (let tries = 1; p.mode === 'a' && (!ws || ws.readyState !== WebSocket.OPEN) && tries < p.sockets; tries++)
          ws = sockets[(c = (c + 1) % p.sockets)]
        if (p.mode === 'a' && (!ws || ws.readyState !== WebSocket.OPEN)) break
        sentMessages++
        s.offered += p.batch
        if (!ws || ws.readyState !== WebSocket.OPEN) {
          s.skippedClosed += p.batch
          continue
        }
        if (ws.bufferedAmount > 1024 * 1024) {
          s.skippedBackpressure += p.batch
          continue
        }
        const frames: string[] = []
        for (let f = 0; f < p.batch; f++) {
          pick = (Math.imul(pick, 1103515245) + 12345) >>> 0
          const id = ids[pick % ids.length]!
          frames.push(`{"agent_id":"${id}","timestamp":"${timestamp}","signature":"${signatures[pick & 63]!}"}`)
        }
        ws.send(p.batch === 1 ? frames[0]! : `[${frames.join(',')}]`)
        s.messages++
        s.sent += p.batch
      }
    }
    setTimeout(tick, 1)
  }
  const start = (): void => {
    running = true
    goAt = performance.now()
    sentMessages = 0
    loop = monitorEventLoopDelay({ resolution: 10 })
    loop.enable()
    tick()
  }

  process.on('message', (msg: FloodCommand) => {
    switch (msg.cmd) {
      case 'init':
        ids = msg.ids
        break
      case 'prepare': {
        plan = msg
        collecting = false
        ready = false
        wantGo = false
        stats = {
          mode: msg.mode,
          sockets: msg.sockets,
          openMs: 0,
          sendingMs: 0,
          offered: 0,
          sent: 0,
          messages: 0,
          skippedClosed: 0,
          skippedBackpressure: 0,
          replies: {},
          closedByNode: {},
          reconnects: 0,
          connectFailures: 0,
          eventLoopDelayMaxMs: 0
        }
        const started = performance.now()
        sockets = new Array<WebSocket | null>(msg.sockets).fill(null)
        void openAll(
          Array.from({ length: msg.sockets }, url),
          100,
          (ws, c) => {
            attach(ws, c)
            sockets[c] = ws
          },
          msg.address
        ).then(
          () => {
            stats!.openMs = performance.now() - started
            ready = true
            send({ type: 'ready', openMs: stats!.openMs })
            if (wantGo) start()
          },
          err => {
            process.stderr.write(`flood: ${(err as Error).message}\n`)
            process.exit(1)
          }
        )
        break
      }
      case 'go':
        if (ready) start()
        else wantGo = true
        break
      case 'stop':
        if (running) {
          running = false
          stoppedAt = performance.now()
          stats!.sendingMs = stoppedAt - goAt
          // What was due but held back (no connection open) counts as offered, not sent.
          const due = Math.floor(stats!.sendingMs / ((1000 * plan!.batch) / plan!.rate))
          if (due > sentMessages) stats!.offered += (due - sentMessages) * plan!.batch
        }
        wantGo = false
        if (loop) {
          loop.disable()
          stats!.eventLoopDelayMaxMs = loop.max / 1e6
        }
        break
      case 'collect':
        collecting = true
        for (const ws of sockets) ws?.terminate()
        sockets = []
        send({ type: 'stats', stats: stats! })
        break
      case 'exit':
        process.exit(0)
    }
  })
}

// ---------------------------------------------------------------------------------------------
// CPU profiles (--profile): self time per function, within a time window.

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

/** Top self-time functions of a profile between two CLOCK_MONOTONIC times (µs). */
function topSelf(
  profile: CpuProfile,
  fromUs: number,
  toUs: number,
  n: number
): { total: number; rows: { name: string; share: number }[] } {
  const names = new Map<number, string>()
  for (const node of profile.nodes) {
    const f = node.callFrame
    const where = f.url ? ` (${basename(f.url)})` : ''
    names.set(node.id, `${f.functionName || '(anonymous)'}${where}`)
  }
  const counts = new Map<string, number>()
  let t = profile.startTime
  let total = 0
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0
    if (t < fromUs || t > toUs) continue
    const name = names.get(profile.samples[i]!) ?? '?'
    counts.set(name, (counts.get(name) ?? 0) + 1)
    total++
  }
  const rows = [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, c]) => ({ name, share: c / Math.max(1, total) }))
  return { total, rows }
}

// ---------------------------------------------------------------------------------------------

/** Waits until the process uses less than `share` of a core over a second (at most `limitMs`); the time it took. */
async function waitIdle(pid: number, share: number, limitMs = 120_000): Promise<number> {
  const started = performance.now()
  let previous = await cpuSeconds(pid)
  while (performance.now() - started < limitMs) {
    await sleep(1000)
    const now = await cpuSeconds(pid)
    if (now - previous < share) return performance.now() - started
    previous = now
  }
  return Infinity
}

/** CPU seconds the whole machine has been busy, all cores (/proc/stat). */
async function machineBusy(): Promise<number> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number) as number[]
  return (user! + nice! + system! + irq! + softirq! + (steal ?? 0)) / 100
}

/** CPU seconds per thread of a process (/proc/<pid>/task; the main thread's id is the pid). */
async function threadCpu(pid: number): Promise<Map<number, number>> {
  const out = new Map<number, number>()
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => null)
    if (!stat) continue
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    out.set(Number(tid), (Number(fields[11]) + Number(fields[12])) / 100)
  }
  return out
}

function post(agent: Agent, url: URL, path: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise(resolve => {
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
      },
      res => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }))
      }
    )
    req.on('error', err => resolve({ status: 0, text: String(err) }))
    req.end(body)
  })
}

interface Phase {
  name: string
  start: number
  end: number
  flood?: 'a' | 'b'
  role: 'load' | 'prep' | 'flood' | 'recovery'
}
interface Sample {
  perf: number
  hrUs: number
  nodeCpu: number
  threads: Map<number, number>
  clientCpu: number
  floodCpu: number
  machine: number
  nodeRss: number
}
/** The valid client's event loop in one phase, and how late it sent. */
interface PhaseLoop {
  delay: IntervalHistogram
  lateMax: number
  late10: number
}

/** What one phase measured, for the summary and the profile windows. */
interface PhaseResult {
  phase: Phase
  from: Sample
  to: Sample
  latencies: number[]
  ackRate: number
  nodeCpu: number
  flood?: FloodStats
}

/**
 * One stretch of continuous valid load: its beats signed for its own timeline, sent, acknowledged,
 * then drained (waiting for the last acks) before the next segment starts.
 */
interface Segment {
  phases: Phase[]
  durationMs: number
  beats: number
  wallT0: number
  T0: number
  wallAtT0: number
  sendTimes: Float64Array
  ackTimes: Float64Array
  /** When an error frame answered the beat (it names the entity, not the beat: see markError). */
  errorTimes: Float64Array
}

const fmt = (x: number, digits = 1): string =>
  Number.isFinite(x) ? x.toFixed(digits) : x === Infinity ? 'never' : 'n/a'
const list = (counts: Record<string, number>): string =>
  Object.entries(counts)
    .map(([c, k]) => `${c}: ${k}`)
    .join(', ')

function parseOptions() {
  return parseArgs({
    options: {
      entities: { type: 'string', default: '15000' },
      rate: { type: 'string', default: '5000' },
      seconds: { type: 'string', default: '30' },
      warmup: { type: 'string', default: '5' },
      'entity-sockets': { type: 'string' },
      'mux-sockets': { type: 'string' },
      'per-mux': { type: 'string' },
      'entity-form': { type: 'string', default: 'deployed' },
      flood: { type: 'string', default: 'a,b' },
      'flood-seconds': { type: 'string', default: '20' },
      'flood-factor': { type: 'string', default: '10' },
      'flood-a-sockets': { type: 'string', default: '10' },
      'flood-b-sockets': { type: 'string' },
      'flood-batch': { type: 'string', default: '10' },
      'flood-address': { type: 'string', default: '127.0.0.2' },
      'no-reconnect': { type: 'boolean', default: false },
      drain: { type: 'string', default: '120' },
      connections: { type: 'string', default: '32' },
      workers: { type: 'string', default: '2' },
      profile: { type: 'boolean', default: false },
      'node-src': { type: 'string' },
      'node-arg': { type: 'string', multiple: true, default: [] },
      'http-server': { type: 'string', default: 'auto' }
    }
  }).values
}
type Args = ReturnType<typeof parseOptions>

// ---------------------------------------------------------------------------------------------
// Setup (not measured): the settings, the signed registrations, the nodes and their connections.

/** The options and what follows from them: the load, the connections, the floods, the node's flags and limits. */
interface Settings {
  args: Args
  N: number
  rate: number
  periodMs: number
  entitySockets: number
  /** Entities on the multiplexed sockets. */
  rest: number
  muxSockets: number
  perMux: number
  entitySpec: boolean
  floods: ('a' | 'b')[]
  floodSeconds: number
  floodRate: number
  floodBatch: number
  drainMs: number
  connections: number
  nodeFlags: string[]
  config: Awaited<ReturnType<typeof loadConfig>>
  /** Frames per second the node allows a multiplexed connection. */
  connectionRate: number
  floodSockets: { a: number; b: number }
}

async function settingsOf(args: Args): Promise<Settings> {
  const N = Number(args.entities)
  const rate = Number(args.rate)
  const periodMs = (N / rate) * 1000
  const entitySockets = Math.min(N, Number(args['entity-sockets'] ?? Math.round(N / 7.5)))
  const rest = N - entitySockets
  const perMuxWanted = args['per-mux'] === undefined ? undefined : Number(args['per-mux'])
  const muxSockets =
    rest === 0
      ? 0
      : perMuxWanted !== undefined
        ? Math.ceil(rest / perMuxWanted)
        : Number(args['mux-sockets'] ?? Math.ceil(rest / 13))
  const perMux = muxSockets === 0 ? 0 : Math.ceil(rest / muxSockets)
  const floodRate = Number(args['flood-factor']) * rate

  const nodeFlags = [
    '--http-port',
    '0',
    '--no-rate-limit',
    '--http-server',
    args['http-server'],
    ...(args['node-arg'] ?? [])
  ]
  const config = await loadConfig({ argv: nodeFlags, env: {} })
  const L = config.liveness
  const connectionRate = L.frames_per_second_per_entity * L.max_entities_per_connection
  if (perMux > L.max_entities_per_connection)
    throw new Error(
      `${perMux} entities per multiplexed socket exceeds the node's cap of ${L.max_entities_per_connection}`
    )
  if (1000 / periodMs > L.frames_per_second_per_entity)
    console.error(
      `warning: each entity beats ${(1000 / periodMs).toFixed(2)}/s, over the node's ${L.frames_per_second_per_entity}/s per entity`
    )
  return {
    args,
    N,
    rate,
    periodMs,
    entitySockets,
    rest,
    muxSockets,
    perMux,
    entitySpec: args['entity-form'] === 'spec',
    floods: (['a', 'b'] as const).filter(f =>
      args.flood
        .split(',')
        .map(s => s.trim())
        .includes(f)
    ),
    floodSeconds: Number(args['flood-seconds']),
    floodRate,
    floodBatch: Number(args['flood-batch']),
    drainMs: Number(args.drain) * 1000,
    connections: entitySockets + muxSockets,
    nodeFlags,
    config,
    connectionRate,
    floodSockets: {
      a: Number(args['flood-a-sockets']),
      b: Number(args['flood-b-sockets'] ?? Math.ceil(floodRate / connectionRate))
    }
  }
}

/** The machine before the run, and the run's settings. */
async function reportSettings(s: Settings): Promise<void> {
  const busyBefore = await machineBusy()
  await sleep(3000)
  report(
    'machine_cpu_before',
    fmt((((await machineBusy()) - busyBefore) / 3) * 100, 0),
    '% of one core used by all processes over the 3 s before the benchmark (of 200%)'
  )
  const load = loadavg()
  report(
    'machine_load_before',
    `${fmt(load[0]!, 2)} ${fmt(load[1]!, 2)} ${fmt(load[2]!, 2)}`,
    '(1, 5, 15-minute load averages; 2 cores)'
  )
  report('entities', s.N, '')
  report('offered_rate', s.rate, `heartbeats/s (every entity every ${fmt(s.periodMs / 1000, 2)} s)`)
  report(
    'entity_sockets',
    s.entitySockets,
    `per-entity /v1/entities/{id}/ws, ${s.entitySpec ? 'spec' : 'deployed'} frame form`
  )
  report(
    'mux_sockets',
    s.muxSockets,
    `multiplexed /v1/heartbeat, spec frame form, ${s.perMux === 0 ? 0 : Math.floor(s.rest / s.muxSockets)}–${s.perMux} entities each`
  )
  report('connections', s.connections, 'valid WebSocket connections')
  const L = s.config.liveness
  report(
    'node_liveness_settings',
    `skew ${L.max_clock_skew_seconds} s, ${L.frames_per_second_per_entity} frame/s per entity (burst ×10), ${L.max_entities_per_connection} entities per mux connection, inactive after ${L.inactive_after_seconds} s; verify workers ${s.config.verify.workers}, inline below ${s.config.verify.inline_max_rate}/s`,
    ''
  )
  report('node_flags', s.nodeFlags.join(' '), '')
  report('node_sources', s.args['node-src'] ?? `${REPO}src`, '')
}

/** The signing worker threads, each with its range of entities, whose keys it keeps to sign their beats. */
interface Signers {
  workers: Worker[]
  ranges: (readonly [number, number])[]
  ids: string[]
  bodies: string[]
}

/** Keys and signed registrations, in worker threads (kept for signing the beats). */
async function signRegistrations(s: Settings): Promise<Signers> {
  const W = Math.max(1, Number(s.args.workers))
  const workers = Array.from({ length: W }, () => startWorker(import.meta.url))
  const ranges = Array.from(
    { length: W },
    (_, w) => [Math.floor((w * s.N) / W), Math.floor(((w + 1) * s.N) / W)] as const
  )
  const t = performance.now()
  const registered = await Promise.all(
    workers.map((worker, w) => ask<RegisterReply>(worker, { type: 'register', from: ranges[w]![0], to: ranges[w]![1] }))
  )
  console.error(`signed ${s.N} registrations in ${fmt((performance.now() - t) / 1000)} s`)
  return { workers, ranges, ids: registered.flatMap(r => r.ids), bodies: registered.flatMap(r => r.bodies) }
}

/** A node process, loaded and connected. */
interface Live {
  node: NodeProcess
  pid: number
  data: string
  prefix: string
  socketOf: WebSocket[]
  validSockets: WebSocket[]
  keepalive: NodeJS.Timeout
}

/**
 * The run: the node in service, the valid clients' sockets and what they received, the flood
 * process, and what each phase measured.
 */
class HeartbeatRun {
  private readonly idIndex: Map<string, number>
  /** Entity order[r] beats at r/N of the period, then every period. */
  private readonly order: number[]
  private readonly offsets: Float64Array
  /** The profiler's sampling costs a few % of a core on its own. */
  private readonly idleShare: number
  /** A node with a backlog may take minutes to stop; it is killed after this (no profile then). */
  private readonly stopLimitMs: number
  private readonly entry: string[]

  private seg: Segment | null = null
  private currentPhase: string | null = null
  private readonly errorsByPhase = new Map<string, Record<string, number>>()
  private strayFrames = 0
  private readonly validCloses: Record<string, number> = {}
  private closing = false
  private nodeCount = 0
  private live!: Live

  private flood: ChildProcess | null = null
  private readonly floodStats: Partial<Record<'a' | 'b', FloodStats>> = {}
  private floodWaiter: (() => void) | null = null

  readonly results = new Map<string, PhaseResult>()
  private sendFailures = 0
  /** Entities whose state is checked after the run, with their last acknowledged beat (wall clock). */
  private readonly checked: number[]
  private readonly lastBeat = new Map<number, { sentWall: number; ackWall: number }>()

  constructor(
    private readonly s: Settings,
    private readonly signers: Signers,
    readonly profileDir: string | null
  ) {
    const { N, periodMs, entitySockets, rest, args } = s
    const cli = args['node-src'] ? ['--import', TSX_IMPORT, join(args['node-src'], 'cli.ts')] : CLI_FROM_SOURCES
    this.entry = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir, ...cli] : cli
    this.idleShare = args.profile ? 0.15 : 0.05
    this.stopLimitMs = args.profile ? 600_000 : 30_000
    this.idIndex = new Map(signers.ids.map((id, i) => [id, i]))
    const random = seededRandom(5)
    const order = Array.from({ length: N }, (_, i) => i)
    for (let i = N - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1))
      ;[order[i], order[j]] = [order[j]!, order[i]!]
    }
    this.order = order
    this.offsets = new Float64Array(N)
    order.forEach((e, r) => {
      this.offsets[e] = Math.round((r * periodMs) / N)
    })
    this.checked = [
      ...Array.from({ length: 5 }, (_, i) => Math.floor((i * entitySockets) / 5)),
      ...Array.from({ length: 5 }, (_, i) => entitySockets + Math.floor((i * rest) / 5))
    ].filter(e => e < N)
  }

  /** The first node, then the flood process. */
  async start(): Promise<void> {
    this.live = await this.bringUp()
    this.flood =
      this.s.floods.length > 0
        ? fork(fileURLToPath(import.meta.url), ['--flood-child'], { execArgv: ['--import', TSX_IMPORT] })
        : null
    this.flood?.on('message', (m: FloodReply) => {
      if (m.type === 'stats') {
        this.floodStats[m.stats.mode] = m.stats
        this.floodWaiter?.()
      }
    })
    this.tell({ cmd: 'init', ids: this.signers.ids })
  }

  private tell(m: FloodCommand): void {
    this.flood?.send(m)
  }

  // -- The valid clients' sockets

  private readonly onValid = (data: Buffer): void => {
    const now = performance.now()
    const m = JSON.parse(data.toString()) as { type: string; agent_id?: string; timestamp?: string; error?: string }
    const seg = this.seg
    if (m.type === 'ack') {
      const e = this.idIndex.get(m.agent_id!)
      if (e !== undefined && seg) {
        const k = Math.round((Date.parse(m.timestamp!) - seg.wallT0 - this.offsets[e]!) / this.s.periodMs)
        const index = e * seg.beats + k
        if (k >= 0 && k < seg.beats && seg.sendTimes[index]! > 0 && seg.ackTimes[index] === 0) {
          seg.ackTimes[index] = now
          // An error frame was put on this beat, but it answered another one.
          const misplaced = seg.errorTimes[index]!
          if (misplaced > 0) {
            seg.errorTimes[index] = 0
            markError(seg, e, misplaced)
          }
          return
        }
      }
      this.strayFrames++
    } else {
      const key = this.currentPhase ?? 'between_segments'
      const bucket = this.errorsByPhase.get(key) ?? {}
      this.errorsByPhase.set(key, bucket)
      bucket[m.error ?? 'unknown'] = (bucket[m.error ?? 'unknown'] ?? 0) + 1
      const e = m.agent_id === undefined ? undefined : this.idIndex.get(m.agent_id)
      if (e !== undefined && seg) markError(seg, e, now)
    }
  }

  private attachValid(ws: WebSocket): void {
    ws.on('message', this.onValid)
    ws.on('error', () => {})
    ws.on('close', (code, reason) => {
      if (this.closing) return
      const key = `${code}${reason.length ? ` "${reason.toString()}"` : ''}`
      this.validCloses[key] = (this.validCloses[key] ?? 0) + 1
    })
  }

  // -- Nodes. Each is started on a fresh data directory, loaded over HTTP, left to become idle and
  // connected. A flood segment that leaves its node with a backlog it cannot drain within --drain
  // gets the next flood a fresh node, so one flood's backlog is not measured as the next one's.

  private async bringUp(): Promise<Live> {
    const { N, args, entitySockets, muxSockets, connections } = this.s
    const { ids, bodies } = this.signers
    const idleShare = this.idleShare
    const prefix = this.nodeCount++ === 0 ? '' : `node${this.nodeCount}_`
    const data = await mkdtemp(join(tmpdir(), 'bench-heartbeats-'))
    const node = await spawnNode(['--data', data, ...this.s.nodeFlags], { entry: this.entry })
    const pid = node.child.pid!
    if (prefix === '') {
      // Sources older than the runtime field (--node-src) report no server kind.
      const { runtime } = (await (await fetch(`${node.url}/v1/info`)).json()) as {
        runtime?: { node: string; http_server: string }
      }
      report('http_server', runtime?.http_server ?? 'unknown', '')
      report('node_version', runtime?.node ?? process.versions.node, '')
    }
    const base = new URL(node.url)
    const wsBase = node.url.replace(/^http/, 'ws')
    const agent = new Agent({ keepAlive: true, maxSockets: Number(args.connections) })
    let t = performance.now()
    let next = 0
    let failed = 0
    await Promise.all(
      Array.from({ length: Number(args.connections) }, async () => {
        while (next < N) {
          const i = next++
          const reply = await post(agent, base, '/v1/entities', bodies[i]!)
          if (reply.status !== 201) {
            if (failed++ < 3) console.error(`registration ${i} failed: ${reply.status} ${reply.text.slice(0, 300)}`)
          }
        }
      })
    )
    agent.destroy()
    const loadS = (performance.now() - t) / 1000
    report(`${prefix}registration_time`, fmt(loadS), `s (${fmt(N / loadS, 0)} registrations/s, setup only)`)
    if (failed > 0) throw new Error(`${failed} registrations failed`)
    const idleAfterLoad = await waitIdle(pid, idleShare)
    report(
      `${prefix}node_idle_after_registrations`,
      idleAfterLoad === Infinity ? 'not within 120' : fmt(idleAfterLoad / 1000),
      `s (below ${idleShare * 100}% of a core: indexing and embedding done)`
    )

    // Connections. Entity e < entitySockets has its own socket; the rest go round-robin to the mux sockets.
    const rssNoSockets = await memoryMiB(pid)
    const socketOf = new Array<WebSocket>(N)
    t = performance.now()
    await openAll(
      ids.slice(0, entitySockets).map(id => `${wsBase}/v1/entities/${encodeURIComponent(id)}/ws`),
      100,
      (ws, e) => {
        this.attachValid(ws)
        socketOf[e] = ws
      }
    )
    const muxes = await openAll(
      Array.from({ length: muxSockets }, () => `${wsBase}/v1/heartbeat`),
      100,
      ws => this.attachValid(ws)
    )
    for (let e = entitySockets; e < N; e++) socketOf[e] = muxes[(e - entitySockets) % muxSockets]!
    const validSockets = [...socketOf.slice(0, entitySockets), ...muxes]
    report(
      `${prefix}connect_time`,
      fmt((performance.now() - t) / 1000),
      `s (${connections} connections, 100 handshakes at a time)`
    )
    await waitIdle(pid, idleShare)
    const rssSockets = await memoryMiB(pid)
    report(`${prefix}node_rss_no_sockets`, fmt(rssNoSockets.rss, 0), 'MiB (idle, after the registrations)')
    report(`${prefix}node_rss_connected`, fmt(rssSockets.rss, 0), 'MiB (idle, every connection open)')
    report(
      `${prefix}node_memory_per_connection`,
      fmt(((rssSockets.rss - rssNoSockets.rss) * 1024) / connections, 1),
      'KiB (RSS difference / connections, both idle; RSS includes garbage not yet collected, so this is rough)'
    )
    // Idle sockets must not reach the node's idle timeout while the client signs or waits.
    const keepalive = setInterval(() => {
      for (const ws of validSockets) if (ws.readyState === WebSocket.OPEN) ws.ping()
    }, 20_000)
    return { node, pid, data, prefix, socketOf, validSockets, keepalive }
  }

  private async tearDown(l: Live): Promise<boolean> {
    const stopLimitMs = this.stopLimitMs
    clearInterval(l.keepalive)
    report(`${l.prefix}node_rss_peak`, fmt((await memoryMiB(l.pid)).hwm, 0), "MiB (VmHWM over the node's life)")
    this.closing = true
    for (const ws of l.validSockets) ws.terminate()
    const stopStarted = performance.now()
    l.node.child.kill('SIGTERM')
    const stopped = await Promise.race([l.node.exited.then(() => true), sleep(stopLimitMs).then(() => false)])
    if (!stopped) {
      l.node.child.kill('SIGKILL')
      await l.node.exited
    }
    this.closing = false
    report(
      `${l.prefix}node_stop_time`,
      stopped ? fmt((performance.now() - stopStarted) / 1000, 1) : `> ${stopLimitMs / 1000} (killed)`,
      's from SIGTERM to exit, with the connections closed'
    )
    if (!stopped && this.profileDir) console.error('the node was killed: no profile was written for it')
    await rm(l.data, { recursive: true, force: true })
    return stopped
  }

  /** A fresh node for the next segment (the last one did not drain). */
  async replaceNode(): Promise<void> {
    await this.tearDown(this.live)
    this.lastBeat.clear()
    this.live = await this.bringUp()
  }

  private async sample(): Promise<Sample> {
    const perf = performance.now()
    const hrUs = Number(process.hrtime.bigint() / 1000n)
    const cpu = process.cpuUsage()
    const pid = this.live.pid
    const flood = this.flood
    const [nodeCpu, threads, floodCpu, machine, mem] = await Promise.all([
      cpuSeconds(pid),
      threadCpu(pid),
      flood?.pid ? cpuSeconds(flood.pid).catch(() => 0) : 0,
      machineBusy(),
      memoryMiB(pid)
    ])
    return {
      perf,
      hrUs,
      nodeCpu,
      threads,
      clientCpu: (cpu.user + cpu.system) / 1e6,
      floodCpu,
      machine,
      nodeRss: mem.rss
    }
  }

  // -- Segments

  /** Signs, runs, drains and reports one segment; whether it drained. */
  async runSegment(label: string, phaseList: [string, number, Phase['role'], ('a' | 'b')?][]): Promise<boolean> {
    const { phases, durationMs: D } = phasesOf(phaseList)
    const K = Math.ceil(D / this.s.periodMs) + 1
    const { frames, wallT0, startLag } = await this.signBeats(label, K)
    const T0 = performance.now()
    const current: Segment = {
      phases,
      durationMs: D,
      beats: K,
      wallT0,
      T0,
      wallAtT0: Date.now(),
      sendTimes: new Float64Array(this.s.N * K),
      ackTimes: new Float64Array(this.s.N * K),
      errorTimes: new Float64Array(this.s.N * K)
    }
    this.seg = current
    const { samples, loops } = await this.send(current, frames)
    const { drainS, stillUnacked, idleAfter } = await this.drain(current)
    samples[phases.length] ??= await this.sample()

    report(
      `${label}_timestamp_age_at_send`,
      fmt(Math.max(0, startLag), 0),
      'ms (how far the signed timestamps trail the send times)'
    )
    for (let i = 0; i < phases.length; i++)
      this.reportPhase(current, phases[i]!, samples[i]!, samples[i + 1]!, loops[i]!, drainS)
    report(
      `${label}_drain`,
      fmt(drainS, 1),
      `s until every valid heartbeat of the segment was answered (${stillUnacked} still unanswered; the limit is --drain ${this.s.args.drain} s)`
    )
    report(
      `${label}_node_idle_after`,
      idleAfter === Infinity ? 'not within 60' : fmt(idleAfter / 1000, 1),
      's more until the node was idle'
    )
    this.keepLastBeats(current)
    this.seg = null
    this.currentPhase = null
    return stillUnacked === 0
  }

  /** Signs every beat of the segment for its planned time; a calibration sets the start far enough ahead. */
  private async signBeats(label: string, K: number): Promise<{ frames: string[]; wallT0: number; startLag: number }> {
    const { N, periodMs, entitySockets, entitySpec } = this.s
    const { workers, ranges, ids } = this.signers
    const calibration = performance.now()
    const probe = keyPairFromSeed(entitySeed(0))
    for (let i = 0; i < 300; i++) sign(probe, `${ids[0]}${new Date().toISOString()}`)
    const perSign = (performance.now() - calibration) / 300
    const wallT0 = Date.now() + (N * K * perSign * 1.6) / workers.length + 3000
    const t = performance.now()
    const parts = await Promise.all(
      workers.map((worker, w) => {
        const [from, to] = ranges[w]!
        return ask<string[]>(worker, {
          type: 'beats',
          wallT0,
          periodMs,
          beats: K,
          offsets: Array.from(this.offsets.subarray(from, to)),
          spec: Array.from({ length: to - from }, (_, j) => from + j >= entitySockets || entitySpec)
        })
      })
    )
    const frames = parts.flat()
    console.error(`${label}: signed ${frames.length} heartbeats in ${fmt((performance.now() - t) / 1000)} s`)
    const wait = wallT0 - Date.now()
    if (wait > 0) await sleep(wait)
    const startLag = Date.now() - wallT0
    if (startLag > 20_000) throw new Error(`signing overran its estimate by ${startLag} ms; timestamps would be stale`)
    return { frames, wallT0, startLag }
  }

  /**
   * Sends every beat at its planned time (a 1 ms timer sends whatever is due) and moves through the
   * phases: a sample of the node at each boundary, and the flood process told to prepare, go, stop
   * and report.
   */
  private async send(current: Segment, frames: readonly string[]): Promise<{ samples: Sample[]; loops: PhaseLoop[] }> {
    const { N, periodMs, floodRate, floodBatch, floodSockets, args } = this.s
    const { phases, durationMs: D, beats: K, T0 } = current
    const { socketOf, node } = this.live
    const samples: Sample[] = []
    const loops: PhaseLoop[] = phases.map(() => ({
      delay: monitorEventLoopDelay({ resolution: 5 }),
      lateMax: 0,
      late10: 0
    }))
    let phaseIndex = -1
    const boundary = (i: number): void => {
      const ending = phases[i - 1]
      const starting = phases[i]
      if (ending?.role === 'flood') this.tell({ cmd: 'stop' })
      if (ending?.role === 'recovery') this.tell({ cmd: 'collect' })
      if (starting?.role === 'prep')
        this.tell({
          cmd: 'prepare',
          mode: starting.flood!,
          url: node.url,
          rate: floodRate,
          batch: floodBatch,
          reconnect: !args['no-reconnect'],
          sockets: floodSockets[starting.flood!],
          address: args['flood-address']
        })
      if (starting?.role === 'flood') this.tell({ cmd: 'go' })
      if (ending) loops[i - 1]!.delay.disable()
      if (starting) loops[i]!.delay.enable()
      phaseIndex = i
      this.currentPhase = starting?.name ?? null
      void this.sample().then(x => {
        samples[i] = x
      })
    }
    phases.forEach((p, i) => {
      setTimeout(() => boundary(i), Math.max(0, T0 + p.start - performance.now()))
    })
    const ended = new Promise<void>(resolve =>
      setTimeout(() => {
        boundary(phases.length)
        resolve()
      }, D)
    )
    const total = N * K
    let j = 0
    await new Promise<void>(resolve => {
      const tick = (): void => {
        const elapsed = performance.now() - T0
        while (j < total) {
          const k = Math.floor(j / N)
          const e = this.order[j % N]!
          const due = plannedMs(this.offsets[e]!, k, periodMs)
          if (due > elapsed) break
          if (due >= D) {
            j = total
            break
          }
          const ws = socketOf[e]!
          const index = e * K + k
          if (ws.readyState === WebSocket.OPEN) {
            ws.send(frames[index]!)
            const sent = performance.now()
            current.sendTimes[index] = sent
            const l = loops[phaseIndex]
            const late = sent - (T0 + due)
            if (l) {
              if (late > l.lateMax) l.lateMax = late
              if (late > 10) l.late10++
            }
          } else this.sendFailures++
          j++
        }
        if (j >= total) resolve()
        else setTimeout(tick, 1)
      }
      tick()
    })
    await ended
    return { samples, loops }
  }

  /** The last answers (and the node's backlog) before anything else is measured; then the flood's figures. */
  private async drain(current: Segment): Promise<{ drainS: number; stillUnacked: number; idleAfter: number }> {
    const total = this.s.N * current.beats
    const drainStarted = performance.now()
    const unacked = (): number => {
      let n = 0
      for (let i = 0; i < total; i++)
        if (current.sendTimes[i]! > 0 && current.ackTimes[i] === 0 && current.errorTimes[i] === 0) n++
      return n
    }
    while (unacked() > 0 && performance.now() - drainStarted < this.s.drainMs) await sleep(250)
    const drainS = (performance.now() - drainStarted) / 1000
    const stillUnacked = unacked()
    const idleAfter = await waitIdle(this.live.pid, this.idleShare, 60_000)
    if (this.flood && current.phases.some(p => p.role === 'flood')) {
      const f = current.phases.find(p => p.role === 'flood')!.flood!
      if (!this.floodStats[f]) {
        this.tell({ cmd: 'stop' })
        this.tell({ cmd: 'collect' })
        await new Promise<void>(resolve => {
          this.floodWaiter = resolve
          setTimeout(resolve, 10_000)
        })
      }
    }
    return { drainS, stillUnacked, idleAfter }
  }

  /** One phase's figures, from the beats sent in it and the samples at its two ends. */
  private reportPhase(current: Segment, p: Phase, a: Sample, b: Sample, l: PhaseLoop, drainS: number): void {
    const { rate, floodBatch, floodRate, connectionRate, args } = this.s
    const { durationMs: D, T0 } = current
    const pid = this.live.pid
    const total = this.s.N * current.beats
    const from = T0 + p.start
    const to = T0 + p.end
    const latencies: number[] = []
    let sent = 0
    let lost = 0
    let rejected = 0
    let acksIn = 0
    for (let index = 0; index < total; index++) {
      const sentAt = current.sendTimes[index]!
      const ack = current.ackTimes[index]!
      if (ack >= from && ack < to) acksIn++
      if (sentAt === 0 || sentAt < from || sentAt >= to) continue
      sent++
      if (ack > 0) latencies.push(ack - sentAt)
      else {
        latencies.push(Infinity)
        if (current.errorTimes[index]! > 0) rejected++
        else lost++
      }
    }
    latencies.sort((x, y) => x - y)
    const seconds = (p.end - p.start) / 1000
    const wall = (b.perf - a.perf) / 1000
    const nodeCpu = ((b.nodeCpu - a.nodeCpu) / wall) * 100
    // Beats answered with an error, or not at all, have no latency: a percentile that lands on them says so.
    const q = (x: number) => {
      const v = percentile(latencies, x)
      return v === Infinity ? 'not acknowledged (rejected, or no answer)' : fmt(v, 1)
    }
    const n = p.name
    report(`${n}_sent`, sent, `valid heartbeats in ${fmt(seconds, 0)} s`)
    report(`${n}_ack_rate`, fmt(acksIn / seconds, 0), 'acks/s received in the phase')
    report(`${n}_latency_p50`, q(0.5), 'ms (send → ack)')
    report(`${n}_latency_p95`, q(0.95), 'ms')
    report(`${n}_latency_p99`, q(0.99), 'ms')
    report(`${n}_latency_max`, q(1), 'ms')
    report(`${n}_rejected`, rejected, 'valid heartbeats answered with an error frame')
    report(
      `${n}_unanswered`,
      lost,
      `valid heartbeats without any answer ${fmt((T0 + D - to) / 1000 + drainS, 0)} s after they were sent`
    )
    const errs = this.errorsByPhase.get(n)
    report(`${n}_valid_errors`, errs ? list(errs) : 0, '(error frames received on the valid sockets during the phase)')
    report(
      `${n}_node_cpu`,
      fmt(nodeCpu, 0),
      `% of one core = ${fmt(nodeCpu / 2, 0)}% of the machine (headroom ${fmt(100 - nodeCpu / 2, 0)}% of the machine, ${fmt(100 - nodeCpu, 0)}% of one core)`
    )
    const perThread = [...b.threads].map(([tid, sec]) => ({
      tid,
      share: ((sec - (a.threads.get(tid) ?? 0)) / wall) * 100
    }))
    const mainThread = perThread.find(x => x.tid === pid)?.share ?? NaN
    const rest = perThread.filter(x => x.tid !== pid).sort((x, y) => y.share - x.share)
    report(
      `${n}_node_threads`,
      `main ${fmt(mainThread, 0)}%, busiest other ${fmt(rest[0]?.share ?? 0, 0)}%, next ${fmt(rest[1]?.share ?? 0, 0)}%, rest ${fmt(
        rest.slice(2).reduce((x, y) => x + y.share, 0),
        0
      )}%`,
      'of one core (under load the busiest other thread is the signature verification worker)'
    )
    if (acksIn > 0)
      report(
        `${n}_node_cpu_per_ack`,
        fmt(((b.nodeCpu - a.nodeCpu) * 1e6) / acksIn, 0),
        "µs (all the node's CPU in the phase / acks)"
      )
    report(
      `${n}_client_cpu`,
      fmt(((b.clientCpu - a.clientCpu) / wall) * 100, 0),
      '% of one core (the valid load client, all its threads)'
    )
    if (p.role !== 'load')
      report(
        `${n}_flood_client_cpu`,
        fmt(((b.floodCpu - a.floodCpu) / wall) * 100, 0),
        '% of one core (the flood process)'
      )
    const machine = ((b.machine - a.machine) / wall) * 100
    const others = machine - nodeCpu - ((b.clientCpu - a.clientCpu + b.floodCpu - a.floodCpu) / wall) * 100
    report(
      `${n}_machine_cpu`,
      fmt(machine, 0),
      `% of one core, all processes (of 200%); other processes than the node and this benchmark's: ${fmt(Math.max(0, others), 0)}%`
    )
    report(`${n}_node_rss_end`, fmt(b.nodeRss, 0), 'MiB')
    report(
      `${n}_client_event_loop_delay_p99`,
      fmt(l.delay.percentile(99) / 1e6, 1),
      `ms (max ${fmt(l.delay.max / 1e6, 1)} ms; sends > 10 ms late: ${l.late10}, the latest ${fmt(l.lateMax, 1)} ms)`
    )
    const f = p.role === 'flood' ? this.floodStats[p.flood!] : undefined
    if (f) {
      const sendingS = f.sendingMs / 1000
      report(
        `${n}_flood_sockets`,
        f.sockets,
        `multiplexed connections (opened in ${fmt(f.openMs / 1000, 1)} s), ${floodBatch} heartbeats per frame, ${fmt(floodRate / f.sockets, f.mode === 'a' ? 0 : 1)}/s each (the node allows ${connectionRate}/s per connection, bursts of ${connectionRate * 10}), from ${args['flood-address']}`
      )
      report(
        `${n}_flood_offered`,
        f.offered,
        `invalid heartbeats (${fmt(f.offered / sendingS, 0)}/s over ${fmt(sendingS, 1)} s)`
      )
      report(
        `${n}_flood_sent`,
        f.sent,
        `invalid heartbeats (${fmt(f.sent / sendingS, 0)}/s = ${fmt(f.sent / sendingS / rate, 1)} × the valid rate)`
      )
      report(
        `${n}_flood_skipped`,
        f.skippedClosed + f.skippedBackpressure,
        `invalid heartbeats not sent (${f.skippedClosed} on a closed socket, ${f.skippedBackpressure} on one with > 1 MiB unsent)`
      )
      const replies = Object.values(f.replies).reduce((x, y) => x + y, 0)
      report(
        `${n}_flood_rejected_signature_invalid`,
        f.replies.signature_invalid ?? 0,
        'replies (verified and refused)'
      )
      report(
        `${n}_flood_rejected_rate_limited`,
        f.replies.rate_limited ?? 0,
        'replies (one per frame over the limit; the rest of that array gets no reply)'
      )
      const others = Object.entries(f.replies).filter(([c]) => c !== 'signature_invalid' && c !== 'rate_limited')
      report(`${n}_flood_other_replies`, others.length ? others.map(([c, k]) => `${c}: ${k}`).join(', ') : 0, '')
      report(
        `${n}_flood_no_reply`,
        f.sent - replies,
        'invalid heartbeats without a reply (dropped after rate_limited, or their connection was closed)'
      )
      report(
        `${n}_flood_closed_by_node`,
        Object.values(f.closedByNode).reduce((x, y) => x + y, 0),
        `connections (${list(f.closedByNode) || 'none'})`
      )
      report(`${n}_flood_reconnects`, f.reconnects, `(connect failures ${f.connectFailures})`)
      report(`${n}_flood_client_event_loop_delay_max`, fmt(f.eventLoopDelayMaxMs, 1), 'ms')
    }
    this.results.set(n, {
      phase: p,
      from: a,
      to: b,
      latencies,
      ackRate: acksIn / seconds,
      nodeCpu,
      ...(f ? { flood: f } : {})
    })
  }

  /** Each checked entity's last acknowledged beat, for the state check after the run. */
  private keepLastBeats(current: Segment): void {
    const { beats: K, T0 } = current
    for (const e of this.checked) {
      for (let k = K - 1; k >= 0; k--) {
        const ack = current.ackTimes[e * K + k]!
        if (ack === 0) continue
        const toWall = (perf: number) => current.wallAtT0 + (perf - T0)
        this.lastBeat.set(e, { sentWall: toWall(current.sendTimes[e * K + k]!), ackWall: toWall(ack) })
        break
      }
    }
  }

  // -- After the run

  /** What the valid clients saw outside the phases. */
  reportClient(): void {
    report('valid_send_skipped', this.sendFailures, 'heartbeats (socket not open)')
    report('valid_socket_closes', Object.keys(this.validCloses).length ? list(this.validCloses) : 0, '')
    report(
      'stray_frames',
      this.strayFrames,
      '(acks that matched no beat of the current segment: late acks of a segment that did not drain)'
    )
    const between = this.errorsByPhase.get('between_segments')
    if (between) report('valid_errors_between_segments', list(between), '')
  }

  /**
   * State changes: the last node's view of a few entities after the run (no beats in flight, unless
   * the last segment did not drain).
   */
  async checkState(): Promise<void> {
    const { ids } = this.signers
    const checked = this.checked
    let active = 0
    let matches = 0
    const mismatches: string[] = []
    for (const e of checked) {
      const res = await fetch(`${this.live.node.url}/v1/entities/${encodeURIComponent(ids[e]!)}`)
      const body = (await res.json()) as { status?: string; last_heartbeat?: string | null }
      if (body.status === 'active') active++
      const last = this.lastBeat.get(e)
      if (!last || !body.last_heartbeat) {
        mismatches.push(`${ids[e]}: no acknowledged beat or no last_heartbeat`)
        continue
      }
      const seen = Date.parse(body.last_heartbeat)
      if (seen >= last.sentWall - 20 && seen <= last.ackWall + 20) matches++
      else
        mismatches.push(
          `${ids[e]}: last_heartbeat ${body.last_heartbeat}, its last acknowledged beat was sent ${new Date(last.sentWall).toISOString()} and acknowledged ${new Date(last.ackWall).toISOString()}`
        )
    }
    report('state_check_active', `${active}/${checked.length}`, 'entities with status active (GET /v1/entities/{id})')
    report(
      'state_check_last_heartbeat',
      `${matches}/${checked.length}`,
      'entities whose last_heartbeat lies between the send and the ack of their last acknowledged beat (±20 ms)'
    )
    for (const m of mismatches) console.error(`  state check: ${m}`)
  }

  /** Shutdown: the flood process, then the node. */
  async stop(): Promise<void> {
    this.tell({ cmd: 'exit' })
    await this.tearDown(this.live)
  }
}

/** A phase list's phases (a phase of 0 s is left out) and the segment's duration. */
function phasesOf(phaseList: [string, number, Phase['role'], ('a' | 'b')?][]): { phases: Phase[]; durationMs: number } {
  const phases: Phase[] = []
  let s = 0
  for (const [name, seconds, role, f] of phaseList) {
    if (seconds > 0) phases.push({ name, start: s, end: s + seconds * 1000, role, ...(f ? { flood: f } : {}) })
    s += seconds * 1000
  }
  return { phases, durationMs: s }
}

/** An error frame names the entity only: it is put on the entity's oldest beat still unanswered. */
function markError(s: Segment, e: number, at: number): void {
  for (let k = 0; k < s.beats; k++) {
    const index = e * s.beats + k
    if (s.sendTimes[index]! > 0 && s.ackTimes[index] === 0 && s.errorTimes[index] === 0) {
      s.errorTimes[index] = at
      return
    }
  }
}

/** Goal G5, as measured here. */
function reportGoals(s: Settings, results: ReadonlyMap<string, PhaseResult>): void {
  const { rate, connections } = s
  const steady = results.get('steady')!
  // Kept up: acks within 0.5% of the offered rate and nothing left behind (the p99 shows a backlog).
  const keptUp = steady.ackRate >= 0.995 * rate && !steady.latencies.includes(Infinity)
  report(
    'g5_rate',
    `${fmt(steady.ackRate, 0)} of ${rate} offered`,
    `acknowledged (verified) heartbeats/s in the steady phase over ${connections} connections (${connections >= 3000 ? '≥' : '<'} 3000); ${keptUp ? 'kept up' : 'fell behind'}, goal ≥ 5000/s ${keptUp && rate >= 5000 ? 'met' : 'not met'}`
  )
  const p99 = percentile(steady.latencies, 0.99)
  report('g5_steady_p99', `${fmt(p99)} ${p99 <= 100 ? '≤' : '>'} 100`, 'ms (send → ack)')
  report(
    'g5_headroom',
    `${fmt(100 - steady.nodeCpu / 2, 0)} ${100 - steady.nodeCpu / 2 >= 30 ? '≥' : '<'} 30`,
    '% of the machine left by the node in the steady phase'
  )
  for (const f of s.floods) {
    const r = results.get(`flood_${f}`)
    if (!r) continue
    const v = percentile(r.latencies, 0.99)
    const st = r.flood
    report(
      `g5_flood_${f}_valid_p99`,
      `${v === Infinity ? 'not acknowledged' : fmt(v)} ${v <= 250 ? '≤' : '>'} 250`,
      `ms (flood sent at ${st ? fmt(st.sent / (st.sendingMs / 1000) / rate, 1) : '?'} × the valid rate; valid acks ${fmt(r.ackRate, 0)}/s)`
    )
  }
}

/** The main thread's top self-time functions in the steady and flood phases (--profile). */
async function reportProfiles(profileDir: string, results: ReadonlyMap<string, PhaseResult>): Promise<void> {
  for (const file of (await readdir(profileDir)).filter(f => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(await readFile(join(profileDir, file), 'utf8')) as CpuProfile
    if (!profile.nodes.some(n => n.callFrame.functionName === 'onHeartbeatMessage')) continue
    for (const [name, r] of results) {
      if (name !== 'steady' && !name.startsWith('flood_')) continue
      const top = topSelf(profile, r.from.hrUs, r.to.hrUs, 25)
      if (top.total === 0) continue
      report(`profile_${name}_samples`, top.total, `main-thread samples (${file})`)
      top.rows.forEach((row, i) => {
        report(`profile_${name}_top${i + 1}`, fmt(row.share * 100, 1), `% self ${row.name}`)
      })
    }
  }
  console.error(`profiles kept in ${profileDir}`)
}

async function main(): Promise<void> {
  const args = parseOptions()
  const benchStarted = performance.now()
  const s = await settingsOf(args)
  await reportSettings(s)
  const signers = await signRegistrations(s)
  const profileDir = args.profile ? await mkdtemp(join(tmpdir(), 'bench-heartbeats-prof-')) : null
  const run = new HeartbeatRun(s, signers, profileDir)
  await run.start()

  const warmup = Number(args.warmup)
  let drained = await run.runSegment('baseline', [
    ['warmup', warmup, 'load'],
    ['steady', Number(args.seconds), 'load']
  ])
  for (const f of s.floods) {
    if (!drained) {
      report(`flood_${f}_on_a_fresh_node`, 'yes', "(the previous segment's node had not drained its backlog)")
      await run.replaceNode()
    }
    drained = await run.runSegment(`flood_${f}_segment`, [
      [`pre_${f}`, Math.max(5, warmup), 'prep', f],
      [`flood_${f}`, s.floodSeconds, 'flood', f],
      [`recovery_${f}`, 15, 'recovery', f]
    ])
  }
  for (const worker of signers.workers) void worker.terminate()

  run.reportClient()
  await run.checkState()
  reportGoals(s, run.results)
  await run.stop()
  if (profileDir) await reportProfiles(profileDir, run.results)
  report('bench_time', fmt((performance.now() - benchStarted) / 1000), 's')
}

if (isMainThread) {
  if (process.argv.includes('--flood-child')) await floodChild()
  else {
    await main()
    process.exit(0)
  }
}
