/**
 * Resolution of an FQAN (`[zns://]<host>/<handle>/<name>[@version]`) or an entity ID to what a
 * caller needs to reach and trust the entity. Emits `name_resolved`.
 */
import { RegistryError } from '../../errors.js'
import type { EntityRecord, NameBinding, NameVersion } from '../../store/records.js'
import type { ServiceComponents } from './components.js'
import { verificationTier } from './handles.js'
import type { NameService } from './names.js'
import { formatFqan, parseFqan, selectVersion } from './naming.js'
import { NETWORK_LOOKUP_TIMEOUT_MS, type LivenessView, type NetworkLookup, type RemoteNames } from './ports.js'
import { blendTrust, trustScore, trustSignals } from './trust.js'

export interface ResolutionComponents extends Pick<ServiceComponents, 'store' | 'bus' | 'settings' | 'now'> {
  names: NameService
  /** Other registries' names, learned from the mesh. */
  directory?: RemoteNames
  liveness?: LivenessView
  /** Transitive trust from attestations (transitive-trust.ts). */
  transitive?: { scoreOf(id: string): number }
}

/** Set once the mesh runs: names of other hosts this node has not learned are looked up there. */
export interface ResolutionNetwork {
  lookup: NetworkLookup | null
}

export class ResolutionService {
  private readonly now: () => Date

  constructor(private readonly c: ResolutionComponents) {
    this.now = c.now ?? (() => new Date())
  }

  readonly network: ResolutionNetwork = { lookup: null }

  /** `text` is a full FQAN, or `<handle>/<name>[@version]` on this node. */
  async resolveFqan(text: string) {
    const parsed = parseFqan(text)
    if (!parsed)
      throw new RegistryError(
        'fqan_invalid',
        `"${text}" is not an FQAN: expected [zns://]<host>/<handle>/<entity-name>[@<version>].`,
        'fqan'
      )
    const ownHost = this.c.settings.host.toLowerCase()
    // A replica holds no names of its own: its host's are those its registry's node gossiped.
    if ((parsed.host !== null && parsed.host !== ownHost) || this.c.settings.replica) {
      const { handle, name } = parsed
      const host = parsed.host ?? ownHost
      if (!this.c.directory?.name(host, handle, name) && this.network.lookup)
        await this.network.lookup.fetch(`fqan:${formatFqan(host, handle, name)}`, NETWORK_LOOKUP_TIMEOUT_MS)
      return this.resolveRemote(text, host, handle, name, parsed.version)
    }
    const binding = this.c.names.require(parsed.handle, parsed.name)
    let version: NameVersion | null = null
    if (parsed.version !== null) {
      version = selectVersion(this.c.store.nameHistory(parsed.handle, parsed.name), parsed.version)
      if (!version)
        throw new RegistryError(
          'name_not_found',
          `${this.c.names.fqan(parsed.handle, parsed.name)} has no version matching ${parsed.version}.`
        )
    }
    const entity = this.c.store.getEntity(version?.entity_id ?? binding.entity_id)
    if (!entity)
      throw new RegistryError('entity_not_found', `${binding.entity_id}, bound to this name, is no longer registered.`)
    return this.view(entity, binding, version)
  }

  /** An FQAN of another registry, from what the mesh told this node (said in `source`). */
  private resolveRemote(text: string, host: string, handle: string, name: string, version: string | null) {
    const binding = this.c.directory?.name(host, handle, name)
    if (!binding)
      throw new RegistryError(
        'name_not_found',
        `${text} belongs to the registry ${host}, and this node has not learned that name from the mesh.`
      )
    if (
      version !== null &&
      !selectVersion(
        [
          {
            version: binding.version,
            entity_id: binding.entity_id,
            capability_tags: binding.capability_tags,
            bound_at: binding.updated_at,
            signature: ''
          }
        ],
        version
      )
    ) {
      throw new RegistryError(
        'name_not_found',
        `${formatFqan(host, handle, name)} (as this node knows it from the mesh) has no version matching ${version}.`
      )
    }
    const entity = this.c.store.getEntity(binding.entity_id)
    if (!entity)
      throw new RegistryError(
        'entity_not_found',
        `${binding.entity_id}, bound to ${formatFqan(host, handle, name)}, is not held by this node.`
      )
    const local = this.view(entity, null, null)
    return {
      ...local,
      fqan: formatFqan(host, handle, name),
      developer_handle: handle,
      registry_host: host,
      version: binding.version ?? entity.version,
      capability_tags: binding.capability_tags,
      source: 'network' as const
    }
  }

  resolveEntity(entityId: string) {
    const entity = this.c.store.getEntity(entityId)
    if (!entity) throw new RegistryError('entity_not_found', `No entity ${entityId} is registered on this node.`)
    const replicated = this.c.settings.replica ? this.c.directory?.primaryOf(entityId) : undefined
    if (replicated) {
      const { host, handle, entity_name } = replicated
      return this.resolveRemote(formatFqan(host, handle, entity_name), host, handle, entity_name, null)
    }
    return this.view(entity, this.c.names.primaryOf(entityId) ?? null, null)
  }

  private view(entity: EntityRecord, binding: NameBinding | null, version: NameVersion | null) {
    const developer = entity.developer_id ? this.c.store.getDeveloper(entity.developer_id) : undefined
    const handle = developer?.dev_handle ? this.c.store.getHandle(developer.dev_handle) : undefined
    const live = this.c.liveness?.current(entity.entity_id)
    const uptime = live?.uptime ?? (entity.status === 'active' ? 1 : 0)
    const signals = trustSignals({
      registeredAt: Date.parse(entity.registered_at),
      uptime,
      developer,
      handle,
      now: this.now().getTime()
    })
    const local = trustScore(signals)
    const transitive = this.c.transitive?.scoreOf(entity.entity_id)
    const score = transitive === undefined ? local : blendTrust(local, transitive)
    const tier = verificationTier(handle)
    const fqan = binding ? this.c.names.fqan(binding.handle, binding.entity_name) : null
    this.c.bus.publish('name_resolved', {
      fqan,
      entity_id: entity.entity_id,
      developer_id: entity.developer_id,
      action: 'resolve'
    })
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
      trust: {
        score,
        verification_tier: tier,
        signals,
        ...(transitive !== undefined ? { local, transitive } : {})
      }
    }
  }
}
