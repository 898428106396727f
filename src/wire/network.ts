import { Type, type Static } from '@sinclair/typebox'
import { Nullable, PublicKey, Timestamp } from './common.js'
import { Runtime } from './node.js'

const RegistryId = Type.String({ pattern: '^zns:registry:[0-9a-f]{32}$', description: 'zns:registry:<32 hex>' })
const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })

export const HELLO_LIMITS = {
  name: 128,
  host: 253,
  version: 64,
  messageBytes: 8192,
  protocols: 64,
  protocolId: 128,
  capabilities: 32,
  capability: 64
} as const

/**
 * The message of `/zns/hello/1.0.0` (protocols/README.md): what each side tells the other about itself.
 * Unknown members are ignored, so later versions may add some.
 */
export const HelloMessage = Type.Object(
  {
    registry_id: RegistryId,
    name: Type.String({ maxLength: HELLO_LIMITS.name }),
    host: Type.String({ maxLength: HELLO_LIMITS.host }),
    public_key: PublicKey,
    version: Type.String({ maxLength: HELLO_LIMITS.version }),
    entity_count: Count,
    agent_count: Count,
    /** Absent from nodes before these lists (0.2.0): receivers then assume what that release spoke. */
    protocols: Type.Optional(
      Type.Array(Type.String({ maxLength: HELLO_LIMITS.protocolId }), { maxItems: HELLO_LIMITS.protocols })
    ),
    capabilities: Type.Optional(
      Type.Array(Type.String({ maxLength: HELLO_LIMITS.capability }), { maxItems: HELLO_LIMITS.capabilities })
    )
  },
  { $id: 'HelloMessage' }
)
export type HelloMessage = Static<typeof HelloMessage>

export const AddPeerRequest = Type.Object(
  {
    address: Type.String({
      minLength: 1,
      maxLength: 1024,
      description:
        "a multiaddr (/ip4/203.0.113.7/tcp/4001, ending in /p2p/<peer-id> to pin the peer's key) or host:port (TCP)",
      example: '/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWLrbV4uahCbi7oKp1VhGNx5mMaKuMDT7WmAKX8LbQu2Dt'
    })
  },
  {
    $id: 'AddPeerRequest',
    description:
      "Other members (name, registry_id, public_key in the spec's form) are accepted and ignored: the peer's own hello, checked against its key, is what the node records."
  }
)
export type AddPeerRequest = Static<typeof AddPeerRequest>

export const PeerView = Type.Object(
  {
    peer_id: Type.String({ description: "libp2p PeerId (12D3KooW…), derived from the peer's Ed25519 key" }),
    address: Nullable(Type.String({ description: 'a multiaddr the peer can be dialled at, ending in /p2p/<peer_id>' })),
    addresses: Type.Array(Type.String(), { description: 'listen addresses the peer reported through identify' }),
    name: Nullable(Type.String({ description: 'self-declared (from its hello)' })),
    host: Nullable(
      Type.String({ description: 'self-declared (from its hello); proven only by a later registry-proof tier' })
    ),
    registry_id: Nullable(RegistryId),
    public_key: Nullable(PublicKey),
    version: Nullable(Type.String()),
    protocols: Nullable(
      Type.Array(Type.String(), {
        description:
          'protocol IDs the peer serves and gossip topics it joins, from its hello; null before its hello or when its hello has no list (then what the 0.2.0 release spoke is assumed)'
      })
    ),
    capabilities: Nullable(
      Type.Array(Type.String(), {
        description: 'named features the peer offers (federated-search, term-filters, status-batches, fetch, …)'
      })
    ),
    compatibility: Type.Union(
      [Type.Literal('unknown'), Type.Literal('full'), Type.Literal('partial'), Type.Literal('incompatible')],
      {
        description:
          'full: it speaks every protocol version and offers every capability this node does; partial: it lacks some (not used with it); incompatible: it lacks a version of hello or sync this node speaks, so this node hangs up on it; unknown: no verified hello yet'
      }
    ),
    missing: Type.Array(Type.String(), {
      description:
        "what of this node's it lacks: protocols as family and major (/zns/search/1.x), topics, capability names"
    }),
    agent_count: Nullable(Count),
    entity_count: Nullable(Count),
    latency_ms: Nullable(Type.Number({ description: 'last ping round trip' })),
    gossip_score: Nullable(
      Type.Number({
        description:
          "this node's gossipsub score of the peer: below −20 no gossip metadata is exchanged, below −40 none of this node's messages go to it, below −80 it is graylisted, hung up on and refused until the score recovers (p2p.gossip_scoring); null when the peer has no score here"
      })
    ),
    health: Type.Union([Type.Literal('healthy'), Type.Literal('degraded'), Type.Literal('disconnected')], {
      description:
        'healthy: connected and the last ping answered; degraded: connected but the last ping failed or none answered yet; disconnected: no open connection'
    }),
    connected: Type.Boolean(),
    direction: Nullable(Type.Union([Type.Literal('inbound'), Type.Literal('outbound')])),
    connected_at: Nullable(Timestamp),
    last_seen: Timestamp,
    verification_tier: Type.Union([Type.Literal('unverified'), Type.Literal('peer-id')], {
      description:
        "peer-id: the hello's registry_id and public_key are those of the key the connection authenticated; unverified: no hello yet, or one that does not match. Registry-proof and mesh attestation tiers come later."
    })
  },
  { $id: 'Peer' }
)
export type PeerView = Static<typeof PeerView>

export const PeerList = Type.Object({ peers: Type.Array(PeerView), count: Type.Integer() }, { $id: 'PeerList' })

const PeerIdText = Type.String({
  minLength: 1,
  maxLength: 128,
  description: "libp2p PeerId (12D3KooW…), as /v1/network/peers and the node's start line show it",
  example: '12D3KooWLrbV4uahCbi7oKp1VhGNx5mMaKuMDT7WmAKX8LbQu2Dt'
})

export const RemovedPeer = Type.Object(
  {
    peer_id: Type.String(),
    disconnected: Type.Boolean({ description: 'whether it was connected (and is now hung up on)' }),
    addresses_dropped: Type.Array(Type.String(), {
      description:
        'added or bootstrap addresses of this peer no longer re-dialled (bootstrap ones come back at the next start)'
    }),
    message: Type.String()
  },
  { $id: 'RemovedPeer' }
)
export type RemovedPeer = Static<typeof RemovedPeer>

export const PeerBanRequest = Type.Object(
  {
    peer_id: PeerIdText,
    reason: Type.Optional(Type.String({ maxLength: 500, description: 'a note for operators, shown in the ban list' }))
  },
  { $id: 'PeerBanRequest' }
)
export type PeerBanRequest = Static<typeof PeerBanRequest>

export const PeerBan = Type.Object(
  {
    peer_id: Type.String(),
    banned_at: Timestamp,
    reason: Nullable(Type.String())
  },
  {
    $id: 'PeerBan',
    description:
      'A banned peer: hung up on, its connections refused both ways, never dialled; kept in the store across restarts.'
  }
)
export type PeerBan = Static<typeof PeerBan>

export const PeerBanList = Type.Object({ bans: Type.Array(PeerBan), count: Type.Integer() }, { $id: 'PeerBanList' })

export const PeerUnbanned = Type.Object(
  { peer_id: Type.String(), unbanned: Type.Literal(true), message: Type.String() },
  { $id: 'PeerUnbanned' }
)

export const PeerListQuery = Type.Object({
  all: Type.Optional(Type.String({ description: 'true: also list known peers that are no longer connected' }))
})

export const NetworkStatus = Type.Object(
  {
    registry_id: Type.String(),
    name: Type.String(),
    host: Type.String(),
    version: Type.String(),
    public_key: Type.String(),
    peer_id: Nullable(Type.String({ description: 'null when the mesh is disabled' })),
    addresses: Type.Array(Type.String(), {
      description: 'libp2p multiaddrs peers can dial (announce addresses when set)'
    }),
    uptime_seconds: Type.Integer(),
    uptime: Type.String({ description: 'the uptime as the origin registry writes it (Go duration: 1h2m3.5s)' }),
    peer_count: Type.Integer({
      description: 'connected peers (mesh.peer_count, at the top level as the origin registry has it)'
    }),
    local_agents: Type.Integer({ description: 'entities this node holds, from every registry' }),
    gossip_entries: Type.Integer({ description: 'entities this node holds from other registries' }),
    cached_cards: Type.Integer({ description: 'entity cards in the card cache' }),
    node_type: Type.Literal('full', {
      description: 'every node holds every record (the origin registry also had light and gateway nodes)'
    }),
    runtime: Runtime,
    mesh: Type.Object({
      enabled: Type.Boolean(),
      peer_count: Type.Integer({ description: 'connected peers' }),
      known_peers: Type.Integer({ description: 'connected or seen recently' }),
      gossip_announcements_per_min: Type.Number({
        description: 'operations gossiped in the last minute, published and received'
      }),
      dht_mode: Nullable(Type.String()),
      reachability: Type.Union([Type.Literal('public'), Type.Literal('private'), Type.Literal('unknown')], {
        description:
          'whether peers can dial this node: public (a peer dialled it back, or AutoNAT confirmed an address), private (every peer asked failed to), unknown (not asked yet, or the mesh is disabled)'
      }),
      connections: Type.Object(
        {
          direct: Type.Integer({ description: 'libp2p connections over TCP or WebSockets' }),
          relayed: Type.Integer({ description: 'connections through a circuit relay (limited in time and bytes)' })
        },
        { description: 'open libp2p connections by kind' }
      ),
      hole_punches: Type.Object(
        {
          attempted: Type.Integer({ description: 'punches this node started over a relayed connection' }),
          succeeded: Type.Integer({ description: 'punches that replaced the relayed connection with a direct one' }),
          failed: Type.Integer({
            description: 'punches that timed out or were refused while no direct connection appeared; the relay stays'
          }),
          last_failure: Nullable(Type.String({ description: 'why the latest failed punch failed' }))
        },
        { description: 'hole punching between nodes that reach each other only through a relay' }
      ),
      gossip: Type.Optional(
        Type.Object(
          {
            published: Type.Integer({ description: 'operations this node published' }),
            messages_published: Type.Integer({
              description: 'gossip messages that carried them (a message carries the operations of one pacing interval)'
            }),
            copies_received: Type.Integer({ description: 'message copies received, first and duplicate' }),
            first_received: Type.Integer({ description: 'first copies validated' }),
            duplicates: Type.Integer({ description: 'copies received after the first (copies − first − lost)' }),
            lost: Type.Integer({ description: 'copies dropped by injected loss (testnets)' }),
            operations_received: Type.Record(Type.String(), Type.Integer(), {
              description:
                'operations in the messages received, by outcome: applied, stale (already held or older), deferred (waiting for what they depend on), unsupported, throttled and refused (over an origin quota), invalid, too_old (sync carries them), rate_limited (whole messages over the per-peer rate), storage_full'
            }),
            bytes_sent: Type.Integer({ description: 'gossipsub RPC bytes sent' }),
            bytes_received: Type.Integer({ description: 'gossipsub RPC bytes received' })
          },
          { description: 'gossip counters since start; absent when the mesh is disabled' }
        )
      )
    }),
    entities: Type.Object({ agents: Type.Integer(), services: Type.Integer(), developers: Type.Integer() }),
    liveness: Type.Object(
      {
        home_entities: Type.Integer({ description: 'entities whose home is this node (it tracks their heartbeats)' }),
        active: Type.Integer(),
        inactive: Type.Integer()
      },
      { description: "liveness of this node's home entities; other entities' liveness is their home node's" }
    ),
    sync: Nullable(
      Type.Object(
        {
          digest: Type.String({
            pattern: '^[0-9a-f]{64}$',
            description:
              'SHA-256 over the 256 bucket digests sync compares: two nodes report the same one when they hold the same operations'
          }),
          operations: Type.Integer({
            description: 'operations the digest covers, counted once per subject they are indexed under'
          }),
          subjects: Type.Integer({ description: 'subjects (entities, developers, names, …) with operations held' }),
          digest_changed_at: Type.String({
            format: 'date-time',
            description:
              'when this node last applied a change to the digest (ms precision, its own clock), or built it at start'
          })
        },
        {
          description:
            'what sync reconciles, summed up: equal digests on every node mean the mesh has converged; null when the mesh is disabled'
        }
      )
    )
  },
  { $id: 'NetworkStatus' }
)
export type NetworkStatus = Static<typeof NetworkStatus>

export const MeshFaultsView = Type.Object(
  {
    blocked_peers: Type.Array(Type.String({ maxLength: 128 }), {
      maxItems: 1000,
      description: 'PeerIds whose connections are closed and refused both ways'
    }),
    loss: Type.Number({ minimum: 0, maximum: 1, description: 'probability that a received gossip copy is dropped' }),
    delay_ms: Type.Integer({
      minimum: 0,
      maximum: 60_000,
      description: 'wait of each received gossip message before validation and forwarding'
    }),
    mode: Type.Literal('process', {
      description: "faults act inside the node process (network namespaces are the testnet tool's)"
    })
  },
  { $id: 'MeshFaultsView' }
)
export type MeshFaultsView = Static<typeof MeshFaultsView>

export const MeshFaultsRequest = Type.Object(
  {
    blocked_peers: Type.Optional(MeshFaultsView.properties.blocked_peers),
    loss: Type.Optional(MeshFaultsView.properties.loss),
    delay_ms: Type.Optional(MeshFaultsView.properties.delay_ms)
  },
  { $id: 'MeshFaultsRequest', additionalProperties: false, description: 'Members left out keep their value.' }
)

export const NetworkStats = Type.Object(
  {
    estimated_registries: Type.Integer({ description: 'this node + its connected peers (a lower bound)' }),
    estimated_entities: Type.Integer({
      description:
        'the larger of: the entities this node holds (its own and what the mesh replicated), and its home entities + the home counts connected peers reported in their hellos'
    }),
    estimated_agents: Type.Integer(),
    mesh_connectivity: Type.Number({ description: 'connected peers / known peers, 0 to 1 (0 when none are known)' }),
    connected_peers: Type.Integer(),
    known_peers: Type.Integer(),
    gossip_announcements_per_min: Type.Number({
      description: 'operations gossiped in the last minute, published and received'
    })
  },
  { $id: 'NetworkStats' }
)
