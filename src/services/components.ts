import type { EventBus } from '../events/bus.js'
import type { Operation } from '../store/records.js'
import type { NodeIdentity } from '../identity/node-identity.js'
import type { SignatureVerifier } from '../identity/verify-pool.js'
import type { RegistryStore } from '../store/registry-store.js'
import type { Credentials } from './authorize.js'
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

/** A write as it arrived: the exact body bytes, the parsed body, the path and signature headers. */
export interface WriteRequest {
  raw: Uint8Array
  body: unknown
  path: string
  credentials?: Credentials
}

/**
 * A write another node accepted, replayed here from its operation (gossip, sync): verified again
 * as a client's would be, then applied with the origin's time and home.
 */
export interface RemoteWrite {
  op: Operation
  /** The origin's host: `home_registry` of what the operation creates. */
  home: string
}

/** A replayed operation that loses to what this node holds (last writer wins): nothing changed. */
export class StaleOperation extends Error {
  constructor() {
    super('stale operation')
    this.name = 'StaleOperation'
  }
}

/**
 * What the mesh can find that this node does not hold (kad-dht providers, then a fetch of the
 * operations, applied as usual). Keys: `entity:<id>`, `fqan:<host>/<handle>/<name>`.
 */
export interface NetworkLookup {
  /** Resolves to the number of operations applied (0: nothing found within `timeoutMs`). */
  fetch(key: string, timeoutMs: number): Promise<number>
}

/** How long a read waits for the mesh to find what this node lacks. */
export const NETWORK_LOOKUP_TIMEOUT_MS = 3_000

/** A replayed operation that needs a record this node does not hold yet (`subject`): retried once it arrives. */
export class MissingDependency extends Error {
  constructor(readonly subject: string) {
    super(`waiting for ${subject}`)
    this.name = 'MissingDependency'
  }
}
