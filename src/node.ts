/**
 * The composition root: builds every component from its settings (node-settings.ts), starts the
 * parts in order on one Lifecycle and stops them in reverse. Tests build nodes with a temp data
 * dir and port 0.
 */
import './polyfills.js'
import { join } from 'node:path'
import type { Logger } from 'pino'
import { adminBearerCheck } from './api/admin-auth.js'
import { ClientIpResolver } from './http/client-ip.js'
import { Cors } from './http/cors.js'
import type { ServerKind } from './http/front.js'
import type { RouteDefinition } from './http/http.js'
import { NodeMetrics } from './api/metrics.js'
import { FixedWindowLimiter } from './http/rate-limit.js'
import { adminOperationRoutes } from './api/routes/admin-operations.js'
import { cardRoutes } from './api/routes/cards.js'
import { developerRoutes } from './api/routes/developers.js'
import { entityRoutes } from './api/routes/entities.js'
import { handleRoutes } from './api/routes/handles.js'
import { nameRoutes } from './api/routes/names.js'
import { networkRoutes } from './api/routes/network.js'
import { documentationRoutes, nodeRoutes } from './api/routes/node.js'
import { onboardingRoutes } from './api/routes/onboarding.js'
import { searchRoutes } from './api/routes/search.js'
import { socketRoutes } from './api/routes/sockets.js'
import { wellKnownRoutes } from './api/routes/well-known.js'
import { HttpServer } from './http/server.js'
import { readOnlyReplica } from './api/read-only-replica.js'
import { readTlsCredentials, type TlsCredentials, tlsFiles } from './http/tls.js'
import { Sockets } from './api/sockets.js'
import { requireUws } from './http/uws-loader.js'
import { CardFetcher } from './cards/card-fetcher.js'
import type { NodeConfig } from './config/settings.js'
import { EventBus } from './events/bus.js'
import { loadOrCreateNodeIdentity, NODE_KEY_FILE, type NodeIdentity } from './identity/node-identity.js'
import { verifyHeartbeat } from './identity/verifiers.js'
import { VerifyPool } from './identity/verify-pool.js'
import { Lifecycle, type LifecycleHooks } from './lifecycle.js'
import { DataDirLock } from './store/data-lock.js'
import { createLogger } from './logger.js'
import { type ReloadReport, type ReloadTargets, reloadNode } from './node-reload.js'
import type { Mesh } from './mesh/mesh.js'
import {
  cardFetchSettings,
  heartbeatSocketLimits,
  livenessSettings,
  meshSettings,
  onboardingSettings,
  originQuotaSettings,
  searchSettings,
  serviceSettings,
  verificationSettings,
  verifyPoolSettings
} from './node-settings.js'
import { createEmbedder } from './search/embedders/create.js'
import type { Embedder } from './search/embedders/embedder.js'
import { EntityCatalog } from './services/registry/catalog.js'
import { DeveloperService } from './services/registry/developers.js'
import { EntityService } from './services/registry/entities.js'
import { HandleService } from './services/registry/handles.js'
import { LivenessService } from './services/liveness/liveness.js'
import { NameDirectory } from './services/replication/name-directory.js'
import { NameService } from './services/registry/names.js'
import { OnboardingService } from './services/registry/onboarding.js'
import { OperationImport } from './services/replication/operation-import.js'
import { OriginQuota } from './services/replication/origin-quota.js'
import { OwnershipVerifier, type TxtResolver } from './services/registry/ownership-verification.js'
import { ProvidedKeys } from './services/replication/provided-keys.js'
import { RegistryProofProvider } from './services/registry/registry-proof-provider.js'
import { ReplicationService } from './services/replication/replication.js'
import { ResolutionService } from './services/registry/resolution.js'
import { SearchService } from './services/search/search.js'
import { WriteTracker } from './services/registry/write-tracker.js'
import { RegistryStore } from './store/registry-store.js'
import { SubjectDigests } from './store/subject-digests.js'
import { NODE_VERSION } from './version.js'
import type { RuntimeInfo } from './wire/node.js'

export { NODE_KEY_FILE } from './identity/node-identity.js'
const TOMBSTONE_PURGE_INTERVAL_MS = 60 * 60 * 1000
const FIRST_TOMBSTONE_PURGE_AFTER_MS = 60 * 1000

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
  /**
   * Applies a new configuration's reloadable settings (SIGHUP) and logs what it applied and what
   * needs a restart; throws, changing nothing, when the new configuration cannot be served.
   * Reloads run one at a time.
   */
  reload(next: NodeConfig): Promise<ReloadReport>
  stop(): Promise<void>
}

export interface NodeOptions {
  logger?: Logger
  now?: () => Date
  /** Replaces the system DNS resolver used for handle verification. */
  txtResolver?: TxtResolver
  /** Observes the start and stop steps (tests inject a failure at a step with it). */
  lifecycle?: LifecycleHooks
}

/**
 * Starts a node. Each part that starts registers its stop on one stack; a failure at any step
 * stops what had started, in reverse, and the error goes to the caller.
 */
export async function startRegistryNode(config: NodeConfig, options: NodeOptions = {}): Promise<RegistryNode> {
  const logger = options.logger ?? createLogger(config.log.level)
  // A forced uWS that cannot load, or a certificate that cannot be served, fails before anything is opened.
  if (config.http.server === 'uws') requireUws()
  const files = tlsFiles(config.tls.cert_file, config.tls.key_file)
  const tls = files ? readTlsCredentials(files) : null
  const life = new Lifecycle(logger, options.lifecycle)
  try {
    return await assemble(config, options, logger, life, tls)
  } catch (err) {
    await life.stop()
    throw err
  }
}

async function assemble(
  config: NodeConfig,
  options: NodeOptions,
  logger: Logger,
  life: Lifecycle,
  tls: TlsCredentials | null
): Promise<RegistryNode> {
  const startedAt = Date.now()
  // Connections close last, so replies to requests in flight go out once their writes are done.
  let connections: HttpServer | undefined
  life.onStop('http connections', () => connections?.closeConnections())
  const core = await openCore(config, logger, life)
  const services = buildServices(config, options, logger, life, core)
  await life.start('index', () => loadViews(core.store, services, logger))
  const digests = new SubjectDigests(core.store)
  const mesh = config.p2p.enabled ? await startMesh(config, life, { ...core, ...services, digests, logger }) : null
  const reloadable = {
    proof: new RegistryProofProvider(core.identity, { domain: config.host, certFile: config.tls.cert_file }),
    socketLimits: heartbeatSocketLimits(config),
    listLimits: { maxListLimit: config.limits.max_list_limit },
    tls: { current: tls }
  }
  const http = buildHttpServer(config, logger, { ...core, ...services, ...reloadable, mesh, startedAt })
  connections = http
  await life.start(
    'tombstone purge',
    () => startTombstonePurge(config, core.store, logger),
    timers => {
      for (const timer of timers) clearTimeout(timer)
    }
  )
  await life.start('liveness', () => services.liveness.start())
  const port = await life.start(
    'http',
    () => http.listen(config.http.host, config.http.port),
    () => http.close()
  )

  const displayHost = config.http.host === '0.0.0.0' || config.http.host === '::' ? '127.0.0.1' : config.http.host
  const url = `${tls ? 'https' : 'http'}://${displayHost.includes(':') ? `[${displayHost}]` : displayHost}:${port}`
  logger.info(
    {
      url,
      http_server: http.kind,
      node: process.versions.node,
      registry_id: core.identity.registryId,
      peer_id: mesh?.peerId,
      p2p: mesh?.addresses(),
      entities: services.catalog.size,
      developers: services.developers.count
    },
    'node started'
  )

  const { identity, store } = core
  const { bus, entities, developers, handles, names, search, liveness, replication } = services
  const targets: ReloadTargets = { config, logger, http, mesh, ...reloadable }
  let reloading: Promise<unknown> = Promise.resolve()
  return {
    config,
    identity,
    logger,
    bus,
    store,
    entities,
    developers,
    handles,
    names,
    search,
    liveness,
    replication,
    digests,
    mesh,
    httpPort: port,
    httpServer: http.kind,
    url,
    reload(next) {
      const done = reloading.then(() => reloadNode(targets, next))
      reloading = done.catch(() => {})
      return done
    },
    async stop() {
      await life.stop()
      logger.info('node stopped')
      logger.flush()
    }
  }
}

/** What the services are built on: the node's identity, its store, the signature verifiers, the embedder. */
interface Core {
  identity: NodeIdentity
  store: RegistryStore
  verifier: VerifyPool
  embedder: Embedder
}

async function openCore(config: NodeConfig, logger: Logger, life: Lifecycle): Promise<Core> {
  await life.start(
    'data lock',
    () => DataDirLock.acquire(config.data_dir),
    lock => lock.release()
  )
  const identity: NodeIdentity = await life.start('identity', async () => ({
    ...(await loadOrCreateNodeIdentity(join(config.data_dir, NODE_KEY_FILE))),
    host: config.host
  }))
  const store = await life.start(
    'store',
    () =>
      RegistryStore.open(config.data_dir, {
        commitDelayMs: config.store.commit_delay_ms,
        minFreeBytes: config.store.min_free_bytes,
        migrated: m =>
          logger.info(
            { from: m.from, to: m.to, ...m.counts, ms: m.ms },
            `store migrated from format ${m.from} to ${m.to}: ${m.description}`
          )
      }),
    s => s.close()
  )
  const verifier = await life.start(
    'verify pool',
    () =>
      new VerifyPool({
        ...verifyPoolSettings(config),
        prestart: true,
        onWorkerError: err => logger.error({ err }, 'signature verification worker failed')
      }),
    pool => pool.close()
  )
  const embedder = await life.start(
    'embedder',
    () => createEmbedder(config.search),
    e => e.close?.()
  )
  return { identity, store, verifier, embedder }
}

type Services = ReturnType<typeof buildServices>

/** The registry's services, wired to each other; their stops are registered in the order they must run. */
function buildServices(config: NodeConfig, options: NodeOptions, logger: Logger, life: Lifecycle, core: Core) {
  const { store, identity, verifier, embedder } = core
  const bus = new EventBus()
  const catalog = new EntityCatalog()
  const writes = new WriteTracker()
  const base = {
    store,
    identity,
    bus,
    catalog,
    writes,
    settings: serviceSettings(config),
    verifier,
    ...(options.now ? { now: options.now } : {})
  }
  const ownership = new OwnershipVerifier(verificationSettings(config), options.txtResolver)
  const liveness = new LivenessService({
    ...base,
    logger,
    liveness: livenessSettings(config),
    verifyHeartbeat: (agentId, timestamp, publicKey, signature, priority) =>
      verifyHeartbeat(agentId, timestamp, publicKey, signature, verifier, priority)
  })
  const handles = new HandleService({ ...base, ownership })
  const names = new NameService(base)
  const developers = new DeveloperService({ ...base, handles })
  const directory = new NameDirectory(base)
  directory.load()
  const entities = new EntityService({ ...base, developers, names, liveness, directory })
  const resolution = new ResolutionService({ ...base, names, directory, liveness })
  const onboarding = new OnboardingService({ ...base, handles, onboarding: onboardingSettings(config) })
  const cards = new CardFetcher(cardFetchSettings(config))
  bus.subscribe(event => {
    if (
      (event.type === 'agent_updated' || event.type === 'agent_deregistered') &&
      typeof event.data.entity_id === 'string'
    )
      cards.forget(event.data.entity_id)
  })
  const search = new SearchService({
    ...base,
    names,
    logger,
    cards,
    liveness,
    embedder,
    search: searchSettings(config)
  })
  life.onStop('search', () => search.close())
  life.onStop('liveness', () => liveness.stop())
  // Writes in flight (from the API or the mesh) finish before search, liveness and the store stop.
  life.onStop('writes', () => writes.drain())
  const quota = new OriginQuota(originQuotaSettings(config))
  const replication = new ReplicationService({ ...base, entities, developers, directory, quota })
  return {
    bus,
    catalog,
    liveness,
    handles,
    names,
    developers,
    entities,
    resolution,
    onboarding,
    cards,
    search,
    quota,
    replication
  }
}

/**
 * The stored entities are read once (each read decodes every record) and feed the in-memory views
 * the node needs before it listens; search, which ranks by liveness, reads them again afterwards, a
 * chunk per turn, so that its worker is never sent the whole store at once.
 */
function loadViews(store: RegistryStore, views: Services, logger: Logger): void {
  const began = performance.now()
  for (const record of store.allEntities()) {
    views.catalog.loadRecord(record)
    views.liveness.loadRecord(record)
    views.quota.loadRecord(record)
  }
  views.catalog.loaded()
  views.liveness.loaded()
  // Search reads the store again, a chunk per turn, after this returns; a query waits until it has every record.
  views.search.loaded().then(
    entities => logger.info({ entities, ms: Math.round(performance.now() - began) }, 'search index built'),
    (err: unknown) => logger.error({ err }, 'search index not built')
  )
}

interface HttpParts extends Core, Services, Omit<ReloadTargets, 'config' | 'logger' | 'http' | 'mesh'> {
  mesh: Mesh | null
  startedAt: number
}

/** The /v1 API, the documentation routes, the WebSocket endpoints and the limits in front of them. */
function buildHttpServer(config: NodeConfig, logger: Logger, p: HttpParts): HttpServer {
  const { identity, catalog, developers, liveness, mesh } = p
  // The server kind is known once the front is built, before the first request.
  const runtime = (): RuntimeInfo => ({ node: process.versions.node, http_server: http.kind })
  const sockets = new Sockets({
    liveness,
    bus: p.bus,
    logger,
    limits: p.socketLimits,
    greeting: () => ({
      registry_id: identity.registryId,
      name: config.name,
      host: config.host,
      public_key: identity.publicKey,
      version: NODE_VERSION
    }),
    activityQueueLimit: config.activity.queue_size,
    closed: (): boolean => http.closed
  })
  const metrics = config.metrics.enabled
    ? new NodeMetrics({
        entities: t => catalog.count(t),
        developers: () => developers.count,
        embeddingFailures: () => p.search.embedFailures,
        embeddingBacklog: () => p.search.embeddingBacklog,
        storeCommits: () => p.store.commitStats(),
        runtime: () => ({ version: NODE_VERSION, ...runtime() }),
        mesh: () => mesh,
        replication: () => p.replication,
        quotaRefusals: () => p.quota.refused,
        sockets: () => sockets,
        liveness: () => liveness.counts
      })
    : null
  if (config.onboarding.mode === 'restricted' && !config.onboarding.webhook_secret) {
    logger.warn(
      'restricted mode without onboarding.webhook_secret: nobody can approve developers (registry-node init --mode restricted makes one)'
    )
  }
  // Read by the list routes at each request, so a reload can change it.
  const maxListLimit = p.listLimits
  const routes: RouteDefinition[] = [
    ...nodeRoutes({
      config,
      identity,
      catalog,
      developers,
      metrics,
      runtime,
      peerCount: () => mesh?.peers.connectedCount ?? 0
    }),
    ...networkRoutes({
      mesh,
      identity,
      name: config.name,
      host: config.host,
      startedAt: p.startedAt,
      runtime,
      checkAdmin: adminBearerCheck(config.onboarding.webhook_secret),
      counts: () => ({
        agents: catalog.count('agent'),
        services: catalog.count('service'),
        developers: developers.count
      }),
      homeCounts: () => liveness.homeCounts(),
      cachedCards: () => p.cards.size
    }),
    ...entityRoutes(p.entities, maxListLimit),
    ...developerRoutes(developers, p.entities, maxListLimit),
    ...handleRoutes(p.handles, p.names),
    ...nameRoutes(p.names, p.resolution),
    ...searchRoutes(p.search, catalog),
    ...cardRoutes(p.entities, p.cards),
    ...onboardingRoutes(p.onboarding, config.public_url, p.tls.current ? 'https' : 'http'),
    ...wellKnownRoutes(p.proof),
    ...socketRoutes(),
    ...adminOperationRoutes({
      imports: new OperationImport({ replication: p.replication, store: p.store, registryId: identity.registryId }),
      checkAdmin: adminBearerCheck(config.onboarding.webhook_secret)
    })
  ]
  const rl = config.rate_limit
  const http: HttpServer = new HttpServer({
    routes: documentationRoutes(
      config.replica_of ? readOnlyReplica(routes, config.replica_of) : routes,
      metrics,
      config.public_url
    ),
    logger,
    cors: new Cors(config.http.cors_origins),
    clientIp: new ClientIpResolver(config.http.trusted_proxies),
    limiters: rl.enabled
      ? {
          reads: new FixedWindowLimiter(rl.reads_per_minute),
          dashboardReads: new FixedWindowLimiter(rl.dashboard_reads_per_minute),
          writes: new FixedWindowLimiter(rl.writes_per_minute),
          writesPerIp: new FixedWindowLimiter(rl.writes_per_ip_per_minute)
        }
      : null,
    metrics,
    bodyLimitBytes: config.http.body_limit_bytes,
    server: config.http.server,
    tls: p.tls.current,
    sockets
  })
  return http
}

/**
 * Purges tombstones past retention a minute after start and every hour after; returns the timers.
 * Not on the way to listening: a purge reads every used signature (seconds at a million entities,
 * spread over turns of the event loop).
 */
function startTombstonePurge(config: NodeConfig, store: RegistryStore, logger: Logger): NodeJS.Timeout[] {
  const purge = async (): Promise<void> => {
    try {
      const now = new Date()
      const signaturesBefore = new Date(now.getTime() - config.tombstones.retention_days * 86_400_000)
      const purged = await store.purgeExpiredTombstones(now, signaturesBefore)
      if (purged > 0) logger.info({ purged }, 'expired tombstones purged')
    } catch (err) {
      logger.error({ err }, 'tombstone purge failed')
    }
  }
  return [
    setTimeout(() => void purge(), FIRST_TOMBSTONE_PURGE_AFTER_MS).unref(),
    setInterval(() => void purge(), TOMBSTONE_PURGE_INTERVAL_MS).unref()
  ]
}

interface MeshParts extends Core, Services {
  digests: SubjectDigests
  logger: Logger
}

/** Joins the mesh: digests for sync, libp2p, gossip of what this node accepts, DHT announcements. */
async function startMesh(config: NodeConfig, life: Lifecycle, p: MeshParts): Promise<Mesh> {
  // Loaded only when used: libp2p's ~700 modules take a second or two to import.
  const { Mesh } = await import('./mesh/mesh.js')
  const { digests, identity } = p
  await life.start(
    'digests',
    () => digests.start(),
    () => digests.stop()
  )
  const provided = new ProvidedKeys({ store: p.store, names: p.names, liveness: p.liveness, host: config.host })
  const mesh = await life.start(
    'mesh',
    async () => {
      const m = await Mesh.create({
        ...meshSettings(config, identity.keyPair.seed),
        apply: (op, hints) => p.replication.apply(op, { onStale: hints?.onStale }),
        digests,
        banStore: {
          list: () => p.store.peerBans(),
          put: ban => p.store.putPeerBan(ban),
          remove: peerId => p.store.removePeerBan(peerId)
        },
        operationsFor: key => provided.operationsFor(key),
        federation: { answer: request => p.search.answerPeer(request), filter: p.search.homeTerms },
        bus: p.bus,
        logger: p.logger.child({ component: 'mesh' }),
        info: () => ({
          registry_id: identity.registryId,
          name: config.name,
          host: config.host,
          public_key: identity.publicKey,
          version: NODE_VERSION,
          entity_count: p.liveness.homeCounts().entities,
          agent_count: p.liveness.homeCounts().agents
        })
      })
      try {
        await m.start()
      } catch (err) {
        await m.stop().catch(() => {})
        throw err
      }
      return m
    },
    m => m.stop()
  )
  if (mesh.federation) p.search.federate(mesh.federation)
  // What this node accepts is gossiped once durable (what it applied from others, gossipsub
  // forwards itself), and what it is the home of is announced in the DHT.
  await life.start(
    'gossip',
    () =>
      p.store.onCommitted(changes => {
        const own = changes.appended.filter(op => op.origin === identity.registryId)
        mesh.gossip.publish(own)
        mesh.locator.announce(own.flatMap(op => provided.ofOperation(op)))
      }),
    detach => detach()
  )
  mesh.locator.announce(provided.all())
  p.entities.useNetwork(mesh.locator)
  p.resolution.network.lookup = mesh.locator
  return mesh
}
