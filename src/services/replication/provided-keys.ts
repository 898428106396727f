/**
 * The DHT provider records this node announces (mesh/locator.ts): its host, and the bucket of
 * each of its home entities; and the operations it serves when a peer fetches one of its keys.
 */
import { homeBucketKey, hostKey } from '../../mesh/provider-keys.js'
import type { RegistryStore } from '../../store/registry-store.js'
import type { Operation } from '../../store/records.js'
import type { LivenessService } from '../liveness/liveness.js'
import type { NameService } from '../registry/names.js'
import { parseFqan } from '../registry/naming.js'

export interface ProvidedKeysComponents {
  store: Pick<RegistryStore, 'operationsOf'>
  names: Pick<NameService, 'get'>
  liveness: Pick<LivenessService, 'homeEntityIds'>
  host: string
}

export class ProvidedKeys {
  private readonly host: string

  constructor(private readonly c: ProvidedKeysComponents) {
    this.host = c.host.toLowerCase()
  }

  /** The keys a newly accepted operation adds: its entity's bucket when it registers one. */
  ofOperation(op: Operation): string[] {
    const bucket = op.kind === 'entity.register' ? homeBucketKey(op.subject) : null
    return bucket ? [bucket] : []
  }

  /** Every key this node provides: its host first (the authority on its names), then its buckets. */
  all(): string[] {
    const keys = new Set([hostKey(this.host)])
    for (const id of this.c.liveness.homeEntityIds()) {
      const bucket = homeBucketKey(id)
      if (bucket) keys.add(bucket)
    }
    return [...keys]
  }

  /** The operations behind a fetched key: an entity's own, or everything a name of this host rests on. */
  operationsFor(key: string): Operation[] {
    const { store } = this.c
    if (key.startsWith('entity:')) return store.operationsOf(key.slice('entity:'.length))
    const fqan = key.startsWith('fqan:') ? parseFqan(key.slice('fqan:'.length)) : null
    const binding = fqan && fqan.host === this.host ? this.c.names.get(fqan.handle, fqan.name) : undefined
    if (!binding) return []
    const subjects = [
      binding.developer_id,
      `handle:${binding.handle}`,
      `name:${binding.handle}/${binding.entity_name}`,
      binding.entity_id
    ]
    return subjects.flatMap(subject => store.operationsOf(subject))
  }
}
