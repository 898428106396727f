/**
 * Property-based fuzzing of a running node over real sockets (fast-check): every HTTP route of the
 * node's own API description and every WebSocket endpoint, with malformed, huge, deeply nested,
 * odd-Unicode, invalid-UTF-8, wrongly typed, duplicate-key bodies and hostile headers. The property:
 * the node answers every request, never 500, and every error is `{error, message}` with a code of
 * the error table and that code's status; sockets refuse or close with documented codes, and the
 * node keeps serving. Used by test/api/fuzz.test.ts (a small run) and `npm run fuzz` (a long one).
 */
import { connect } from 'node:net'
import fc from 'fast-check'
import WebSocket from 'ws'
import { ERRORS, type ErrorCode } from '../../src/errors.js'
import { agent, developer, developerRegistration, specRegistration } from './identities.js'

export interface FuzzSeeds {
  entityId: string
  developerId: string
  handle: string
  registration: Record<string, unknown>
}

export interface FuzzReport {
  cases: number
  statuses: Record<string, number>
  /** Why each failing case failed (empty when the property held). */
  failures: string[]
  /** fast-check's seed, to replay a run (`--seed`). */
  seed: number
  /** fast-check's path of the first failing case, to replay just it (`--seed S --path P`). */
  path?: string
}

interface Route {
  method: string
  path: string
  query: string[]
}

interface RawRequest {
  method: string
  target: string
  headers: Array<[string, string]>
  body: Buffer | null
}

interface RawResponse {
  status: number
  headers: Record<string, string>
  body: Buffer
}

/** Registers a developer with a handle and one agent, so that fuzzed paths also reach real records. */
export async function seedFuzzTarget(base: string): Promise<FuzzSeeds> {
  const dev = developer(0x5a)
  const handle = 'fuzz-target'
  const post = async (path: string, body: unknown) => {
    const res = await fetch(base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body)
    })
    if (res.status !== 201) throw new Error(`seeding ${path}: ${res.status} ${await res.text()}`)
  }
  await post('/v1/developers', developerRegistration(dev, { handle }))
  const a = agent(dev, 0)
  const registration = specRegistration(dev, a)
  await post('/v1/entities', registration)
  return { entityId: a.agentId, developerId: dev.id, handle, registration }
}

/** The routes of the node's API description, with their query parameters. */
async function routesOf(base: string): Promise<Route[]> {
  const doc = (await (await fetch(`${base}/swagger/doc.json`)).json()) as {
    paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>>
  }
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      query: (op.parameters ?? []).filter(p => p.in === 'query').map(p => p.name)
    }))
  )
}

/** The node's default http.body_limit_bytes. */
const BODY_LIMIT = 64 * 1024
/** What uWS 20.30 buffers of a request head that arrives in more than one read. */
const UWS_HEAD_FALLBACK = 4 * 1024
const headBytes = (req: RawRequest): number =>
  req.target.length + req.headers.reduce((n, [k, v]) => n + k.length + v.length + 4, 64)

const COMMON_QUERY = [
  'limit',
  'offset',
  'page',
  'page_size',
  'type',
  'entity_type',
  'category',
  'tags',
  'q',
  'query',
  'developer_id',
  'status',
  'federated',
  'fqan',
  'card',
  'min_trust',
  'sort'
]

/** Strings that break things: very long, odd Unicode, lone surrogates, controls, numbers out of range. */
const hostileString = (): fc.Arbitrary<string> =>
  fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.constantFrom(
      '',
      ' ',
      '-1',
      '0',
      '1e400',
      'NaN',
      '9007199254740993',
      '1.5',
      'null',
      'true',
      '[]',
      '{}',
      '\u0000',
      '\ud800',
      '\u202e',
      '../..',
      '%',
      '%zz',
      'zns:',
      'zns:svc:',
      'zns:dev:'
    ),
    fc.integer({ min: 1, max: 12_000 }).map(n => 'a'.repeat(n)),
    fc.integer({ min: 1, max: 600 }).map(n => '\u00e9'.repeat(n))
  )

const idLike = (seeds: FuzzSeeds): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constantFrom(seeds.entityId, seeds.developerId, seeds.handle, seeds.entityId.toUpperCase(), `${seeds.handle}x`),
    fc.stringMatching(/^zns:(svc:|dev:)?[0-9a-f]{32}$/),
    hostileString()
  )

/** Percent-encodes the UTF-8 of a string (a lone surrogate becomes U+FFFD, where encodeURIComponent throws). */
const percentEncode = (s: string): string =>
  [...Buffer.from(s, 'utf8')]
    .map(b =>
      /[A-Za-z0-9\-_.~:]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`
    )
    .join('')

/** A path segment as a client could put it on the wire: percent-encoded, raw UTF-8, or broken encoding. */
const segment = (seeds: FuzzSeeds): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 4, arbitrary: idLike(seeds).map(percentEncode) },
    { weight: 1, arbitrary: idLike(seeds).map(s => s.replace(/[\s/?#%\u0000-\u001f\u007f]/g, '_')) },
    { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '%C0%AF', '%FF%FE', '%ED%A0%80', '..', '.', '') }
  )

const deepJson = (): fc.Arbitrary<string> =>
  fc
    .tuple(fc.integer({ min: 50, max: 20_000 }), fc.constantFrom('[', '{"a":'), fc.boolean())
    .map(([depth, open, closed]) => {
      const close = open === '[' ? ']' : '}'
      return `${open.repeat(depth)}1${closed ? close.repeat(depth) : ''}`
    })

/** Bodies: none, JSON values, the seeded registration with hostile field values, and bytes that are not JSON. */
const bodyArbitrary = (seeds: FuzzSeeds): fc.Arbitrary<Buffer | null> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant(null) },
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 6 }).map(v => Buffer.from(JSON.stringify(v) ?? 'null')) },
    {
      weight: 4,
      arbitrary: fc
        .tuple(
          fc.constantFrom(
            ...Object.keys(seeds.registration),
            'handle',
            'entity_name',
            'developer_handle',
            'entity_id',
            'metadata',
            'capability_summary'
          ),
          fc.oneof(fc.jsonValue({ maxDepth: 4 }), hostileString())
        )
        .map(([key, value]) => Buffer.from(JSON.stringify({ ...seeds.registration, [key]: value })))
    },
    { weight: 1, arbitrary: deepJson().map(s => Buffer.from(s)) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          '{"a":1,"a":2}',
          '{"public_key":"x","public_key":{"y":1}}',
          '{',
          '"\\ud800"',
          '1e400',
          '{"name":"\\u0000"}',
          '\ufeff{}'
        )
        .map(s => Buffer.from(s))
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map(b => Buffer.from(b)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
        Buffer.from('{"name":"\xc3\x28"}', 'latin1')
      )
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 60_000, max: 200_000 })
        .map(n => Buffer.from(JSON.stringify({ name: 'x'.repeat(n) })))
    }
  )

const headerArbitrary = (): fc.Arbitrary<Array<[string, string]>> =>
  fc.array(
    fc.oneof(
      fc.constantFrom<[string, string]>(
        ['Content-Type', 'application/json'],
        ['Content-Type', 'text/plain'],
        ['Content-Type', 'application/json; charset=utf-16'],
        ['Content-Type', 'multipart/form-data; boundary=x'],
        ['Content-Type', ''],
        ['Content-Type', 'application/json'],
        ['Authorization', 'Bearer'],
        ['Authorization', 'Bearer ed25519:'],
        ['Authorization', 'Bearer-Dev ed25519:AAAA'],
        ['X-Signature', 'ed25519:!!'],
        ['X-Forwarded-For', 'not-an-ip, ::1, 999.1.1.1'],
        ['Origin', 'null'],
        ['Accept', '*/*'],
        ['Expect', '100-continue'],
        ['Range', 'bytes=0-1']
      ),
      fc
        .tuple(
          fc.constantFrom(
            'Authorization',
            'X-Signature',
            'Origin',
            'X-Forwarded-For',
            'Accept-Encoding',
            'X-Custom',
            'Cookie'
          ),
          fc.oneof(
            fc.string({ maxLength: 60 }),
            fc.integer({ min: 1, max: 8_000 }).map(n => 'h'.repeat(n))
          )
        )
        .map(([k, v]): [string, string] => [k, v.replace(/[\r\n\u0000]/g, ' ')])
    ),
    { maxLength: 4 }
  )

function requestArbitrary(routes: Route[], seeds: FuzzSeeds): fc.Arbitrary<RawRequest> {
  return fc
    .tuple(
      fc.constantFrom(...routes),
      fc.oneof(
        { weight: 5, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE') }
      ),
      fc.array(segment(seeds), { minLength: 3, maxLength: 3 }),
      fc.array(fc.tuple(fc.oneof(fc.constantFrom(...COMMON_QUERY), fc.string({ maxLength: 10 })), hostileString()), {
        maxLength: 4
      }),
      headerArbitrary(),
      bodyArbitrary(seeds)
    )
    .map(([route, method, segments, query, headers, body]) => {
      let i = 0
      const path = route.path.replace(/\{[^}]+\}/g, () => segments[i++] as string)
      const pairs = [...query, ...route.query.slice(0, 2).map(name => [name, ''] as const)]
      const search =
        pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join('&')}`
      return { method: method ?? route.method, target: path + search, headers, body }
    })
}

/** One request on its own connection, bytes as given (the connection closed once the answer is read); resolves with the response or rejects on a reset, a close without an answer, or a timeout. */
export function sendRaw(base: string, req: RawRequest, timeoutMs = 10_000): Promise<RawResponse> {
  const { hostname, port } = new URL(base)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    const chunks: Buffer[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no answer in ${timeoutMs} ms`))
    }, timeoutMs)
    const finish = (err: Error | null, res?: RawResponse) => {
      clearTimeout(timer)
      socket.destroy()
      if (err) reject(err)
      else resolve(res as RawResponse)
    }
    const tryParse = (ended: boolean) => {
      let all = Buffer.concat(chunks)
      // An interim 100 Continue (for Expect: 100-continue) comes before the answer.
      while (all.subarray(0, 12).toString('latin1') === 'HTTP/1.1 100' && all.indexOf('\r\n\r\n') !== -1)
        all = all.subarray(all.indexOf('\r\n\r\n') + 4)
      const headEnd = all.indexOf('\r\n\r\n')
      if (headEnd === -1) {
        if (ended) finish(new Error(`connection closed without an answer (${all.length} bytes)`))
        return
      }
      const [statusLine, ...lines] = all.subarray(0, headEnd).toString('latin1').split('\r\n')
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const c = line.indexOf(':')
        headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim()
      }
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1] ?? NaN)
      const body = all.subarray(headEnd + 4)
      const length =
        req.method === 'HEAD' || status === 204 || status === 304 ? 0 : Number(headers['content-length'] ?? NaN)
      if (body.length >= length || ended)
        finish(null, { status, headers, body: Number.isNaN(length) ? body : body.subarray(0, length) })
    }
    socket.on('data', chunk => {
      chunks.push(chunk)
      tryParse(false)
    })
    socket.on('end', () => tryParse(true))
    socket.on('error', err => finish(err))
    socket.on('connect', () => {
      // Kept alive, as clients do, and closed here once the answer is read: a server closing a
      // connection whose request body it did not read would reset it, and the answer with it.
      const head = [
        `${req.method} ${req.target} HTTP/1.1`,
        `Host: ${hostname}:${port}`,
        ...req.headers.map(([k, v]) => `${k}: ${v}`)
      ]
      if (req.body) head.push(`Content-Length: ${req.body.length}`)
      socket.write(
        Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'utf8'), req.body ?? Buffer.alloc(0)]),
        () => {}
      )
    })
  })
}

/** Null when the response keeps the contract; else what is wrong with it. */
export function contractViolation(res: RawResponse, method = 'GET'): string | null {
  if (!Number.isInteger(res.status)) return 'no status line'
  if (res.status >= 500 && res.status !== 502 && res.status !== 503)
    return `status ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`
  if (res.status < 400 || method === 'HEAD') return null
  if (!(res.headers['content-type'] ?? '').startsWith('application/json'))
    return `status ${res.status} without a JSON error body`
  let body: { error?: unknown; message?: unknown }
  try {
    body = JSON.parse(res.body.toString('utf8')) as typeof body
  } catch {
    return `status ${res.status}: the body is not JSON`
  }
  if (typeof body.error !== 'string' || !(body.error in ERRORS))
    return `status ${res.status}: error code ${String(body.error)} is not in the table`
  if (typeof body.message !== 'string') return `status ${res.status}: no message`
  const expected = ERRORS[body.error as ErrorCode].status
  return expected === res.status ? null : `status ${res.status} for ${body.error}, whose status is ${expected}`
}

export interface FuzzOptions {
  runs: number
  seed?: number
  path?: string
}

const count = (report: FuzzReport, key: string) => {
  report.statuses[key] = (report.statuses[key] ?? 0) + 1
}

/** Runs a property until its first failure (no shrinking against a live node: each case is already described in failures). */
async function run<T>(report: FuzzReport, options: FuzzOptions, property: fc.IAsyncProperty<T>): Promise<FuzzReport> {
  const details = await fc.check(property, {
    numRuns: options.runs,
    seed: options.seed,
    path: options.path,
    endOnFailure: true
  })
  report.seed = details.seed
  if (details.counterexamplePath) report.path = details.counterexamplePath
  if (details.failed && report.failures.length === 0)
    report.failures.push(`the property threw: ${String(details.errorInstance).slice(0, 300)}`)
  return report
}

/** Fuzzes every HTTP route; throws fast-check's (shrunk) counterexample when the property fails. */
export async function fuzzHttp(base: string, seeds: FuzzSeeds, options: FuzzOptions): Promise<FuzzReport> {
  const report: FuzzReport = { cases: 0, statuses: {}, failures: [], seed: 0 }
  const routes = await routesOf(base)
  const front = ((await (await fetch(`${base}/v1/info`)).json()) as { runtime: { http_server: string } }).runtime
    .http_server
  return run(
    report,
    options,
    fc.asyncProperty(requestArbitrary(routes, seeds), async req => {
      report.cases++
      let violation: string | null
      try {
        const res = await sendRaw(base, req)
        count(report, String(res.status))
        violation = contractViolation(res, req.method)
      } catch (err) {
        // A body over the limit is answered 413 and the connection closed with the rest unread: the
        // reset that closing causes may reach the client before the answer (RFC 9112 §9.6).
        const message = (err as Error).message
        const noAnswer = /ECONNRESET|EPIPE|without an answer/.test(message)
        // uWS 20.30 (its build for Node 20) buffers at most 4 KiB of a request head that arrives in
        // pieces, and closes the connection beyond that; loopback sometimes splits a large head.
        const reason = !noAnswer
          ? null
          : (req.body?.length ?? 0) > BODY_LIMIT
            ? 'reset (body over the limit)'
            : front === 'uws' && headBytes(req) > UWS_HEAD_FALLBACK
              ? 'closed (uws: a head over 4 KiB in pieces)'
              : null
        violation = reason === null ? message : null
        if (reason !== null) count(report, reason)
      }
      if (violation) {
        report.failures.push(
          `${req.method} ${req.target.slice(0, 160)} (${req.target.length} bytes; headers ${JSON.stringify(req.headers).slice(0, 300)}; body ${req.body?.length ?? 'none'} bytes): ${violation}`
        )
        return false
      }
      return true
    })
  )
}

const CLOSE_CODES = new Set([1000, 1001, 1005, 1006, 1008, 1009])

/** Fuzzes the WebSocket endpoints: odd paths, then frames of every kind; the node answers in JSON or closes with a documented code. */
export async function fuzzSockets(base: string, seeds: FuzzSeeds, options: FuzzOptions): Promise<FuzzReport> {
  const report: FuzzReport = { cases: 0, statuses: {}, failures: [], seed: 0 }
  const wsBase = base.replace(/^http/, 'ws')
  const frame = fc.oneof(
    fc.jsonValue({ maxDepth: 5 }).map(v => JSON.stringify(v) ?? 'null'),
    fc
      .record({
        agent_id: idLike(seeds),
        timestamp: fc.oneof(
          fc.date({ noInvalidDate: true }).map(d => d.toISOString()),
          hostileString()
        ),
        signature: hostileString()
      })
      .map(v => JSON.stringify(v)),
    deepJson(),
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc.uint8Array({ maxLength: 200 }).map(b => Buffer.from(b)),
    fc.integer({ min: 1_000, max: 200_000 }).map(n => 'x'.repeat(n))
  )
  const session = fc.tuple(
    fc.constantFrom('/v1/entities/{id}/ws', '/v1/heartbeat', '/v1/ws/activity', '/v1/entities/{id}/wsx'),
    segment(seeds),
    fc.array(frame, { minLength: 1, maxLength: 5 })
  )
  return run(
    report,
    options,
    fc.asyncProperty(session, async ([template, id, frames]) => {
      report.cases++
      const violation = await socketSession(`${wsBase}${template.replace('{id}', id)}`, frames)
      count(report, violation === null ? 'ok' : 'failed')
      if (violation) {
        report.failures.push(`${template} ${id.slice(0, 60)}: ${violation}`)
        return false
      }
      return true
    })
  )
}

function socketSession(url: string, frames: Array<string | Buffer>): Promise<string | null> {
  return new Promise(resolve => {
    const ws = new WebSocket(url, { handshakeTimeout: 5_000 })
    let verdict: string | null = null
    const done = () => {
      clearTimeout(timer)
      ws.terminate()
      resolve(verdict)
    }
    const timer = setTimeout(done, 400)
    ws.on('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        verdict = contractViolation({
          status: res.statusCode ?? 0,
          headers: res.headers as Record<string, string>,
          body: Buffer.concat(chunks)
        })
        done()
      })
    })
    ws.on('open', () => {
      for (const f of frames) ws.send(f)
    })
    ws.on('message', data => {
      let message: { type?: unknown; error?: unknown }
      try {
        message = JSON.parse(String(data)) as typeof message
      } catch {
        verdict ??= 'a frame that is not JSON'
        return
      }
      if (message.type === 'error' && !(typeof message.error === 'string' && message.error in ERRORS))
        verdict ??= `error frame with code ${String(message.error)}`
    })
    ws.on('close', code => {
      if (!CLOSE_CODES.has(code)) verdict ??= `closed with ${code}`
      done()
    })
    ws.on('error', err => {
      if (!/Unexpected server response|socket hang up|ECONNRESET/.test(err.message))
        verdict ??= `socket error ${err.message}`
    })
  })
}
