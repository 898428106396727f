/**
 * Gossip of operations over gossipsub (protocols/README.md, "Gossip"). The node publishes every
 * operation it accepts on the topic of its kind; each operation received is validated before
 * gossipsub may forward it, and applied in the same step:
 *
 * - size and schema, then age: an operation older than `maxAgeMs` is ignored (not forwarded; sync
 *   carries it). Gossipsub forwards messages unchanged, so the spec's 10-hop bound cannot be
 *   counted; a node forwards a message only within its message cache window (5 heartbeats of 1 s),
 *   so 10 hops take at most about 50 s, and the age bound of 60 s stands in for the hop bound.
 * - deduplication over 5 minutes: gossipsub's seen cache (`seenTTL`), keyed by a hash of the bytes,
 *   so the same operation reaching a node by two paths is applied once.
 * - at most `maxPerPeerPerSecond` (100) messages per second from one forwarding peer: beyond it
 *   messages are ignored.
 * - then `apply`: the origin's seal and the owner's signature are verified, and the operation is
 *   applied (last writer wins). An invalid one is rejected, which gossipsub's peer scoring charges
 *   to the peer that forwarded it; valid ones, applied or already held, are accepted.
 */
import { TopicValidatorResult, type GossipSub, type Message } from '@libp2p/gossipsub'
import type { Logger } from 'pino'
import type { EventBus } from '../events/bus.js'
import type { Operation, OperationKind } from '../store/records.js'
import { decodeOperation, encodeOperation, OPERATION_LIMITS } from '../wire/operations.js'
import { contentId, type GossipTap } from './gossip-tap.js'

const hexId = (data: Uint8Array): string => Buffer.from(contentId(data)).toString('hex')

/** Version 2: unsigned gossipsub messages (StrictNoSign); nodes on version 1 topics (StrictSign) and these do not meet, and sync still brings them together. */
export const GOSSIP_TOPICS = {
  entities: '/zns/ops/entities/2',
  tombstones: '/zns/ops/tombstones/2',
  status: '/zns/ops/status/2',
  identities: '/zns/ops/identities/2'
} as const

export function topicOf(kind: OperationKind): string {
  if (kind === 'entity.register' || kind === 'entity.update') return GOSSIP_TOPICS.entities
  if (kind === 'entity.deregister' || kind === 'developer.deregister') return GOSSIP_TOPICS.tombstones
  if (kind === 'entity.status') return GOSSIP_TOPICS.status
  return GOSSIP_TOPICS.identities
}

/** What applying an operation came to; errors (invalid operations) are thrown. */
export type GossipApply = (op: Operation) => Promise<'applied' | 'stale' | 'deferred' | 'unsupported'>

export interface GossipOptions {
  pubsub: GossipSub
  apply: GossipApply
  bus: EventBus
  logger: Logger
  maxAgeMs?: number
  maxPerPeerPerSecond?: number
  now?: () => number
  /** Copies, bytes and the trace (gossip-tap.ts). */
  tap: GossipTap
}

export interface GossipStats {
  published: number
  received: Record<'applied' | 'stale' | 'deferred' | 'unsupported' | 'invalid' | 'too_old' | 'rate_limited', number>
}

export class OperationGossip {
  readonly stats: GossipStats = { published: 0, received: { applied: 0, stale: 0, deferred: 0, unsupported: 0, invalid: 0, too_old: 0, rate_limited: 0 } }
  /** Times of recent messages (published and received), for the announcements-per-minute figure. */
  private readonly recent: number[] = []
  private readonly buckets = new Map<string, { tokens: number; at: number }>()
  private readonly maxAgeMs: number
  private readonly perPeer: number
  private readonly now: () => number

  constructor(private readonly o: GossipOptions) {
    this.maxAgeMs = o.maxAgeMs ?? 60_000
    this.perPeer = o.maxPerPeerPerSecond ?? 100
    this.now = o.now ?? Date.now
  }

  start(): void {
    for (const topic of Object.values(GOSSIP_TOPICS)) {
      this.o.pubsub.topicValidators.set(topic, (peer, message) => this.validate(peer.toString(), message))
      this.o.pubsub.subscribe(topic)
    }
  }

  stop(): void {
    for (const topic of Object.values(GOSSIP_TOPICS)) {
      this.o.pubsub.topicValidators.delete(topic)
      this.o.pubsub.unsubscribe(topic)
    }
  }

  /** Publishes operations this node accepted (after their commit). Never throws: sync repairs what gossip misses. */
  publish(ops: readonly Operation[]): void {
    for (const op of ops) {
      const data = encodeOperation(op)
      const id = this.o.tap.willPublish(data)
      this.o.tap.record({ event: 'publish', id, kind: op.kind, subject: op.subject, bytes: data.byteLength })
      this.o.pubsub.publish(topicOf(op.kind), data).then(result => {
        this.stats.published++
        this.count()
        this.o.bus.publish('gossip_outgoing', { kind: op.kind, subject: op.subject, recipients: result.recipients.length, bytes: data.byteLength })
      }, (err: unknown) => this.o.logger.debug({ err, kind: op.kind, subject: op.subject }, 'gossip publish failed'))
    }
  }

  /** Gossip messages in the last minute, sent and received. */
  perMinute(): number {
    this.prune()
    return this.recent.length
  }

  private async validate(peer: string, message: Message): Promise<TopicValidatorResult> {
    const { received } = this.stats
    if (this.o.tap.isLost(message)) return TopicValidatorResult.Ignore
    this.o.tap.counters.first++
    if (!this.takeToken(peer)) { received.rate_limited++; return TopicValidatorResult.Ignore }
    let op: Operation
    try {
      if (message.data.byteLength > OPERATION_LIMITS.encodedBytes) throw new Error('too large')
      op = decodeOperation(message.data)
      if (topicOf(op.kind) !== message.topic) throw new Error(`a ${op.kind} operation on ${message.topic}`)
    } catch (err) {
      received.invalid++
      this.o.logger.debug({ err, peer }, 'malformed gossip message')
      return TopicValidatorResult.Reject
    }
    const age = this.now() - Date.parse(op.accepted_at)
    if (!(age <= this.maxAgeMs)) { received.too_old++; return TopicValidatorResult.Ignore }
    try {
      const outcome = await this.o.apply(op)
      received[outcome]++
      this.count()
      this.o.bus.publish('gossip_incoming', { kind: op.kind, subject: op.subject, origin: op.origin, from: peer, outcome })
      if (this.o.tap.tracing) {
        this.o.tap.record({ event: 'receive', id: hexId(message.data), from: peer, origin: op.origin, kind: op.kind, subject: op.subject, accepted_at: op.accepted_at, outcome })
      }
      return TopicValidatorResult.Accept
    } catch (err) {
      received.invalid++
      this.o.logger.info({ err, peer, kind: op.kind, subject: op.subject, origin: op.origin }, 'rejected an invalid operation from the mesh')
      return TopicValidatorResult.Reject
    }
  }

  private takeToken(peer: string): boolean {
    const now = this.now()
    const bucket = this.buckets.get(peer) ?? { tokens: this.perPeer, at: now }
    bucket.tokens = Math.min(this.perPeer, bucket.tokens + ((now - bucket.at) / 1000) * this.perPeer)
    bucket.at = now
    this.buckets.set(peer, bucket)
    if (this.buckets.size > 10_000) this.buckets.delete(this.buckets.keys().next().value as string)
    if (bucket.tokens < 1) return false
    bucket.tokens -= 1
    return true
  }

  private count(): void {
    this.recent.push(this.now())
    if (this.recent.length > 100_000) this.prune()
  }

  private prune(): void {
    const since = this.now() - 60_000
    let drop = 0
    while (drop < this.recent.length && (this.recent[drop] as number) < since) drop++
    if (drop > 0) this.recent.splice(0, drop)
  }
}
