/** What every registry service is built from, and the settings they share. */
import type { EventBus } from '../../events/bus.js'
import type { NodeIdentity } from '../../identity/node-identity.js'
import type { SignatureVerifier } from '../../identity/verify-pool.js'
import type { RegistryStore } from '../../store/registry-store.js'
import type { EntityCatalog } from './catalog.js'
import type { WriteTracker } from './write-tracker.js'

export interface ServiceSettings {
  /** Public host name: `home_registry` of records accepted here, and the FQAN host. */
  host: string
  mode: 'open' | 'restricted'
  /** Where restricted-mode clients get approved (returned with onboarding_required). */
  authUrl: string
  tombstoneRetentionMs: number
  /** Accept http:// entity URLs (entities.allow_http_url). */
  allowHttpEntityUrl: boolean
  /** Refuse every repeat of an update, deletion or release signature sent to this node (entities.strict_replay). */
  strictReplay: boolean
  /** How far a signed timestamp may be from the node clock (liveness.max_clock_skew_seconds). */
  maxClockSkewMs: number
  /** A read-only replica (replica_of): this host's handles and names are the ones the mesh brings, not its own. */
  replica?: boolean
}

/** What every registry service is built from (the node's composition root provides them). */
export interface ServiceComponents {
  store: RegistryStore
  identity: NodeIdentity
  bus: EventBus
  catalog: EntityCatalog
  writes: WriteTracker
  settings: ServiceSettings
  /** Checks client signatures: the node's verification pool (inline when the load is low). */
  verifier: SignatureVerifier
  now?: () => Date
}
