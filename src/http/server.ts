/**
 * The HTTP API over a front (front.ts): one handler takes every request, then routes through our
 * own trie so that 404/405, decoded path parameters, CORS, rate limits, body caps and the error
 * table are handled in one place, whichever server carries the bytes.
 */
import type { Logger } from 'pino'
import { RegistryError } from '../errors.js'
import type { ClientIpResolver } from './client-ip.js'
import type { Cors } from './cors.js'
import type { Front, HttpExchange, ServerChoice, ServerKind, SocketEndpoint } from './front.js'
import { JSON_CONTENT_TYPE, MAX_URL_BYTES, type Reply, type RequestContext, type RouteDefinition } from './http.js'
import { createNodeFront } from './node-front.js'
import { rateLimitHeaders, type FixedWindowLimiter, type RateDecision } from './rate-limit.js'
import { Router } from './router.js'
import { createUwsFront } from './uws-front.js'
import { loadUws, requireUws } from './uws-loader.js'
import { parseJsonBytes } from '../wire/json.js'

/** What the server reports of each request (the node's Prometheus metrics implement it). */
export interface RequestMetrics {
  observe(route: string, method: string, status: number, seconds: number): void
  /** A write refused with `code` before or while it ran. */
  rejected(code: string): void
}

export interface RateLimiters {
  reads: FixedWindowLimiter
  writes: FixedWindowLimiter
  writesPerIp: FixedWindowLimiter
}

export interface HttpServerComponents {
  routes: readonly RouteDefinition[]
  logger: Logger
  cors: Cors
  clientIp: ClientIpResolver
  /** Absent when rate limiting is disabled. */
  limiters: RateLimiters | null
  metrics: RequestMetrics | null
  bodyLimitBytes: number
  /** Which server carries the API (`auto`: uWebSockets.js where a build loads, else node:http). */
  server: ServerChoice
  /** WebSocket endpoints, served ahead of the HTTP routes. */
  sockets?: { endpoints(): ReadonlyArray<SocketEndpoint<unknown>>; close(): void }
}

/** The front `choice` asks for; `uws` with no loadable build is an error that says why. */
export function createFront(
  choice: ServerChoice,
  handlers: Parameters<typeof createNodeFront>[0],
  logger: Logger
): Front {
  if (choice === 'node') return createNodeFront(handlers)
  if (choice === 'uws') return createUwsFront(requireUws(), handlers)
  const uws = loadUws()
  if (uws.module) return createUwsFront(uws.module, handlers)
  logger.info({ reason: uws.detail }, 'serving HTTP with node:http (uWebSockets.js unavailable)')
  return createNodeFront(handlers)
}

const BODY_METHODS = new Set(['POST', 'PUT', 'DELETE', 'PATCH'])

export class HttpServer {
  private readonly router = new Router()
  private readonly front: Front
  private sweepTimer: NodeJS.Timeout | null = null
  closed = false
  port = 0

  constructor(private readonly c: HttpServerComponents) {
    for (const route of c.routes) this.router.add(route)
    this.front = createFront(
      c.server,
      { http: exchange => this.handle(exchange), sockets: c.sockets?.endpoints() ?? [] },
      c.logger
    )
  }

  /** The server carrying the API. */
  get kind(): ServerKind {
    return this.front.kind
  }

  async listen(host: string, port: number): Promise<number> {
    this.port = await this.front.listen(host, port)
    if (this.c.limiters) {
      const { reads, writes, writesPerIp } = this.c.limiters
      this.sweepTimer = setInterval(() => {
        reads.sweep()
        writes.sweep()
        writesPerIp.sweep()
      }, 60_000).unref()
    }
    return this.port
  }

  /** Stops accepting connections; requests on connections still open get 503 shutting_down. */
  close(): void {
    this.closed = true
    this.c.sockets?.close()
    this.front.close()
    if (this.sweepTimer) clearInterval(this.sweepTimer)
  }

  /** Ends the connections still open (after close, once in-flight work is done). */
  closeConnections(): void {
    this.front.closeConnections()
  }

  private handle(exchange: HttpExchange): void {
    const started = performance.now()
    const { method, path, headers } = exchange
    const ip = this.c.clientIp.resolve(exchange.remoteAddress, headers['x-forwarded-for'])
    const state = { aborted: false, done: false }
    exchange.onAborted(() => {
      state.aborted = true
    })
    const cors = this.c.cors.headers(headers.origin)
    let routeLabel = 'unmatched'
    let limitHeaders: Record<string, string> = {}
    let match: ReturnType<Router['match']> | undefined

    const send = (reply: Reply, closeConnection = false): void => {
      if (state.done) return
      state.done = true
      if (!state.aborted) {
        const isJson = reply.contentType === undefined
        const body = isJson ? JSON.stringify(reply.body) : (reply.body as string | Buffer)
        const replyHeaders: Array<[string, string]> = [
          ['Content-Type', reply.contentType ?? JSON_CONTENT_TYPE],
          ...Object.entries(cors),
          ...Object.entries(limitHeaders)
        ]
        if (reply.headers) replyHeaders.push(...Object.entries(reply.headers))
        exchange.reply(reply.status, replyHeaders, method === 'HEAD' ? undefined : body, closeConnection)
      }
      const seconds = (performance.now() - started) / 1000
      this.c.metrics?.observe(routeLabel, method, reply.status, seconds)
      this.c.logger.info({ method, path, status: reply.status, ms: Math.round(seconds * 10_000) / 10, ip }, 'request')
    }

    const fail = (err: unknown, closeConnection = false): void => {
      if (err instanceof RegistryError) {
        if (match?.route?.limit === 'write') this.c.metrics?.rejected(err.code)
        send({ status: err.status, body: err.toBody() }, closeConnection)
      } else {
        this.c.logger.error({ err, method, path }, 'internal error')
        send({ status: 500, body: new RegistryError('internal_error').toBody() })
      }
    }

    if (this.closed) {
      fail(new RegistryError('shutting_down'), true)
      return
    }
    // Before routing: path parameters of a few KiB would otherwise reach the store as keys.
    if (path.length + exchange.query.length + 1 > MAX_URL_BYTES) {
      // The connection stays open (the front skips the unread body): closing it with a body still
      // arriving resets it, and the client may lose the answer.
      fail(new RegistryError('url_too_long'))
      return
    }
    if (method === 'OPTIONS') {
      send({ status: 204, body: '', contentType: 'text/plain', headers: this.c.cors.preflight(headers.origin) })
      return
    }

    try {
      match = this.router.match(method, path)
    } catch (err) {
      fail(err)
      return
    }
    if (!match.route) {
      if (match.allowed.length === 0) fail(new RegistryError('route_not_found', `No route matches ${method} ${path}.`))
      else
        send({
          status: 405,
          body: new RegistryError('method_not_allowed', `${path} accepts ${match.allowed.join(', ')}.`).toBody(),
          headers: { Allow: match.allowed.join(', ') }
        })
      return
    }
    const { route, params } = match
    routeLabel = route.path

    if (route.limit === 'read' && this.c.limiters) {
      const decision = this.c.limiters.reads.take(ip)
      limitHeaders = rateLimitHeaders(decision)
      if (!decision.allowed) {
        fail(rateLimited(decision, 'reads'))
        return
      }
    }

    let parsed: { value: unknown } | undefined
    const ctx: RequestContext = {
      method,
      path,
      params,
      headers,
      ip,
      query: new URLSearchParams(exchange.query),
      rawQuery: exchange.query,
      raw: EMPTY,
      json() {
        if (parsed) return parsed.value
        if (this.raw.length === 0) throw new RegistryError('invalid_json', 'A JSON body is required.')
        try {
          parsed = { value: parseJsonBytes(this.raw) }
        } catch (err) {
          throw new RegistryError('invalid_json', `The request body is not valid JSON: ${(err as Error).message}`)
        }
        return parsed.value
      }
    }

    const run = (): void => {
      try {
        if (route.limit === 'write' && this.c.limiters) {
          const perIp = this.c.limiters.writesPerIp.take(ip)
          if (!perIp.allowed) {
            limitHeaders = rateLimitHeaders(perIp)
            throw rateLimited(perIp, 'writes from this address')
          }
          const writer = route.writer?.(ctx)
          if (writer) {
            const decision = this.c.limiters.writes.take(writer)
            limitHeaders = rateLimitHeaders(decision)
            if (!decision.allowed) throw rateLimited(decision, 'writes by this key')
          }
        }
        const result = route.handler(ctx)
        if (result instanceof Promise) result.then(send, fail)
        else send(result)
      } catch (err) {
        fail(err)
      }
    }

    const length = headers['content-length']
    const hasBody =
      BODY_METHODS.has(method) &&
      ((length !== undefined && length !== '0') || headers['transfer-encoding'] !== undefined)
    if (!hasBody) {
      run()
      return
    }
    if (length !== undefined && Number(length) > this.c.bodyLimitBytes) {
      fail(tooLarge(this.c.bodyLimitBytes), true)
      return
    }
    const contentType = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    if (
      contentType !== '' &&
      contentType !== 'application/json' &&
      !contentType.endsWith('+json') &&
      contentType !== 'text/plain'
    ) {
      fail(
        new RegistryError(
          'unsupported_media_type',
          `Content-Type ${contentType} is not accepted; send application/json.`
        )
      )
      return
    }
    const chunks: Buffer[] = []
    let received = 0
    exchange.onData((chunk, isLast) => {
      if (state.done) return
      received += chunk.byteLength
      if (received > this.c.bodyLimitBytes) {
        fail(tooLarge(this.c.bodyLimitBytes), true)
        return
      }
      if (chunk.byteLength > 0) chunks.push(chunk)
      if (isLast) {
        ctx.raw = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)
        run()
      }
    })
  }
}

const EMPTY = Buffer.alloc(0)

function rateLimited(decision: RateDecision, what: string): RegistryError {
  return new RegistryError(
    'rate_limited',
    `Rate limit of ${decision.limit} ${what} per minute exceeded; retry in ${decision.resetSeconds} s.`
  )
}

function tooLarge(limit: number): RegistryError {
  return new RegistryError('body_too_large', `The request body exceeds ${limit} bytes.`)
}
