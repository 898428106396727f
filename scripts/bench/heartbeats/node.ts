/**
 * The node under test in the heartbeat benchmark: started on a fresh data directory (from the
 * sources, another copy of them with --node-src, or under the profiler), loaded with the signed
 * registrations over HTTP, left to become idle, connected (the valid clients' per-entity and
 * multiplexed sockets), with its setup figures; and stopped (SIGTERM, killed after a limit).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import { sleep } from '../../lib/mesh-bench.js'
import { memoryMiB, spawnNode, type NodeProcess } from '../../lib/node-process.js'
import { report } from '../../lib/report.js'
import { waitIdle } from './measure.js'
import type { Settings } from './options.js'
import { fmt } from './report.js'
import type { Signers } from './signing.js'
import { openAll } from './sockets.js'

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

/** A node process, loaded and connected. */
export interface Live {
  node: NodeProcess
  pid: number
  data: string
  prefix: string
  socketOf: WebSocket[]
  validSockets: WebSocket[]
  keepalive: NodeJS.Timeout
}

/** How a node is started and its sockets handled. */
export interface NodeOptions {
  /** Node arguments before `start`: the CLI's entry, with the profiler's flags (--profile). */
  entry: string[]
  /** Below this share of a core over a second, the node is idle. */
  idleShare: number
  /** Before its figures: '' for the first node, node2_ … for the fresh ones. */
  prefix: string
  /** Handles a valid client's socket (its acks, errors and closes). */
  attach: (ws: WebSocket) => void
}

/**
 * Starts a node on a fresh data directory, loads it over HTTP, leaves it to become idle and connects
 * the valid clients.
 */
export async function bringUp(s: Settings, signers: Signers, o: NodeOptions): Promise<Live> {
  const { N, args, entitySockets, muxSockets, connections } = s
  const { ids, bodies } = signers
  const { idleShare, prefix } = o
  const data = await mkdtemp(join(tmpdir(), 'bench-heartbeats-'))
  const node = await spawnNode(['--data', data, ...s.nodeFlags], { entry: o.entry })
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
      o.attach(ws)
      socketOf[e] = ws
    }
  )
  const muxes = await openAll(
    Array.from({ length: muxSockets }, () => `${wsBase}/v1/heartbeat`),
    100,
    ws => o.attach(ws)
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

/**
 * Stops a node: its peak RSS, its valid sockets terminated (`closing` tells the socket handlers
 * meanwhile), SIGTERM, SIGKILL after `stopLimitMs`; whether it stopped by itself.
 */
export async function tearDown(
  l: Live,
  o: { stopLimitMs: number; profileDir: string | null; closing: (on: boolean) => void }
): Promise<boolean> {
  const stopLimitMs = o.stopLimitMs
  clearInterval(l.keepalive)
  report(`${l.prefix}node_rss_peak`, fmt((await memoryMiB(l.pid)).hwm, 0), "MiB (VmHWM over the node's life)")
  o.closing(true)
  for (const ws of l.validSockets) ws.terminate()
  const stopStarted = performance.now()
  l.node.child.kill('SIGTERM')
  const stopped = await Promise.race([l.node.exited.then(() => true), sleep(stopLimitMs).then(() => false)])
  if (!stopped) {
    l.node.child.kill('SIGKILL')
    await l.node.exited
  }
  o.closing(false)
  report(
    `${l.prefix}node_stop_time`,
    stopped ? fmt((performance.now() - stopStarted) / 1000, 1) : `> ${stopLimitMs / 1000} (killed)`,
    's from SIGTERM to exit, with the connections closed'
  )
  if (!stopped && o.profileDir) console.error('the node was killed: no profile was written for it')
  await rm(l.data, { recursive: true, force: true })
  return stopped
}
