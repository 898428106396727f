/**
 * The node's core and its services, built from the settings: the data directory's lock, the node
 * identity, the store, the signature verifiers and the embedder; the registry's services wired to
 * each other; the in-memory views loaded from the store. node.ts adds the mesh and the HTTP front.
 */
import { join } from 'node:path'
import type { Logger } from 'pino'
import { CardFetcher } from './cards/card-fetcher.js'
import type { NodeConfig } from './config/settings.js'
import { EventBus } from './events/bus.js'
import { loadOrCreateNodeIdentity, NODE_KEY_FILE, type NodeIdentity } from './identity/node-identity.js'
import { verifyHeartbeat } from './identity/verifiers.js'
import { VerifyPool } from './identity/verify-pool.js'
import type { Lifecycle } from './lifecycle.js'
import { DataDirLock } from './store/data-lock.js'
import { parsePaymentRpcs } from './config/payment-rpcs.js'
import { PaymentChecker } from './services/registry/payment-check.js'
import {
  cardFetchSettings,
  livenessSettings,
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
import { AttestationService } from './services/registry/attestations.js'
import { TransitiveTrust } from './services/registry/transitive-trust.js'
import { HandleService } from './services/registry/handles.js'
import { LivenessService } from './services/liveness/liveness.js'
import { NameDirectory } from './services/replication/name-directory.js'
import { NameService } from './services/registry/names.js'
import { OnboardingService } from './services/registry/onboarding.js'
import { OriginQuota } from './services/replication/origin-quota.js'
import { OwnershipVerifier, type TxtResolver } from './services/registry/ownership-verification.js'
import { ReplicationService } from './services/replication/replication.js'
import { ResolutionService } from './services/registry/resolution.js'
import { SearchService } from './services/search/search.js'
import { WriteTracker } from './services/registry/write-tracker.js'
import { readEntityViews } from './store/entity-views.js'
import { RegistryStore } from './store/registry-store.js'

/** What the core and the services take from the node's options. */
export interface CoreOptions {
  now?: () => Date
  /** Replaces the system DNS resolver used for handle verification. */
  txtResolver?: TxtResolver
  /** Commits written synchronously and not synced to disk (a simulation's nodes). */
  synchronousStore?: boolean
  /** How often a running node looks for a quiet moment to write the search snapshot in, and the least time between two (tests). */
  searchSnapshotTiming?: { checkMs: number; everyMs: number }
}

/** What the services are built on: the node's identity, its store, the signature verifiers, the embedder. */
export interface Core {
  identity: NodeIdentity
  store: RegistryStore
  verifier: VerifyPool
  embedder: Embedder
}

export async function openCore(
  config: NodeConfig,
  options: CoreOptions,
  logger: Logger,
  life: Lifecycle
): Promise<Core> {
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
        synchronous: options.synchronousStore === true,
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

export type Services = ReturnType<typeof buildServices>

/** The registry's services, wired to each other; their stops are registered in the order they must run. */
export function buildServices(config: NodeConfig, options: CoreOptions, logger: Logger, life: Lifecycle, core: Core) {
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
  const transitive = new TransitiveTrust({
    dataDir: config.data_dir,
    seeds: config.trust.seeds,
    hasAttestations: () => base.store.hasAttestations(),
    logger,
    ...(options.now ? { now: options.now } : {})
  })
  const paymentRpcs = parsePaymentRpcs(config.trust.payment_rpc)
  const attestations = new AttestationService(
    base,
    transitive,
    paymentRpcs.size > 0 ? new PaymentChecker(paymentRpcs) : undefined
  )
  bus.subscribe(event => {
    if (event.type === 'attestation_added') transitive.attestationAdded()
  })
  const names = new NameService(base)
  const developers = new DeveloperService({ ...base, handles, transitive })
  const directory = new NameDirectory(base)
  directory.load()
  const entities = new EntityService({ ...base, developers, names, liveness, directory })
  const resolution = new ResolutionService({ ...base, names, directory, liveness, transitive })
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
    transitive,
    embedder,
    search: {
      ...searchSettings(config),
      ...(options.searchSnapshotTiming
        ? {
            snapshotCheckMs: options.searchSnapshotTiming.checkMs,
            snapshotEveryMs: options.searchSnapshotTiming.everyMs
          }
        : {})
    }
  })
  life.onStop('search', () => search.close())
  life.onStop('trust', () => transitive.stop())
  life.onStop('liveness', () => liveness.stop())
  // Writes in flight (from the API or the mesh) finish before search, liveness and the store stop.
  life.onStop('writes', () => writes.drain())
  const quota = new OriginQuota(originQuotaSettings(config))
  const replication = new ReplicationService({ ...base, entities, developers, attestations, directory, quota })
  return {
    bus,
    catalog,
    liveness,
    handles,
    attestations,
    transitive,
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
 * The stored entities are read once (in a child process for a large store: entity-views.ts) and
 * feed the in-memory views the node needs before it listens; search, which ranks by liveness,
 * reads them again afterwards, a chunk per turn, unless its snapshot has them.
 */
export async function loadViews(
  store: RegistryStore,
  dataDir: string,
  views: Services,
  logger: Logger,
  transitiveTrust: boolean
): Promise<void> {
  const began = performance.now()
  // The search thread reads the index's snapshot meanwhile, if there is one.
  views.search.beginRestore()
  const read = await readEntityViews(store, dataDir, part => {
    for (const { fields, liveness } of part) {
      views.catalog.loadRecord(fields)
      views.liveness.loadRecord(fields, liveness)
      views.quota.loadRecord(fields)
    }
  })
  views.catalog.loaded()
  if (read.childFailed) logger.warn({ reason: read.childFailed }, 'stored entities read in the node: the child failed')
  logger.debug(
    { entities: views.catalog.size, ms: Math.round(performance.now() - began), read: read.in },
    'views loaded'
  )
  // Search reads the store again, a chunk per turn, after this returns; a query waits until it has every record.
  views.search.loaded().then(
    entities => {
      logger.info({ entities, ms: Math.round(performance.now() - began) }, 'search index built')
      if (transitiveTrust) views.transitive.start(changes => views.search.setTransitive(changes))
    },
    (err: unknown) => logger.error({ err }, 'search index not built')
  )
}
