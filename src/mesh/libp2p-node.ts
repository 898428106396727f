/**
 * The libp2p node inside each registry node (libp2p 3). Its key is the node's own Ed25519 identity,
 * so `registry_id` and the PeerId name the same key. Transports: TCP on `port` and WebSockets on
 * `port + 1` (both ephemeral when `port` is 0); noise; yamux; identify; ping; kad-dht in server mode
 * under our own protocol; gossipsub without message signatures (StrictNoSign; topics: gossip.ts). Bootstrap
 * addresses are dialled by the Mesh; peers beyond them are found by discovery.ts.
 * The factory creates the node stopped; `start()`/`stop()` are libp2p's own.
 */
import '../polyfills.js'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { autoNAT } from '@libp2p/autonat'
import { circuitRelayServer, circuitRelayTransport } from '@libp2p/circuit-relay-v2'
import { dcutr } from '@libp2p/dcutr'
import { identify, type Identify } from '@libp2p/identify'
import type { ConnectionGater, Libp2p } from '@libp2p/interface'
import { kadDHT, passthroughMapper, type KadDHT } from '@libp2p/kad-dht'
import { ping, type Ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { uPnPNAT } from '@libp2p/upnp-nat'
import { webSockets } from '@libp2p/websockets'
import type { DNS } from '@multiformats/dns'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2pOptions } from 'libp2p'
import { WebSocket as WsWebSocket } from 'ws'
import { NODE_VERSION } from '../version.js'
import { OPERATION_LIMITS } from '../wire/operations.js'
import { GOSSIP_TOPICS } from './gossip.js'
import type { GossipTap } from './gossip-tap.js'
import { installQuietLengthPrefixReads } from './length-prefix-reads.js'
import { peerScoreParams, SCORE_THRESHOLDS, type PeerPenalties } from './scoring.js'
import { installLazyWindowUpdates } from './yamux-window.js'

// Node 20 has no global WebSocket; @libp2p/websockets needs one to dial /ws addresses (docs/compatibility.md).
const g = globalThis as { WebSocket?: unknown }
/**
 * A failed dial can emit 'error' after libp2p removed its listeners; an 'error' without a listener
 * throws and ended whole node processes (helper's G7 runs). The dial's own handling still sees it.
 */
class ListenedWebSocket extends WsWebSocket {
  constructor(...args: ConstructorParameters<typeof WsWebSocket>) {
    super(...args)
    this.on('error', () => {})
  }
}
g.WebSocket ??= ListenedWebSocket

export const DHT_PROTOCOL = '/zns/kad/1.0.0'

// A type alias, not an interface: libp2p's ServiceMap constraint needs the implicit index signature.
export type MeshServices = {
  identify: Identify
  ping: Ping
  dht: KadDHT
  pubsub: GossipSub
}

export type MeshLibp2p = Libp2p<MeshServices>

export interface Libp2pNodeOptions {
  /** The node's 32-byte Ed25519 seed (the same key as its registry identity). */
  seed: Uint8Array
  /** Listen address for TCP and WebSockets (0.0.0.0, ::, 127.0.0.1 …). */
  host: string
  /** TCP port; WebSockets listens on port + 1. 0: both ephemeral. */
  port: number
  /** Multiaddrs dialled at start and kept connected (by the Mesh, not @libp2p/bootstrap, which needs /p2p/ and dials once). */
  bootstrap: readonly string[]
  /** Multiaddrs announced instead of the listen addresses (a public address behind NAT). */
  announce: readonly string[]
  maxConnections: number
  /** Our peer scoring parameters (scoring.ts), else gossipsub's defaults (p2p.gossip_scoring). */
  gossipScoring: boolean
  /** Addresses exempt from the IP-colocation charge (p2p.gossip_colocation_whitelist). */
  gossipColocationWhitelist: readonly string[]
  /** gossipsub's D (p2p.gossip_mesh_degree). */
  gossipMeshDegree: number
  /** kad-dht protocol id. */
  dhtProtocol?: string
  /** NAT traversal (p2p.reachability_check, p2p.relay_*, p2p.hole_punching, p2p.upnp); DEFAULT_REACH when absent. */
  reach?: ReachOptions
  /** Transports and listen addresses instead of TCP, WebSockets and relays (a simulation's network). */
  transport?: Libp2pTransportOverride
}

export interface Libp2pTransportOverride {
  transports: NonNullable<Libp2pOptions['transports']>
  listen: string[]
}

export interface ReachOptions {
  autonat: boolean
  /** Serve circuit relay v2 with these limits; null: no relay service. */
  relayServer: { maxReservations: number; durationLimitMs: number; dataLimitBytes: number } | null
  holePunching: boolean
  upnp: boolean
}

/** The settings table's defaults (config/settings-mesh.ts). */
export const DEFAULT_REACH: ReachOptions = {
  autonat: true,
  relayServer: { maxReservations: 15, durationLimitMs: 120_000, dataLimitBytes: 1_048_576 },
  holePunching: true,
  upnp: false
}

/** What the Mesh hooks into libp2p: who may connect (faults.ts), gossipsub's message IDs and byte counts (gossip-tap.ts) and our part of its peer scores (scoring.ts). */
export interface Libp2pHooks {
  gater: ConnectionGater
  tap: GossipTap
  penalties: PeerPenalties
  /** The DNS libp2p resolves /dnsaddr/ addresses with (dnsaddr.ts). */
  dns: DNS
}

function listenAddresses(host: string, port: number): string[] {
  const family = host.includes(':') ? 'ip6' : 'ip4'
  return [`/${family}/${host}/tcp/${port}`, `/${family}/${host}/tcp/${port === 0 ? 0 : port + 1}/ws`]
}

/**
 * gossipsub's mesh bounds for a degree D. Dhi matters most: gossipsub prunes a mesh only above Dhi
 * (default 12), and in a well-connected mesh every node accepts the grafts of others up to it, so
 * lowering D alone changed nothing. Each mesh peer costs a node a copy or an IDONTWANT per operation
 * in each direction: in a 20-node mesh on one machine (bench:propagation, 5/s, docs/decisions.md) D 4
 * and D 3 used 126 and 123 % of a core against 137–158 % with gossipsub's bounds. Dout < Dlo and
 * Dout ≤ D / 2, as gossipsub requires; D is at least 2 (config/settings-mesh.ts).
 */
export function gossipMeshBounds(D: number): {
  D: number
  Dlo: number
  Dhi: number
  Dout: number
  Dlazy: number
  Dscore: number
} {
  const Dlo = D - 1
  return {
    D,
    Dlo,
    Dhi: Math.ceil(D * 1.5),
    Dout: Math.min(Dlo - 1, Math.floor(D / 2)),
    Dlazy: D,
    Dscore: Math.min(4, D)
  }
}

/** Throws a readable error for a malformed multiaddr in the configuration. */
function checkMultiaddrs(setting: string, list: readonly string[]): void {
  for (const text of list) {
    try {
      multiaddr(text)
    } catch (err) {
      throw new Error(`${setting}: ${JSON.stringify(text)} is not a multiaddr (${(err as Error).message})`)
    }
  }
}

export async function createLibp2pNode(options: Libp2pNodeOptions, hooks: Libp2pHooks): Promise<MeshLibp2p> {
  if (options.port > 65534) throw new Error('p2p.port must leave port + 1 free for WebSockets (at most 65534)')
  checkMultiaddrs('p2p.bootstrap', options.bootstrap)
  checkMultiaddrs('p2p.announce', options.announce)
  installLazyWindowUpdates()
  installQuietLengthPrefixReads()
  const reach = options.reach ?? DEFAULT_REACH
  // Optional services by name; MeshServices names only the ones the mesh calls.
  const extra: Record<string, (components: never) => unknown> = {}
  if (reach.autonat) extra.autonat = autoNAT()
  if (reach.relayServer) {
    extra.relay = circuitRelayServer({
      reservations: {
        maxReservations: reach.relayServer.maxReservations,
        defaultDurationLimit: reach.relayServer.durationLimitMs,
        defaultDataLimit: BigInt(reach.relayServer.dataLimitBytes)
      }
    })
  }
  if (reach.holePunching) extra.dcutr = dcutr()
  if (reach.upnp) extra.upnp = uPnPNAT()
  return createLibp2p<MeshServices>({
    start: false,
    privateKey: await generateKeyPairFromSeed('Ed25519', options.seed),
    nodeInfo: { name: 'registry-node', version: NODE_VERSION, userAgent: `registry-node/${NODE_VERSION}` },
    addresses: {
      listen: options.transport?.listen ?? listenAddresses(options.host, options.port),
      ...(options.announce.length > 0 ? { announce: [...options.announce] } : {})
    },
    // The relay transport dials /p2p-circuit addresses always; it reserves a slot only once the node
    // listens on /p2p-circuit (reachability.ts decides when).
    transports: options.transport?.transports ?? [tcp(), webSockets(), circuitRelayTransport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    // A node behind a firewall still lists its direct addresses, whose dials hang until a timeout:
    // at libp2p's 6 s per address, its TCP and WebSocket addresses used up the whole 10 s dial before
    // its relayed address was tried. 3 s each leaves the relay its turn; a live address answers in far less.
    dns: hooks.dns,
    connectionManager: { maxConnections: options.maxConnections, addressDialTimeout: 3_000 },
    // libp2p's monitor pings every connection in the same instant (every 10 s by default: half of an
    // idle node's CPU in a 10-node testnet; at 60 s, bursts of streams that delayed gossip in a 20-node
    // one). Our peer book pings each peer every 30 s at its own moment and closes the connections of
    // one that does not answer (peers.ts).
    connectionMonitor: { enabled: false },
    connectionGater: hooks.gater,
    services: {
      ...(extra as object),
      identify: identify(),
      // Our peer book, kad-dht and libp2p's connection monitor all ping: the default of one outbound
      // ping stream per connection makes them fail each other.
      ping: ping({ maxOutboundStreams: 4, maxInboundStreams: 4 }),
      dht: kadDHT({
        protocol: options.dhtProtocol ?? DHT_PROTOCOL,
        clientMode: false,
        // kad-dht's defaults (10 peers queried at once on 10 disjoint paths) made each provide and
        // lookup reach every node of a small mesh several times: in a 20-node testnet a home-bucket
        // announcement cost about a quarter of a second of CPU over the mesh and pushed gossip
        // latency to seconds. Standard Kademlia's 3 at once on one path finds the same closest peers.
        alpha: 3,
        disjointPaths: 1,
        kBucketSize: 6,
        // The default mapper drops loopback and LAN addresses, which empties routing tables on testnets.
        peerInfoMapper: passthroughMapper
      }),
      pubsub: gossipsub({
        // Operations carry their origin's seal (node_signature), verified by every receiver; a
        // gossipsub signature per message would repeat that at the cost of an Ed25519 sign on
        // publish (12 % of a node's CPU at 1,000 registrations/s) and a verify per received copy.
        globalSignaturePolicy: 'StrictNoSign',
        ...gossipMeshBounds(options.gossipMeshDegree),
        allowPublishToZeroTopicPeers: true,
        // The spec's 5-minute deduplication; IDs hash the bytes, so one operation is one message.
        seenTTL: 5 * 60_000,
        msgIdFn: hooks.tap.messageId,
        metricsRegister: hooks.tap.metricsRegister,
        metricsTopicStrToLabel: new Map(Object.values(GOSSIP_TOPICS).map(topic => [topic, topic])),
        // One gossip message (a batch of operations) and the RPC framing around it.
        maxInboundDataLength: OPERATION_LIMITS.batchBytes + 64 * 1024,
        // Gossipsub keeps one long-lived stream each way per peer; libp2p's default allows 32
        // inbound. A few more than one leave room for a stream replaced while the old one closes.
        maxInboundStreams: 4,
        maxOutboundStreams: 4,
        // Our topics' weights and thresholds (scoring.ts). Loopback is exempt from the IP-colocation
        // charge by default, either way: 20 nodes of a testnet on one machine graylisted each other
        // (bench:propagation).
        ...(options.gossipScoring
          ? {
              scoreParams: peerScoreParams(
                Object.values(GOSSIP_TOPICS),
                peer => hooks.penalties.score(peer),
                options.gossipColocationWhitelist
              ),
              scoreThresholds: SCORE_THRESHOLDS
            }
          : { scoreParams: { IPColocationFactorWhitelist: new Set(options.gossipColocationWhitelist) } })
      })
    }
  })
}
