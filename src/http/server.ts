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
import type { TlsCredentials } from './tls.js'
import { JSON_CONTENT_TYPE, MAX_URL_BYTES, type Reply, type RequestContext, type RouteDefinition } from './http.js'
import { createNodeFront } from './node-front.js'
import { rateLimitHeaders, type FixedWindowLimiter, type RateDecision } from './rate-limit.js'
import { Router, type RouteMatch } from './router.js'
import { createUwsFront } from './uws-front.js'
import { loadUws, requireUws } from './uws-loader.js'
import { parseJsonBytes } from '../wire/json.js'

/** What the server reports of each request (the node's Prometheus metrics implement it). */
export interface RequestMetrics {
  observe(route: string, method: string, status: number, seconds: number): void
  /** A write refused with `code` before or while it ran. */
  rejected(code: string): void
}

/**
 * Marks the reads of the node's dashboard page. Anyone may send it; it only moves those reads to a
 * second budget of the same address, so it cannot raise an address's reads beyond both budgets.
 */
export const DASHBOARD_HEADER = 'x-registry-dashboard'

export interface RateLimiters {
  reads: FixedWindowLimiter
  /** Reads marked as the dashboard's (DASHBOARD_HEADER): its polling has its own budget. */
  dashboardReads: FixedWindowLimiter
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
  /** Serve HTTPS and WSS with this certificate; absent: plain HTTP. */
  tls?: TlsCredentials | null
  /** WebSocket endpoints, served ahead of the HTTP routes. */
  sockets?: { endpoints(): ReadonlyArray<SocketEndpoint<unknown>>; close(): void }
}

/** The front `choice` asks for; `uws` with no loadable build is an error that says why. */
export function createFront(
  choice: ServerChoice,
  handlers: Parameters<typeof createNodeFront>[0],
  logger: Logger,
  tls?: TlsCredentials
): Front {
  if (choice === 'node') return createNodeFront(handlers, tls)
  if (choice === 'uws') return createUwsFront(requireUws(), handlers, tls)
  const uws = loadUws()
  if (uws.module) return createUwsFront(uws.module, handlers, tls)
  logger.info({ reason: uws.detail }, 'serving HTTP with node:http (uWebSockets.js unavailable)')
  return createNodeFront(handlers, tls)
}

/** What each request reads from the server's settings, and so what a reload may replace. */
export type PerRequestSettings = Pick<HttpServerComponents, 'cors' | 'clientIp' | 'limiters' | 'bodyLimitBytes'>

const BODY_METHODS = new Set(['POST', 'PUT', 'DELETE', 'PATCH'])

export class HttpServer {
  private readonly router = new Router()
  private readonly front: Front
  private sweepTimer: NodeJS.Timeout | null = null
  private readonly c: HttpServerComponents
  closed = false
  port = 0

  constructor(components: HttpServerComponents) {
    // A copy: reconfigure replaces its per-request settings, never the caller's object.
    this.c = { ...components }
    for (const route of this.c.routes) this.router.add(route)
    this.front = createFront(
      this.c.server,
      { http: exchange => this.handle(exchange), sockets: this.c.sockets?.endpoints() ?? [] },
      this.c.logger,
      this.c.tls ?? undefined
    )
  }

  /** The server carrying the API. */
  get kind(): ServerKind {
    return this.front.kind
  }

  /** The rate limiters in force (null: limits off). */
  get limiters(): RateLimiters | null {
    return this.c.limiters
  }

  /** Serving HTTPS and WSS. */
  get secure(): boolean {
    return this.front.secure
  }

  async listen(host: string, port: number): Promise<number> {
    this.port = await this.front.listen(host, port)
    // Reads the limiters at each sweep: a reload may have replaced them.
    this.sweepTimer = setInterval(() => {
      for (const limiter of Object.values(this.c.limiters ?? {})) limiter.sweep()
    }, 60_000).unref()
    return this.port
  }

  /** Replaces what requests read from here on; requests already routed finish with what they had. */
  reconfigure(next: Partial<PerRequestSettings>): void {
    Object.assign(this.c, next)
  }

  /** New connections get this certificate (a secure server only). */
  useTls(tls: TlsCredentials): Promise<void> {
    return this.front.useTls(tls)
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

  /**
   * Takes every request through the same steps in the same order: refusals that need no route,
   * the route, the read limit, the body, then the write limits and the handler. Each step answers
   * itself when it refuses; `req` carries what the answer needs (CORS and rate-limit headers, the
   * route's label for metrics).
   */
  private handle(exchange: HttpExchange): void {
    const started = performance.now()
    const { method, path, headers } = exchange
    const ip = this.c.clientIp.resolve(exchange.remoteAddress, headers['x-forwarded-for'])
    const req = new InFlightRequest(exchange, started, ip, this.c.cors.headers(headers.origin))
    exchange.onAborted(() => {
      req.aborted = true
    })
    if (this.answeredBeforeRouting(req)) return
    const match = this.matchRoute(req)
    if (match === null || !this.withinReadLimit(req, match.route)) return

    // Built here rather than in a helper so that json's cache shares the closure scope the abort
    // listener already holds instead of costing each request a second one.
    let parsed: { value: unknown } | undefined
    const ctx: RequestContext = {
      method,
      path,
      params: match.params,
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
    this.receiveBodyThenRun(req, match.route, ctx)
  }

  /** Shutdown, an over-long URL and CORS preflights are answered before the router is asked. */
  private answeredBeforeRouting(req: InFlightRequest): boolean {
    const { exchange } = req
    if (this.closed) {
      this.answerError(req, new RegistryError('shutting_down'), true)
      return true
    }
    // Before routing: path parameters of a few KiB would otherwise reach the store as keys.
    if (exchange.path.length + exchange.query.length + 1 > MAX_URL_BYTES) {
      // The connection stays open (the front skips the unread body): closing it with a body still
      // arriving resets it, and the client may lose the answer.
      this.answerError(req, new RegistryError('url_too_long'))
      return true
    }
    if (exchange.method === 'OPTIONS') {
      const headers = this.c.cors.preflight(exchange.headers.origin)
      this.answer(req, { status: 204, body: '', contentType: 'text/plain', headers })
      return true
    }
    return false
  }

  /** The route for the request, or null once it was answered 404, 405 or (undecodable parameter) 400. */
  private matchRoute(req: InFlightRequest): RouteFound | null {
    const { method, path } = req.exchange
    let match: RouteMatch
    try {
      match = this.router.match(method, path)
    } catch (err) {
      this.answerError(req, err)
      return null
    }
    req.route = match.route
    if (!match.route) {
      if (match.allowed.length === 0)
        this.answerError(req, new RegistryError('route_not_found', `No route matches ${method} ${path}.`))
      else
        this.answer(req, {
          status: 405,
          body: new RegistryError('method_not_allowed', `${path} accepts ${match.allowed.join(', ')}.`).toBody(),
          headers: { Allow: match.allowed.join(', ') }
        })
      return null
    }
    req.routeLabel = match.route.path
    return match
  }

  /** Counts a read against the client's address; false once answered 429. */
  private withinReadLimit(req: InFlightRequest, route: RouteDefinition): boolean {
    if (route.limit !== 'read' || !this.c.limiters) return true
    const limiter = req.exchange.headers[DASHBOARD_HEADER] ? this.c.limiters.dashboardReads : this.c.limiters.reads
    const decision = limiter.take(req.ip)
    req.limitHeaders = rateLimitHeaders(decision)
    if (decision.allowed) return true
    this.answerError(req, rateLimited(decision, 'reads'))
    return false
  }

  /** Runs the route at once when the request announces no body; otherwise checks and reads the body first. */
  private receiveBodyThenRun(req: InFlightRequest, route: RouteDefinition, ctx: RequestContext): void {
    const { method, headers } = req.exchange
    const length = headers['content-length']
    const hasBody =
      BODY_METHODS.has(method) &&
      ((length !== undefined && length !== '0') || headers['transfer-encoding'] !== undefined)
    if (!hasBody) {
      this.runRoute(req, route, ctx)
      return
    }
    if (this.bodyRefused(req, route, length)) return
    this.readBodyThenRun(req, route, ctx)
  }

  /** An announced length over the cap (413, connection closed) or a body that is not JSON or text (415). */
  private bodyRefused(req: InFlightRequest, route: RouteDefinition, length: string | undefined): boolean {
    const limit = route.bodyLimitBytes ?? this.c.bodyLimitBytes
    if (length !== undefined && Number(length) > limit) {
      this.answerError(req, tooLarge(limit), true)
      return true
    }
    const contentType = (req.exchange.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    if (
      contentType !== '' &&
      contentType !== 'application/json' &&
      !contentType.endsWith('+json') &&
      contentType !== 'text/plain'
    ) {
      this.answerError(
        req,
        new RegistryError(
          'unsupported_media_type',
          `Content-Type ${contentType} is not accepted; send application/json.`
        )
      )
      return true
    }
    return false
  }

  /** Collects the body up to the cap (a chunked body can only be measured as it arrives), then runs the route. */
  private readBodyThenRun(req: InFlightRequest, route: RouteDefinition, ctx: RequestContext): void {
    const chunks: Buffer[] = []
    const limit = route.bodyLimitBytes ?? this.c.bodyLimitBytes
    let received = 0
    req.exchange.onData((chunk, isLast) => {
      if (req.done) return
      received += chunk.byteLength
      if (received > limit) {
        this.answerError(req, tooLarge(limit), true)
        return
      }
      if (chunk.byteLength > 0) chunks.push(chunk)
      if (isLast) {
        ctx.raw = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)
        this.runRoute(req, route, ctx)
      }
    })
  }

  /** The write limits, then the handler; whatever either throws is answered through the error table. */
  private runRoute(req: InFlightRequest, route: RouteDefinition, ctx: RequestContext): void {
    try {
      if (route.limit === 'write' && this.c.limiters) this.takeWriteLimits(req, this.c.limiters, route, ctx)
      const result = route.handler(ctx)
      if (result instanceof Promise) this.answerWhenSettled(req, result)
      else this.answer(req, result)
    } catch (err) {
      this.answerError(req, err)
    }
  }

  /**
   * Counts a write against the client's address, then against its signer (when the route names
   * one); throws rate_limited. The address goes first: a write refused for its address does not
   * use up its signer's allowance.
   */
  private takeWriteLimits(
    req: InFlightRequest,
    limiters: RateLimiters,
    route: RouteDefinition,
    ctx: RequestContext
  ): void {
    const perIp = limiters.writesPerIp.take(req.ip)
    if (!perIp.allowed) {
      req.limitHeaders = rateLimitHeaders(perIp)
      throw rateLimited(perIp, 'writes from this address')
    }
    const writer = route.writer?.(ctx)
    if (writer) {
      const decision = limiters.writes.take(writer)
      req.limitHeaders = rateLimitHeaders(decision)
      if (!decision.allowed) throw rateLimited(decision, 'writes by this key')
    }
  }

  /** Its own method so that only asynchronous handlers pay for the two callbacks. */
  private answerWhenSettled(req: InFlightRequest, pending: Promise<Reply>): void {
    pending.then(
      reply => this.answer(req, reply),
      (err: unknown) => this.answerError(req, err)
    )
  }

  /** Sends the reply once (later calls are ignored), then records it in metrics and the log. */
  private answer(req: InFlightRequest, reply: Reply, closeConnection = false): void {
    if (req.done) return
    req.done = true
    const { exchange } = req
    if (!req.aborted) {
      const isJson = reply.contentType === undefined
      const body = isJson ? JSON.stringify(reply.body) : (reply.body as string | Buffer)
      const replyHeaders: Array<[string, string]> = [
        ['Content-Type', reply.contentType ?? JSON_CONTENT_TYPE],
        ...Object.entries(req.cors),
        ...Object.entries(req.limitHeaders)
      ]
      if (reply.headers) replyHeaders.push(...Object.entries(reply.headers))
      exchange.reply(reply.status, replyHeaders, exchange.method === 'HEAD' ? undefined : body, closeConnection)
    }
    const { method, path } = exchange
    const seconds = (performance.now() - req.started) / 1000
    this.c.metrics?.observe(req.routeLabel, method, reply.status, seconds)
    this.c.logger.info(
      { method, path, status: reply.status, ms: Math.round(seconds * 10_000) / 10, ip: req.ip },
      'request'
    )
  }

  /**
   * A RegistryError is answered with its own status and body (and counted as a refused write on a
   * write route); anything else is logged and answered 500 without its details.
   */
  private answerError(req: InFlightRequest, err: unknown, closeConnection = false): void {
    if (err instanceof RegistryError) {
      if (req.route?.limit === 'write') this.c.metrics?.rejected(err.code)
      this.answer(req, { status: err.status, body: err.toBody() }, closeConnection)
    } else {
      this.c.logger.error({ err, method: req.exchange.method, path: req.exchange.path }, 'internal error')
      this.answer(req, { status: 500, body: new RegistryError('internal_error').toBody() })
    }
  }
}

type RouteFound = Extract<RouteMatch, { route: RouteDefinition }>

const EMPTY = Buffer.alloc(0)
/** Shared by every request that has not been counted against a limit; never mutated. */
const NO_HEADERS: Readonly<Record<string, string>> = {}

/** One request between its arrival and its answer: what the steps of `handle` set and the answer reads. */
class InFlightRequest {
  aborted = false
  /** Answered (or being answered): later answers are dropped. */
  done = false
  /** The matched route's template, as metrics label the request. */
  routeLabel = 'unmatched'
  limitHeaders: Readonly<Record<string, string>> = NO_HEADERS
  route: RouteDefinition | null = null

  constructor(
    readonly exchange: HttpExchange,
    readonly started: number,
    readonly ip: string,
    readonly cors: Record<string, string>
  ) {}
}

function rateLimited(decision: RateDecision, what: string): RegistryError {
  return new RegistryError(
    'rate_limited',
    `Rate limit of ${decision.limit} ${what} per minute exceeded; retry in ${decision.resetSeconds} s.`
  )
}

function tooLarge(limit: number): RegistryError {
  return new RegistryError('body_too_large', `The request body exceeds ${limit} bytes.`)
}
