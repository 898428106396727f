import { RegistryError } from '../../errors.js'
import type { NodeIdentity } from '../../identity/node-identity.js'
import type { Mesh } from '../../mesh/mesh.js'
import { NODE_VERSION } from '../../version.js'
import {
  AddPeerRequest,
  MeshFaultsRequest,
  MeshFaultsView,
  NetworkStats,
  NetworkStatus,
  PeerBan,
  PeerBanList,
  PeerBanRequest,
  PeerList,
  PeerListQuery,
  PeerUnbanned,
  PeerView,
  RemovedPeer
} from '../../wire/network.js'
import type { RuntimeInfo } from '../../wire/node.js'
import { validate } from '../../wire/validate.js'
import { json, type RouteDefinition } from '../../http/http.js'

export interface NetworkRouteComponents {
  /** Null when p2p.enabled is false. */
  mesh: Mesh | null
  identity: NodeIdentity
  name: string
  host: string
  counts: () => { agents: number; services: number; developers: number }
  /** Entities whose home is this node (what peers report of themselves in their hellos). */
  homeCounts: () => { entities: number; agents: number; active: number }
  /** Cards in the card cache. */
  cachedCards: () => number
  /** The sync digests summed up (changedAt: Date.now()); null when the mesh is disabled. */
  sync: () => { digest: string; operations: number; subjects: number; changedAt: number } | null
  /** Date.now() when the node started. */
  startedAt: number
  runtime: () => RuntimeInfo
  /** Throws admin_unavailable or admin_unauthorized. */
  checkAdmin: (authorization: string | undefined) => void
}

export function networkRoutes(c: NetworkRouteComponents): RouteDefinition[] {
  const mesh = (): Mesh => {
    if (!c.mesh) throw new RegistryError('mesh_disabled')
    return c.mesh
  }
  return [
    {
      method: 'GET',
      path: '/v1/network/peers',
      summary: 'Connected peers (?all=true adds known peers that disconnected)',
      tag: 'network',
      limit: 'read',
      query: PeerListQuery,
      responses: { 200: { description: 'peers, connected first', schema: PeerList } },
      handler: ctx => {
        const peers = c.mesh?.peers.list(ctx.query.get('all') === 'true') ?? []
        return json(200, { peers, count: peers.length })
      }
    },
    {
      method: 'POST',
      path: '/v1/network/peers',
      summary:
        'Connect to a peer now (admin: Authorization: Bearer <webhook secret>); it is re-dialled while this node runs',
      tag: 'network',
      limit: 'read',
      body: AddPeerRequest,
      responses: { 201: { description: 'the peer, after hellos and a ping', schema: PeerView } },
      errors: [
        'admin_unavailable',
        'admin_unauthorized',
        'invalid_json',
        'validation_failed',
        'peer_unreachable',
        'mesh_disabled'
      ],
      handler: async ctx => {
        c.checkAdmin(ctx.headers.authorization)
        const body = validate(AddPeerRequest, ctx.json())
        return json(201, await mesh().addPeer(body.address))
      }
    },
    {
      method: 'DELETE',
      path: '/v1/network/peers/{peer_id}',
      summary:
        'Hang up on a peer and stop re-dialling its added or bootstrap addresses (admin); it may come back unless banned',
      tag: 'network',
      limit: 'read',
      responses: { 200: { description: 'what was done', schema: RemovedPeer } },
      errors: ['admin_unavailable', 'admin_unauthorized', 'validation_failed', 'peer_not_found', 'mesh_disabled'],
      handler: async ctx => {
        c.checkAdmin(ctx.headers.authorization)
        return json(200, await mesh().removePeer(ctx.params.peer_id ?? ''))
      }
    },
    {
      method: 'GET',
      path: '/v1/network/bans',
      summary: 'Banned peers, oldest ban first (admin: Authorization: Bearer <webhook secret>)',
      tag: 'network',
      limit: 'read',
      responses: { 200: { description: 'the bans', schema: PeerBanList } },
      errors: ['admin_unavailable', 'admin_unauthorized', 'mesh_disabled'],
      handler: ctx => {
        c.checkAdmin(ctx.headers.authorization)
        const bans = mesh().bans.list()
        return json(200, { bans, count: bans.length })
      }
    },
    {
      method: 'POST',
      path: '/v1/network/bans',
      summary:
        'Ban a peer by PeerId (admin): hung up on, its connections refused both ways, never dialled; kept across restarts',
      tag: 'network',
      limit: 'read',
      body: PeerBanRequest,
      responses: {
        201: { description: 'banned', schema: PeerBan },
        200: { description: 'banned already: the reason replaced, the first time kept', schema: PeerBan }
      },
      errors: [
        'admin_unavailable',
        'admin_unauthorized',
        'invalid_json',
        'validation_failed',
        'storage_full',
        'mesh_disabled'
      ],
      handler: async ctx => {
        c.checkAdmin(ctx.headers.authorization)
        const body = validate(PeerBanRequest, ctx.json())
        const { ban, created } = await mesh().banPeer(body.peer_id, body.reason ?? null)
        return json(created ? 201 : 200, ban)
      }
    },
    {
      method: 'DELETE',
      path: '/v1/network/bans/{peer_id}',
      summary: 'Lift a ban (admin): the peer may connect again and its added or bootstrap addresses are re-dialled',
      tag: 'network',
      limit: 'read',
      responses: { 200: { description: 'unbanned', schema: PeerUnbanned } },
      errors: [
        'admin_unavailable',
        'admin_unauthorized',
        'validation_failed',
        'peer_not_banned',
        'storage_full',
        'mesh_disabled'
      ],
      handler: async ctx => {
        c.checkAdmin(ctx.headers.authorization)
        const peerId = await mesh().unbanPeer(ctx.params.peer_id ?? '')
        return json(200, {
          peer_id: peerId,
          unbanned: true,
          message: `${peerId} may connect again.`
        })
      }
    },
    {
      method: 'GET',
      path: '/v1/network/status',
      summary: 'This node in the mesh: identity, libp2p addresses, uptime, peer count, local counts',
      tag: 'network',
      limit: 'read',
      responses: { 200: { description: 'status', schema: NetworkStatus } },
      handler: () => {
        const counts = c.counts()
        const home = c.homeCounts()
        const uptimeMs = Date.now() - c.startedAt
        const peerCount = c.mesh?.peers.connectedCount ?? 0
        const held = counts.agents + counts.services
        const sync = c.sync()
        return json(200, {
          registry_id: c.identity.registryId,
          name: c.name,
          host: c.host,
          version: NODE_VERSION,
          public_key: c.identity.publicKey,
          peer_id: c.mesh?.peerId ?? null,
          addresses: c.mesh?.addresses() ?? [],
          uptime_seconds: Math.floor(uptimeMs / 1000),
          // The origin registry's flat fields, which deployed dashboards read.
          uptime: goDuration(uptimeMs),
          peer_count: peerCount,
          local_agents: held,
          gossip_entries: held - home.entities,
          cached_cards: c.cachedCards(),
          node_type: 'full',
          runtime: c.runtime(),
          mesh: {
            enabled: c.mesh !== null,
            peer_count: peerCount,
            known_peers: c.mesh?.peers.knownCount ?? 0,
            gossip_announcements_per_min: c.mesh?.gossip.perMinute() ?? 0,
            dht_mode: c.mesh?.dhtMode ?? null,
            reachability: c.mesh?.reach.state ?? 'unknown',
            connections: c.mesh?.reach.connectionCounts() ?? { direct: 0, relayed: 0 },
            hole_punches: c.mesh
              ? { ...c.mesh.holePunch.stats }
              : { attempted: 0, succeeded: 0, failed: 0, last_failure: null },
            ...(c.mesh ? { gossip: gossipCounters(c.mesh) } : {})
          },
          entities: counts,
          liveness: { home_entities: home.entities, active: home.active, inactive: home.entities - home.active },
          sync: sync && {
            digest: sync.digest,
            operations: sync.operations,
            subjects: sync.subjects,
            digest_changed_at: new Date(sync.changedAt).toISOString()
          }
        })
      }
    },
    {
      method: 'GET',
      path: '/v1/admin/mesh/faults',
      summary: 'Injected mesh faults of this node (admin: Authorization: Bearer <webhook secret>)',
      tag: 'network',
      limit: 'read',
      responses: { 200: { description: 'the current faults', schema: MeshFaultsView } },
      errors: ['admin_unavailable', 'admin_unauthorized', 'mesh_disabled'],
      handler: ctx => {
        c.checkAdmin(ctx.headers.authorization)
        return json(200, faultsView(mesh()))
      }
    },
    {
      method: 'PUT',
      path: '/v1/admin/mesh/faults',
      summary:
        'Inject process-level mesh faults for testnets: block peers (a partition), drop or delay received gossip (admin)',
      tag: 'network',
      limit: 'read',
      body: MeshFaultsRequest,
      responses: { 200: { description: 'the faults now in force', schema: MeshFaultsView } },
      errors: ['admin_unavailable', 'admin_unauthorized', 'invalid_json', 'validation_failed', 'mesh_disabled'],
      handler: async ctx => {
        c.checkAdmin(ctx.headers.authorization)
        const body = validate(MeshFaultsRequest, ctx.json())
        const m = mesh()
        await m.faults.apply({
          ...(body.blocked_peers !== undefined ? { blockedPeers: body.blocked_peers } : {}),
          ...(body.loss !== undefined ? { loss: body.loss } : {}),
          ...(body.delay_ms !== undefined ? { delayMs: body.delay_ms } : {})
        })
        return json(200, faultsView(m))
      }
    },
    {
      method: 'GET',
      path: '/v1/network/stats',
      summary: "Network-wide estimates from this node's view (itself and its connected peers)",
      tag: 'network',
      limit: 'read',
      responses: { 200: { description: 'estimates', schema: NetworkStats } },
      handler: () => {
        const counts = c.counts()
        const connected = c.mesh?.peers.connectedCount ?? 0
        const known = c.mesh?.peers.knownCount ?? 0
        const reported = c.mesh?.peers.reportedCounts() ?? { entities: 0, agents: 0 }
        return json(200, {
          estimated_registries: 1 + connected,
          // This node holds the mesh's records too; peers' hellos count only their home entities.
          estimated_entities: Math.max(counts.agents + counts.services, c.homeCounts().entities + reported.entities),
          estimated_agents: Math.max(counts.agents, c.homeCounts().agents + reported.agents),
          mesh_connectivity: known === 0 ? 0 : connected / known,
          connected_peers: connected,
          known_peers: known,
          gossip_announcements_per_min: c.mesh?.gossip.perMinute() ?? 0
        })
      }
    }
  ]
}

function faultsView(mesh: Mesh): MeshFaultsView {
  const f = mesh.faults.settings()
  return { blocked_peers: f.blockedPeers, loss: f.loss, delay_ms: f.delayMs, mode: 'process' }
}

function gossipCounters(mesh: Mesh): NonNullable<NetworkStatus['mesh']['gossip']> {
  const n = mesh.tap.counters
  return {
    published: mesh.gossip.stats.published,
    messages_published: mesh.gossip.stats.messages_published,
    copies_received: n.copies,
    first_received: n.first,
    duplicates: Math.max(0, n.copies - n.first - n.lost),
    lost: n.lost,
    operations_received: { ...mesh.gossip.stats.received },
    bytes_sent: n.bytesSent,
    bytes_received: n.bytesReceived
  }
}

/** A duration as Go's time.Duration.String() writes it (`1h2m3.5s`), which the origin registry's `uptime` is. */
export function goDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`
  const hours = Math.floor(ms / 3_600_000)
  const minutes = Math.floor((ms % 3_600_000) / 60_000)
  const seconds = ((ms % 60_000) / 1000).toFixed(3).replace(/\.?0+$/, '')
  return `${hours > 0 ? `${hours}h` : ''}${hours > 0 || minutes > 0 ? `${minutes}m` : ''}${seconds}s`
}
