/**
 * Which peers this node may talk to, and the process-level faults a testnet injects
 * (`PUT /v1/admin/mesh/faults`, src/testnet/). Besides the peers an operator banned (peer-bans.ts),
 * three levers:
 *
 * - an allow list (`p2p.allow_peers`): when non-empty, the only peers connected either way, so a
 *   testnet's ring or star stays a ring or a star although the DHT and gossipsub discover everyone;
 * - blocked peers: connections to them are closed and refused both ways (a partition, drawn by
 *   blocking every peer on the other side, on both sides);
 * - inbound gossip loss and delay: each received copy of a message is dropped with probability
 *   `loss` before gossipsub's duplicate cache sees it (so a copy from another peer can still
 *   arrive, as with a lost packet), and each copy waits `delayMs` before that check (a per-hop
 *   latency, gossip-tap.ts). These act on gossip only: sync, DHT and fetch run unharmed.
 *
 * Where a testnet runs nodes in network namespaces it partitions and drops packets in the kernel
 * instead (src/testnet/netns.ts); these are its fallback.
 */
import type { ConnectionGater, PeerId } from '@libp2p/interface'

export interface MeshFaultSettings {
  blockedPeers: string[]
  /** Probability in [0, 1] that a received gossip copy is lost. */
  loss: number
  /** Delay of each received gossip copy before deduplication and validation, ms. */
  delayMs: number
}

export class MeshFaults {
  private readonly allowed: ReadonlySet<string>
  private blocked = new Set<string>()
  loss = 0
  delayMs = 0
  /** Whether an operator banned the peer (peer-bans.ts; set by the Mesh): refused like a blocked one. */
  banned: (peerId: string) => boolean = () => false
  /** Whether the peer is graylisted for its gossip score (scoring.ts; set by the Mesh): refused until it recovers. */
  graylisted: (peerId: string) => boolean = () => false
  /** Closes this node's connections to a peer (set by the Mesh once libp2p exists). */
  hangUp: (peerId: string) => Promise<void> = async () => {}

  constructor(
    allowPeers: readonly string[] = [],
    private readonly random: () => number = Math.random
  ) {
    this.allowed = new Set(allowPeers)
  }

  /** Whether this node may connect to `peerId` (allow list, blocked, banned and graylisted peers). */
  permits(peerId: string): boolean {
    return (
      !this.blocked.has(peerId) &&
      !this.banned(peerId) &&
      !this.graylisted(peerId) &&
      (this.allowed.size === 0 || this.allowed.has(peerId))
    )
  }

  /** libp2p's gater: refuses dials to, and secured connections from, peers not permitted. */
  gater(): ConnectionGater {
    const deny = (peer: PeerId): boolean => !this.permits(peer.toString())
    return {
      denyDialPeer: deny,
      denyInboundEncryptedConnection: deny,
      denyOutboundEncryptedConnection: deny
    }
  }

  /** Whether this copy of a gossip message is lost (drawn once per received copy). */
  loses(): boolean {
    return this.loss > 0 && this.random() < this.loss
  }

  settings(): MeshFaultSettings {
    return { blockedPeers: [...this.blocked], loss: this.loss, delayMs: this.delayMs }
  }

  /** Replaces the settings; connections to newly blocked peers are closed. */
  async apply(next: Partial<MeshFaultSettings>): Promise<MeshFaultSettings> {
    if (next.loss !== undefined) this.loss = next.loss
    if (next.delayMs !== undefined) this.delayMs = next.delayMs
    if (next.blockedPeers !== undefined) {
      const added = next.blockedPeers.filter(p => !this.blocked.has(p))
      this.blocked = new Set(next.blockedPeers)
      await Promise.allSettled(added.map(p => this.hangUp(p)))
    }
    return this.settings()
  }
}
