/**
 * The three WebSocket endpoints, on whichever front serves the API (front.ts).
 *
 * Heartbeats (`/v1/entities/{id}/ws` for one entity, `/v1/heartbeat` multiplexing many): the node
 * answers every heartbeat with one small text frame,
 *   {"type":"ack","agent_id":…,"timestamp":<as sent>,"status":"active"}
 *   {"type":"error","error":<code>,"message":…,"agent_id"?:…,"field"?:…}
 * A bad frame never closes the socket; abuse does: frames over the size cap (the front closes with
 * 1009), a connection that keeps sending faster than its rate after warnings, and one whose last
 * 50 heartbeats were all rejected (both closed with 1008).
 *
 * Admission to verification. A signature check is the one costly step, and a flood of invalid
 * signatures can offer more than the node can verify (from connections within their rates, or
 * reopened as fast as they are closed). So connections are told apart by their record: one that
 * has had a heartbeat accepted and none rejected for `probationMs` is proven; any other is on
 * probation. Proven connections share a large budget of heartbeats awaiting verification; those on
 * probation a small one, `probationInFlight`, of which one remote address may hold
 * `probationInFlightPerAddress` (all three are `liveness.*` settings). A heartbeat over its budget is answered `overloaded` at
 * once, and the rest of its array frame is dropped. A flood thus gets the verification capacity
 * the proven load leaves, and waits in front of a valid heartbeat for at most the small budget.
 *
 * Activity (`/v1/ws/activity`): a greeting `{type:"hello", timestamp, data:{registry_id, …}}`,
 * then every bus event as `{type, timestamp, data}`. Each subscriber has a queue of
 * `queueLimit` frames on top of a small socket buffer; when both are full its events are dropped
 * (and counted in an `events_dropped` frame once it catches up), so a slow reader never slows
 * the bus or the other subscribers.
 */
import type { Logger } from 'pino'
import { RegistryError } from '../errors.js'
import { ID_PATTERNS } from '../identity/ids.js'
import type { EventBus, RegistryEvent } from '../events/bus.js'
import type { VerifyPriority } from '../identity/verify-pool.js'
import type { LivenessService } from '../services/liveness/liveness.js'
import type { SocketConnection, SocketEndpoint } from '../http/front.js'
import { parseJsonBytes } from '../wire/json.js'

export interface HeartbeatSocketLimits {
  /** Entities one multiplexed connection may carry. */
  maxEntitiesPerConnection: number
  /** Frames per second one entity's heartbeats may use on average (bursts up to 10 × this). */
  framesPerSecondPerEntity: number
  /** Bytes of one frame on the per-entity socket (× maxEntitiesPerConnection on the multiplexed one). */
  maxFrameBytes: number
  /** How long a connection stays on probation after a rejected heartbeat (and before its first accepted one). */
  probationMs: number
  /**
   * Heartbeats of connections on probation awaiting verification, for the node and for one remote
   * address: the most a flood can add to a proven connection's wait (128 is about 17 ms of one worker).
   */
  probationInFlight: number
  probationInFlightPerAddress: number
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
  /** Heartbeats accepted on this connection. */
  accepted: number
  /** When a heartbeat of this connection was last rejected (performance.now()). */
  rejectedAt: number
  /** Its peer's address, for the per-address budget of connections on probation. */
  address: string
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
const OVERLOADED = new RegistryError('overloaded').toBody()
const IDLE_TIMEOUT_SECONDS = 120

type HeartbeatSocket = SocketConnection<HeartbeatConnection>
type ActivitySocket = SocketConnection<ActivityConnection>

export class Sockets {
  private readonly activity = new Set<ActivitySocket>()
  private readonly heartbeatSockets = new Set<HeartbeatSocket>()
  private inFlight = 0
  private probationInFlight = 0
  private readonly probationByAddress = new Map<string, number>()
  private unsubscribe: (() => void) | null = null
  droppedEvents = 0
  /** Heartbeat frames since start by outcome: `accepted`, or the error code they were answered. */
  readonly heartbeats = new Map<string, number>()

  constructor(private readonly c: SocketComponents) {}

  /** The endpoints, for the front; subscribes to the bus. */
  endpoints(): ReadonlyArray<SocketEndpoint<unknown>> {
    const { limits } = this.c
    const heartbeat = {
      idleTimeoutSeconds: IDLE_TIMEOUT_SECONDS,
      open: (ws: HeartbeatSocket) => {
        this.heartbeatSockets.add(ws)
      },
      message: (ws: HeartbeatSocket, message: Buffer) => this.onHeartbeatMessage(ws, message),
      close: (ws: HeartbeatSocket) => {
        ws.data.closed = true
        this.heartbeatSockets.delete(ws)
      }
    }
    const perEntity: SocketEndpoint<HeartbeatConnection> = {
      ...heartbeat,
      path: '/v1/entities/:id/ws',
      maxPayloadBytes: limits.maxFrameBytes,
      upgrade: ({ params, remoteAddress }) => {
        this.refuseWhenClosed()
        const entityId = params.id ?? ''
        if (!ID_PATTERNS.entity.test(entityId))
          throw new RegistryError(
            'invalid_id',
            'The path names no entity ID: expected zns:<32 hex> or zns:svc:<32 hex>.',
            'entity_id'
          )
        this.c.liveness.check(entityId)
        return this.heartbeatConnection(entityId, remoteAddress)
      }
    }
    const multiplexed: SocketEndpoint<HeartbeatConnection> = {
      ...heartbeat,
      path: '/v1/heartbeat',
      maxPayloadBytes: limits.maxFrameBytes * limits.maxEntitiesPerConnection,
      upgrade: ({ remoteAddress }) => {
        this.refuseWhenClosed()
        return this.heartbeatConnection(undefined, remoteAddress)
      }
    }
    const activity: SocketEndpoint<ActivityConnection> = {
      path: '/v1/ws/activity',
      maxPayloadBytes: 1024,
      idleTimeoutSeconds: IDLE_TIMEOUT_SECONDS,
      upgrade: () => {
        this.refuseWhenClosed()
        return { queue: [], dropped: 0, closed: false }
      },
      open: ws => {
        this.activity.add(ws)
        ws.send(JSON.stringify({ type: 'hello', timestamp: new Date().toISOString(), data: this.c.greeting() }))
      },
      // The stream is read-only: anything a subscriber sends is ignored.
      message: () => {},
      drain: ws => this.drain(ws),
      close: ws => {
        ws.data.closed = true
        this.activity.delete(ws)
      }
    }
    this.unsubscribe ??= this.c.bus.subscribe(event => this.broadcast(event))
    return [perEntity, multiplexed, activity] as ReadonlyArray<SocketEndpoint<unknown>>
  }

  /** Closes every socket (shutdown). */
  close(): void {
    this.unsubscribe?.()
    for (const ws of [...this.activity, ...this.heartbeatSockets]) {
      if (!ws.data.closed) ws.end(1001, 'node shutting down')
    }
  }

  get connections(): { heartbeat: number; activity: number } {
    return { heartbeat: this.heartbeatSockets.size, activity: this.activity.size }
  }

  private heartbeatConnection(entityId: string | undefined, address: string): HeartbeatConnection {
    // A new connection may send two seconds' worth at once (at least 10 frames), not the full
    // burst: a flood that reopens every connection the node closes gains little from each.
    const tokens = Math.min(this.burst(entityId), Math.max(10, 2 * this.rate(entityId)))
    return {
      entityId,
      entities: new Set(),
      tokens,
      refilledAt: performance.now(),
      warnings: 0,
      failures: 0,
      inFlight: 0,
      accepted: 0,
      rejectedAt: -Infinity,
      address,
      closed: false
    }
  }

  private refuseWhenClosed(): void {
    if (this.c.closed()) throw new RegistryError('shutting_down')
  }

  private rate(entityId: string | undefined): number {
    const perEntity = this.c.limits.framesPerSecondPerEntity
    return entityId === undefined ? perEntity * this.c.limits.maxEntitiesPerConnection : perEntity
  }

  private burst(entityId: string | undefined): number {
    return this.rate(entityId) * 10
  }

  private onHeartbeatMessage(ws: HeartbeatSocket, message: Buffer): void {
    const conn = ws.data
    let parsed: unknown
    try {
      parsed = parseJsonBytes(message)
    } catch (err) {
      this.tally('heartbeat_invalid')
      this.reply(ws, {
        type: 'error',
        ...new RegistryError('heartbeat_invalid', `The frame is not valid JSON: ${(err as Error).message}.`).toBody()
      })
      return
    }
    // The multiplexed socket also takes an array of frames (one per entity).
    const frames = conn.entityId === undefined && Array.isArray(parsed) ? parsed : [parsed]
    for (const frame of frames) {
      if (!this.takeToken(ws, conn) || !this.handleFrame(ws, conn, frame)) return
    }
  }

  /** Token bucket per connection; a connection that keeps exceeding it after warnings is closed. */
  private takeToken(ws: HeartbeatSocket, conn: HeartbeatConnection): boolean {
    const now = performance.now()
    const rate = this.rate(conn.entityId)
    conn.tokens = Math.min(this.burst(conn.entityId), conn.tokens + ((now - conn.refilledAt) / 1000) * rate)
    conn.refilledAt = now
    if (conn.tokens >= 1) {
      conn.tokens -= 1
      return true
    }
    conn.warnings++
    this.tally('rate_limited')
    if (conn.warnings > MAX_WARNINGS) {
      conn.closed = true
      ws.end(1008, 'heartbeat rate exceeded')
      return false
    }
    this.reply(ws, {
      type: 'error',
      ...new RegistryError('rate_limited', `At most ${rate} heartbeat frames per second on this connection.`).toBody()
    })
    return false
  }

  /** Handles one heartbeat; false when the node is overloaded and the rest of the frame is dropped. */
  private handleFrame(ws: HeartbeatSocket, conn: HeartbeatConnection, frame: unknown): boolean {
    if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) {
      this.tally('heartbeat_invalid')
      this.reply(ws, { type: 'error', ...new RegistryError('heartbeat_invalid').toBody() })
      return true
    }
    const agentId = (frame as { agent_id?: unknown }).agent_id
    const named =
      typeof agentId === 'string'
        ? { agent_id: agentId }
        : conn.entityId !== undefined
          ? { agent_id: conn.entityId }
          : {}
    if (conn.entityId === undefined && typeof agentId === 'string' && !conn.entities.has(agentId)) {
      if (conn.entities.size >= this.c.limits.maxEntitiesPerConnection) {
        this.tally('too_many_entities')
        this.reply(ws, {
          type: 'error',
          ...new RegistryError(
            'too_many_entities',
            `One connection carries at most ${this.c.limits.maxEntitiesPerConnection} entities.`,
            'agent_id'
          ).toBody(),
          ...named
        })
        return true
      }
    }
    const admission = this.admit(conn)
    if (!admission) {
      this.tally('overloaded')
      this.reply(ws, { type: 'error', ...OVERLOADED, ...named })
      return false
    }
    const { settled, priority } = admission
    this.c.liveness.heartbeat(frame, conn.entityId, priority).then(
      ack => {
        settled()
        if (conn.entityId === undefined) conn.entities.add(ack.agent_id)
        conn.failures = 0
        conn.accepted++
        this.tally('accepted')
        this.reply(ws, ack)
      },
      (err: unknown) => {
        settled()
        const error = err instanceof RegistryError ? err : new RegistryError('internal_error')
        if (!(err instanceof RegistryError)) this.c.logger.error({ err }, 'heartbeat failed')
        this.tally(error.code)
        this.reply(ws, { type: 'error', ...error.toBody(), ...named })
        conn.rejectedAt = performance.now()
        // Every rejected signature cost a verification: a connection that sends only those goes.
        if (++conn.failures >= MAX_FAILURES_IN_A_ROW && !conn.closed) {
          conn.closed = true
          ws.end(1008, 'too many rejected heartbeats')
        }
      }
    )
    return true
  }

  /**
   * Takes a place among the heartbeats awaiting verification, by the connection's standing (see
   * the module comment): the function that gives it back and the priority of its verification,
   * or null when there is none.
   */
  private admit(conn: HeartbeatConnection): { settled: () => void; priority: VerifyPriority } | null {
    const connectionLimit =
      IN_FLIGHT_PER_ENTITY * (conn.entityId === undefined ? this.c.limits.maxEntitiesPerConnection : 1)
    if (conn.inFlight >= connectionLimit || this.inFlight >= MAX_IN_FLIGHT) return null
    const { probationMs, probationInFlight, probationInFlightPerAddress } = this.c.limits
    const proven = conn.accepted > 0 && performance.now() - conn.rejectedAt > probationMs
    if (proven) {
      conn.inFlight++
      this.inFlight++
      return {
        settled: () => {
          conn.inFlight--
          this.inFlight--
        },
        priority: 'normal'
      }
    }
    const byAddress = this.probationByAddress.get(conn.address) ?? 0
    if (this.probationInFlight >= probationInFlight || byAddress >= probationInFlightPerAddress) return null
    conn.inFlight++
    this.inFlight++
    this.probationInFlight++
    this.probationByAddress.set(conn.address, byAddress + 1)
    const settled = (): void => {
      conn.inFlight--
      this.inFlight--
      this.probationInFlight--
      const left = (this.probationByAddress.get(conn.address) ?? 1) - 1
      if (left === 0) this.probationByAddress.delete(conn.address)
      else this.probationByAddress.set(conn.address, left)
    }
    return { settled, priority: 'low' }
  }

  private tally(outcome: string): void {
    this.heartbeats.set(outcome, (this.heartbeats.get(outcome) ?? 0) + 1)
  }

  private reply(ws: HeartbeatSocket, body: object): void {
    if (!ws.data.closed) ws.send(JSON.stringify(body))
  }

  private broadcast(event: RegistryEvent): void {
    if (this.activity.size === 0) return
    const text = JSON.stringify({ type: event.type, timestamp: event.timestamp, data: event.data })
    for (const ws of this.activity) {
      const conn = ws.data
      if (conn.closed) continue
      if (conn.queue.length === 0 && ws.bufferedAmount() < SOCKET_HIGH_WATER) ws.send(text)
      else if (conn.queue.length < this.c.activityQueueLimit) conn.queue.push(text)
      else {
        conn.dropped++
        this.droppedEvents++
      }
    }
  }

  private drain(ws: ActivitySocket): void {
    const conn = ws.data
    while (conn.queue.length > 0 && ws.bufferedAmount() < SOCKET_HIGH_WATER) ws.send(conn.queue.shift() as string)
    if (conn.queue.length === 0 && conn.dropped > 0 && ws.bufferedAmount() < SOCKET_HIGH_WATER) {
      ws.send(
        JSON.stringify({ type: 'events_dropped', timestamp: new Date().toISOString(), data: { count: conn.dropped } })
      )
      conn.dropped = 0
    }
  }
}
