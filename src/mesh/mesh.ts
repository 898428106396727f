/**
 * The mesh door of a node: the libp2p node, peer bookkeeping, the dialler that keeps the
 * bootstrap peers (and peers an operator added; /dnsaddr/ entries resolved at each round) connected,
 * and discovery of further peers up to the target count (discovery.ts); it builds and starts gossip of
 * operations (gossip.ts), sync (sync.ts), DHT announcements and fetch (locator.ts) and federated
 * search (federation.ts), and stops them in reverse.
 */
import { isIPv4, isIPv6 } from 'node:net'
import type { Connection } from '@libp2p/interface'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import type { Logger } from 'pino'
import { invalidField, RegistryError } from '../errors.js'
import type { EventBus } from '../events/bus.js'
import type { HelloMessage, PeerBan, PeerView, RemovedPeer } from '../wire/network.js'
import { HolePunch } from './hole-punch.js'
import { ReachabilityCheck, type RelayClientMode } from './reachability.js'
import { BLOOM_PROTOCOL } from './bloom-exchange.js'
import { CAPABILITIES, type MeshOffer } from './compatibility.js'
import {
  createLibp2pNode,
  DEFAULT_REACH,
  DHT_PROTOCOL,
  type Libp2pNodeOptions,
  type MeshLibp2p
} from './libp2p-node.js'
import { SEARCH_PROTOCOL } from './search-protocol.js'
import type { DNS } from '@multiformats/dns'
import { PeerDiscovery } from './discovery.js'
import { meshDns } from './dnsaddr.js'
import { peerOf, PinnedPeers } from './pinned-peers.js'
import type { SubjectDigests } from '../store/subject-digests.js'
import { MeshFederation, type FederationHooks } from './federation.js'
import { peerIdFromString } from '@libp2p/peer-id'
import { MeshFaults } from './faults.js'
import { type BanStore, checkedPeerId, memoryBanStore, PeerBans } from './peer-bans.js'
import { GOSSIP_TOPICS, OperationGossip, type GossipApply } from './gossip.js'
import { GossipTap, type TraceEvent } from './gossip-tap.js'
import { HELLO_PROTOCOL, PeerBook } from './peers.js'
import { PeerPenalties, ScoreGuard, scoreOf } from './scoring.js'
import { FETCH_PROTOCOL, Locator } from './locator.js'
import { SYNC_PROTOCOL, SyncService } from './sync.js'
import type { Operation } from '../store/records.js'

export interface MeshOptions extends Libp2pNodeOptions {
  bus: EventBus
  logger: Logger
  info: () => HelloMessage
  /** Applies an operation received from the mesh (verified, last writer wins). */
  apply: GossipApply
  /** The operation log's digests, for sync. */
  digests: SubjectDigests
  /** Period of sync rounds with a random peer (p2p.sync_interval_seconds). */
  syncIntervalMs: number
  /** Pause between two DHT provider announcements (p2p.dht_announce_interval_seconds). */
  announceIntervalMs: number
  /** Gossip messages accepted per second from one peer (p2p.gossip_max_per_peer_per_second). */
  gossipPerPeerPerSecond: number
  /** Sync sessions one peer may open per minute (p2p.sync_max_per_peer_per_minute). */
  syncPerPeerPerMinute: number
  /** The operations behind a key this node provides through the DHT (Locator). */
  operationsFor: (key: string) => Operation[]
  /** Federated search: answering peers' searches and exchanging term filters (off when absent). */
  federation?: FederationHooks
  /** Ping round period (default 30 s). */
  pingIntervalMs?: number
  /** Hello refresh period, which updates peers' counts (default 5 min). */
  helloIntervalMs?: number
  /** How often bootstrap and operator-added peers are re-dialled while disconnected (default 30 s). */
  redialIntervalMs?: number
  /** Time limit of one dial (default 10 s). */
  dialTimeoutMs?: number
  /** When non-empty, the only peers connected either way (p2p.allow_peers). */
  allowPeers?: readonly string[]
  /** JSON-lines propagation trace (p2p.trace_file); none when empty. */
  traceFile?: string
  /** Given each trace event instead of a file (a simulation's collector). */
  traceSink?: (event: TraceEvent) => void
  /** A simulation's processing time of each received operation, ms (gossip-tap.ts). */
  processingMs?: () => number
  /** Where peer bans are kept (the node's store); in memory when absent. */
  banStore?: BanStore
  /** When to reserve a relay slot (p2p.relay_client; default auto). */
  relayClient?: RelayClientMode
  /** Pause between reachability rounds while the answer is unknown (default 5 s). */
  reachabilityIntervalMs?: number
  /** Connected peers discovery looks for beyond the bootstrap list (p2p.target_peers; above maxConnections it counts as that). */
  targetPeers: number
  /** DNS servers /dnsaddr/ entries are resolved with (p2p.dns_servers); empty: the system's. */
  dnsServers: readonly string[]
  /** Pause between two discovery rounds while below targetPeers (p2p.discovery_interval_seconds; default 30 s). */
  discoveryIntervalMs?: number
}

/** How long a first sync session waits for the peer's hello. */
const HELLO_WAIT_MS = 2000

/**
 * The protocol versions and capabilities this node states in its hello (compatibility.ts): what
 * it runs, so a service that can be off (federated search) is listed only when on.
 */
export function meshOffer({ federation }: { federation: boolean }): MeshOffer {
  return {
    protocols: [
      HELLO_PROTOCOL,
      SYNC_PROTOCOL,
      FETCH_PROTOCOL,
      DHT_PROTOCOL,
      ...(federation ? [SEARCH_PROTOCOL, BLOOM_PROTOCOL] : []),
      ...Object.values(GOSSIP_TOPICS)
    ],
    capabilities: [
      CAPABILITIES.fetch,
      CAPABILITIES.statusBatches,
      CAPABILITIES.attestations,
      ...(federation ? [CAPABILITIES.federatedSearch, CAPABILITIES.termFilters] : [])
    ]
  }
}

/** `host:port` (the spec's form) or a multiaddr → a multiaddr. */
export function parsePeerAddress(address: string): Multiaddr {
  const text = address.trim()
  if (text.startsWith('/')) {
    try {
      return multiaddr(text)
    } catch (err) {
      throw invalidField('address', `not a multiaddr (${(err as Error).message})`)
    }
  }
  const m = /^(?:\[([^\]]+)\]|([^:/\s]+)):(\d{1,5})$/.exec(text)
  const port = Number(m?.[3])
  const host = m?.[1] ?? m?.[2]
  if (!m || !host || port < 1 || port > 65535)
    throw invalidField('address', 'expected a multiaddr (/ip4/…/tcp/…) or host:port')
  const proto = isIPv4(host) ? 'ip4' : isIPv6(host) ? 'ip6' : 'dns'
  return multiaddr(`/${proto}/${host}/tcp/${port}`)
}

/**
 * The peer count discovery aims at: above the high watermark rounds would dial peers libp2p then
 * prunes, and with an allow list no more peers than it names can ever connect (a testnet's ring
 * would walk the DHT forever).
 */
function discoveryTarget(o: MeshOptions, self: string): number {
  const allowed = o.allowPeers?.filter(peer => peer !== self).length ?? 0
  return Math.min(o.targetPeers, o.maxConnections, allowed > 0 ? allowed : Number.POSITIVE_INFINITY)
}

export class Mesh {
  readonly peers: PeerBook
  readonly gossip: OperationGossip
  readonly sync: SyncService
  readonly locator: Locator
  /** `/zns/search/1.0.0` and the term filter exchange; null when the node gave no federation hooks. */
  readonly federation: MeshFederation | null
  /** Public, private or unknown, and the relay reservation a private node makes (reachability.ts). */
  readonly reach: ReachabilityCheck
  /** Direct connections punched between nodes that reach each other only through a relay (hole-punch.ts). */
  readonly holePunch: HolePunch
  /** Disconnects and refuses peers graylisted by their gossip score. */
  readonly scoreGuard: ScoreGuard
  readonly discovery: PeerDiscovery
  /** The bootstrap and operator-added peers, re-dialled while disconnected. */
  private readonly pinned: PinnedPeers
  private readonly log: Logger

  private constructor(
    readonly libp2p: MeshLibp2p,
    private readonly o: MeshOptions,
    readonly faults: MeshFaults,
    readonly tap: GossipTap,
    readonly bans: PeerBans,
    penalties: PeerPenalties,
    dns: DNS
  ) {
    this.log = o.logger
    faults.hangUp = async peer => {
      await libp2p.hangUp(peerIdFromString(peer))
    }
    this.scoreGuard = new ScoreGuard({
      score: scoreOf(libp2p.services.pubsub),
      peers: () => libp2p.getPeers().map(peer => peer.toString()),
      hangUp: faults.hangUp,
      logger: o.logger
    })
    faults.graylisted = peerId => this.scoreGuard.refuses(peerId)
    this.peers = new PeerBook({
      libp2p,
      bus: o.bus,
      logger: o.logger,
      info: o.info,
      offer: meshOffer({ federation: Boolean(o.federation) }),
      ...(o.gossipScoring ? { gossipScore: scoreOf(libp2p.services.pubsub) } : {}),
      pingIntervalMs: o.pingIntervalMs ?? 30_000,
      helloIntervalMs: o.helloIntervalMs ?? 300_000
    })
    this.pinned = new PinnedPeers({
      libp2p,
      dns,
      logger: o.logger,
      bootstrap: o.bootstrap,
      skipped: peerId => this.bans.has(peerId) || this.peers.refusedRecently(peerId),
      intervalMs: o.redialIntervalMs ?? 30_000,
      dialTimeoutMs: o.dialTimeoutMs ?? 10_000
    })
    this.gossip = new OperationGossip({
      pubsub: libp2p.services.pubsub,
      apply: o.apply,
      tap,
      bus: o.bus,
      logger: o.logger,
      maxPerPeerPerSecond: o.gossipPerPeerPerSecond,
      ...(o.gossipScoring ? { penalties } : {})
    })
    this.locator = new Locator({
      libp2p,
      apply: o.apply,
      logger: o.logger,
      operationsFor: o.operationsFor,
      announceIntervalMs: o.announceIntervalMs
    })
    this.sync = new SyncService({
      libp2p,
      digests: o.digests,
      apply: o.apply,
      bus: o.bus,
      logger: o.logger,
      intervalMs: o.syncIntervalMs,
      maxPerPeerPerMinute: o.syncPerPeerPerMinute,
      // A new peer's first session waits (briefly) for its hello, which says whether it applies attestations.
      scopeFor: async peer => {
        await this.peers.helloFrom(peer, HELLO_WAIT_MS)
        return this.peers.offers(peer, CAPABILITIES.attestations) ? 'all' : 'without-attestations'
      }
    })
    this.federation = o.federation
      ? new MeshFederation({ libp2p, peers: this.peers, logger: o.logger, ...o.federation })
      : null
    this.reach = new ReachabilityCheck({
      libp2p,
      logger: o.logger,
      enabled: (o.reach ?? DEFAULT_REACH).autonat,
      relayClient: o.relayClient ?? 'auto',
      ...(o.reachabilityIntervalMs ? { intervalMs: o.reachabilityIntervalMs } : {})
    })
    this.holePunch = new HolePunch({
      libp2p,
      logger: o.logger,
      enabled: (o.reach ?? DEFAULT_REACH).holePunching,
      observedHosts: () => this.reach.observedHosts()
    })
    this.discovery = new PeerDiscovery({
      libp2p,
      logger: o.logger,
      targetPeers: discoveryTarget(o, libp2p.peerId.toString()),
      intervalMs: o.discoveryIntervalMs ?? 30_000,
      dialTimeoutMs: o.dialTimeoutMs ?? 10_000,
      dhtProtocol: o.dhtProtocol ?? DHT_PROTOCOL,
      permits: peerId => faults.permits(peerId)
    })
  }

  static async create(options: MeshOptions): Promise<Mesh> {
    const faults = new MeshFaults(options.allowPeers)
    const bans = new PeerBans(options.banStore ?? memoryBanStore())
    faults.banned = peerId => bans.has(peerId)
    const tap = new GossipTap(faults, options.traceSink ?? options.traceFile)
    if (options.processingMs) tap.processingMs = options.processingMs
    const penalties = new PeerPenalties()
    const dns = meshDns(options.dnsServers)
    const libp2p = await createLibp2pNode(options, { gater: faults.gater(), tap, penalties, dns })
    return new Mesh(libp2p, options, faults, tap, bans, penalties, dns)
  }

  async start(): Promise<void> {
    await this.peers.start()
    // Handlers and identify listeners go in before libp2p starts, so no peer's identify is missed.
    await this.federation?.start()
    await this.reach.register()
    await this.holePunch.register()
    await this.libp2p.start()
    this.reach.start()
    this.gossip.start()
    if (this.o.gossipScoring) this.scoreGuard.start()
    await this.sync.start()
    await this.locator.start()
    this.pinned.start()
    this.discovery.start()
  }

  async stop(): Promise<void> {
    this.pinned.stop()
    await this.discovery.stop()
    await this.locator.stop()
    await this.sync.stop()
    this.scoreGuard.stop()
    this.gossip.stop()
    await this.federation?.stop()
    await this.reach.stop()
    await this.holePunch.stop()
    await this.peers.stop()
    await this.libp2p.stop()
    await this.tap.close()
  }

  get peerId(): string {
    return this.libp2p.peerId.toString()
  }

  /** Addresses peers can dial (announce addresses when configured), each ending in /p2p/<peer-id>. */
  addresses(): string[] {
    return this.libp2p.getMultiaddrs().map(ma => ma.toString())
  }

  get dhtMode(): 'client' | 'server' {
    return this.libp2p.services.dht.getMode()
  }

  /**
   * Dials an address now, exchanges hellos and pings; the address is re-dialled while this node runs.
   * Throws `validation_failed` for a malformed address and `peer_unreachable` when the dial fails.
   */
  async addPeer(address: string): Promise<PeerView> {
    const ma = parsePeerAddress(address)
    const named = peerOf(ma)
    if (named && this.bans.has(named))
      throw new RegistryError(
        'peer_banned',
        `${named} is banned on this node; lift the ban first (DELETE /v1/network/bans/${named}).`,
        'address'
      )
    let connection: Connection
    try {
      connection = await this.pinned.connect(ma)
    } catch (err) {
      throw new RegistryError('peer_unreachable', `Could not connect to ${ma.toString()}: ${(err as Error).message}`)
    }
    this.pinned.add(ma, connection)
    let view: PeerView
    try {
      view = await this.peers.admit(connection)
    } catch (err) {
      throw new RegistryError(
        'peer_unreachable',
        `Connected to ${ma.toString()}, but the peer went away: ${(err as Error).message}`
      )
    }
    // A peer that refuses this node (a ban, an allow list) closes the connection once noise has
    // told it who dialled: the dial itself succeeded.
    if (!view.connected || connection.status !== 'open')
      throw new RegistryError(
        'peer_unreachable',
        `Connected to ${ma.toString()}, but the peer closed the connection at once: it may refuse this node (a ban, an allow list, or a gossip score below its graylist).`
      )
    return view
  }

  /**
   * Hangs up on a peer and stops re-dialling its added (or bootstrap) addresses. It may come back:
   * by dialling this node, or found again through the DHT; a ban keeps it out.
   * Throws `peer_not_found` when the peer is neither connected, known nor added.
   */
  async removePeer(peerIdText: string): Promise<RemovedPeer> {
    const peerId = checkedPeerId(peerIdText)
    const connected = this.libp2p.getConnections(peerIdFromString(peerId)).length > 0
    const dropped = this.pinned.remove(peerId)
    if (!connected && dropped.length === 0 && !this.peers.get(peerId))
      throw new RegistryError('peer_not_found', `No peer ${peerId} is connected to, known to, or added on this node.`)
    await this.libp2p.hangUp(peerIdFromString(peerId))
    this.log.info({ peer_id: peerId, was_connected: connected, addresses_dropped: dropped }, 'peer removed')
    return {
      peer_id: peerId,
      disconnected: connected,
      addresses_dropped: dropped,
      message: `${connected ? 'Hung up on' : 'Not connected to'} ${peerId}; ${dropped.length === 0 ? 'no added address to forget' : `no longer re-dialling ${dropped.length} address${dropped.length === 1 ? '' : 'es'}`}. It may connect again unless banned.`
    }
  }

  /**
   * Bans a peer: kept in the store, refused both ways by the gater from now on (its added and
   * bootstrap addresses are skipped while it is banned), and any connection to it closed.
   * `created`: it was not banned before.
   */
  async banPeer(peerIdText: string, reason: string | null): Promise<{ ban: PeerBan; created: boolean }> {
    const peerId = checkedPeerId(peerIdText)
    if (peerId === this.peerId) throw invalidField('peer_id', 'this is the PeerId of this node itself')
    const result = await this.bans.add(peerId, reason)
    await this.libp2p.hangUp(peerIdFromString(peerId))
    this.log.warn({ peer_id: peerId, reason }, 'peer banned')
    return result
  }

  /**
   * Lifts a ban: the peer may connect again, and its added or bootstrap addresses are re-dialled
   * again. Throws `peer_not_banned`.
   */
  async unbanPeer(peerIdText: string): Promise<string> {
    const peerId = checkedPeerId(peerIdText)
    if (!(await this.bans.remove(peerId)))
      throw new RegistryError('peer_not_banned', `${peerId} is not banned on this node.`)
    this.log.info({ peer_id: peerId }, 'peer unbanned')
    return peerId
  }

  /**
   * The bootstrap list of a reloaded configuration: addresses new to it are dialled now and then
   * re-dialled like the others; addresses it no longer names are no longer re-dialled (a connection
   * to them stays until either side drops it). Returns the addresses added.
   */
  useBootstrap(addresses: readonly string[]): string[] {
    return this.pinned.useBootstrap(addresses)
  }
}
