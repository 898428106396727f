/**
 * Real nodes for the tests (LMDB in a temp dir, HTTP on an ephemeral port) and what tests do with
 * them: JSON over HTTP, the nodes of a test file stopped together, a node's TCP address and its events.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ExecutionContext } from 'ava'
import { type Logger, pino } from 'pino'
import WebSocket from 'ws'
import { defaultConfig } from '../../src/config/load.js'
import type { NodeConfig } from '../../src/config/settings.js'
import type { RegistryEvent } from '../../src/events/bus.js'
import { sign } from '../../src/identity/keys.js'
import { startRegistryNode, type RegistryNode } from '../../src/node.js'
import type { Agent } from './identities.js'

export type ConfigOverrides = {
  [K in keyof NodeConfig]?: NodeConfig[K] extends object ? Partial<NodeConfig[K]> : NodeConfig[K]
}

export interface TestNode {
  node: RegistryNode
  url: string
  dataDir: string
  config: NodeConfig
  /** Stops the node; `keepData` leaves the data dir for a restart. */
  stop(keepData?: boolean): Promise<void>
}

export function testConfig(dataDir: string, overrides: ConfigOverrides = {}): NodeConfig {
  const base = defaultConfig()
  const config = { ...base, data_dir: dataDir, host: 'registry.test' } as NodeConfig
  for (const [key, value] of Object.entries(overrides)) {
    const current = (config as unknown as Record<string, unknown>)[key]
    ;(config as unknown as Record<string, unknown>)[key] =
      current !== null && typeof current === 'object' && !Array.isArray(current)
        ? { ...current, ...(value as object) }
        : value
  }
  // REGISTRY_NODE_HTTP_SERVER=node|uws runs the suite on one server kind (default: auto).
  const server = (process.env.REGISTRY_NODE_HTTP_SERVER ?? config.http.server) as NodeConfig['http']['server']
  config.http = { ...config.http, host: '127.0.0.1', port: 0, server, ...(overrides.http ?? {}) }
  config.rate_limit = { ...config.rate_limit, enabled: false, ...(overrides.rate_limit ?? {}) }
  // The mesh is off unless a test asks for it (p2p: { enabled: true }): importing libp2p costs each test
  // process 1–2 s (docs/decisions.md). When on, it listens on loopback and ephemeral ports.
  config.p2p = { ...config.p2p, enabled: false, host: '127.0.0.1', port: 0, ...(overrides.p2p ?? {}) }
  return config
}

/**
 * Silent, unless TEST_NODE_LOG names a level: then each test process's nodes log to
 * <tmpdir>/registry-node-test-<pid>.log (what a failing test's nodes did, e.g. TEST_NODE_LOG=debug).
 */
function testLogger(): Logger {
  const level = process.env.TEST_NODE_LOG
  if (!level) return pino({ level: 'silent' })
  return pino({ level }, pino.destination(join(tmpdir(), `registry-node-test-${process.pid}.log`)))
}

/** A real node: LMDB in a temp dir, its HTTP front on an ephemeral port, rate limits off unless asked for. */
export async function startTestNode(overrides: ConfigOverrides = {}, dataDir?: string): Promise<TestNode> {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'registry-node-test-')))
  const config = testConfig(dir, overrides)
  const node = await startRegistryNode(config, { logger: testLogger() })
  return {
    node,
    url: node.url,
    dataDir: dir,
    config,
    async stop(keepData = false) {
      await node.stop()
      if (!keepData) await rm(dir, { recursive: true, force: true })
    }
  }
}

/**
 * The nodes one test file starts, all stopped after it: `start` starts a node and keeps it;
 * `stopAll` is the file's `test.after.always`.
 */
export function testNodes(): { start: typeof startTestNode; stopAll: () => Promise<void> } {
  const nodes: TestNode[] = []
  return {
    async start(...args) {
      const node = await startTestNode(...args)
      nodes.push(node)
      return node
    },
    async stopAll() {
      await Promise.all(nodes.map(n => n.stop()))
    }
  }
}

/** A node's libp2p TCP address (mesh on), to dial it or bootstrap from it. */
export function tcpAddress(n: TestNode): string {
  const found = n.node.mesh!.addresses().find(x => !x.includes('/ws'))
  if (!found) throw new Error('no TCP address')
  return found
}

/** The peers a node with the mesh on is connected to, by PeerId. */
export function connectedPeers(n: TestNode): Set<string> {
  return new Set(n.node.mesh!.libp2p.getConnections().map(c => c.remotePeer.toString()))
}

/** Collects a node's events from now on, until test `t` ends (tests run concurrently: filter what you read). */
export function recordEvents(n: TestNode, t: ExecutionContext): { events: RegistryEvent[]; stop: () => void } {
  const events: RegistryEvent[] = []
  const stop = n.node.bus.subscribe(e => {
    events.push(e)
  })
  t.teardown(stop)
  return { events, stop }
}

/** One heartbeat of `a` in the deployed form (timestamp to the second) on its own socket; the node's first reply. */
export function heartbeatOnce(url: string, a: Agent): Promise<Record<string, unknown>> {
  const timestamp = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/entities/${encodeURIComponent(a.agentId)}/ws`)
  return new Promise((resolve, reject) => {
    ws.once('open', () => ws.send(JSON.stringify({ timestamp, signature: sign(a.keyPair, timestamp) })))
    ws.once('message', data => {
      resolve(JSON.parse(data.toString()) as Record<string, unknown>)
      ws.close()
    })
    ws.once('error', reject)
  })
}

/** An ID as a URL path segment. */
export const enc = (id: string): string => encodeURIComponent(id)

export interface HttpResult<T = any> {
  status: number
  body: T
  headers: Headers
}

/** JSON over real HTTP. `raw` sends the string as is (for byte-exact signatures). */
export async function http<T = any>(
  base: string,
  method: string,
  path: string,
  options: { body?: unknown; raw?: string; headers?: Record<string, string> } = {}
): Promise<HttpResult<T>> {
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body))
  const res = await fetch(base + path, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
    ...(body !== undefined ? { body } : {})
  }).catch((err: Error & { cause?: unknown }) => {
    // undici says only "fetch failed": what failed is in its cause (a reset, a refused connection, a timeout).
    throw new Error(`${method} ${path}: ${err.message} (${String(err.cause)})`, { cause: err })
  })
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed as T, headers: res.headers }
}
