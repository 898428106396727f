/**
 * Resolution of an FQAN (`[zns://]<host>/<handle>/<name>[@version]`) or an entity ID to what a
 * caller needs to reach and trust the entity. Emits `name_resolved`.
 */
import { RegistryError } from '../errors.js'
import type { EntityRecord, NameBinding, NameVersion } from '../store/records.js'
import type { ServiceComponents } from './components.js'
import { verificationTier } from './handles.js'
import type { NameService } from './names.js'
import { parseFqan, selectVersion } from './naming.js'
import type { LivenessView } from './liveness.js'
import { trustScore, trustSignals } from './trust.js'

export interface ResolutionComponents extends Pick<ServiceComponents, 'store' | 'bus' | 'settings' | 'now'> {
  names: NameService
  liveness?: LivenessView
}

export class ResolutionService {
  private readonly now: () => Date

  constructor(private readonly c: ResolutionComponents) {
    this.now = c.now ?? (() => new Date())
  }

  /** `text` is a full FQAN, or `<handle>/<name>[@version]` on this node. */
  resolveFqan(text: string) {
    const parsed = parseFqan(text)
    if (!parsed) throw new RegistryError('fqan_invalid', `"${text}" is not an FQAN: expected [zns://]<host>/<handle>/<entity-name>[@<version>].`, 'fqan')
    if (parsed.host !== null && parsed.host !== this.c.settings.host.toLowerCase()) {
      throw new RegistryError('name_not_found', `${text} belongs to the registry ${parsed.host}, not to this one (${this.c.settings.host}).`)
    }
    const binding = this.c.names.require(parsed.handle, parsed.name)
    let version: NameVersion | null = null
    if (parsed.version !== null) {
      version = selectVersion(this.c.store.nameHistory(parsed.handle, parsed.name), parsed.version)
      if (!version) throw new RegistryError('name_not_found', `${this.c.names.fqan(parsed.handle, parsed.name)} has no version matching ${parsed.version}.`)
    }
    const entity = this.c.store.getEntity(version?.entity_id ?? binding.entity_id)
    if (!entity) throw new RegistryError('entity_not_found', `${binding.entity_id}, bound to this name, is no longer registered.`)
    return this.view(entity, binding, version)
  }

  resolveEntity(entityId: string) {
    const entity = this.c.store.getEntity(entityId)
    if (!entity) throw new RegistryError('entity_not_found', `No entity ${entityId} is registered on this node.`)
    return this.view(entity, this.c.names.primaryOf(entityId) ?? null, null)
  }

  private view(entity: EntityRecord, binding: NameBinding | null, version: NameVersion | null) {
    const developer = entity.developer_id ? this.c.store.getDeveloper(entity.developer_id) : undefined
    const handle = developer?.dev_handle ? this.c.store.getHandle(developer.dev_handle) : undefined
    const live = this.c.liveness?.current(entity.entity_id)
    const uptime = live?.uptime ?? (entity.status === 'active' ? 1 : 0)
    const signals = trustSignals({ registeredAt: Date.parse(entity.registered_at), uptime, developer, handle, now: this.now().getTime() })
    const score = trustScore(signals)
    const tier = verificationTier(handle)
    const fqan = binding ? this.c.names.fqan(binding.handle, binding.entity_name) : null
    this.c.bus.publish('name_resolved', { fqan, entity_id: entity.entity_id, developer_id: entity.developer_id, action: 'resolve' })
    return {
      fqan,
      entity_id: entity.entity_id,
      name: entity.name,
      type: entity.type,
      entity_type: entity.type,
      developer_id: entity.developer_id,
      developer_handle: binding?.handle ?? developer?.dev_handle ?? null,
      registry_host: this.c.settings.host,
      home_registry: entity.home_registry,
      version: version?.version ?? binding?.version ?? entity.version,
      capability_tags: version?.capability_tags ?? binding?.capability_tags ?? [],
      entity_url: entity.entity_url,
      service_endpoint: entity.service_endpoint,
      public_key: entity.public_key,
      status: live?.status ?? entity.status,
      last_heartbeat: live ? live.last_heartbeat : entity.last_heartbeat,
      trust_score: score,
      verification_tier: tier,
      trust: { score, verification_tier: tier, signals }
    }
  }
}
