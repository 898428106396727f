/**
 * The heartbeat benchmark's valid load client: the entities' order and phases in the period, the
 * handlers of the valid sockets (an ack put on its beat, an error frame on the entity's oldest
 * unanswered beat, closes counted), the send loop of a segment's pre-signed beats, and what the
 * client saw: its own figures and the node's state of a few entities after the run.
 */
import WebSocket from 'ws'
import { seededRandom } from '../../lib/random.js'
import { report } from '../../lib/report.js'
import type { Settings } from './options.js'
import { markError, type PhaseLoop, type Segment } from './phases.js'
import { list } from './report.js'
import { plannedMs } from './signer-worker.js'
import type { Signers } from './signing.js'

/** The valid clients' side of a run: what they send, and what they received on every node in turn. */
export class ValidClient {
  private readonly idIndex: Map<string, number>
  /** Entity order[r] beats at r/N of the period, then every period. */
  private readonly order: number[]
  readonly offsets: Float64Array

  /** The segment being sent or drained, and the phase being sent. */
  seg: Segment | null = null
  currentPhase: string | null = null
  readonly errorsByPhase = new Map<string, Record<string, number>>()
  private strayFrames = 0
  private readonly validCloses: Record<string, number> = {}
  /** The node is being stopped: its sockets' closes are not counted. */
  closing = false
  private sendFailures = 0
  /** Entities whose state is checked after the run, with their last acknowledged beat (wall clock). */
  private readonly checked: number[]
  readonly lastBeat = new Map<number, { sentWall: number; ackWall: number }>()

  constructor(
    private readonly s: Settings,
    private readonly signers: Signers
  ) {
    const { N, periodMs, entitySockets, rest } = s
    this.idIndex = new Map(signers.ids.map((id, i) => [id, i]))
    const random = seededRandom(5)
    const order = Array.from({ length: N }, (_, i) => i)
    for (let i = N - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1))
      ;[order[i], order[j]] = [order[j]!, order[i]!]
    }
    this.order = order
    this.offsets = new Float64Array(N)
    order.forEach((e, r) => {
      this.offsets[e] = Math.round((r * periodMs) / N)
    })
    this.checked = [
      ...Array.from({ length: 5 }, (_, i) => Math.floor((i * entitySockets) / 5)),
      ...Array.from({ length: 5 }, (_, i) => entitySockets + Math.floor((i * rest) / 5))
    ].filter(e => e < N)
  }

  readonly onValid = (data: Buffer): void => {
    const now = performance.now()
    const m = JSON.parse(data.toString()) as { type: string; agent_id?: string; timestamp?: string; error?: string }
    const seg = this.seg
    if (m.type === 'ack') {
      const e = this.idIndex.get(m.agent_id!)
      if (e !== undefined && seg) {
        const k = Math.round((Date.parse(m.timestamp!) - seg.wallT0 - this.offsets[e]!) / this.s.periodMs)
        const index = e * seg.beats + k
        if (k >= 0 && k < seg.beats && seg.sendTimes[index]! > 0 && seg.ackTimes[index] === 0) {
          seg.ackTimes[index] = now
          // An error frame was put on this beat, but it answered another one.
          const misplaced = seg.errorTimes[index]!
          if (misplaced > 0) {
            seg.errorTimes[index] = 0
            markError(seg, e, misplaced)
          }
          return
        }
      }
      this.strayFrames++
    } else {
      const key = this.currentPhase ?? 'between_segments'
      const bucket = this.errorsByPhase.get(key) ?? {}
      this.errorsByPhase.set(key, bucket)
      bucket[m.error ?? 'unknown'] = (bucket[m.error ?? 'unknown'] ?? 0) + 1
      const e = m.agent_id === undefined ? undefined : this.idIndex.get(m.agent_id)
      if (e !== undefined && seg) markError(seg, e, now)
    }
  }

  attach(ws: WebSocket): void {
    ws.on('message', this.onValid)
    ws.on('error', () => {})
    ws.on('close', (code, reason) => {
      if (this.closing) return
      const key = `${code}${reason.length ? ` "${reason.toString()}"` : ''}`
      this.validCloses[key] = (this.validCloses[key] ?? 0) + 1
    })
  }

  /**
   * Sends every beat of the segment at its planned time (a 1 ms timer sends whatever is due) on its
   * entity's socket; `phaseLoop` is the current phase's event loop figures, where lateness goes.
   */
  sendBeats(
    current: Segment,
    frames: readonly string[],
    socketOf: readonly WebSocket[],
    phaseLoop: () => PhaseLoop | undefined
  ): Promise<void> {
    const { N, periodMs } = this.s
    const { durationMs: D, beats: K, T0 } = current
    const total = N * K
    let j = 0
    return new Promise<void>(resolve => {
      const tick = (): void => {
        const elapsed = performance.now() - T0
        while (j < total) {
          const k = Math.floor(j / N)
          const e = this.order[j % N]!
          const due = plannedMs(this.offsets[e]!, k, periodMs)
          if (due > elapsed) break
          if (due >= D) {
            j = total
            break
          }
          const ws = socketOf[e]!
          const index = e * K + k
          if (ws.readyState === WebSocket.OPEN) {
            ws.send(frames[index]!)
            const sent = performance.now()
            current.sendTimes[index] = sent
            const l = phaseLoop()
            const late = sent - (T0 + due)
            if (l) {
              if (late > l.lateMax) l.lateMax = late
              if (late > 10) l.late10++
            }
          } else this.sendFailures++
          j++
        }
        if (j >= total) resolve()
        else setTimeout(tick, 1)
      }
      tick()
    })
  }

  /** Beats of the segment sent and answered neither with an ack nor with an error frame. */
  unacked(current: Segment): number {
    const total = this.s.N * current.beats
    let n = 0
    for (let i = 0; i < total; i++)
      if (current.sendTimes[i]! > 0 && current.ackTimes[i] === 0 && current.errorTimes[i] === 0) n++
    return n
  }

  /** Each checked entity's last acknowledged beat, for the state check after the run. */
  keepLastBeats(current: Segment): void {
    const { beats: K, T0 } = current
    for (const e of this.checked) {
      for (let k = K - 1; k >= 0; k--) {
        const ack = current.ackTimes[e * K + k]!
        if (ack === 0) continue
        const toWall = (perf: number) => current.wallAtT0 + (perf - T0)
        this.lastBeat.set(e, { sentWall: toWall(current.sendTimes[e * K + k]!), ackWall: toWall(ack) })
        break
      }
    }
  }

  // -- After the run

  /** What the valid clients saw outside the phases. */
  reportClient(): void {
    report('valid_send_skipped', this.sendFailures, 'heartbeats (socket not open)')
    report('valid_socket_closes', Object.keys(this.validCloses).length ? list(this.validCloses) : 0, '')
    report(
      'stray_frames',
      this.strayFrames,
      '(acks that matched no beat of the current segment: late acks of a segment that did not drain)'
    )
    const between = this.errorsByPhase.get('between_segments')
    if (between) report('valid_errors_between_segments', list(between), '')
  }

  /**
   * State changes: the last node's view of a few entities after the run (no beats in flight, unless
   * the last segment did not drain); `nodeUrl` is the last node's.
   */
  async checkState(nodeUrl: string): Promise<void> {
    const { ids } = this.signers
    const checked = this.checked
    let active = 0
    let matches = 0
    const mismatches: string[] = []
    for (const e of checked) {
      const res = await fetch(`${nodeUrl}/v1/entities/${encodeURIComponent(ids[e]!)}`)
      const body = (await res.json()) as { status?: string; last_heartbeat?: string | null }
      if (body.status === 'active') active++
      const last = this.lastBeat.get(e)
      if (!last || !body.last_heartbeat) {
        mismatches.push(`${ids[e]}: no acknowledged beat or no last_heartbeat`)
        continue
      }
      const seen = Date.parse(body.last_heartbeat)
      if (seen >= last.sentWall - 20 && seen <= last.ackWall + 20) matches++
      else
        mismatches.push(
          `${ids[e]}: last_heartbeat ${body.last_heartbeat}, its last acknowledged beat was sent ${new Date(last.sentWall).toISOString()} and acknowledged ${new Date(last.ackWall).toISOString()}`
        )
    }
    report('state_check_active', `${active}/${checked.length}`, 'entities with status active (GET /v1/entities/{id})')
    report(
      'state_check_last_heartbeat',
      `${matches}/${checked.length}`,
      'entities whose last_heartbeat lies between the send and the ack of their last acknowledged beat (±20 ms)'
    )
    for (const m of mismatches) console.error(`  state check: ${m}`)
  }
}
