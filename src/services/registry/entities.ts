/**
 * Entities: registration, update, deregistration, reads and listings. Every write is verified
 * (the owner's signature in any accepted form, the developer proof), committed as a signed
 * operation together with the record in one transaction, and only then acknowledged. The steps
 * of a registration, the record rules and the status changes of home nodes have their own modules
 * (entity-registration, entity-records, entity-status).
 */
import { RegistryError, invalidField } from '../../errors.js'
import { parsePublicKey } from '../../identity/encoding.js'
import type { EntityRecord, EntityType, Operation } from '../../store/records.js'
import { BoundedMap } from '../../util/bounded-map.js'
import { validate } from '../../wire/validate.js'
import { UpdateRequest, type EntityRecordView } from '../../wire/entities.js'
import { appendUpdate, authorizeDeletion, authorizeUpdate, deterministicReuse, edgeClock } from './authorize.js'
import type { ServiceComponents } from './components.js'
import { MissingDependency, StaleOperation, type RemoteWrite, type WriteRequest } from './writes.js'
import type { DeveloperService } from './developers.js'
import {
  checkCapabilitySummary,
  parseRegistration,
  refold,
  rejectImmutable,
  UPDATABLE_FIELDS,
  updatePatch
} from './entity-records.js'
import {
  commitRegistration,
  registrationResult,
  verifyRegistration,
  type RegistrationResult
} from './entity-registration.js'
import { EntityStatusChanges } from './entity-status.js'
import type { NameService } from './names.js'
import { formatFqan } from './naming.js'
import {
  NETWORK_LOOKUP_GRACE_MS,
  NETWORK_LOOKUP_TIMEOUT_MS,
  type LivenessView,
  type NetworkLookup,
  type RemoteNames
} from './ports.js'
import {
  acceptOperation,
  registrationOperation,
  signatureFingerprint,
  type ParsedDeveloperProof
} from './operations.js'
import { bury } from './tombstones.js'
import { changedFields, requireSomethingToUpdate } from './validation.js'

export { DEFAULT_TTL, DEFAULT_VERSION } from './entity-records.js'
export type { RegistrationResult } from './entity-registration.js'

/** Rendered records kept for reads; each write to a record drops its entry. */
const RENDERED_CACHE_SIZE = 20_000

export interface EntityServiceComponents extends ServiceComponents {
  developers: DeveloperService
  names: NameService
  /** Status and last heartbeat of home entities, fresher than the stored record. */
  liveness?: LivenessView
  /** Names in other registries' namespaces, for the FQAN of entities whose home is elsewhere. */
  directory?: RemoteNames
}

export class EntityService {
  private readonly now: () => Date
  private network: NetworkLookup | null = null
  /** Rendered JSON, with the liveness it shows (heartbeats change it without a write). */
  private readonly rendered = new BoundedMap<string, { text: string; live: string }>(RENDERED_CACHE_SIZE)
  private readonly statuses: EntityStatusChanges
  /** Reads of unknown entities waiting on a network lookup, by entity ID: each is told when the entity is registered here. */
  private readonly awaited = new Map<string, Set<() => void>>()

  constructor(private readonly c: EntityServiceComponents) {
    this.now = c.now ?? (() => new Date())
    this.statuses = new EntityStatusChanges(c, id => this.changed(id))
    if (c.directory) c.directory.onEntityChanged = id => this.changed(id)
    // A record's rendering shows its FQAN, so name changes invalidate it too.
    c.bus.subscribe(event => {
      if (typeof event.data.entity_id !== 'string') return
      if (BINDING_EVENTS.has(event.type)) this.changed(event.data.entity_id)
      if (event.type === 'agent_registered' && this.awaited.size > 0)
        for (const arrived of this.awaited.get(event.data.entity_id) ?? []) arrived()
    })
  }

  get(id: string): EntityRecord | undefined {
    return this.c.store.getEntity(id)
  }

  require(id: string): EntityRecord {
    const record = this.c.store.getEntity(id)
    if (record) return record
    const tombstone = this.c.store.getTombstone(id)
    throw new RegistryError(
      'entity_not_found',
      tombstone ? `${id} was deregistered at ${tombstone.deleted_at}.` : `No entity ${id} is registered on this node.`
    )
  }

  /**
   * The record a write changes. A replayed write can arrive before the record it changes (gossip
   * takes many paths): it then waits for it rather than failing (replication.ts defers it).
   */
  private requireFor(id: string, remote: RemoteWrite | undefined): EntityRecord {
    const record = this.c.store.getEntity(id)
    if (record) return record
    if (remote) throw new MissingDependency(id)
    return this.require(id)
  }

  /** Lets reads of unknown entities ask the mesh (set once the mesh runs). */
  useNetwork(network: NetworkLookup | null): void {
    this.network = network
  }

  /**
   * An entity this node does not hold and has no tombstone of, found through the mesh: its
   * operations are fetched from its home node and applied (verified) here. Null when not found.
   * A registration usually arrives by gossip while the lookup still waits on the DHT, so its
   * arrival answers at once rather than when the lookup ends (the lookup goes on in the background).
   */
  async fromNetwork(id: string): Promise<string | null> {
    if (!this.network || this.c.store.getEntity(id) || this.c.store.getTombstone(id)) return null
    let arrived = (): void => {}
    const arrival = new Promise<void>(resolve => {
      arrived = resolve
    })
    const waiting = this.awaited.get(id) ?? new Set<() => void>()
    waiting.add(arrived)
    this.awaited.set(id, waiting)
    let grace: NodeJS.Timeout | undefined
    try {
      // Most reads of an unknown ID come from a client waiting for a registration it just made to
      // spread, which gossip brings within tens of milliseconds: a DHT lookup started by every such
      // poll on every node loaded the whole mesh (5 nodes polled every 20 ms: POST replies went from
      // 34 to 170–375 ms). The lookup starts only if the entity has not arrived within the grace.
      const late = new Promise<'late'>(resolve => {
        grace = setTimeout(() => resolve('late'), NETWORK_LOOKUP_GRACE_MS)
      })
      if ((await Promise.race([arrival, late])) === 'late')
        await Promise.race([this.network.fetch(`entity:${id}`, NETWORK_LOOKUP_TIMEOUT_MS), arrival])
    } finally {
      clearTimeout(grace)
      waiting.delete(arrived)
      if (waiting.size === 0) this.awaited.delete(id)
    }
    const record = this.c.store.getEntity(id)
    return record ? JSON.stringify({ ...this.view(record), source: 'network' }) : null
  }

  /** The record as JSON text, rendered once and served from memory until it changes. */
  viewJson(id: string): string {
    const current = this.c.liveness?.current(id)
    const live = current ? `${current.status} ${current.last_heartbeat}` : ''
    const cached = this.rendered.get(id)
    if (cached !== undefined && cached.live === live) return cached.text
    const text = JSON.stringify(this.view(this.require(id)))
    this.rendered.set(id, { text, live })
    return text
  }

  private changed(id: string): void {
    this.rendered.delete(id)
  }

  private liveness(record: EntityRecord): Pick<EntityRecordView, 'status' | 'last_heartbeat'> {
    const live = this.c.liveness?.current(record.entity_id)
    return live
      ? { status: live.status, last_heartbeat: live.last_heartbeat }
      : { status: record.status, last_heartbeat: record.last_heartbeat }
  }

  view(record: EntityRecord): EntityRecordView {
    const local = this.c.names.primaryOf(record.entity_id)
    const remote = local ? undefined : this.c.directory?.primaryOf(record.entity_id)
    return {
      entity_id: record.entity_id,
      name: record.name,
      type: record.type,
      entity_type: record.type,
      category: record.category,
      summary: record.summary,
      version: record.version,
      tags: record.tags,
      public_key: record.public_key,
      signature: record.signature,
      entity_url: record.entity_url,
      service_endpoint: record.service_endpoint,
      openapi_url: record.openapi_url,
      codebase_hash: record.codebase_hash,
      developer_id: record.developer_id,
      owner: record.developer_id,
      entity_index: record.entity_index,
      developer_proof: record.developer_proof,
      capability_summary: record.capability_summary,
      pricing_model: record.pricing_model,
      entity_pricing: record.pricing_model,
      entity_name: record.entity_name,
      fqan: local
        ? this.c.names.fqan(local.handle, local.entity_name)
        : remote
          ? formatFqan(remote.host, remote.handle, remote.entity_name)
          : null,
      developer_handle: local?.handle ?? remote?.handle ?? null,
      ...this.liveness(record),
      ttl: record.ttl,
      registered_at: record.registered_at,
      updated_at: record.updated_at,
      home_registry: record.home_registry,
      schema_version: record.schema_version
    }
  }

  list(q: {
    type?: EntityType | undefined
    category?: string | undefined
    developerId?: string | undefined
    offset: number
    limit: number
  }): { records: EntityRecord[]; total: number } {
    const { ids, total } = this.c.catalog.list(q)
    const records: EntityRecord[] = []
    for (const id of ids) {
      const r = this.c.store.getEntity(id)
      if (r) records.push(r)
    }
    return { records, total }
  }

  /**
   * Registers an entity: from a client (`remote` absent), or replays a registration another node
   * accepted (`remote`: its operation, verified here again as if a client had sent it). A replayed
   * one keeps its origin's time and home and wins over what this node holds only if it is later
   * (last writer wins); otherwise it throws StaleOperation.
   */
  async register(req: WriteRequest, remote?: RemoteWrite): Promise<RegistrationResult> {
    const parsed = parseRegistration(req.body, this.c.settings.allowHttpEntityUrl)
    const { form, proof } = await verifyRegistration(parsed, this.c.verifier)
    const { op, acceptedAt } = registrationOperation(
      this.c.identity,
      'entity.register',
      parsed.entityId,
      req,
      { signature: parsed.body.signature, form },
      remote,
      this.now
    )
    const fingerprint = signatureFingerprint(parsed.body.signature)
    const record = parsed.build(
      proof,
      acceptedAt,
      remote?.home ?? this.c.settings.host,
      remote?.op.origin ?? this.c.identity.registryId
    )
    const { createdDeveloper, binding } = await this.c.writes.run(() =>
      this.c.store.commit(tx => commitRegistration(tx, { record, op, proof, fingerprint, remote }, this.c))
    )
    this.announceRegistration(record, proof, createdDeveloper)
    const result = registrationResult(record, binding, this.c.names)
    if (binding && typeof binding !== 'string' && binding.bound_at === acceptedAt)
      this.c.names.published(binding, 'name_registered', 'register')
    return result
  }

  /** What follows a committed registration: the read cache, the catalog and the events. */
  private announceRegistration(
    record: EntityRecord,
    proof: ParsedDeveloperProof | null,
    createdDeveloper: boolean
  ): void {
    this.changed(record.entity_id)
    this.c.catalog.upsert(record)
    if (createdDeveloper && proof) this.c.developers.implicitCommitted(proof.developerId)
    this.c.bus.publish(
      'agent_registered',
      {
        entity_id: record.entity_id,
        name: record.name,
        type: record.type,
        category: record.category,
        tags: record.tags,
        summary: record.summary,
        developer_id: record.developer_id
      },
      record
    )
  }

  /**
   * Updates an entity: from a client, or replays another node's update (`remote`). Updates are
   * patches; one that arrives after a later one is merged by folding the subject's updates again
   * in time order, so every node ends with the same record whatever the order of arrival.
   */
  async update(id: string, req: WriteRequest, remote?: RemoteWrite): Promise<EntityRecord & { changed: string[] }> {
    const existing = this.requireFor(id, remote)
    if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body))
      throw invalidField('body', 'must be a JSON object')
    const raw = req.body as Record<string, unknown>
    rejectImmutable(existing, raw)
    const body = validate(UpdateRequest, raw)
    if (!remote) requireSomethingToUpdate(raw, UPDATABLE_FIELDS)
    const auth = await authorizeUpdate(req.credential, this.signerKeys(existing), req.raw, raw, this.c.verifier)

    if (body.capability_summary != null) checkCapabilitySummary(body.capability_summary)
    const now = remote?.op.accepted_at ?? this.now().toISOString()
    // Applied inside the transaction, to the record as it is then: concurrent updates never undo each other.
    const patch = updatePatch(body, auth.signature, now, this.c.settings.allowHttpEntityUrl)
    patch(existing) // validates the result before anything is written

    const op = remote?.op ?? acceptOperation(this.c.identity, 'entity.update', id, req, auth, now)
    const next = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const current = tx.getEntity(id)
        if (!current) throw remote ? new MissingDependency(id) : new RegistryError('entity_not_found')
        if (remote && now < current.registered_at) throw new StaleOperation()
        const updated =
          remote && now <= current.updated_at
            ? refold(current, [...this.c.store.operationsOf(id), op], this.c.settings.allowHttpEntityUrl)
            : patch(current)
        // The same signed update sent again while it is in effect is answered, not written.
        if (!appendUpdate(tx, op, current, updated, { remote: !!remote, strict: this.c.settings.strictReplay }))
          return { unchanged: current }
        tx.putEntity(updated)
        return updated
      })
    )
    if ('unchanged' in next) return { ...(next.unchanged as EntityRecord), changed: [] }
    this.changed(id)
    this.c.catalog.upsert(next)
    this.c.bus.publish(
      'agent_updated',
      { entity_id: id, name: next.name, category: next.category, tags: next.tags, summary: next.summary },
      next
    )
    return { ...next, changed: changedFields(existing, next) }
  }

  /** Deregisters an entity (from a client, or another node's deregistration replayed): a tombstone replaces it. */
  async deregister(
    id: string,
    req: Omit<WriteRequest, 'body' | 'raw'>,
    remote?: RemoteWrite
  ): Promise<{ entity_id: string; message: string; tombstone: { deleted_at: string; expires_at: string } }> {
    const existing = this.requireFor(id, remote)
    const auth = await authorizeDeletion(
      req.credential,
      this.signerKeys(existing),
      id,
      req.path,
      this.c.verifier,
      remote ? undefined : edgeClock(this.now(), this.c.settings)
    )
    const now = remote ? new Date(remote.op.accepted_at) : this.now()
    const deletedAt = remote?.op.accepted_at ?? now.toISOString()
    const expiresAt = new Date(now.getTime() + this.c.settings.tombstoneRetentionMs).toISOString()
    const op =
      remote?.op ??
      acceptOperation(this.c.identity, 'entity.deregister', id, { raw: null, path: req.path }, auth, deletedAt)
    const releasedNames = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const current = tx.getEntity(id)
        if (!current) throw remote ? new MissingDependency(id) : new RegistryError('entity_not_found')
        // A registration later than the deregistration (the entity came back) stands.
        if (remote && current.registered_at > deletedAt) throw new StaleOperation()
        const reuse = deterministicReuse(auth, current.registered_at, !remote && this.c.settings.strictReplay)
        bury(tx, 'entity', id, current.registration_signatures, op, expiresAt, reuse)
        return this.c.names.releaseEntityInTx(tx, id)
      })
    )
    for (const binding of releasedNames)
      this.c.names.published(binding, 'name_released', 'release', { reason: 'entity_deregistered' })
    this.changed(id)
    this.c.catalog.remove(id)
    this.c.bus.publish('agent_deregistered', {
      entity_id: id,
      name: existing.name,
      category: existing.category,
      tags: existing.tags
    })
    return {
      entity_id: id,
      message: `${existing.type} deregistered`,
      tombstone: { deleted_at: deletedAt, expires_at: expiresAt }
    }
  }

  /**
   * A status change another node announced (`entity.status`, signed by that node): accepted only
   * from the entity's home node (the origin of its registration). Every such operation is kept;
   * the record shows the latest.
   *
   * The caller has verified the operation's seal against the origin's key. The seal covers the
   * body and its signature, which the same key made: that signature is checked for its form only,
   * as a second verification by the same key would prove nothing more. `record` is the subject's
   * record as the caller read it (for its quota check), so it is not read again here.
   */
  applyStatus(op: Operation, record: EntityRecord | undefined): Promise<void> {
    return this.statuses.apply(op, record)
  }

  /**
   * A batch of status changes another node announced (`entity.status.batch`, signed by that node),
   * each applied as `applyStatus` applies one: only to entities whose home is the origin, the
   * latest change winning. The history of every such entity holds the operation afterwards. Returns
   * how many histories it was added to now, and the entities it names that this node does not store
   * yet: the caller applies it again once they come.
   */
  applyStatusBatch(op: Operation): Promise<{ added: number; missing: string[] }> {
    return this.statuses.applyBatch(op)
  }

  private signerKeys(record: EntityRecord) {
    const developerKey = record.developer_proof ? parsePublicKey(record.developer_proof.developer_public_key) : null
    return { self: parsePublicKey(record.public_key) as Buffer, developer: developerKey }
  }
}

const BINDING_EVENTS = new Set(['name_registered', 'name_updated', 'name_released'])
