/**
 * Peer discovery beyond the bootstrap list: the low watermark of the connection count. While a node
 * has fewer connected peers than its target (p2p.target_peers), each round dials peers it already
 * knows addresses of (told by identify or by earlier DHT answers), then walks the DHT towards a
 * random key: the peers that answer and the closest peers they name are registry nodes (our DHT
 * protocol is ours alone), and the walk's own queries connect to some of them. The high watermark is
 * libp2p's (p2p.max_connections): above it the least valuable connections are closed. libp2p itself
 * dials towards no minimum, hence this loop.
 */
import { randomBytes } from '@libp2p/crypto'
import type { PeerId } from '@libp2p/interface'
import type { Logger } from 'pino'
import type { MeshLibp2p } from './libp2p-node.js'

export interface DiscoveryOptions {
  libp2p: MeshLibp2p
  logger: Logger
  /** Connected peers below which a round looks for more (0: none; the bootstrap list alone). */
  targetPeers: number
  /** Pause between rounds. */
  intervalMs: number
  /** Time limit of one dial. */
  dialTimeoutMs: number
  /** The DHT protocol: a known peer is a candidate when it speaks it (or its protocols are not known yet). */
  dhtProtocol: string
  /** Whether this node may connect to a peer (bans, the allow list, a testnet's blocks): others are never dialled. */
  permits: (peerId: string) => boolean
}

/** A walk that has not finished by then is ended: the next round starts another. */
const WALK_TIMEOUT_MS = 30_000
/** A peer whose dial failed is left alone for this many rounds. */
const FAILED_ROUNDS = 10

export class PeerDiscovery {
  private timer: NodeJS.Timeout | null = null
  private round: Promise<void> | null = null
  private readonly shutdown = new AbortController()
  /** Peer → time before which it is not dialled again (its last dial failed). */
  private readonly failedUntil = new Map<string, number>()
  /** Rounds run, DHT walks and peers connected through them (tests and diagnostics read them). */
  readonly stats = { rounds: 0, walks: 0, dialled: 0 }

  constructor(private readonly o: DiscoveryOptions) {}

  start(): void {
    if (this.o.targetPeers === 0) return
    this.timer = setInterval(() => this.tick(), this.o.intervalMs).unref()
    this.tick()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.shutdown.abort()
    await this.round
  }

  /** Distinct peers with an open connection. */
  connectedPeers(): Set<string> {
    return new Set(this.o.libp2p.getConnections().map(c => c.remotePeer.toString()))
  }

  private tick(): void {
    if (this.round || this.shutdown.signal.aborted) return
    this.round = this.run()
      .catch(err => this.o.logger.debug({ err }, 'peer discovery round failed'))
      .finally(() => {
        this.round = null
      })
  }

  private missing(): number {
    return this.o.targetPeers - this.connectedPeers().size
  }

  private async run(): Promise<void> {
    const now = Date.now()
    for (const [peer, until] of this.failedUntil) if (until <= now) this.failedUntil.delete(peer)
    if (this.missing() <= 0) return
    this.stats.rounds++
    await this.dialSome(await this.knownCandidates())
    if (this.missing() <= 0 || this.shutdown.signal.aborted) return
    this.stats.walks++
    const found = await this.walk()
    await this.dialSome(found.filter(peer => this.dialable(peer.toString())))
  }

  private dialable(peer: string): boolean {
    if (peer === this.o.libp2p.peerId.toString() || !this.o.permits(peer)) return false
    if (this.o.libp2p.getConnections().some(c => c.remotePeer.toString() === peer)) return false
    return (this.failedUntil.get(peer) ?? 0) <= Date.now()
  }

  /** Peers of the peer store with addresses that are not connected, in random order. */
  private async knownCandidates(): Promise<PeerId[]> {
    const peers = await this.o.libp2p.peerStore.all()
    const candidates = peers.filter(
      p =>
        p.addresses.length > 0 &&
        (p.protocols.length === 0 || p.protocols.includes(this.o.dhtProtocol)) &&
        this.dialable(p.id.toString())
    )
    return shuffle(candidates.map(p => p.id))
  }

  /** The closest peers to a random key, as the DHT finds them. */
  private async walk(): Promise<PeerId[]> {
    const found: PeerId[] = []
    const signal = AbortSignal.any([this.shutdown.signal, AbortSignal.timeout(WALK_TIMEOUT_MS)])
    try {
      for await (const peer of this.o.libp2p.peerRouting.getClosestPeers(randomBytes(32), { signal })) {
        found.push(peer.id)
        if (this.missing() <= 0) break
      }
    } catch (err) {
      this.o.logger.debug({ err }, 'DHT random walk ended early')
    }
    return found
  }

  /** Dials candidates, as many at once as peers are missing, until the target is met or none are left. */
  private async dialSome(candidates: PeerId[]): Promise<void> {
    const queue = [...candidates]
    while (queue.length > 0 && !this.shutdown.signal.aborted) {
      const missing = this.missing()
      if (missing <= 0) return
      const batch = queue.splice(0, missing).filter(peer => this.dialable(peer.toString()))
      await Promise.all(batch.map(peer => this.dial(peer)))
    }
  }

  private async dial(peer: PeerId): Promise<void> {
    const signal = AbortSignal.any([this.shutdown.signal, AbortSignal.timeout(this.o.dialTimeoutMs)])
    try {
      await this.o.libp2p.dial(peer, { signal })
      this.stats.dialled++
      this.o.logger.debug({ peer_id: peer.toString() }, 'discovered peer connected')
    } catch (err) {
      this.failedUntil.set(peer.toString(), Date.now() + FAILED_ROUNDS * this.o.intervalMs)
      this.o.logger.debug({ err, peer_id: peer.toString() }, 'discovered peer did not answer')
    }
  }
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[items[i], items[j]] = [items[j] as T, items[i] as T]
  }
  return items
}
