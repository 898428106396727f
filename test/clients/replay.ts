/**
 * Replays a deployed client's recorded session (test/fixtures/clients/, made by
 * scripts/clients/record.ts and fixture.ts) against a fresh node, in order, and checks each
 * answer the way that client reads it: the status, and every field the client's code reads
 * (`reads`, from the client's source) equal to what the node answered when the session was
 * recorded, or of the same JSON type where the value depends on the clock. Cards the node fetched
 * are served again, byte for byte, at the entity URLs they came from (loopback addresses of
 * 127.0.0.0/8 chosen per client when recording).
 */
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { ExecutionContext } from 'ava'
import WebSocket from 'ws'
import { startTestNode, type ConfigOverrides, type TestNode } from '../helpers/node.js'
import { WAIT_TIMEOUT_MS } from '../helpers/wait.js'

export interface HttpExchange {
  setup?: boolean
  method: string
  path: string
  headers: Record<string, string>
  body: string
  status: number
  response_headers?: Record<string, string>
  response: string
}

export type SocketEvent =
  | { socket: number; open: string }
  | { socket: number; client: string }
  | { socket: number; server: string }
  | { socket: number; refused: number }

export interface ClientFixture {
  client: string
  version: string
  source: string
  recorded_at: string | null
  note?: string
  exchanges: Array<HttpExchange | SocketEvent>
}

/** Route template (`GET /v1/entities/{id}`) → the answer fields the client reads (`a.b`, `list[].field`). */
export type ReadSpec = Record<string, readonly string[]>

export function loadFixture(relative: string): ClientFixture {
  return JSON.parse(readFileSync(new URL(`../fixtures/clients/${relative}`, import.meta.url), 'utf8')) as ClientFixture
}

/** Fields whose value follows the clock or the ranking's floating point: compared by JSON type only. */
const VOLATILE =
  /(_at|At)$|^(timestamp|last_heartbeat|lastHeartbeat|uptime|uptime_seconds|score|score_breakdown|latency_ms|search_stats|expires_at)$/

const ROUTE_PARAM = /\{[^}]+\}/g

function routeOf(spec: ReadSpec, method: string, path: string): readonly string[] {
  const bare = path.split('?')[0] as string
  for (const [route, reads] of Object.entries(spec)) {
    const [m, template] = route.split(' ') as [string, string]
    if (m !== method) continue
    const pattern = new RegExp(`^${template.replace(ROUTE_PARAM, '[^/]+')}$`)
    if (pattern.test(bare)) return reads
  }
  return []
}

/** Values at a path (`results[].entity_id`: one per element). */
function valuesAt(value: unknown, path: string): unknown[] {
  let current: unknown[] = [value]
  for (const part of path.split('.')) {
    const each = part.endsWith('[]')
    const key = each ? part.slice(0, -2) : part
    current = current.flatMap(v => {
      const inner =
        key === '' ? v : v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined
      return each ? (Array.isArray(inner) ? inner : []) : [inner]
    })
  }
  return current
}

const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v)

function parse(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** entity_url of each entity the session registered or read, for serving its card again. */
function entityUrls(exchanges: ClientFixture['exchanges']): Map<string, string> {
  const urls = new Map<string, string>()
  for (const x of exchanges) {
    if (!('method' in x) || x.status >= 300) continue
    const answer = parse(x.response) as Record<string, unknown> | null
    const sent = parse(x.body) as Record<string, unknown> | null
    const id = typeof answer?.entity_id === 'string' ? answer.entity_id : null
    const url = answer?.entity_url ?? sent?.entity_url ?? sent?.service_endpoint
    if (id && typeof url === 'string' && url !== '') urls.set(id, url.replace(/\/+$/, ''))
  }
  return urls
}

/** Serves every card the node passed through (GET /v1/entities/{id}/card → 200) at its entity URL. */
async function serveCards(exchanges: ClientFixture['exchanges']): Promise<Server[]> {
  const urls = entityUrls(exchanges)
  const cards = new Map<string, Map<string, string>>()
  for (const x of exchanges) {
    if (!('method' in x) || x.method !== 'GET' || x.status !== 200) continue
    const id = /^\/v1\/entities\/([^/?]+)\/card/.exec(x.path)?.[1]
    const url = id ? urls.get(decodeURIComponent(id)) : undefined
    if (!url) continue
    const base = new URL(url)
    const byPath = cards.get(base.host) ?? new Map<string, string>()
    byPath.set(`${base.pathname.replace(/\/$/, '')}/.well-known/agent-card.json`, x.response)
    cards.set(base.host, byPath)
  }
  const servers: Server[] = []
  for (const [host, byPath] of cards) {
    const { hostname, port } = new URL(`http://${host}`)
    const server = createServer((req, res) => {
      const card = byPath.get((req.url ?? '').split('?')[0] as string)
      res.writeHead(card ? 200 : 404, { 'content-type': 'application/json' }).end(card ?? '{"error":"not_found"}')
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', err =>
        reject(new Error(`cannot serve the recorded cards at ${host} (${(err as Error).message})`))
      )
      server.listen(Number(port), hostname, resolve)
    })
    servers.push(server)
  }
  return servers
}

interface Socket {
  ws: WebSocket
  state: Promise<'open' | { refused: number }>
  frames: string[]
  waiters: Array<() => void>
}

function openSocket(url: string): Socket {
  const ws = new WebSocket(url)
  const socket: Socket = { ws, frames: [], waiters: [], state: Promise.resolve('open') }
  socket.state = new Promise(resolve => {
    ws.once('open', () => resolve('open'))
    ws.once('unexpected-response', (_req, res) => {
      res.resume()
      resolve({ refused: res.statusCode ?? 0 })
    })
    ws.once('error', () => resolve({ refused: 0 }))
  })
  ws.on('message', data => {
    socket.frames.push(data.toString())
    for (const wake of socket.waiters.splice(0)) wake()
  })
  return socket
}

async function nextFrame(socket: Socket): Promise<string> {
  const deadline = Date.now() + WAIT_TIMEOUT_MS
  while (socket.frames.length === 0) {
    if (Date.now() > deadline) throw new Error('no frame from the node')
    await new Promise<void>(resolve => {
      socket.waiters.push(resolve)
      setTimeout(resolve, 50)
    })
  }
  return socket.frames.shift() as string
}

export interface ReplayOptions {
  /** Node settings beyond the replay's own (http entity URLs, private card addresses, no rate limit). */
  config?: ConfigOverrides
}

/**
 * Replays `fixture` against a fresh node and checks every exchange; returns how many client
 * requests (not setup) answered as recorded.
 */
export async function replay(
  t: ExecutionContext,
  fixture: ClientFixture,
  reads: ReadSpec,
  options: ReplayOptions = {}
): Promise<number> {
  const node: TestNode = await startTestNode({
    host: 'localhost',
    entities: { allow_http_url: true },
    cards: { allow_private_addresses: true },
    // Recorded heartbeats carry the time they were recorded at.
    liveness: { max_clock_skew_seconds: 1e10 },
    ...options.config
  })
  const servers = await serveCards(fixture.exchanges)
  const sockets = new Map<number, Socket>()
  t.teardown(async () => {
    for (const s of sockets.values()) s.ws.terminate()
    await Promise.all(servers.map(s => new Promise(resolve => s.close(resolve))))
    await node.stop()
  })
  let matched = 0
  for (const [i, x] of fixture.exchanges.entries()) {
    if ('socket' in x) {
      if ('open' in x) sockets.set(x.socket, openSocket(node.url.replace(/^http/, 'ws') + x.open))
      const socket = sockets.get(x.socket)
      if (!socket) throw new Error(`exchange ${i}: socket ${x.socket} was never opened`)
      const state = await socket.state
      if ('refused' in x) t.deepEqual(state, { refused: x.refused }, `#${i} socket refused`)
      else if ('client' in x && state === 'open') socket.ws.send(x.client)
      else if ('server' in x) {
        const got = parse(await nextFrame(socket)) as Record<string, unknown>
        const want = parse(x.server) as Record<string, unknown>
        t.deepEqual(
          [got.type, got.agent_id, got.error],
          [want.type, want.agent_id, want.error],
          `#${i} frame on socket ${x.socket}`
        )
      }
      continue
    }
    const label = `#${i} ${x.method} ${x.path}`
    const res = await fetch(node.url + x.path, {
      method: x.method,
      headers: x.headers,
      ...(x.body !== '' ? { body: x.body } : {})
    })
    const text = await res.text()
    if (res.status !== x.status) {
      t.fail(`${label}: ${res.status} where the recording has ${x.status}: ${text.slice(0, 300)}`)
      continue
    }
    if (x.method === 'GET' && /\/card$/.test(x.path.split('?')[0] as string) && x.status === 200)
      t.is(
        res.headers.get('x-card-verification'),
        x.response_headers?.['x-card-verification'] ?? 'verified',
        `${label}: the card's signature`
      )
    const got = parse(text)
    const want = parse(x.response)
    let same = true
    for (const path of routeOf(reads, x.method, x.path)) {
      const last = path.split('.').pop()?.replace('[]', '') ?? ''
      const a = valuesAt(got, path)
      const b = valuesAt(want, path)
      // A page of a larger result set holds whichever of the equally ranked came first: its size only.
      const page = path.includes('[]') && (want as { has_more?: unknown } | null)?.has_more === true
      const check = page
        ? (v: unknown[]) => v.map(() => 'an item')
        : VOLATILE.test(last)
          ? (v: unknown[]) => v.map(typeOf)
          : (v: unknown[]) => v.map(e => JSON.stringify(e))
      // Results of equal rank may come in another order: lists are compared as sets.
      const left = check(a)
      const right = check(b)
      if (path.includes('[]')) {
        left.sort()
        right.sort()
      }
      if (JSON.stringify(left) !== JSON.stringify(right)) {
        same = false
        t.deepEqual(left, right, `${label}: ${path}`)
      }
    }
    if (same && !x.setup) matched++
  }
  return matched
}
