/**
 * The configuration (snake_case keys, seconds and days, as operators write them) translated into
 * each component's settings (camelCase, milliseconds). Components take only their settings, so
 * none of them reads the config file's shape, and every default lives once, in SETTINGS.
 */
import { join } from 'node:path'
import type { HeartbeatSocketLimits } from './api/sockets.js'
import type { CardFetchSettings } from './cards/card-fetcher.js'
import type { NodeConfig } from './config/settings.js'
import type { VerifyPoolOptions } from './identity/verify-pool.js'
import type { MeshOptions } from './mesh/mesh.js'
import type { RelayClientMode } from './mesh/reachability.js'
import type { ServiceSettings } from './services/registry/components.js'
import type { LivenessSettings } from './services/liveness/liveness.js'
import type { OnboardingSettings } from './services/registry/onboarding.js'
import type { OriginQuotaSettings } from './services/replication/origin-quota.js'
import type { VerificationSettings } from './services/registry/ownership-verification.js'
import type { SearchSettings } from './services/search/search.js'
import { SNAPSHOT_FILE } from './services/search/search-snapshot.js'

const SECOND_MS = 1000
const DAY_MS = 86_400_000

export function serviceSettings(config: NodeConfig): ServiceSettings {
  return {
    host: config.host,
    mode: config.onboarding.mode,
    authUrl: config.onboarding.auth_url,
    tombstoneRetentionMs: config.tombstones.retention_days * DAY_MS,
    allowHttpEntityUrl: config.entities.allow_http_url,
    strictReplay: config.entities.strict_replay,
    maxClockSkewMs: config.liveness.max_clock_skew_seconds * SECOND_MS,
    replica: config.replica_of !== ''
  }
}

export function verifyPoolSettings(config: NodeConfig): Pick<VerifyPoolOptions, 'workers' | 'inlineMaxRate'> {
  return { workers: config.verify.workers, inlineMaxRate: config.verify.inline_max_rate }
}

export function verificationSettings({ verification: v }: NodeConfig): VerificationSettings {
  return {
    dnsServers: v.dns_servers,
    githubApiUrl: v.github_api_url,
    githubCaFile: v.github_ca_file,
    timeoutMs: v.timeout_ms
  }
}

export function livenessSettings({ liveness: l }: NodeConfig): LivenessSettings {
  return {
    inactiveAfterMs: l.inactive_after_seconds * SECOND_MS,
    sweepIntervalMs: l.sweep_interval_seconds * SECOND_MS,
    maxClockSkewMs: l.max_clock_skew_seconds * SECOND_MS,
    flushIntervalMs: l.flush_interval_ms
  }
}

export function heartbeatSocketLimits({ liveness: l }: NodeConfig): HeartbeatSocketLimits {
  return {
    maxEntitiesPerConnection: l.max_entities_per_connection,
    framesPerSecondPerEntity: l.frames_per_second_per_entity,
    maxFrameBytes: l.max_frame_bytes,
    probationMs: l.probation_seconds * SECOND_MS,
    probationInFlight: l.probation_in_flight,
    probationInFlightPerAddress: l.probation_in_flight_per_address
  }
}

export function onboardingSettings({ onboarding: o }: NodeConfig): OnboardingSettings {
  return { mode: o.mode, authUrl: o.auth_url, webhookSecret: o.webhook_secret }
}

export function cardFetchSettings(config: NodeConfig): CardFetchSettings {
  const c = config.cards
  return {
    timeoutMs: c.timeout_ms,
    maxBytes: c.max_bytes,
    cacheTtlMs: c.cache_ttl_seconds * SECOND_MS,
    allowPrivateAddresses: c.allow_private_addresses,
    allowHttp: config.entities.allow_http_url,
    caFile: c.ca_file
  }
}

export function searchSettings({ search: s, data_dir }: Pick<NodeConfig, 'search' | 'data_dir'>): SearchSettings {
  return {
    snapshotFile: join(data_dir, SNAPSHOT_FILE),
    snapshotFromEntities: s.snapshot_from_entities,
    weights: {
      text: s.weight_text,
      semantic: s.weight_semantic,
      trust: s.weight_trust,
      freshness: s.weight_freshness,
      availability: s.weight_availability
    },
    halfLifeDays: s.freshness_half_life_days,
    minSemantic: s.min_semantic_similarity,
    fullScanBelow: s.full_semantic_scan_below,
    fusion: s.fusion,
    federation: { maxPeers: s.federation_max_peers, timeoutMs: s.federation_timeout_ms },
    termFilter: { falsePositiveRate: s.bloom_false_positive_rate, rebuildIntervalMs: s.bloom_rebuild_interval_ms },
    worker: s.worker,
    workerFromEntities: s.worker_from_entities,
    threads: s.threads,
    queryExpansion: s.query_expansion
  }
}

export function originQuotaSettings({ p2p }: NodeConfig): OriginQuotaSettings {
  return {
    opsPerSecondPerOrigin: p2p.origin_ops_per_second,
    opsPerSecondPerDeveloper: p2p.developer_ops_per_second,
    maxEntitiesPerOrigin: p2p.max_entities_per_origin
  }
}

/** The mesh's settings; the node adds the parts it wires (apply, digests, hooks). */
export type MeshSettings = Pick<
  MeshOptions,
  | 'seed'
  | 'host'
  | 'port'
  | 'bootstrap'
  | 'announce'
  | 'maxConnections'
  | 'targetPeers'
  | 'discoveryIntervalMs'
  | 'dnsServers'
  | 'syncIntervalMs'
  | 'announceIntervalMs'
  | 'gossipPerPeerPerSecond'
  | 'syncPerPeerPerMinute'
  | 'gossipScoring'
  | 'gossipColocationWhitelist'
  | 'gossipMeshDegree'
  | 'allowPeers'
  | 'traceFile'
  | 'reach'
  | 'relayClient'
>

export function meshSettings({ p2p }: NodeConfig, seed: Uint8Array): MeshSettings {
  return {
    seed,
    host: p2p.host,
    port: p2p.port,
    bootstrap: p2p.bootstrap,
    announce: p2p.announce,
    maxConnections: p2p.max_connections,
    targetPeers: p2p.target_peers,
    discoveryIntervalMs: p2p.discovery_interval_seconds * SECOND_MS,
    dnsServers: p2p.dns_servers,
    syncIntervalMs: p2p.sync_interval_seconds * SECOND_MS,
    announceIntervalMs: p2p.dht_announce_interval_seconds * SECOND_MS,
    gossipPerPeerPerSecond: p2p.gossip_max_per_peer_per_second,
    syncPerPeerPerMinute: p2p.sync_max_per_peer_per_minute,
    gossipScoring: p2p.gossip_scoring,
    gossipColocationWhitelist: p2p.gossip_colocation_whitelist,
    gossipMeshDegree: p2p.gossip_mesh_degree,
    allowPeers: p2p.allow_peers,
    traceFile: p2p.trace_file,
    reach: {
      autonat: p2p.reachability_check,
      relayServer: p2p.relay_server
        ? {
            maxReservations: p2p.relay_max_reservations,
            durationLimitMs: p2p.relay_duration_limit_seconds * SECOND_MS,
            dataLimitBytes: p2p.relay_data_limit_bytes
          }
        : null,
      holePunching: p2p.hole_punching,
      upnp: p2p.upnp
    },
    // An operator who announces addresses has said how peers reach the node: no relay needed.
    relayClient: relayClientMode(p2p.relay_client, p2p.announce.length > 0)
  }
}

function relayClientMode(setting: string, announced: boolean): RelayClientMode {
  if (setting === 'always' || setting === 'off') return setting
  return announced ? 'off' : 'auto'
}
