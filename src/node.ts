/**
 * The composition root: builds every component from its settings (node-settings.ts), starts the
 * parts in order on one Lifecycle and stops them in reverse. Tests build nodes with a temp data
 * dir and port 0.
 */
import './polyfills.js'
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
import { attestationRoutes } from './api/routes/attestations.js'
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
import type { NodeConfig } from './config/settings.js'
import type { EventBus } from './events/bus.js'
import type { NodeIdentity } from './identity/node-identity.js'
import { Lifecycle, type LifecycleHooks } from './lifecycle.js'
import { createLogger } from './logger.js'
import { startTombstonePurge } from './services/registry/tombstone-purge.js'
import { type ReloadReport, type ReloadTargets, reloadNode } from './node-reload.js'
import type { Mesh } from './mesh/mesh.js'
import { buildServices, type Core, type Services, loadViews, openCore } from './node-services.js'
import type { Libp2pTransportOverride } from './mesh/libp2p-node.js'
import type { TraceEvent } from './mesh/gossip-tap.js'
import { heartbeatSocketLimits, meshSettings } from './node-settings.js'
import type { DeveloperService } from './services/registry/developers.js'
import type { EntityService } from './services/registry/entities.js'
import type { HandleService } from './services/registry/handles.js'
import type { LivenessService } from './services/liveness/liveness.js'
import type { NameService } from './services/registry/names.js'
import { OperationImport } from './services/replication/operation-import.js'
import type { TxtResolver } from './services/registry/ownership-verification.js'
import { ProvidedKeys } from './services/replication/provided-keys.js'
import { RegistryProofProvider } from './services/registry/registry-proof-provider.js'
import type { ReplicationService } from './services/replication/replication.js'
import type { SearchService } from './services/search/search.js'
import type { RegistryStore } from './store/registry-store.js'
import { SubjectDigests } from './store/subject-digests.js'
import { NODE_VERSION } from './version.js'
import type { RuntimeInfo } from './wire/node.js'

export { NODE_KEY_FILE } from './identity/node-identity.js'

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
  /** The server under the API; null without one (`http: false`). */
  readonly httpServer: ServerKind | null
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
  /** Serves the API (default true); without it `url` is '' and `httpPort` 0 (a simulation's nodes). */
  http?: boolean
  /** Commits written synchronously and not synced to disk: a simulation on virtual time waits for no disk. */
  synchronousStore?: boolean
  /** libp2p's transports and listen addresses instead of TCP and WebSockets (a simulation's network). */
  libp2pTransport?: Libp2pTransportOverride
  /** Transitive trust computed in its worker thread (default true). */
  transitiveTrust?: boolean
  /** Given each gossip trace event (a simulation's collector), instead of `p2p.trace_file`. */
  gossipTrace?: (event: TraceEvent) => void
  /** Virtual time a simulation's node spends on each operation received by gossip before forwarding it. */
  gossipProcessingMs?: () => number
  /** How often the node looks for a quiet moment to write the search snapshot in, and the least time between two (tests). */
  searchSnapshotTiming?: { checkMs: number; everyMs: number }
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
  const core = await openCore(config, options, logger, life)
  const services = buildServices(config, options, logger, life, core)
  // The mesh's digests of the log are built in a child process while the views load (see SubjectDigests.prepare).
  const digests = new SubjectDigests(core.store)
  if (config.p2p.enabled && options.synchronousStore !== true) digests.prepare(config.data_dir)
  await life.start('index', () =>
    loadViews(core.store, config.data_dir, services, logger, options.transitiveTrust !== false)
  )
  const mesh = config.p2p.enabled
    ? await startMesh(config, life, { ...core, ...services, digests, logger, options })
    : null
  const reloadable = {
    proof: new RegistryProofProvider(core.identity, { domain: config.host, certFile: config.tls.cert_file }),
    socketLimits: heartbeatSocketLimits(config),
    listLimits: { maxListLimit: config.limits.max_list_limit },
    tls: { current: tls }
  }
  const http =
    options.http === false
      ? null
      : buildHttpServer(config, logger, { ...core, ...services, ...reloadable, mesh, digests, startedAt })
  connections = http ?? undefined
  await life.start(
    'tombstone purge',
    () => startTombstonePurge(config.tombstones.retention_days, core.store, logger),
    timers => {
      for (const timer of timers) clearTimeout(timer)
    }
  )
  await life.start('liveness', () => services.liveness.start())
  const port = http
    ? await life.start(
        'http',
        () => http.listen(config.http.host, config.http.port),
        () => http.close()
      )
    : 0

  const displayHost = config.http.host === '0.0.0.0' || config.http.host === '::' ? '127.0.0.1' : config.http.host
  const url = http
    ? `${tls ? 'https' : 'http'}://${displayHost.includes(':') ? `[${displayHost}]` : displayHost}:${port}`
    : ''
  logger.info(
    {
      url,
      http_server: http?.kind ?? null,
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
  const targets: ReloadTargets | null = http ? { config, logger, http, mesh, ...reloadable } : null
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
    httpServer: http?.kind ?? null,
    url,
    reload(next) {
      if (!targets) return Promise.reject(new Error('a node without its HTTP front does not reload'))
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

interface HttpParts extends Core, Services, Omit<ReloadTargets, 'config' | 'logger' | 'http' | 'mesh'> {
  mesh: Mesh | null
  digests: SubjectDigests
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
      cachedCards: () => p.cards.size,
      // The digests follow the log only while the mesh runs.
      sync: () => (mesh ? p.digests.summary() : null)
    }),
    ...entityRoutes(p.entities, maxListLimit),
    ...developerRoutes(developers, p.entities, maxListLimit),
    ...handleRoutes(p.handles, p.names),
    ...attestationRoutes(p.attestations, maxListLimit),
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

interface MeshParts extends Core, Services {
  digests: SubjectDigests
  logger: Logger
  options: NodeOptions
}

let meshModule: Promise<typeof import('./mesh/mesh.js')> | null = null

/**
 * The mesh's modules, loaded once, when first used: libp2p's ~700 modules take a second or two to
 * import. A simulation loads them before its clock starts (every later call is a settled promise).
 */
export function loadMeshModule(): Promise<typeof import('./mesh/mesh.js')> {
  meshModule ??= import('./mesh/mesh.js')
  return meshModule
}

/** Joins the mesh: digests for sync, libp2p, gossip of what this node accepts, DHT announcements. */
async function startMesh(config: NodeConfig, life: Lifecycle, p: MeshParts): Promise<Mesh> {
  const { Mesh } = await loadMeshModule()
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
        ...(p.options.libp2pTransport ? { transport: p.options.libp2pTransport } : {}),
        ...(p.options.gossipTrace ? { traceSink: p.options.gossipTrace } : {}),
        ...(p.options.gossipProcessingMs ? { processingMs: p.options.gossipProcessingMs } : {}),
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
