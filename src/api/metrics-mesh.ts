/**
 * Metrics of the mesh: peers and connections, gossip, sync, the DHT, and what became of the
 * operations other registries sent (replication, quotas). They read the counters the mesh and the
 * replication service keep for /v1/network/status, at scrape time; nothing here is on their paths.
 */
import type { GossipStats } from '../mesh/gossip.js'
import type { GossipCounters } from '../mesh/gossip-tap.js'
import { byKey, type MetricDefinition, type Sample } from './metric-definition.js'

/** What these metrics read of a running mesh (the node's Mesh). */
export interface MeshMetricSource {
  peers: { list(): readonly { direction: 'inbound' | 'outbound' | null }[]; readonly knownCount: number }
  libp2p: {
    getConnections(): readonly { direction: string; remoteAddr: { getComponents(): readonly { name: string }[] } }[]
  }
  readonly dhtMode: 'client' | 'server'
  reach: { readonly state: 'public' | 'private' | 'unknown' }
  holePunch: { readonly stats: { succeeded: number; failed: number } }
  gossip: { readonly stats: GossipStats }
  tap: { readonly counters: GossipCounters }
  sync: {
    readonly totals: {
      sessions: number
      failed: number
      busy: number
      sent: number
      corrected: number
      over_limit: number
    }
    readonly outcomes: Readonly<Record<string, number>>
  }
  scoreGuard: { readonly disconnected: number; graylisted(): readonly unknown[] }
  locator: {
    readonly stats: { announced: number; announceFailures: number; lookups: number; found: number; skipped: number }
  }
}

export interface MeshMetricSources {
  /** Null when p2p.enabled is false (the counters are then absent or 0). */
  mesh(): MeshMetricSource | null
  /** Operations from other registries (gossip, sync, DHT fetch), by outcome, and why the stale ones were. */
  replication(): { counts: Readonly<Record<string, number>>; staleReasons: Readonly<Record<string, number>> }
  /** Operations from other registries refused by quota since start, by reason. */
  quotaRefusals(): Readonly<Record<string, number>>
}

const OPERATION_OUTCOMES = '`applied`, `stale`, `deferred`, `unsupported`, `throttled`, `refused`, `invalid`'

/** The transport of a connection, from its remote address. */
function transportOf(address: { getComponents(): readonly { name: string }[] }): string {
  const names = address.getComponents().map(c => c.name)
  if (names.includes('p2p-circuit')) return 'relay'
  if (names.includes('ws') || names.includes('wss')) return 'ws'
  if (names.includes('tcp')) return 'tcp'
  return 'other'
}

/** Samples of a mesh counter; none when the mesh is off. */
const ofMesh =
  (read: (m: MeshMetricSource) => number | Sample[]) =>
  (s: MeshMetricSources): number | Sample[] => {
    const mesh = s.mesh()
    return mesh ? read(mesh) : []
  }

export const MESH_METRICS: readonly MetricDefinition<MeshMetricSources>[] = [
  {
    name: 'registry_mesh_peers',
    type: 'gauge',
    help: 'Peers connected now, by the direction of their connection',
    labels: ['direction'],
    values: '`inbound`, `outbound`, `unknown`',
    read: s => {
      const counts = { inbound: 0, outbound: 0, unknown: 0 }
      for (const peer of s.mesh()?.peers.list() ?? []) counts[peer.direction ?? 'unknown']++
      return byKey('direction', counts)
    }
  },
  {
    name: 'registry_mesh_known_peers',
    type: 'gauge',
    help: 'Peers this node knows of, connected or not',
    read: s => s.mesh()?.peers.knownCount ?? 0
  },
  {
    name: 'registry_mesh_connections',
    type: 'gauge',
    help: 'libp2p connections open now, by direction and transport',
    labels: ['direction', 'transport'],
    values: '`inbound`, `outbound`; `tcp`, `ws`, `relay`, `other`',
    read: ofMesh(m => {
      const counts = new Map<string, Sample>()
      for (const c of m.libp2p.getConnections()) {
        const transport = transportOf(c.remoteAddr)
        const key = `${c.direction} ${transport}`
        const [labels, n] = counts.get(key) ?? [{ direction: c.direction, transport }, 0]
        counts.set(key, [labels, n + 1])
      }
      return [...counts.values()]
    })
  },
  {
    name: 'registry_mesh_reachability',
    type: 'gauge',
    help: 'Whether peers can dial this node: 1 for the current state, 0 for the others',
    labels: ['state'],
    values: '`public`, `private`, `unknown`',
    read: ofMesh(m => {
      const state = m.reach.state
      return byKey('state', { public: 0, private: 0, unknown: 0, [state]: 1 })
    })
  },
  {
    name: 'registry_mesh_hole_punches_total',
    type: 'counter',
    help: 'Hole punches this node started over relayed connections, by outcome',
    labels: ['outcome'],
    values: '`succeeded`, `failed`',
    read: ofMesh(m => byKey('outcome', { succeeded: m.holePunch.stats.succeeded, failed: m.holePunch.stats.failed }))
  },
  {
    name: 'registry_mesh_dht_server',
    type: 'gauge',
    help: 'Whether the DHT runs in server mode (1: it answers queries) or client mode (0)',
    read: s => (s.mesh()?.dhtMode === 'server' ? 1 : 0)
  },
  {
    name: 'registry_gossip_messages_published_total',
    type: 'counter',
    help: 'Gossip messages this node published (each carries one or more operations)',
    read: ofMesh(m => m.gossip.stats.messages_published)
  },
  {
    name: 'registry_gossip_operations_published_total',
    type: 'counter',
    help: 'Operations this node published by gossip',
    read: ofMesh(m => m.gossip.stats.published)
  },
  {
    name: 'registry_gossip_copies_received_total',
    type: 'counter',
    help: 'Gossip message copies received, duplicates included (a message reaches a node by several paths)',
    read: ofMesh(m => m.tap.counters.copies)
  },
  {
    name: 'registry_gossip_messages_received_total',
    type: 'counter',
    help: 'Gossip messages received (first copies) by verdict: accepted and forwarded, ignored (over a rate, too old, or not storable here now; sync brings them) or rejected (malformed, forged or over quota: the relay loses score)',
    labels: ['outcome'],
    values: '`accepted`, `ignored`, `rejected`',
    read: ofMesh(m => byKey('outcome', m.gossip.stats.messages))
  },
  {
    name: 'registry_gossip_operations_received_total',
    type: 'counter',
    help: 'Operations in the gossip messages received, by outcome; rate_limited counts whole messages over the per-peer rate, invalid also counts malformed messages',
    labels: ['outcome'],
    values: `${OPERATION_OUTCOMES}, \`too_old\`, \`rate_limited\`, \`storage_full\``,
    read: ofMesh(m => byKey('outcome', m.gossip.stats.received))
  },
  {
    name: 'registry_gossip_rpc_bytes_total',
    type: 'counter',
    help: 'Gossipsub RPC bytes (messages, control and subscriptions) by direction',
    labels: ['direction'],
    values: '`sent`, `received`',
    read: ofMesh(m => [
      [{ direction: 'sent' }, m.tap.counters.bytesSent],
      [{ direction: 'received' }, m.tap.counters.bytesReceived]
    ])
  },
  {
    name: 'registry_sync_sessions_total',
    type: 'counter',
    help: 'Sync sessions with peers, either side starting them, by outcome (busy: both started one at once, the other stands, or this side was answered busy; over_limit: a peer opened more than p2p.sync_max_per_peer_per_minute and was answered busy)',
    labels: ['outcome'],
    values: '`completed`, `failed`, `busy`, `over_limit`',
    read: ofMesh(m => [
      [{ outcome: 'completed' }, m.sync.totals.sessions],
      [{ outcome: 'failed' }, m.sync.totals.failed],
      [{ outcome: 'busy' }, m.sync.totals.busy],
      [{ outcome: 'over_limit' }, m.sync.totals.over_limit]
    ])
  },
  {
    name: 'registry_gossip_graylisted_peers',
    type: 'gauge',
    help: 'Peers refused now because their gossip score fell below the graylist threshold (p2p.gossip_scoring)',
    read: ofMesh(m => m.scoreGuard.graylisted().length)
  },
  {
    name: 'registry_gossip_graylist_disconnects_total',
    type: 'counter',
    help: 'Times this node hung up on a peer whose gossip score fell below the graylist threshold',
    read: ofMesh(m => m.scoreGuard.disconnected)
  },
  {
    name: 'registry_sync_operations_sent_total',
    type: 'counter',
    help: 'Operations this node sent to peers in sync sessions',
    read: ofMesh(m => m.sync.totals.sent)
  },
  {
    name: 'registry_sync_operations_received_total',
    type: 'counter',
    help: 'Operations received in sync sessions, by outcome',
    labels: ['outcome'],
    values: `${OPERATION_OUTCOMES}, \`storage_full\``,
    read: ofMesh(m => byKey('outcome', m.sync.outcomes))
  },
  {
    name: 'registry_sync_digests_corrected_total',
    type: 'counter',
    help: 'Subject digests found stale during sync and recomputed from the log (should stay 0)',
    read: ofMesh(m => m.sync.totals.corrected)
  },
  {
    name: 'registry_dht_lookups_total',
    type: 'counter',
    help: 'DHT lookups for a record this node lacks (an unknown ID or name asked of it), by outcome (skipped: too many running, or the same key missed a moment ago)',
    labels: ['outcome'],
    values: '`found`, `not_found`, `skipped`',
    read: ofMesh(m => [
      [{ outcome: 'found' }, m.locator.stats.found],
      [{ outcome: 'not_found' }, m.locator.stats.lookups - m.locator.stats.found],
      [{ outcome: 'skipped' }, m.locator.stats.skipped]
    ])
  },
  {
    name: 'registry_dht_announcements_total',
    type: 'counter',
    help: 'DHT provider announcements of the keys this node holds, by outcome',
    labels: ['outcome'],
    values: '`announced`, `failed`',
    read: ofMesh(m => [
      [{ outcome: 'announced' }, m.locator.stats.announced],
      [{ outcome: 'failed' }, m.locator.stats.announceFailures]
    ])
  },
  {
    name: 'registry_replication_operations_total',
    type: 'counter',
    help: "Operations from other registries (by gossip, sync or DHT fetch) by what applying them came to: applied, stale (see registry_replication_stale_operations_total), deferred (waiting for what it changes), unsupported, throttled (over a rate; sync brings it later), refused (over its origin's total), invalid (a forged or broken signature)",
    labels: ['outcome'],
    values: OPERATION_OUTCOMES,
    read: s => byKey('outcome', s.replication().counts)
  },
  {
    name: 'registry_replication_stale_operations_total',
    type: 'counter',
    help: "Stale operations from other registries by reason: duplicate (already held), superseded (a later write won), replayed (its client signature authorized another write), own (this node's own, sent back)",
    labels: ['reason'],
    values: '`duplicate`, `superseded`, `replayed`, `own`',
    read: s => byKey('reason', s.replication().staleReasons)
  },
  {
    name: 'registry_mesh_quota_refusals_total',
    type: 'counter',
    help: "Operations from other registries refused by quota: over their origin's or developer's rate (taken later by sync) or their origin's total of entities",
    labels: ['reason'],
    values: '`origin_rate`, `developer_rate`, `origin_entities`',
    read: s => byKey('reason', s.quotaRefusals())
  }
]
