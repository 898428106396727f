/**
 * G10: entity calls, and one process keeping many entities' heartbeats alive.
 *
 *   npm run bench:entity -- [--rate 1500] [--seconds 20] [--max-seconds 10] [--connections 64]
 *       [--http-server auto|uws|node] [--heartbeat-entities 1000] [--heartbeat-seconds 60] [--skip-heartbeats]
 *
 * Calls. An entity runs in its own process (createEntity with the echo handler, permissive mode,
 * no registry). Every call is a distinct signed AgentMessage (sender_public_key included, so the
 * entity verifies the Ed25519 signature without a lookup), signed just before its phase (they
 * must be within the 60 s skew window and each message_id is accepted once). Phases:
 *   max:  --connections keep-alive connections, each sending its next call when the previous
 *         answered, for --max-seconds: calls/s and the entity's CPU per call;
 *   rate: an open loop at --rate calls/s for --seconds (sends are due on a 1 ms timer whatever the
 *         answers do): send → 200 latency p50/p99/max, errors.
 * Heartbeats. A node in its own process with inactivity after 30 s; --heartbeat-entities entities
 * are registered, then this one process keeps a heartbeat socket per entity open (the runtime's
 * HeartbeatClient, deployed frame form, every 10 s) for --heartbeat-seconds: acks/s, the
 * process's CPU, and how many entities the node counts active at the end (all, if the heartbeats
 * kept them alive past the 30 s window).
 * Load generator and entity (or node) share the 2 cores; their CPU is printed. Prints one
 * `name: value unit` line per figure; never fails on timing.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { pino } from 'pino'
import type { ServerChoice } from '../../src/http/front.js'
import { signAgentMessage } from '../../src/entity/agent-message.js'
import { createEntity } from '../../src/entity/entity.js'
import { HeartbeatClient } from '../../src/entity/heartbeat-client.js'
import { deriveAgentKeyPair } from '../../src/identity/hd.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed } from '../../src/identity/keys.js'
import { signedRegistration } from '../../src/testnet/entity-factory.js'
import { cpuSeconds, spawnNode, TSX_IMPORT } from '../lib/node-process.js'
import { percentile, report } from '../lib/report.js'

const { values: args } = parseArgs({
  options: {
    rate: { type: 'string', default: '1500' },
    seconds: { type: 'string', default: '20' },
    'max-seconds': { type: 'string', default: '10' },
    connections: { type: 'string', default: '64' },
    'http-server': { type: 'string', default: 'auto' },
    'heartbeat-entities': { type: 'string', default: '1000' },
    'heartbeat-seconds': { type: 'string', default: '60' },
    'skip-heartbeats': { type: 'boolean', default: false },
    child: { type: 'boolean', default: false }
  }
})

if (args.child) {
  // The entity under test, in its own process.
  const running = await createEntity({
    key: keyPairFromSeed(Buffer.alloc(32, 41)),
    registry: null,
    card: { name: 'Bench echo' },
    handler: input => input.content,
    authMode: 'permissive',
    httpServer: args['http-server'] as ServerChoice,
    logger: pino({ level: 'warn' })
  }).start()
  process.stdout.write(`entity listening on ${running.url} (server ${running.httpServer})\n`)
} else {
  report(
    'machine',
    `${process.versions.node}, load ${loadavg()
      .map(l => l.toFixed(2))
      .join(' ')} at start`,
    ''
  )
  await calls()
  if (!args['skip-heartbeats']) await heartbeats()
  process.exit(0)
}

async function calls(): Promise<void> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      TSX_IMPORT,
      new URL(import.meta.url).pathname,
      '--child',
      '--http-server',
      args['http-server'] as string
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] }
  )
  process.once('exit', () => child.kill('SIGKILL'))
  const line = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', d => {
      out += d
      const m = /entity listening on (\S+) \(server (\w+)\)/.exec(out)
      if (m) resolve(m[0])
    })
    child.on('exit', code => reject(new Error(`entity exited ${code}: ${out}`)))
  })
  const [, url, server] = /on (\S+) \(server (\w+)\)/.exec(line) as RegExpExecArray
  report('entity_http_server', server as string, '')
  const base = new URL(url as string)
  const agent = new Agent({ keepAlive: true, maxSockets: Number(args.connections) })
  const caller = keyPairFromSeed(Buffer.alloc(32, 42))
  const callerId = deriveId('agent', caller.publicKey)
  const bodies = (n: number): string[] =>
    Array.from({ length: n }, (_, i) =>
      JSON.stringify(signAgentMessage(caller, callerId, { content: `call ${i}: translate this sentence` }))
    )
  const post = (body: string): Promise<number> =>
    new Promise(resolve => {
      const req = request(
        {
          host: base.hostname,
          port: base.port,
          path: '/webhook/sync',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
        },
        res => {
          res.resume()
          res.on('end', () => resolve(res.statusCode ?? 0))
        }
      )
      req.on('error', () => resolve(0))
      req.end(body)
    })
  const pid = child.pid!

  // Warm-up, then the closed loop.
  await Promise.all(bodies(500).map(post))
  const maxSeconds = Number(args['max-seconds'])
  const pool = bodies(8000 * maxSeconds)
  let next = 0
  let ok = 0
  let failed = 0
  const cpu0 = await cpuSeconds(pid)
  const started = performance.now()
  const deadline = started + maxSeconds * 1000
  await Promise.all(
    Array.from({ length: Number(args.connections) }, async () => {
      while (performance.now() < deadline && next < pool.length) {
        const status = await post(pool[next++] as string)
        if (status === 200) ok++
        else failed++
      }
    })
  )
  const elapsed = (performance.now() - started) / 1000
  const cpu = (await cpuSeconds(pid)) - cpu0
  report('max_calls_per_second', (ok / elapsed).toFixed(0), 'calls/s')
  report('max_errors', failed, 'calls')
  report('max_entity_cpu', ((cpu / elapsed) * 100).toFixed(0), '% of one core')
  report('max_entity_cpu_per_call', ((cpu / ok) * 1e6).toFixed(0), 'µs')

  // Open loop at the fixed rate.
  const rate = Number(args.rate)
  const seconds = Number(args.seconds)
  const total = rate * seconds
  const open = bodies(total)
  const latencies: number[] = []
  let errors = 0
  let sent = 0
  const cpu1 = await cpuSeconds(pid)
  const t0 = performance.now()
  await new Promise<void>(resolve => {
    let answered = 0
    const tick = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate))
      while (sent < due) {
        const at = performance.now()
        void post(open[sent++] as string).then(status => {
          if (status === 200) latencies.push(performance.now() - at)
          else errors++
          if (++answered === total) resolve()
        })
      }
      if (sent === total) clearInterval(tick)
    }, 1)
  })
  const openElapsed = (performance.now() - t0) / 1000
  const openCpu = (await cpuSeconds(pid)) - cpu1
  latencies.sort((a, b) => a - b)
  report('rate_offered', rate, 'calls/s')
  report('rate_achieved', (latencies.length / openElapsed).toFixed(0), 'calls/s')
  report('rate_latency_p50', percentile(latencies, 0.5).toFixed(1), 'ms')
  report('rate_latency_p99', percentile(latencies, 0.99).toFixed(1), 'ms')
  report('rate_latency_max', (latencies.at(-1) ?? NaN).toFixed(1), 'ms')
  report('rate_errors', errors, 'calls')
  report('rate_entity_cpu', ((openCpu / openElapsed) * 100).toFixed(0), '% of one core')
  agent.destroy()
  child.kill('SIGTERM')
}

async function heartbeats(): Promise<void> {
  const n = Number(args['heartbeat-entities'])
  const data = await mkdtemp(join(tmpdir(), 'bench-entity-heartbeats-'))
  const node = await spawnNode([
    '--data',
    data,
    '--http-port',
    '0',
    '--no-rate-limit',
    '--no-p2p',
    '--inactive-after-seconds',
    '30',
    '--sweep-interval-seconds',
    '1',
    '--http-server',
    args['http-server'] as string
  ])
  try {
    const developer = keyPairFromSeed(Buffer.alloc(32, 43))
    const keys = Array.from({ length: n }, (_, i) => deriveAgentKeyPair(developer.seed, i))
    for (let i = 0; i < n; i += 50) {
      await Promise.all(
        keys.slice(i, i + 50).map(async (key, j) => {
          const body = signedRegistration(key, {
            name: `Heartbeat ${i + j}`,
            type: 'agent',
            category: 'tools',
            entity_url: `https://h${i + j}.bench.example`
          })
          const res = await fetch(`${node.url}/v1/entities`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body)
          })
          if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${await res.text()}`)
        })
      )
    }
    const clients = keys.map(
      key =>
        new HeartbeatClient({
          registryUrl: node.url,
          entityId: deriveId('agent', key.publicKey),
          keyPair: key,
          form: 'deployed',
          intervalMs: 10_000
        })
    )
    const seconds = Number(args['heartbeat-seconds'])
    const cpu0 = process.cpuUsage()
    const nodeCpu0 = await cpuSeconds(node.child.pid!)
    const t0 = performance.now()
    // Spread the first beats over the interval, as entities started at different times would be.
    for (const [i, c] of clients.entries()) setTimeout(() => c.start(), (i / n) * 10_000)
    await new Promise(resolve => setTimeout(resolve, seconds * 1000))
    const elapsed = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    const nodeCpu = (await cpuSeconds(node.child.pid!)) - nodeCpu0
    const acks = clients.reduce((sum, c) => sum + c.acks, 0)
    const status = (await (await fetch(`${node.url}/v1/network/status`)).json()) as {
      liveness: { home_entities: number; active: number; inactive: number }
    }
    report('heartbeat_entities', n, 'entities')
    report('heartbeat_connected_at_end', clients.filter(c => c.connected).length, 'sockets')
    report('heartbeat_acks_per_second', (acks / elapsed).toFixed(0), 'acks/s')
    report('heartbeat_client_cpu', (((cpu.user + cpu.system) / 1e6 / elapsed) * 100).toFixed(1), '% of one core')
    report('heartbeat_node_cpu', ((nodeCpu / elapsed) * 100).toFixed(1), '% of one core')
    report(
      'heartbeat_active_at_end',
      `${status.liveness.active} of ${status.liveness.home_entities} (after ${seconds} s; inactive after 30 s of silence)`,
      ''
    )
    await Promise.all(clients.map(c => c.stop()))
  } finally {
    node.child.kill('SIGTERM')
    await node.exited
    await rm(data, { recursive: true, force: true })
  }
}
