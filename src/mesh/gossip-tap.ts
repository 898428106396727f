/**
 * What gossipsub does not report by itself, taken from the two hooks it offers: the message-ID
 * function (called for every copy received, duplicates included, and for each publish) and the
 * metrics register (RPC bytes in and out). It counts copies, applies the injected inbound loss
 * (faults.ts) and writes the propagation trace (`p2p.trace_file`, JSON lines):
 *
 *   {"t":…,"event":"publish","id":…,"kind":…,"subject":…,"bytes":…}   this node published an operation
 *   {"t":…,"event":"copy","id":…}                                     a copy arrived (first or duplicate)
 *   {"t":…,"event":"lost","id":…}                                     a copy dropped by injected loss
 *   {"t":…,"event":"receive","id":…,"from":…,"origin":…,"kind":…,"subject":…,"accepted_at":…,"outcome":…}
 *                                                                     first copy, after validation
 *
 * A batch of status changes (`entity.status.batch`, subject the origin's registry ID) also lists
 * the entities it names in `subjects`.
 *
 * `t` is the wall clock in epoch milliseconds with microsecond decimals, so the traces of nodes on
 * one machine compare directly; `id` is the gossip message ID (hex), the same on every node.
 */
import { hash, randomBytes } from 'node:crypto'
import { createWriteStream, type WriteStream } from 'node:fs'
import type { GossipsubOpts, Message } from '@libp2p/gossipsub'
import type { MeshFaults } from './faults.js'
import { bufferView } from '../util/buffer-view.js'

export interface GossipCounters {
  /** Copies received, first and duplicate (lost ones included). */
  copies: number
  /** Copies dropped by injected loss. */
  lost: number
  /** First copies validated (applied, stale, invalid …). */
  first: number
  /** Gossipsub RPC bytes sent and received (messages, control and subscriptions). */
  bytesSent: number
  bytesReceived: number
}

/** Gossipsub does not export the type of its metrics register. */
type MetricsRegister = NonNullable<GossipsubOpts['metricsRegister']>

export type TraceEvent = Record<string, string | number | null | string[]>

const hex = (id: Uint8Array): string => bufferView(id).toString('hex')

/** Content-addressed message IDs: an operation is one message however many nodes publish it. */
export function contentId(data: Uint8Array): Uint8Array {
  return hash('sha256', data, 'buffer').subarray(0, 20)
}

/** Epoch milliseconds with sub-millisecond decimals. */
const preciseNow = (): number => Number((performance.timeOrigin + performance.now()).toFixed(3))

export class GossipTap {
  readonly counters: GossipCounters = { copies: 0, lost: 0, first: 0, bytesSent: 0, bytesReceived: 0 }
  private readonly publishing = new Set<string>()
  private readonly lostCopies = new WeakSet<Message>()
  private trace: WriteStream | null = null
  private sink: ((event: TraceEvent) => void) | null = null

  /** `trace`: a file to append JSON lines to, or a function given each event (a simulation's collector). */
  constructor(
    private readonly faults: MeshFaults,
    trace: string | ((event: TraceEvent) => void) = ''
  ) {
    if (typeof trace === 'function') {
      this.sink = trace
    } else if (trace) {
      const stream = createWriteStream(trace, { flags: 'a' })
      this.trace = stream
      this.sink = event => stream.write(`${JSON.stringify(event)}\n`)
      // A trace that cannot be written (a full disk) ends; the node goes on.
      stream.on('error', () => {
        this.trace = null
        this.sink = null
      })
    }
  }

  /**
   * A simulation's time for a node to validate and store a received operation (virtual ms per
   * first copy): what the CPU and the disk take on a real node and nothing on virtual time.
   */
  processingMs: (() => number) | null = null

  /** Waits out the processing time of one first copy, if a simulation set one. */
  async process(): Promise<void> {
    const ms = this.processingMs?.() ?? 0
    if (ms > 0) await new Promise(resolve => setTimeout(resolve, ms))
  }

  get tracing(): boolean {
    return this.sink !== null
  }

  /**
   * Gossipsub's `msgIdFn`, called for each copy received before its duplicate check. Injected
   * latency waits here, so every copy (duplicates too) arrives late, as over a slow link. A lost
   * copy gets a random ID, so the real one stays unseen and a later copy is accepted.
   */
  readonly messageId = (message: Message): Uint8Array | Promise<Uint8Array> => {
    const id = contentId(message.data)
    // Called for every copy: the hex form only when something needs it.
    if (this.publishing.size > 0 && this.publishing.delete(hex(id))) return id
    const delayMs = this.faults.delayMs
    if (delayMs > 0) return new Promise(resolve => setTimeout(() => resolve(this.arrived(message, id)), delayMs))
    return this.arrived(message, id)
  }

  private arrived(message: Message, id: Uint8Array): Uint8Array {
    this.counters.copies++
    if (this.faults.loses()) {
      this.counters.lost++
      this.lostCopies.add(message)
      if (this.sink) this.record({ event: 'lost', id: hex(id) })
      return randomBytes(20)
    }
    if (this.sink) this.record({ event: 'copy', id: hex(id) })
    return id
  }

  /** Whether a message reaching the validator is a copy dropped by injected loss. */
  isLost(message: Message): boolean {
    return this.lostCopies.has(message)
  }

  /** Called before publishing `data`: its ID call is a publish, not a receipt. Returns the ID (hex). */
  willPublish(data: Uint8Array): string {
    const key = hex(contentId(data))
    this.publishing.add(key)
    // A publish that fails before computing its ID must not leak an entry.
    if (this.publishing.size > 10_000) this.publishing.delete(this.publishing.values().next().value as string)
    return key
  }

  record(event: TraceEvent): void {
    this.sink?.({ t: preciseNow(), ...event })
  }

  /** Gossipsub's metrics register: only the RPC byte totals are kept; other metrics cost nothing. */
  readonly metricsRegister: MetricsRegister = {
    gauge: (config: { name: string }) => {
      const field =
        config.name === 'gossipsub_rpc_sent_bytes_total'
          ? 'bytesSent'
          : config.name === 'gossipsub_rpc_recv_bytes_total'
            ? 'bytesReceived'
            : null
      const counters = this.counters
      return {
        inc: (a?: unknown, b?: unknown) => {
          if (field) counters[field] += typeof a === 'number' ? a : typeof b === 'number' ? b : 1
        },
        set: () => {},
        addCollect: () => {}
      }
    },
    histogram: () => ({ startTimer: () => () => {}, observe: () => {}, reset: () => {} }),
    avgMinMax: () => ({ set: () => {} })
  } as unknown as MetricsRegister

  async close(): Promise<void> {
    const trace = this.trace
    this.trace = null
    this.sink = null
    if (trace) await new Promise<void>(resolve => trace.end(resolve))
  }
}
