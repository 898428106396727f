/**
 * What the registry core asks of the parts above it, as interfaces they implement (node.ts wires
 * them): the mesh's lookups of what this node does not hold, the liveness of home entities, and
 * the names of other registries' namespaces as their replicated operations fold.
 */
import type { NameBinding } from '../../store/records.js'

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
/** How long a read of an unknown ID waits for gossip to bring it before asking the mesh (entities.ts). */
export const NETWORK_LOOKUP_GRACE_MS = 250

export interface LiveView {
  status: 'active' | 'inactive'
  last_heartbeat: string | null
  uptime: number
}

/** The liveness of home entities (liveness/liveness.ts). */
export interface LivenessView {
  current(entityId: string): LiveView | undefined
}

/** A binding of another host's namespace, as its operations fold into it (the signature stays in the log). */
export type RemoteName = Omit<NameBinding, 'signature'> & { host: string }

/** Other registries' names as this node holds them (replication/name-directory.ts). */
export interface RemoteNames {
  /** Called with each entity whose FQAN may have changed. */
  onEntityChanged: (entityId: string) => void
  name(host: string, handle: string, name: string): RemoteName | undefined
  /** The entity's first-bound name in another registry's namespace that still stands, if any. */
  primaryOf(entityId: string): RemoteName | undefined
}
