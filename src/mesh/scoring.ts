/**
 * Gossipsub v1.1 peer scoring for our topics, what our validation adds to it, and what happens to
 * a peer whose score falls below the graylist threshold. The reasons behind each number are in
 * docs/decisions.md ("Gossip peer scoring: parameters, thresholds, disconnection").
 *
 * What a peer's score is made of, per topic (weight 1, all our topics alike):
 * - P1 time in the mesh: +1/600 per second, capped at 1 hour (at most +6): a peer that stays is
 *   preferred, slowly, so standing in the mesh cannot pay for misbehaviour.
 * - P2 first deliveries: +0.5 per message first delivered by the peer, capped at 20 (+10), decaying
 *   by 1 % a second: peers that bring news first are kept in the mesh.
 * - P3 mesh deliveries: off. Our traffic follows registrations, which may stop for hours; a quota
 *   of deliveries per window would charge honest mesh peers of a quiet mesh.
 * - P4 invalid messages: −10 × (count)², the count decaying by 0.5 % a second (half-life 2.3 min).
 *   Our validator rejects forged or malformed operations and registrations over their origin's
 *   entity total (gossip.ts), so one such message costs 10, two 40, three 90: past the graylist.
 * The positive part is capped at 10 (topicScoreCap), so good behaviour never outweighs three
 * invalid messages.
 * P5 (application): replayed client signatures (an owner's signed request sealed again by some
 * node) are ignored, not rejected, since an honest relay that missed the original cannot tell;
 * each costs the relaying peer a count here, decaying like P4, and the score −2 × (count)²:
 * a few by accident stay above the gossip threshold, a stream of them reaches the graylist.
 * P6 IP colocation: more than 3 peers from one IP cost −10 × (surplus)² each (6 or more are
 * graylisted), except addresses whitelisted (p2p.gossip_colocation_whitelist): loopback by default,
 * which every node of a testnet on one machine shares.
 * P7 behaviour (re-grafting during a backoff, ignoring our IWANTs): gossipsub's default weight.
 *
 * Thresholds: below −20 no gossip (IHAVE/IWANT) with the peer, below −40 none of our own messages
 * to it, below −80 (graylist) nothing from it is processed; this node also hangs up on it and
 * refuses it (both ways) until its score, which gossipsub keeps for an hour after a disconnection
 * and keeps decaying, is back above the graylist, and for at least `refuseMs`.
 */
import type { GossipSub } from '@libp2p/gossipsub'
import {
  createPeerScoreParams,
  createPeerScoreThresholds,
  createTopicScoreParams,
  type PeerScoreParams,
  type PeerScoreThresholds,
  type TopicScoreParams
} from '@libp2p/gossipsub/score'
import type { Logger } from 'pino'
import { BoundedMap } from '../util/bounded-map.js'

/** Per-second decay of the invalid-message and replay counts (half-life about 138 s). */
const COUNT_DECAY = 0.995
const DECAY_INTERVAL_MS = 1_000

export const TOPIC_SCORE: TopicScoreParams = createTopicScoreParams({
  topicWeight: 1,
  timeInMeshWeight: 1 / 600,
  timeInMeshQuantum: 1_000,
  timeInMeshCap: 3_600,
  firstMessageDeliveriesWeight: 0.5,
  firstMessageDeliveriesDecay: 0.99,
  firstMessageDeliveriesCap: 20,
  meshMessageDeliveriesWeight: 0,
  meshFailurePenaltyWeight: 0,
  invalidMessageDeliveriesWeight: -10,
  invalidMessageDeliveriesDecay: COUNT_DECAY
})

export const SCORE_THRESHOLDS: PeerScoreThresholds = createPeerScoreThresholds({
  gossipThreshold: -20,
  publishThreshold: -40,
  graylistThreshold: -80,
  // Peer exchange on PRUNE only from peers that earned a clearly good score.
  acceptPXThreshold: 5,
  opportunisticGraftThreshold: 2
})

/** Peers from one IP beyond which each costs −10 × (surplus)². */
export const IP_COLOCATION_THRESHOLD = 3

/** What replays cost: −REPLAY_WEIGHT × (count)². */
const REPLAY_WEIGHT = 2
/** Peers whose replay count is kept at once; beyond, the longest tracked is forgotten. */
const MAX_PENALISED_PEERS = 10_000

/**
 * Penalties our validation hands out beyond gossipsub's own (P5): replayed client signatures.
 * Counts decay like gossipsub's invalid-message counts.
 */
export class PeerPenalties {
  private readonly counts = new BoundedMap<string, { count: number; at: number }>(MAX_PENALISED_PEERS)

  constructor(private readonly now: () => number = Date.now) {}

  /** A message from `peer` carried a replayed signature. */
  replayed(peer: string): void {
    const entry = this.current(peer)
    this.counts.set(peer, { count: entry + 1, at: this.now() })
  }

  /** The application-specific score of a peer (≤ 0). */
  score(peer: string): number {
    const count = this.current(peer)
    return count === 0 ? 0 : -REPLAY_WEIGHT * count * count
  }

  private current(peer: string): number {
    const entry = this.counts.get(peer)
    if (!entry) return 0
    const count = entry.count * COUNT_DECAY ** ((this.now() - entry.at) / DECAY_INTERVAL_MS)
    return count < 0.1 ? 0 : count
  }
}

/** Gossipsub's peer score parameters for `topics`; `appScore` is P5; `colocationWhitelist`: addresses P6 spares. */
export function peerScoreParams(
  topics: readonly string[],
  appScore: (peer: string) => number,
  colocationWhitelist: readonly string[] = ['127.0.0.1', '::1']
): PeerScoreParams {
  return createPeerScoreParams({
    topics: Object.fromEntries(topics.map(topic => [topic, TOPIC_SCORE])),
    topicScoreCap: 10,
    appSpecificScore: appScore,
    appSpecificWeight: 1,
    IPColocationFactorWeight: -10,
    IPColocationFactorThreshold: IP_COLOCATION_THRESHOLD,
    IPColocationFactorWhitelist: new Set(colocationWhitelist),
    decayInterval: DECAY_INTERVAL_MS,
    decayToZero: 0.1,
    retainScore: 3_600_000
  })
}

/** A peer's gossipsub score: on the implementation, though not on the interface it is typed by. */
export function scoreOf(pubsub: GossipSub): (peer: string) => number {
  const impl = pubsub as unknown as { getScore?: (peer: string) => number }
  if (typeof impl.getScore !== 'function') throw new Error('this gossipsub has no getScore')
  return peer => (impl.getScore as (peer: string) => number).call(pubsub, peer)
}

export interface ScoreGuardOptions {
  /** A peer's gossipsub score (scoreOf). */
  score: (peer: string) => number
  /** Connected peers (PeerId strings). */
  peers: () => string[]
  hangUp: (peer: string) => Promise<void>
  logger: Logger
  /** Period of the check (default 1 s, gossipsub's heartbeat). */
  intervalMs?: number
  /** Least time a graylisted peer is refused (default 5 min). */
  refuseMs?: number
  now?: () => number
}

export interface GraylistedPeer {
  peer_id: string
  score: number
  at: string
}

/**
 * Hangs up on peers below the graylist threshold and refuses them until their score recovers.
 * Gossipsub itself only stops listening to a graylisted peer; the connection, its sync and DHT
 * traffic and its place among our connections would stay.
 */
export class ScoreGuard {
  private timer: NodeJS.Timeout | null = null
  /** Graylisted peers: until when they are refused at least, and the score that got them there. */
  private readonly refused = new BoundedMap<string, { until: number; score: number; at: number }>(MAX_PENALISED_PEERS)
  private readonly now: () => number
  /** Peers disconnected for their score since start. */
  disconnected = 0

  constructor(private readonly o: ScoreGuardOptions) {
    this.now = o.now ?? Date.now
  }

  start(): void {
    this.timer = setInterval(() => this.check(), this.o.intervalMs ?? 1_000)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }

  /** Whether a connection to or from `peer` is refused (graylisted, score not recovered). */
  refuses(peer: string): boolean {
    const entry = this.refused.get(peer)
    if (!entry) return false
    if (this.now() < entry.until || this.o.score(peer) < SCORE_THRESHOLDS.graylistThreshold) return true
    this.refused.delete(peer)
    this.o.logger.info({ peer_id: peer, score: round(this.o.score(peer)) }, 'graylisted peer may connect again')
    return false
  }

  /** Peers refused now for their score. */
  graylisted(): GraylistedPeer[] {
    return [...this.refused.entries()]
      .filter(([peer]) => this.refuses(peer))
      .map(([peer, e]) => ({ peer_id: peer, score: round(e.score), at: new Date(e.at).toISOString() }))
  }

  /** Hangs up on every connected peer below the graylist threshold. */
  check(): void {
    for (const peer of this.o.peers()) {
      const score = this.o.score(peer)
      if (score >= SCORE_THRESHOLDS.graylistThreshold) continue
      const now = this.now()
      this.refused.set(peer, { until: now + (this.o.refuseMs ?? 300_000), score, at: now })
      this.disconnected++
      this.o.logger.warn(
        { peer_id: peer, score: round(score), graylist_threshold: SCORE_THRESHOLDS.graylistThreshold },
        'peer graylisted by its gossip score: disconnected, refused until its score recovers'
      )
      this.o.hangUp(peer).catch(() => {})
    }
  }
}

const round = (x: number): number => Math.round(x * 100) / 100
