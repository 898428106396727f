/**
 * `/zns/bloom/1.0.0` (protocols/README.md): each node pushes the Bloom filter of its home records'
 * terms to every peer that speaks the protocol: once identify shows the peer does (on each new
 * connection), and again whenever the filter is rebuilt. The receiver keeps the newest filter of
 * each connected peer in memory, answers with the version it now holds, and forgets the filter when
 * the peer's last connection closes. A push that failed is retried every `retryIntervalMs`.
 *
 * Why push, point to point (docs/decisions.md, "Term filters are pushed to peers"): only direct
 * peers are ever asked, so a gossipsub topic would flood every node's versions across the whole
 * mesh (and make each receiver verify a signature per announcement) for nodes that never use them.
 */
import type { IdentifyResult, PeerId, Stream, Connection } from '@libp2p/interface'
import { lpStream } from '@libp2p/utils'
import type { Logger } from 'pino'
import { FEDERATION_LIMITS, TermFilterAck, TermFilterMessage } from '../wire/federation.js'
import { decodeJson, encodeJson } from './frames.js'
import type { MeshLibp2p } from './libp2p-node.js'
import { listenTo } from './listen.js'
import { registryKeyOf } from './peers.js'

export const BLOOM_PROTOCOL = '/zns/bloom/1.0.0'

const PUSH_TIMEOUT_MS = 5000
const STREAMS_PER_CONNECTION = 2

/** This node's own filter (the search service's home term summary). */
export interface LocalTermFilter {
  current(): TermFilterMessage | null
  /** Called after each rebuild; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void
}

export interface BloomExchangeOptions {
  libp2p: MeshLibp2p
  logger: Logger
  local: LocalTermFilter
  /** Pushes that failed are retried this often (default 30 s). */
  retryIntervalMs?: number
}

export class BloomExchange {
  /** The newest filter each connected peer pushed. */
  private readonly filters = new Map<string, TermFilterMessage>()
  /** Peers that speak the protocol (from identify), with the version they acknowledged. */
  private readonly capable = new Map<string, { peerId: PeerId; acked: number | null }>()
  private readonly pushing = new Map<string, Promise<void>>()
  private readonly detach: Array<() => void> = []
  private readonly shutdown = new AbortController()
  private retryTimer: NodeJS.Timeout | null = null
  private stopped = false
  /** Filters received and pushes acknowledged (tests, logs). */
  received = 0
  pushed = 0

  constructor(private readonly o: BloomExchangeOptions) {}

  async start(): Promise<void> {
    const { libp2p } = this.o
    await libp2p.handle(BLOOM_PROTOCOL, (stream, connection) => this.receive(stream, connection), {
      maxInboundStreams: STREAMS_PER_CONNECTION,
      maxOutboundStreams: STREAMS_PER_CONNECTION
    })
    this.detach.push(
      listenTo(libp2p, 'peer:identify', evt => this.identified(evt.detail)),
      listenTo(libp2p, 'peer:disconnect', evt => this.forget(evt.detail))
    )
    this.detach.push(this.o.local.subscribe(() => this.pushAll()))
    this.retryTimer = setInterval(() => this.pushAll(), this.o.retryIntervalMs ?? 30_000).unref()
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.shutdown.abort()
    for (const off of this.detach.splice(0)) off()
    if (this.retryTimer) clearInterval(this.retryTimer)
    await Promise.allSettled([...this.pushing.values()])
    await this.o.libp2p.unhandle(BLOOM_PROTOCOL).catch(() => {})
    this.filters.clear()
    this.capable.clear()
  }

  /** The filter a connected peer last pushed, if any. */
  filterOf(peerId: string): TermFilterMessage | null {
    return this.filters.get(peerId) ?? null
  }

  /** Pushes our filter to every capable peer that has not acknowledged its current version. */
  pushAll(): void {
    const version = this.o.local.current()?.version
    if (version === undefined || this.stopped) return
    for (const [key, peer] of this.capable) if (peer.acked !== version) void this.push(key)
  }

  private identified(result: IdentifyResult): void {
    if (this.stopped || !result.protocols.includes(BLOOM_PROTOCOL)) return
    const key = result.peerId.toString()
    // A new connection (identify runs on each) may mean the peer restarted and lost our filter.
    this.capable.set(key, { peerId: result.peerId, acked: null })
    void this.push(key)
  }

  private forget(peerId: PeerId): void {
    const key = peerId.toString()
    this.filters.delete(key)
    this.capable.delete(key)
  }

  /** One push at a time per peer; a push started while one runs follows it (the filter may have changed). */
  private push(key: string): Promise<void> {
    const previous = this.pushing.get(key) ?? Promise.resolve()
    const next = previous
      .then(() => this.pushNow(key))
      .finally(() => {
        if (this.pushing.get(key) === next) this.pushing.delete(key)
      })
    this.pushing.set(key, next)
    return next
  }

  private async pushNow(key: string): Promise<void> {
    const peer = this.capable.get(key)
    const message = this.o.local.current()
    if (!peer || !message || peer.acked === message.version || this.stopped) return
    const connection = this.o.libp2p.getConnections(peer.peerId).find(c => c.status === 'open')
    if (!connection) return
    const signal = AbortSignal.any([this.shutdown.signal, AbortSignal.timeout(PUSH_TIMEOUT_MS)])
    let stream: Stream | undefined
    try {
      stream = await connection.newStream(BLOOM_PROTOCOL, { signal })
      const lp = lpStream(stream, { maxDataLength: FEDERATION_LIMITS.smallFrameBytes })
      await lp.write(encodeJson(message), { signal })
      const ack = decodeJson(TermFilterAck, (await lp.read({ signal })).subarray(), 'filter acknowledgement')
      await stream.close({ signal }).catch(() => {})
      if (ack.error !== undefined) throw new Error(`${ack.error}: ${ack.message ?? ''}`)
      peer.acked = ack.version ?? null
      this.pushed++
    } catch (err) {
      this.o.logger.debug({ err, peer_id: key }, 'term filter push failed; retried later')
      stream?.abort(err as Error)
    }
  }

  private async receive(stream: Stream, connection: Connection): Promise<void> {
    const key = connection.remotePeer.toString()
    const signal = AbortSignal.any([this.shutdown.signal, AbortSignal.timeout(PUSH_TIMEOUT_MS)])
    const lp = lpStream(stream, { maxDataLength: FEDERATION_LIMITS.filterFrameBytes })
    try {
      let ack: TermFilterAck
      try {
        const message = decodeJson(TermFilterMessage, (await lp.read({ signal })).subarray(), 'term filter')
        ack = this.accept(key, connection.remotePeer, message)
      } catch (err) {
        if (signal.aborted) throw err
        ack = { error: 'validation_failed', message: (err as Error).message.slice(0, 500) }
      }
      await lp.write(encodeJson(ack), { signal })
      await stream.close({ signal })
    } catch (err) {
      this.o.logger.debug({ err, peer_id: key }, 'term filter from peer failed')
      stream.abort(err as Error)
    }
  }

  /** Keeps the message if it is the peer's own and newer than what we hold. */
  private accept(key: string, peerId: PeerId, message: TermFilterMessage): TermFilterAck {
    if (this.stopped) return { error: 'shutting_down', message: 'This node is shutting down.' }
    const own = registryKeyOf(peerId)
    if (!own || own.registryId !== message.registry_id)
      return {
        error: 'validation_failed',
        message: 'registry_id is not the ID of the key this connection authenticated'
      }
    // Checked here, so a filter that would not decode never reaches the search service.
    if (Buffer.byteLength(message.filter, 'base64') !== message.bits / 8)
      return { error: 'validation_failed', message: `filter: expected ${message.bits / 8} bytes of base64` }
    const held = this.filters.get(key)
    if (!held || held.version < message.version) {
      this.filters.set(key, message)
      this.received++
    }
    return { version: this.filters.get(key)?.version ?? message.version }
  }
}
