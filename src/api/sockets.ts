/**
 * The three WebSocket endpoints on the uWS app.
 *
 * Heartbeats (`/v1/entities/{id}/ws` for one entity, `/v1/heartbeat` multiplexing many): the node
 * answers every heartbeat with one small text frame,
 *   {"type":"ack","agent_id":…,"timestamp":<as sent>,"status":"active"}
 *   {"type":"error","error":<code>,"message":…,"agent_id"?:…,"field"?:…}
 * A bad frame never closes the socket; abuse does: frames over the size cap (uWS closes with
 * 1009), a connection that keeps sending faster than its rate after warnings, and one whose last
 * 50 heartbeats were all rejected (both closed with 1008).
 *
 * Activity (`/v1/ws/activity`): a greeting `{type:"hello", timestamp, data:{registry_id, …}}`,
 * then every bus event as `{type, timestamp, data}`. Each subscriber has a queue of
 * `queueLimit` frames on top of a small socket buffer; when both are full its events are dropped
 * (and counted in an `events_dropped` frame once it catches up), so a slow reader never slows
 * the bus or the other subscribers.
 */
import { STATUS_CODES } from 'node:http'
import uWS, { type HttpRequest, type HttpResponse, type TemplatedApp, type WebSocket, type us_socket_context_t } from 'uWebSockets.js'
import type { Logger } from 'pino'
import { RegistryError } from '../errors.js'
import type { EventBus, RegistryEvent } from '../events/bus.js'
import type { LivenessService } from '../services/liveness.js'
import { JSON_CONTENT_TYPE } from './http.js'

export interface HeartbeatSocketLimits {
  /** Entities one multiplexed connection may carry. */
  maxEntitiesPerConnection: number
  /** Frames per second one entity's heartbeats may use on average (bursts up to 10 × this). */
  framesPerSecondPerEntity: number
  /** Bytes of one frame on the per-entity socket (× maxEntitiesPerConnection on the multiplexed one). */
  maxFrameBytes: number
}

export interface SocketComponents {
  liveness: LivenessService
  bus: EventBus
  logger: Logger
  limits: HeartbeatSocketLimits
  /** The activity stream's greeting data (the node's identity). */
  greeting: () => Record<string, unknown>
  activityQueueLimit: number
  /** Whether the node is shutting down (upgrades are refused). */
  closed: () => boolean
}

interface HeartbeatConnection {
  /** Set on the per-entity socket. */
  entityId: string | undefined
  entities: Set<string>
  tokens: number
  refilledAt: number
  warnings: number
  /** Rejected heartbeats since the last accepted one. */
  failures: number
  /** Heartbeats of this connection still being verified. */
  inFlight: number
  closed: boolean
}

interface ActivityConnection {
  queue: string[]
  dropped: number
  closed: boolean
}

/** Bytes the socket may hold before frames go to the subscriber's queue instead. */
const SOCKET_HIGH_WATER = 64 * 1024
/** Rate warnings, or rejected heartbeats in a row, after which a heartbeat connection is closed. */
const MAX_WARNINGS = 20
const MAX_FAILURES_IN_A_ROW = 50
/**
 * Heartbeats waiting for verification, per connection (× the entities it may carry) and for the
 * whole node. Beyond them a heartbeat is refused with `overloaded` before any signature work, so
 * a flood cannot build a queue that delays every valid heartbeat behind it.
 */
const IN_FLIGHT_PER_ENTITY = 2
const MAX_IN_FLIGHT = 4096
const IDLE_TIMEOUT_SECONDS = 120

export class Sockets {
  private readonly activity = new Set<WebSocket<ActivityConnection>>()
  private readonly heartbeatSockets = new Set<WebSocket<HeartbeatConnection>>()
  private inFlight = 0
  private unsubscribe: (() => void) | null = null
  droppedEvents = 0

  constructor(private readonly c: SocketComponents) {}

  /** Registers the endpoints; call before the app's catch-all HTTP route. */
  register(app: TemplatedApp): void {
    const { limits } = this.c
    app.ws<HeartbeatConnection>('/v1/entities/:id/ws', {
      compression: uWS.DISABLED,
      maxPayloadLength: limits.maxFrameBytes,
      idleTimeout: IDLE_TIMEOUT_SECONDS,
      upgrade: (res, req, context) => {
        const entityId = decodeURIComponent(req.getParameter(0) ?? '')
        this.upgrade(res, req, context, () => { this.c.liveness.check(entityId); return this.heartbeatConnection(entityId) })
      },
      open: ws => { this.heartbeatSockets.add(ws) },
      message: (ws, message) => this.onHeartbeatMessage(ws, message),
      close: ws => { ws.getUserData().closed = true; this.heartbeatSockets.delete(ws) }
    })
    app.ws<HeartbeatConnection>('/v1/heartbeat', {
      compression: uWS.DISABLED,
      maxPayloadLength: limits.maxFrameBytes * limits.maxEntitiesPerConnection,
      idleTimeout: IDLE_TIMEOUT_SECONDS,
      upgrade: (res, req, context) => this.upgrade(res, req, context, () => this.heartbeatConnection(undefined)),
      open: ws => { this.heartbeatSockets.add(ws) },
      message: (ws, message) => this.onHeartbeatMessage(ws, message),
      close: ws => { ws.getUserData().closed = true; this.heartbeatSockets.delete(ws) }
    })
    app.ws<ActivityConnection>('/v1/ws/activity', {
      compression: uWS.DISABLED,
      maxPayloadLength: 1024,
      idleTimeout: IDLE_TIMEOUT_SECONDS,
      maxBackpressure: 4 * 1024 * 1024,
      upgrade: (res, req, context) => this.upgrade(res, req, context, () => ({ queue: [], dropped: 0, closed: false })),
      open: ws => {
        this.activity.add(ws)
        ws.send(JSON.stringify({ type: 'hello', timestamp: new Date().toISOString(), data: this.c.greeting() }))
      },
      // The stream is read-only: anything a subscriber sends is ignored.
      message: () => {},
      drain: ws => this.drain(ws),
      close: ws => { ws.getUserData().closed = true; this.activity.delete(ws) }
    })
    this.unsubscribe = this.c.bus.subscribe(event => this.broadcast(event))
  }

  /** Closes every socket (shutdown). */
  close(): void {
    this.unsubscribe?.()
    for (const ws of [...this.activity, ...this.heartbeatSockets]) {
      if (!ws.getUserData().closed) ws.end(1001, 'node shutting down')
    }
  }

  get connections(): { heartbeat: number; activity: number } {
    return { heartbeat: this.heartbeatSockets.size, activity: this.activity.size }
  }

  private heartbeatConnection(entityId: string | undefined): HeartbeatConnection {
    return { entityId, entities: new Set(), tokens: this.burst(entityId), refilledAt: performance.now(), warnings: 0, failures: 0, inFlight: 0, closed: false }
  }

  /** Accepts the upgrade with the connection state `accept` returns, or answers its error as JSON. */
  private upgrade<T>(res: HttpResponse, req: HttpRequest, context: us_socket_context_t, accept: () => T): void {
    const key = req.getHeader('sec-websocket-key')
    const protocol = req.getHeader('sec-websocket-protocol')
    const extensions = req.getHeader('sec-websocket-extensions')
    let state: T
    try {
      if (this.c.closed()) throw new RegistryError('shutting_down')
      state = accept()
    } catch (err) {
      const error = err instanceof RegistryError ? err : new RegistryError('internal_error')
      res.cork(() => {
        res.writeStatus(`${error.status} ${STATUS_CODES[error.status] ?? ''}`)
        res.writeHeader('Content-Type', JSON_CONTENT_TYPE)
        res.end(JSON.stringify(error.toBody()), true)
      })
      return
    }
    res.upgrade(state, key, protocol, extensions, context)
  }

  private rate(entityId: string | undefined): number {
    const perEntity = this.c.limits.framesPerSecondPerEntity
    return entityId === undefined ? perEntity * this.c.limits.maxEntitiesPerConnection : perEntity
  }

  private burst(entityId: string | undefined): number {
    return this.rate(entityId) * 10
  }

  private onHeartbeatMessage(ws: WebSocket<HeartbeatConnection>, message: ArrayBuffer): void {
    const conn = ws.getUserData()
    let parsed: unknown
    try {
      parsed = JSON.parse(Buffer.from(message).toString('utf8'))
    } catch {
      this.reply(ws, { type: 'error', ...new RegistryError('heartbeat_invalid', 'The frame is not valid JSON.').toBody() })
      return
    }
    // The multiplexed socket also takes an array of frames (one per entity).
    const frames = conn.entityId === undefined && Array.isArray(parsed) ? parsed : [parsed]
    for (const frame of frames) {
      if (!this.takeToken(ws, conn)) return
      this.handleFrame(ws, conn, frame)
    }
  }

  /** Token bucket per connection; a connection that keeps exceeding it after warnings is closed. */
  private takeToken(ws: WebSocket<HeartbeatConnection>, conn: HeartbeatConnection): boolean {
    const now = performance.now()
    const rate = this.rate(conn.entityId)
    conn.tokens = Math.min(this.burst(conn.entityId), conn.tokens + ((now - conn.refilledAt) / 1000) * rate)
    conn.refilledAt = now
    if (conn.tokens >= 1) { conn.tokens -= 1; return true }
    conn.warnings++
    if (conn.warnings > MAX_WARNINGS) {
      conn.closed = true
      ws.end(1008, 'heartbeat rate exceeded')
      return false
    }
    this.reply(ws, { type: 'error', ...new RegistryError('rate_limited', `At most ${rate} heartbeat frames per second on this connection.`).toBody() })
    return false
  }

  private handleFrame(ws: WebSocket<HeartbeatConnection>, conn: HeartbeatConnection, frame: unknown): void {
    if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) {
      this.reply(ws, { type: 'error', ...new RegistryError('heartbeat_invalid').toBody() })
      return
    }
    const agentId = (frame as { agent_id?: unknown }).agent_id
    if (conn.entityId === undefined && typeof agentId === 'string' && !conn.entities.has(agentId)) {
      if (conn.entities.size >= this.c.limits.maxEntitiesPerConnection) {
        this.reply(ws, { type: 'error', ...new RegistryError('too_many_entities', `One connection carries at most ${this.c.limits.maxEntitiesPerConnection} entities.`, 'agent_id').toBody(), agent_id: agentId })
        return
      }
    }
    const connectionLimit = IN_FLIGHT_PER_ENTITY * (conn.entityId === undefined ? this.c.limits.maxEntitiesPerConnection : 1)
    if (conn.inFlight >= connectionLimit || this.inFlight >= MAX_IN_FLIGHT) {
      this.reply(ws, { type: 'error', ...new RegistryError('overloaded').toBody(), ...(typeof agentId === 'string' ? { agent_id: agentId } : {}) })
      return
    }
    conn.inFlight++
    this.inFlight++
    const settled = (): void => { conn.inFlight--; this.inFlight-- }
    this.c.liveness.heartbeat(frame, conn.entityId).then(
      ack => {
        settled()
        if (conn.entityId === undefined) conn.entities.add(ack.agent_id)
        conn.failures = 0
        this.reply(ws, ack)
      },
      (err: unknown) => {
        settled()
        const error = err instanceof RegistryError ? err : new RegistryError('internal_error')
        if (!(err instanceof RegistryError)) this.c.logger.error({ err }, 'heartbeat failed')
        const named = typeof agentId === 'string' ? { agent_id: agentId } : conn.entityId ? { agent_id: conn.entityId } : {}
        this.reply(ws, { type: 'error', ...error.toBody(), ...named })
        // Every rejected signature cost a verification: a connection that sends only those goes.
        if (++conn.failures >= MAX_FAILURES_IN_A_ROW && !conn.closed) {
          conn.closed = true
          ws.end(1008, 'too many rejected heartbeats')
        }
      }
    )
  }

  private reply(ws: WebSocket<HeartbeatConnection>, body: object): void {
    if (!ws.getUserData().closed) ws.send(JSON.stringify(body))
  }

  private broadcast(event: RegistryEvent): void {
    if (this.activity.size === 0) return
    const text = JSON.stringify(event)
    for (const ws of this.activity) {
      const conn = ws.getUserData()
      if (conn.closed) continue
      if (conn.queue.length === 0 && ws.getBufferedAmount() < SOCKET_HIGH_WATER) ws.send(text)
      else if (conn.queue.length < this.c.activityQueueLimit) conn.queue.push(text)
      else { conn.dropped++; this.droppedEvents++ }
    }
  }

  private drain(ws: WebSocket<ActivityConnection>): void {
    const conn = ws.getUserData()
    while (conn.queue.length > 0 && ws.getBufferedAmount() < SOCKET_HIGH_WATER) ws.send(conn.queue.shift() as string)
    if (conn.queue.length === 0 && conn.dropped > 0 && ws.getBufferedAmount() < SOCKET_HIGH_WATER) {
      ws.send(JSON.stringify({ type: 'events_dropped', timestamp: new Date().toISOString(), data: { count: conn.dropped } }))
      conn.dropped = 0
    }
  }
}
