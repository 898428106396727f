/**
 * Keeps an entity's heartbeat WebSocket open to its registry: a signed heartbeat at once and then
 * every interval; on a close or error it reconnects after a backoff that doubles from 1 s to 30 s
 * (with jitter, so many entities do not reconnect in step).
 *
 * Frame forms on `/v1/entities/{id}/ws`:
 *   deployed (default): {timestamp, signature over the timestamp}, second precision
 *   spec:               {agent_id, timestamp, signature over agent_id followed by timestamp}
 */
import WebSocket from 'ws'
import { sign, type KeyPair } from '../identity/keys.js'

export type HeartbeatForm = 'deployed' | 'spec'

export interface HeartbeatOptions {
  registryUrl: string
  entityId: string
  keyPair: KeyPair
  form: HeartbeatForm
  intervalMs: number
  /** Called with each acknowledgement's time (ISO 8601). */
  onAck?: (at: string) => void
  /** Called with each error frame or connection failure. */
  onError?: (message: string) => void
}

const MIN_BACKOFF_MS = 1_000
const MAX_BACKOFF_MS = 30_000

/** One signed heartbeat frame as of `now` (exported for the simulation's entities, which have no socket). */
export function heartbeatFrame(
  entityId: string,
  keyPair: KeyPair,
  form: HeartbeatForm,
  now: Date
): Record<string, string> {
  if (form === 'spec') {
    const timestamp = now.toISOString()
    return { agent_id: entityId, timestamp, signature: sign(keyPair, entityId + timestamp) }
  }
  const timestamp = now.toISOString().replace(/\.\d{3}Z$/, 'Z')
  return { timestamp, signature: sign(keyPair, timestamp) }
}

export class HeartbeatClient {
  private socket: WebSocket | null = null
  private beatTimer: NodeJS.Timeout | null = null
  private retryTimer: NodeJS.Timeout | null = null
  private backoffMs = MIN_BACKOFF_MS
  private stopped = true
  /** Heartbeats acknowledged since start. */
  acks = 0
  lastAck: string | null = null

  constructor(private readonly o: HeartbeatOptions) {}

  start(): void {
    if (!this.stopped) return
    this.stopped = false
    this.connect()
  }

  /** Whether a socket is open now. */
  get connected(): boolean {
    return this.socket?.readyState === WebSocket.OPEN
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.beatTimer) clearInterval(this.beatTimer)
    if (this.retryTimer) clearTimeout(this.retryTimer)
    const socket = this.socket
    this.socket = null
    if (!socket || socket.readyState === WebSocket.CLOSED) return
    await new Promise<void>(resolve => {
      const done = setTimeout(() => {
        socket.terminate()
        resolve()
      }, 1_000)
      socket.once('close', () => {
        clearTimeout(done)
        resolve()
      })
      socket.close(1000, 'entity stopping')
    })
  }

  /** Sends one heartbeat now (when connected). */
  beat(): void {
    if (this.socket?.readyState !== WebSocket.OPEN) return
    this.socket.send(JSON.stringify(this.frame(new Date())))
  }

  private frame(now: Date): Record<string, string> {
    return heartbeatFrame(this.o.entityId, this.o.keyPair, this.o.form, now)
  }

  private connect(): void {
    const url = `${this.o.registryUrl.replace(/^http/, 'ws').replace(/\/+$/, '')}/v1/entities/${encodeURIComponent(this.o.entityId)}/ws`
    const socket = new WebSocket(url)
    this.socket = socket
    socket.on('open', () => {
      this.backoffMs = MIN_BACKOFF_MS
      this.beat()
      this.beatTimer = setInterval(() => this.beat(), this.o.intervalMs)
    })
    socket.on('message', data => {
      let frame: { type?: string; error?: string; message?: string }
      try {
        frame = JSON.parse(data.toString()) as typeof frame
      } catch {
        return
      }
      if (frame.type === 'ack') {
        this.acks++
        this.lastAck = new Date().toISOString()
        this.o.onAck?.(this.lastAck)
      } else if (frame.type === 'error') {
        this.o.onError?.(`${frame.error}: ${frame.message}`)
      }
    })
    socket.on('unexpected-response', (_req, res) => {
      this.o.onError?.(`heartbeat socket refused: HTTP ${res.statusCode}`)
      socket.terminate()
    })
    socket.on('error', err => {
      if (!this.stopped) this.o.onError?.(`heartbeat socket: ${err.message}`)
    })
    socket.on('close', () => {
      if (this.beatTimer) clearInterval(this.beatTimer)
      this.beatTimer = null
      if (this.socket === socket) this.socket = null
      if (this.stopped) return
      const delay = this.backoffMs * (0.5 + Math.random() / 2)
      this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2)
      this.retryTimer = setTimeout(() => this.connect(), delay).unref()
    })
  }
}
