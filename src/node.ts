/**
 * The composition root: builds every component from the configuration, starts them in order and
 * stops them in reverse. Tests build nodes with a temp data dir and port 0.
 */
import './polyfills.js'
import { join } from 'node:path'
import type { Logger } from 'pino'
import { ClientIpResolver } from './api/client-ip.js'
import { Cors } from './api/cors.js'
import type { RouteDefinition } from './api/http.js'
import { NodeMetrics } from './api/metrics.js'
import { FixedWindowLimiter } from './api/rate-limit.js'
import { developerRoutes } from './api/routes/developers.js'
import { entityRoutes } from './api/routes/entities.js'
import { handleRoutes } from './api/routes/handles.js'
import { nameRoutes } from './api/routes/names.js'
import { documentationRoutes, nodeRoutes } from './api/routes/node.js'
import { onboardingRoutes } from './api/routes/onboarding.js'
import { networkRoutes } from './api/routes/network.js'
import { adminBearerCheck } from './api/admin-auth.js'
import { cardRoutes } from './api/routes/cards.js'
import { searchRoutes } from './api/routes/search.js'
import { CardFetcher } from './cards/card-fetcher.js'
import { wellKnownRoutes } from './api/routes/well-known.js'
import { HttpServer } from './api/server.js'
import { requireUws } from './api/uws-loader.js'
import type { ServerKind } from './api/front.js'
import type { NodeConfig } from './config.js'
import { EventBus } from './events/bus.js'
import { loadOrCreateNodeIdentity, NODE_KEY_FILE, type NodeIdentity } from './identity/node-identity.js'
import { VerifyPool } from './identity/verify-pool.js'
import { verifyHeartbeat } from './identity/verifiers.js'
import { LivenessService } from './services/liveness.js'
import { NODE_VERSION } from './version.js'
import { Sockets } from './api/sockets.js'
import { socketRoutes } from './api/routes/sockets.js'
import { createLogger } from './logger.js'
import type { Mesh } from './mesh/mesh.js'
import { EntityCatalog } from './services/catalog.js'
import { DeveloperService } from './services/developers.js'
import { EntityService } from './services/entities.js'
import { HandleService } from './services/handles.js'
import { NameService } from './services/names.js'
import { OnboardingService } from './services/onboarding.js'
import { OwnershipVerifier, type TxtResolver } from './services/ownership-verification.js'
import { RegistryProofProvider } from './services/registry-proof-provider.js'
import { ResolutionService } from './services/resolution.js'
import { SearchService } from './services/search.js'
import { createEmbedder } from './search/embedders/create.js'
import { WriteTracker } from './services/write-tracker.js'
import { OriginQuota } from './services/origin-quota.js'
import { ReplicationService } from './services/replication.js'
import { NameDirectory } from './services/name-directory.js'
import { homeBucketKey } from './mesh/provider-keys.js'
import { parseFqan } from './services/naming.js'
import type { Operation } from './store/records.js'
import type { RuntimeInfo } from './wire/node.js'
import { RegistryStore } from './store/registry-store.js'
import { SubjectDigests } from './store/subject-digests.js'

export { NODE_KEY_FILE } from './identity/node-identity.js'
const TOMBSTONE_PURGE_INTERVAL_MS = 60 * 60 * 1000

export interface RegistryNode {
  readonly config: NodeConfig
  readonly identity: NodeIdentity
  readonly logger: Logger
  readonly bus: EventBus
  readonly store: RegistryStore
  readonly entities: EntityService
  readonly developers: DeveloperService
  readonly handles: HandleService
  readonly names: NameService
  readonly search: SearchService
  readonly liveness: LivenessService
  /** Applies operations from the mesh. */
  readonly replication: ReplicationService
  /** The operation log's digests (followed only while the mesh runs). */
  readonly digests: SubjectDigests
  /** The libp2p side of the node; null when p2p.enabled is false. */
  readonly mesh: Mesh | null
  /** The bound HTTP port (useful with port 0). */
  readonly httpPort: number
  /** The server under the API. */
  readonly httpServer: ServerKind
  readonly url: string
  stop(): Promise<void>
}

export interface NodeOptions {
  logger?: Logger
  now?: () => Date
  /** Replaces the system DNS resolver used for handle verification. */
  txtResolver?: TxtResolver
}

export async function startRegistryNode(config: NodeConfig, options: NodeOptions = {}): Promise<RegistryNode> {
  const startedAt = Date.now()
  const logger = options.logger ?? createLogger(config.log.level)
  // A forced uWS that cannot load fails before anything is opened.
  if (config.http.server === 'uws') requireUws()
  const identity: NodeIdentity = { ...await loadOrCreateNodeIdentity(join(config.data_dir, NODE_KEY_FILE)), host: config.host }
  const store = await RegistryStore.open(config.data_dir, { commitDelayMs: config.store.commit_delay_ms, minFreeBytes: config.store.min_free_bytes })
  const bus = new EventBus()
  const catalog = new EntityCatalog()
  const writes = new WriteTracker()
  const settings = {
    host: config.host,
    mode: config.onboarding.mode,
    authUrl: config.onboarding.auth_url,
    tombstoneRetentionMs: config.tombstones.retention_days * 86_400_000,
    allowHttpEntityUrl: config.entities.allow_http_url
  }
  const verifier = new VerifyPool({ workers: config.verify.workers, inlineMaxRate: config.verify.inline_max_rate, prestart: true, onWorkerError: err => logger.error({ err }, 'signature verification worker failed') })
  const base = { store, identity, bus, catalog, writes, settings, verifier, ...(options.now ? { now: options.now } : {}) }
  const v = config.verification
  const ownership = new OwnershipVerifier({ dnsServers: v.dns_servers, githubApiUrl: v.github_api_url, githubCaFile: v.github_ca_file, timeoutMs: v.timeout_ms }, options.txtResolver)
  const lc = config.liveness
  const liveness = new LivenessService({
    ...base,
    logger,
    verifyHeartbeat: (agentId, timestamp, publicKey, signature, priority) => verifyHeartbeat(agentId, timestamp, publicKey, signature, verifier, priority),
    liveness: { inactiveAfterMs: lc.inactive_after_seconds * 1000, sweepIntervalMs: lc.sweep_interval_seconds * 1000, maxClockSkewMs: lc.max_clock_skew_seconds * 1000, flushIntervalMs: lc.flush_interval_ms }
  })
  const handles = new HandleService({ ...base, ownership })
  const names = new NameService(base)
  const developers = new DeveloperService({ ...base, handles })
  const directory = new NameDirectory(base)
  directory.load()
  const entities = new EntityService({ ...base, developers, names, liveness, directory })
  const resolution = new ResolutionService({ ...base, names, directory, liveness })
  const onboarding = new OnboardingService({
    ...base, handles, onboarding: { mode: config.onboarding.mode, authUrl: config.onboarding.auth_url, webhookSecret: config.onboarding.webhook_secret }
  })
  const cc = config.cards
  const cards = new CardFetcher({ timeoutMs: cc.timeout_ms, maxBytes: cc.max_bytes, cacheTtlMs: cc.cache_ttl_seconds * 1000, allowPrivateAddresses: cc.allow_private_addresses, allowHttp: config.entities.allow_http_url, caFile: cc.ca_file })
  bus.subscribe(event => {
    if ((event.type === 'agent_updated' || event.type === 'agent_deregistered') && typeof event.data.entity_id === 'string') cards.forget(event.data.entity_id)
  })
  const sc = config.search
  const search = new SearchService({
    ...base, names, logger, cards, liveness, embedder: await createEmbedder(sc),
    search: {
      weights: { text: sc.weight_text, semantic: sc.weight_semantic, trust: sc.weight_trust, freshness: sc.weight_freshness, availability: sc.weight_availability },
      halfLifeDays: sc.freshness_half_life_days,
      minSemantic: sc.min_semantic_similarity,
      fusion: sc.fusion,
      federation: { maxPeers: sc.federation_max_peers, timeoutMs: sc.federation_timeout_ms },
      termFilter: { falsePositiveRate: sc.bloom_false_positive_rate, rebuildIntervalMs: sc.bloom_rebuild_interval_ms }
    }
  })
  const quota = new OriginQuota({ opsPerSecondPerOrigin: config.p2p.origin_ops_per_second, opsPerSecondPerDeveloper: config.p2p.developer_ops_per_second, maxEntitiesPerOrigin: config.p2p.max_entities_per_origin })
  // The stored entities are read once (each read decodes every record) and feed each in-memory
  // view; liveness before search, which ranks by it.
  const indexStarted = performance.now()
  for (const record of store.allEntities()) {
    catalog.loadRecord(record)
    liveness.loadRecord(record)
    quota.loadRecord(record)
    search.loadRecord(record)
  }
  catalog.loaded()
  liveness.loaded()
  const indexed = search.loaded()
  logger.info({ entities: indexed, ms: Math.round(performance.now() - indexStarted) }, 'search index built')
  // The server kind is known once the front is built, before the first request.
  const runtime = (): RuntimeInfo => ({ node: process.versions.node, http_server: http.kind })
  const metrics = config.metrics.enabled
    ? new NodeMetrics({
      quotaRefusals: () => quota.refused,
      entities: t => catalog.count(t), developers: () => developers.count, embeddingFailures: () => search.embedFailures, embeddingBacklog: () => search.embeddingBacklog,
      runtime: () => ({ version: NODE_VERSION, node: runtime().node, http_server: runtime().http_server })
    })
    : null
  const registryProof = new RegistryProofProvider(identity, { domain: config.host, certFile: config.tls.cert_file })
  if (config.onboarding.mode === 'restricted' && !config.onboarding.webhook_secret) {
    logger.warn('restricted mode without onboarding.webhook_secret: nobody can approve developers (registry-node init --mode restricted makes one)')
  }

  const replication = new ReplicationService({ ...base, entities, developers, directory, quota })
  // The DHT provider records this node announces: the buckets of its home entities and its host (mesh/locator.ts).
  const providedKeys = (op: Operation): string[] => {
    const bucket = op.kind === 'entity.register' ? homeBucketKey(op.subject) : null
    return bucket ? [bucket] : []
  }
  const homeKeys = (): string[] => {
    const keys = new Set([`host:${config.host.toLowerCase()}`])
    for (const id of liveness.homeEntityIds()) {
      const bucket = homeBucketKey(id)
      if (bucket) keys.add(bucket)
    }
    return [...keys]
  }
  const providedOperations = (key: string): Operation[] => {
    if (key.startsWith('entity:')) return store.operationsOf(key.slice('entity:'.length))
    const fqan = key.startsWith('fqan:') ? parseFqan(key.slice('fqan:'.length)) : null
    const binding = fqan && fqan.host === config.host.toLowerCase() ? names.get(fqan.handle, fqan.name) : undefined
    if (!binding) return []
    return [binding.developer_id, `handle:${binding.handle}`, `name:${binding.handle}/${binding.entity_name}`, binding.entity_id].flatMap(s => store.operationsOf(s))
  }
  const digests = new SubjectDigests(store)
  let detachGossip: (() => void) | null = null
  let mesh: Mesh | null = null
  if (config.p2p.enabled) {
    try {
      // Loaded only when used: libp2p's ~700 modules take a second or two to import.
      const { Mesh } = await import('./mesh/mesh.js')
      digests.start()
      mesh = await Mesh.create({
        apply: op => replication.apply(op), digests, syncIntervalMs: config.p2p.sync_interval_seconds * 1000,
        announceIntervalMs: config.p2p.dht_announce_interval_seconds * 1000,
        gossipPerPeerPerSecond: config.p2p.gossip_max_per_peer_per_second, allowPeers: config.p2p.allow_peers, traceFile: config.p2p.trace_file,
        operationsFor: key => providedOperations(key),
        federation: { answer: request => search.answerPeer(request), filter: search.homeTerms },
        seed: identity.keyPair.seed, host: config.p2p.host, port: config.p2p.port, bootstrap: config.p2p.bootstrap,
        announce: config.p2p.announce, maxConnections: config.p2p.max_connections, bus, logger: logger.child({ component: 'mesh' }),
        info: () => ({
          registry_id: identity.registryId, name: config.name, host: config.host, public_key: identity.publicKey, version: NODE_VERSION,
          entity_count: liveness.homeCounts().entities, agent_count: liveness.homeCounts().agents
        })
      })
      await mesh.start()
      if (mesh.federation) search.federate(mesh.federation)
      const self = identity.registryId
      const meshNode = mesh
      // What this node accepts is gossiped once durable (what it applied from others, gossipsub
      // forwards itself), and what it is the home of is announced in the DHT.
      detachGossip = store.onCommitted(changes => {
        const own = changes.appended.filter(op => op.origin === self)
        meshNode.gossip.publish(own)
        meshNode.locator.announce(own.flatMap(providedKeys))
      })
      meshNode.locator.announce(homeKeys())
      entities.useNetwork(meshNode.locator)
      resolution.network.lookup = meshNode.locator
    } catch (err) {
      await mesh?.stop().catch(() => {})
      await store.close()
      await verifier.close()
      throw err
    }
  }

  const routes: RouteDefinition[] = [
    ...nodeRoutes({ config, identity, catalog, developers, metrics, runtime, peerCount: () => mesh?.peers.connectedCount ?? 0 }),
    ...networkRoutes({
      mesh, identity, name: config.name, host: config.host, startedAt, runtime, checkAdmin: adminBearerCheck(config.onboarding.webhook_secret),
      counts: () => ({ agents: catalog.count('agent'), services: catalog.count('service'), developers: developers.count }),
      homeCounts: () => liveness.homeCounts()
    }),
    ...entityRoutes(entities, { maxListLimit: config.limits.max_list_limit }),
    ...developerRoutes(developers, entities, { maxListLimit: config.limits.max_list_limit }),
    ...handleRoutes(handles, names),
    ...nameRoutes(names, resolution),
    ...searchRoutes(search, catalog),
    ...cardRoutes(entities, cards),
    ...onboardingRoutes(onboarding, config.public_url),
    ...wellKnownRoutes(registryProof),
    ...socketRoutes()
  ]
  const rl = config.rate_limit
  const http = new HttpServer({
    routes: documentationRoutes(routes, metrics),
    logger,
    cors: new Cors(config.http.cors_origins),
    clientIp: new ClientIpResolver(config.http.trusted_proxies),
    limiters: rl.enabled
      ? { reads: new FixedWindowLimiter(rl.reads_per_minute), writes: new FixedWindowLimiter(rl.writes_per_minute), writesPerIp: new FixedWindowLimiter(rl.writes_per_ip_per_minute) }
      : null,
    metrics,
    bodyLimitBytes: config.http.body_limit_bytes,
    server: config.http.server,
    sockets: new Sockets({
      liveness, bus, logger,
      limits: {
        maxEntitiesPerConnection: lc.max_entities_per_connection, framesPerSecondPerEntity: lc.frames_per_second_per_entity, maxFrameBytes: lc.max_frame_bytes,
        probationMs: lc.probation_seconds * 1000, probationInFlight: lc.probation_in_flight, probationInFlightPerAddress: lc.probation_in_flight_per_address
      },
      greeting: () => ({ registry_id: identity.registryId, name: config.name, host: config.host, public_key: identity.publicKey, version: NODE_VERSION }),
      activityQueueLimit: config.activity.queue_size,
      closed: (): boolean => http.closed
    })
  })

  const purge = async (): Promise<void> => {
    try {
      const now = new Date()
      const purged = await store.purgeExpiredTombstones(now, new Date(now.getTime() - config.tombstones.retention_days * 86_400_000))
      if (purged > 0) logger.info({ purged }, 'expired tombstones purged')
    } catch (err) {
      logger.error({ err }, 'tombstone purge failed')
    }
  }
  await purge()
  const purgeTimer = setInterval(() => { void purge() }, TOMBSTONE_PURGE_INTERVAL_MS).unref()
  liveness.start()

  let port: number
  try {
    port = await http.listen(config.http.host, config.http.port)
  } catch (err) {
    clearInterval(purgeTimer)
    await liveness.stop()
    await mesh?.stop()
    await store.close()
    await verifier.close()
    throw err
  }
  const displayHost = config.http.host === '0.0.0.0' || config.http.host === '::' ? '127.0.0.1' : config.http.host
  const url = `http://${displayHost.includes(':') ? `[${displayHost}]` : displayHost}:${port}`
  logger.info({ url, http_server: http.kind, node: process.versions.node, registry_id: identity.registryId, peer_id: mesh?.peerId, p2p: mesh?.addresses(), entities: catalog.size, developers: developers.count }, 'node started')

  let stopping: Promise<void> | null = null
  return {
    config, identity, logger, bus, store, entities, developers, handles, names, search, liveness, replication, digests, mesh, httpPort: port, httpServer: http.kind, url,
    stop() {
      stopping ??= (async () => {
        http.close()
        clearInterval(purgeTimer)
        detachGossip?.()
        await mesh?.stop()
        digests.stop()
        await writes.drain()
        await liveness.stop()
        search.stop()
        await search.idle()
        await store.close()
        await verifier.close()
        http.closeConnections()
        logger.info('node stopped')
        logger.flush()
      })()
      return stopping
    }
  }
}
