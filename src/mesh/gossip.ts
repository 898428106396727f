/**
 * Gossip of operations over gossipsub (protocols/README.md, "Gossip"). The node publishes the
 * operations it accepts on the topic of their kind, several to a message: the first operation after
 * a quiet interval goes out at once, later ones wait for the pacing interval (`batchIntervalMs`,
 * 20 ms) and leave together, so a busy node sends at most 50 messages a second per topic however
 * many writes it takes, and each costs one encryption, one frame and one socket write per peer.
 * Each message received is validated before gossipsub may forward it, and its operations applied
 * in the same step:
 *
 * - size and schema of every operation (one malformed operation rejects the message), then age:
 *   an operation older than `maxAgeMs` is skipped (sync carries it). Gossipsub forwards messages
 *   unchanged, so the spec's 10-hop bound cannot be counted; a node forwards a message only within
 *   its message cache window (5 heartbeats of 1 s), so 10 hops take at most about 50 s, and the age
 *   bound of 60 s stands in for the hop bound.
 * - deduplication over 5 minutes: gossipsub's seen cache (`seenTTL`), keyed by a hash of the bytes,
 *   so the same message reaching a node by two paths is applied once.
 * - at most `maxPerPeerPerSecond` (100) messages per second from one forwarding peer: beyond it
 *   messages are ignored (sync brings their operations).
 * - then `apply`, for every operation: the origin's seal and the owner's signature are verified,
 *   and the operation is applied (last writer wins); operations of one subject in order, others
 *   concurrently. If one is invalid the message is rejected, which gossipsub's peer scoring charges
 *   to the peer that forwarded it (the valid ones stand: each is checked on its own). One that
 *   replays a client signature already used gets the message ignored (not forwarded) and costs
 *   the forwarding peer a smaller penalty of our own (scoring.ts).
 */
import { TopicValidatorResult, type GossipSub, type Message } from '@libp2p/gossipsub'
import type { Logger } from 'pino'
import { RegistryError } from '../errors.js'
import type { EventBus } from '../events/bus.js'
import type { Operation, OperationKind } from '../store/records.js'
import { BoundedMap } from '../util/bounded-map.js'
import {
  batchSubjects,
  decodeBatch,
  encodeBatch,
  encodeOperation,
  isShared,
  OPERATION_LIMITS
} from '../wire/operations.js'
import { contentId, type GossipTap } from './gossip-tap.js'
import type { PeerPenalties } from './scoring.js'

const hexId = (data: Uint8Array): string => Buffer.from(contentId(data)).toString('hex')

/** Forwarding peers whose message rate is tracked at once; beyond, the longest tracked is forgotten. */
const MAX_RATED_PEERS = 10_000

/** Version 2: unsigned gossipsub messages (StrictNoSign); nodes on version 1 topics (StrictSign) and these do not meet, and sync still brings them together. */
export const GOSSIP_TOPICS = {
  entities: '/zns/ops/entities/2',
  tombstones: '/zns/ops/tombstones/2',
  status: '/zns/ops/status/2',
  /** Batches of status changes (`entity.status.batch`): on a topic of their own, which nodes that cannot apply them do not join. */
  statusBatches: '/zns/ops/status-batches/1',
  identities: '/zns/ops/identities/2',
  /** Attestations (`attestation.add`): a topic of their own, which nodes that cannot apply them do not join. */
  attestations: '/zns/ops/attestations/1'
} as const

/**
 * The topic an operation is published on. `developer.implicit` goes with the entities: the one
 * derived from a developer's first registration then leaves in the same message as that
 * registration, not in a second message on another topic (which doubled the mesh's work for each
 * new developer). Nodes before this version published it on the identities topic, still accepted.
 */
export function topicOf(kind: OperationKind): string {
  if (kind === 'entity.register' || kind === 'entity.update' || kind === 'developer.implicit')
    return GOSSIP_TOPICS.entities
  if (kind === 'entity.deregister' || kind === 'developer.deregister') return GOSSIP_TOPICS.tombstones
  if (kind === 'entity.status') return GOSSIP_TOPICS.status
  if (kind === 'entity.status.batch') return GOSSIP_TOPICS.statusBatches
  if (kind === 'attestation.add') return GOSSIP_TOPICS.attestations
  return GOSSIP_TOPICS.identities
}

/** Whether a received operation may travel on a topic: its own, or where earlier nodes published it. */
export function belongsTo(kind: OperationKind, topic: string): boolean {
  return topicOf(kind) === topic || (kind === 'developer.implicit' && topic === GOSSIP_TOPICS.identities)
}

/** What a trace line says of an operation: its kind and subject, and the entities of a batch. */
function traced(op: Operation): { kind: string; subject: string; subjects?: string[] } {
  return { kind: op.kind, subject: op.subject, ...(isShared(op) ? { subjects: batchSubjects(op) } : {}) }
}

/** How one operation of a message counts for the message's verdict. */
type Verdict = 'ok' | 'invalid' | 'unstored' | 'throttled' | 'refused' | 'replayed'

/** What applying an operation came to (services/replication/replication.ts says what each means); errors (invalid operations) are thrown. */
export type ApplyOutcome = 'applied' | 'stale' | 'deferred' | 'unsupported' | 'throttled' | 'refused'

/** Why a `stale` operation was (services/replication/replication.ts). */
export type StaleReason = 'duplicate' | 'superseded' | 'replayed' | 'own'

export interface ApplyHints {
  /** Called when the outcome is `stale`, with why. */
  onStale?: (reason: StaleReason) => void
}

export type GossipApply = (op: Operation, hints?: ApplyHints) => Promise<ApplyOutcome>

export interface GossipOptions {
  pubsub: GossipSub
  apply: GossipApply
  bus: EventBus
  logger: Logger
  maxAgeMs?: number
  maxPerPeerPerSecond: number
  /** Pacing of outgoing messages (per node, all topics): at most one flush per interval. */
  batchIntervalMs?: number
  now?: () => number
  /** Copies, bytes and the trace (gossip-tap.ts). */
  tap: GossipTap
  /** Where replays are charged to the forwarding peer (absent: not charged). */
  penalties?: PeerPenalties
}

export interface GossipStats {
  /** Operations published, and the messages that carried them. */
  published: number
  messages_published: number
  /** Messages received (first copies) by the validator's verdict: accepted (forwarded), ignored, rejected (the relay loses score). */
  messages: { accepted: number; ignored: number; rejected: number }
  received: Record<ApplyOutcome | 'invalid' | 'too_old' | 'rate_limited' | 'storage_full', number>
}

export class OperationGossip {
  readonly stats: GossipStats = {
    published: 0,
    messages_published: 0,
    messages: { accepted: 0, ignored: 0, rejected: 0 },
    received: {
      applied: 0,
      stale: 0,
      deferred: 0,
      unsupported: 0,
      throttled: 0,
      refused: 0,
      invalid: 0,
      too_old: 0,
      rate_limited: 0,
      storage_full: 0
    }
  }
  /** Times of recent operations (published and received), for the announcements-per-minute figure. */
  private readonly recent: number[] = []
  private readonly buckets = new BoundedMap<string, { tokens: number; at: number }>(MAX_RATED_PEERS)
  private readonly maxAgeMs: number
  private readonly perPeer: number
  private readonly now: () => number
  private readonly batchIntervalMs: number
  /** Operations waiting for the next message, by topic. */
  private readonly outbox = new Map<string, Operation[]>()
  private lastFlush = -Infinity
  private flushTimer: NodeJS.Timeout | null = null

  constructor(private readonly o: GossipOptions) {
    this.maxAgeMs = o.maxAgeMs ?? 60_000
    this.perPeer = o.maxPerPeerPerSecond
    this.now = o.now ?? Date.now
    this.batchIntervalMs = o.batchIntervalMs ?? 20
  }

  start(): void {
    for (const topic of Object.values(GOSSIP_TOPICS)) {
      this.o.pubsub.topicValidators.set(topic, (peer, message) => this.validate(peer.toString(), message))
      this.o.pubsub.subscribe(topic)
    }
  }

  stop(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer)
    this.flushTimer = null
    this.outbox.clear()
    for (const topic of Object.values(GOSSIP_TOPICS)) {
      this.o.pubsub.topicValidators.delete(topic)
      this.o.pubsub.unsubscribe(topic)
    }
  }

  /**
   * Queues operations this node accepted (after their commit) for the next message of their topic.
   * Never throws: sync repairs what gossip misses.
   */
  publish(ops: readonly Operation[]): void {
    if (ops.length === 0) return
    for (const op of ops) {
      const topic = topicOf(op.kind)
      const queue = this.outbox.get(topic)
      if (queue) queue.push(op)
      else this.outbox.set(topic, [op])
    }
    if (this.flushTimer) return
    const wait = this.lastFlush + this.batchIntervalMs - this.now()
    if (wait <= 0) this.flush()
    else
      this.flushTimer = setTimeout(() => {
        this.flushTimer = null
        this.flush()
      }, wait)
  }

  private flush(): void {
    this.lastFlush = this.now()
    const outbox = [...this.outbox]
    this.outbox.clear()
    for (const [topic, ops] of outbox) {
      let batch: Operation[] = []
      let encoded: Uint8Array[] = []
      let bytes = 0
      for (const op of ops) {
        const data = encodeOperation(op)
        if (
          batch.length > 0 &&
          (bytes + data.byteLength > OPERATION_LIMITS.batchBytes / 4 ||
            batch.length >= OPERATION_LIMITS.batchOperations)
        ) {
          this.send(topic, batch, encoded)
          batch = []
          encoded = []
          bytes = 0
        }
        batch.push(op)
        encoded.push(data)
        bytes += data.byteLength + 1
      }
      this.send(topic, batch, encoded)
    }
  }

  private send(topic: string, ops: Operation[], encoded: Uint8Array[]): void {
    const data = encodeBatch(encoded)
    const id = this.o.tap.willPublish(data)
    if (this.o.tap.tracing)
      for (const op of ops) this.o.tap.record({ event: 'publish', id, ...traced(op), bytes: data.byteLength })
    this.o.pubsub.publish(topic, data).then(
      result => {
        this.stats.published += ops.length
        this.stats.messages_published++
        for (const op of ops) {
          this.count()
          this.o.bus.publish('gossip_outgoing', {
            kind: op.kind,
            subject: op.subject,
            recipients: result.recipients.length,
            bytes: data.byteLength
          })
        }
      },
      (err: unknown) => this.o.logger.debug({ err, topic, operations: ops.length }, 'gossip publish failed')
    )
  }

  /** Operations gossiped in the last minute, sent and received. */
  perMinute(): number {
    this.prune()
    return this.recent.length
  }

  private async validate(peer: string, message: Message): Promise<TopicValidatorResult> {
    if (this.o.tap.isLost(message)) return TopicValidatorResult.Ignore
    this.o.tap.counters.first++
    await this.o.tap.process()
    const verdict = await this.check(peer, message)
    const { messages } = this.stats
    if (verdict === TopicValidatorResult.Accept) messages.accepted++
    else if (verdict === TopicValidatorResult.Reject) messages.rejected++
    else messages.ignored++
    return verdict
  }

  private async check(peer: string, message: Message): Promise<TopicValidatorResult> {
    const { received } = this.stats
    if (!this.takeToken(peer)) {
      received.rate_limited++
      return TopicValidatorResult.Ignore
    }
    let ops: Operation[]
    try {
      ops = decodeBatch(message.data)
      for (const op of ops)
        if (!belongsTo(op.kind, message.topic)) throw new Error(`a ${op.kind} operation on ${message.topic}`)
    } catch (err) {
      received.invalid++
      this.o.logger.debug({ err, peer }, 'malformed gossip message')
      return TopicValidatorResult.Reject
    }
    const now = this.now()
    const fresh = ops.filter(op => {
      if (now - Date.parse(op.accepted_at) <= this.maxAgeMs) return true
      received.too_old++
      return false
    })
    if (fresh.length === 0) return TopicValidatorResult.Ignore
    // One subject's operations in the order sent (an update after its registration); subjects concurrently.
    const chains = new Map<string, Operation[]>()
    for (const op of fresh) {
      const chain = chains.get(op.subject)
      if (chain) chain.push(op)
      else chains.set(op.subject, [op])
    }
    const outcomes = new Set<Verdict>()
    await Promise.all(
      [...chains.values()].map(async chain => {
        for (const op of chain) outcomes.add(await this.applyOne(peer, message, op))
      })
    )
    // Over an origin's entity total (refused for good): rejected, so the peer that relayed it loses
    // score (a peer enforcing the same total would not have forwarded it), and it travels no further.
    // Over a rate (throttled), or not storable here (the disk is full): ignored, not forwarded from
    // here, and no penalty. Token buckets on different nodes drift apart, so an honest origin or relay
    // near the rate would otherwise lose score and end up graylisted; sync brings the operations later.
    // A replayed client signature: ignored (it travels no further), and charged to the peer by our
    // own smaller penalty, since an honest relay that never saw the original could not tell.
    if (outcomes.has('invalid') || outcomes.has('refused')) return TopicValidatorResult.Reject
    if (outcomes.has('replayed')) this.o.penalties?.replayed(peer)
    return outcomes.has('unstored') || outcomes.has('throttled') || outcomes.has('replayed')
      ? TopicValidatorResult.Ignore
      : TopicValidatorResult.Accept
  }

  private async applyOne(peer: string, message: Message, op: Operation): Promise<Verdict> {
    const { received } = this.stats
    let replayed = false
    try {
      const outcome = await this.o.apply(op, {
        onStale: reason => {
          replayed = reason === 'replayed'
        }
      })
      received[outcome]++
      this.count()
      this.o.bus.publish('gossip_incoming', {
        kind: op.kind,
        subject: op.subject,
        origin: op.origin,
        from: peer,
        outcome
      })
      if (this.o.tap.tracing) {
        this.o.tap.record({
          event: 'receive',
          id: hexId(message.data),
          from: peer,
          origin: op.origin,
          ...traced(op),
          accepted_at: op.accepted_at,
          outcome
        })
      }
      return outcome === 'throttled' || outcome === 'refused' ? outcome : replayed ? 'replayed' : 'ok'
    } catch (err) {
      if (err instanceof RegistryError && err.code === 'storage_full') {
        received.storage_full++
        return 'unstored'
      }
      received.invalid++
      this.o.logger.info(
        { err, peer, kind: op.kind, subject: op.subject, origin: op.origin },
        'rejected an invalid operation from the mesh'
      )
      return 'invalid'
    }
  }

  private takeToken(peer: string): boolean {
    const now = this.now()
    const bucket = this.buckets.get(peer) ?? { tokens: this.perPeer, at: now }
    bucket.tokens = Math.min(this.perPeer, bucket.tokens + ((now - bucket.at) / 1000) * this.perPeer)
    bucket.at = now
    this.buckets.set(peer, bucket)
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
