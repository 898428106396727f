/**
 * Entities: registration, update, deregistration, reads and listings. Every write is verified
 * (the owner's signature in any accepted form, the developer proof), committed as a signed
 * operation together with the record in one transaction, and only then acknowledged.
 */
import { RegistryError, invalidField } from '../../errors.js'
import { parsePublicKey, parseSignature, formatKey } from '../../identity/encoding.js'
import { deriveId } from '../../identity/ids.js'
import { verifyDeveloperProof, verifyEntityRegistration } from '../../identity/verifiers.js'
import { compareOperations, isLater } from '../../store/operation-order.js'
import {
  SCHEMA_VERSION,
  type EntityRecord,
  type EntityType,
  type Operation,
  type PricingModel
} from '../../store/records.js'
import { BoundedMap } from '../../util/bounded-map.js'
import { validate } from '../../wire/validate.js'
import {
  ENTITY_LIMITS,
  RegistrationRequest,
  UpdateRequest,
  type EntityRecordView,
  type PricingModelInput
} from '../../wire/entities.js'
import { StatusBatchBody } from '../../wire/operations.js'
import { appendUpdate, authorizeDeletion, authorizeUpdate, deterministicReuse, edgeClock } from './authorize.js'
import type { ServiceComponents } from './components.js'
import { MissingDependency, StaleOperation, type RemoteWrite, type WriteRequest } from './writes.js'
import type { DeveloperService } from './developers.js'
import type { NameService } from './names.js'
import { formatFqan } from './naming.js'
import { NETWORK_LOOKUP_TIMEOUT_MS, type LivenessView, type NetworkLookup, type RemoteNames } from './ports.js'
import {
  acceptOperation,
  bodyOf,
  parseDeveloperProof,
  registrationOf,
  registrationOperation,
  signatureFingerprint,
  type ParsedDeveloperProof
} from './operations.js'
import { admitRegistration, bury } from './tombstones.js'
import { changedFields, checkUrl, eitherSpelling, jsonSize, requireSomethingToUpdate } from './validation.js'

export const DEFAULT_VERSION = '0.1.0'
/** Rendered records kept for reads; each write to a record drops its entry. */
const RENDERED_CACHE_SIZE = 20_000
export const DEFAULT_TTL = 86_400

export interface EntityServiceComponents extends ServiceComponents {
  developers: DeveloperService
  names: NameService
  /** Status and last heartbeat of home entities, fresher than the stored record. */
  liveness?: LivenessView
  /** Names in other registries' namespaces, for the FQAN of entities whose home is elsewhere. */
  directory?: RemoteNames
}

export interface RegistrationResult {
  entity_id: string
  message: string
  status: 'active'
  fqan: string | null
  name_binding?: { requested: string; bound: boolean; fqan: string | null; reason: string | null; message: string }
}

export class EntityService {
  private readonly now: () => Date
  private network: NetworkLookup | null = null
  /** Rendered JSON, with the liveness it shows (heartbeats change it without a write). */
  private readonly rendered = new BoundedMap<string, { text: string; live: string }>(RENDERED_CACHE_SIZE)

  constructor(private readonly c: EntityServiceComponents) {
    this.now = c.now ?? (() => new Date())
    if (c.directory) c.directory.onEntityChanged = id => this.changed(id)
    // A record's rendering shows its FQAN, so name changes invalidate it too.
    c.bus.subscribe(event => {
      if (BINDING_EVENTS.has(event.type) && typeof event.data.entity_id === 'string') this.changed(event.data.entity_id)
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
   */
  async fromNetwork(id: string): Promise<string | null> {
    if (!this.network || this.c.store.getEntity(id) || this.c.store.getTombstone(id)) return null
    await this.network.fetch(`entity:${id}`, NETWORK_LOOKUP_TIMEOUT_MS)
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
    const { body, entityId, publicKey, proofInput, build } = this.parseRegistration(req.body)
    // Both signatures are checked together (one batch when the pool verifies); the errors keep
    // their order: the registration signature, then the proof's fields, then its signature.
    const verifyingForm = verifyEntityRegistration(
      body as Record<string, unknown>,
      publicKey,
      parseSignature(body.signature) as Buffer,
      this.c.verifier
    )
    let proof: ParsedDeveloperProof | null = null
    let proofProblem: unknown = null
    try {
      proof = proofInput
        ? parseDeveloperProof(proofInput, publicKey, body.developer_id ?? null, body.entity_index ?? null)
        : null
    } catch (err) {
      proofProblem = err
    }
    const verifyingProof = proof
      ? verifyDeveloperProof(
          proof.developerKey,
          publicKey,
          proof.stored.index,
          parseSignature(proof.stored.signature) as Buffer,
          this.c.verifier
        )
      : true
    const [form, proofVerifies] = await Promise.all([verifyingForm, verifyingProof])
    if (!form)
      throw new RegistryError(
        'signature_invalid',
        'The registration signature does not verify against public_key.',
        'signature'
      )
    if (proofProblem !== null) throw proofProblem
    if (!proofVerifies)
      throw new RegistryError(
        'developer_proof_invalid',
        'The developer proof signature does not verify over the entity key and index.',
        'developer_proof.signature'
      )

    const { op, acceptedAt: now } = registrationOperation(
      this.c.identity,
      'entity.register',
      entityId,
      req,
      { signature: body.signature, form },
      remote,
      this.now
    )
    const fingerprint = signatureFingerprint(body.signature)
    const record = build(
      proof,
      now,
      remote?.home ?? this.c.settings.host,
      remote?.op.origin ?? this.c.identity.registryId
    )
    const name = record.name
    const type = record.type

    let createdDeveloper = false
    const binding = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const existing = tx.getEntity(entityId)
        if (existing && !remote)
          throw new RegistryError(
            'entity_exists',
            `${entityId} is already registered; update it with PUT /v1/entities/${entityId}.`
          )
        if (existing) {
          // Two registrations of one key (at two homes, or replayed): the later one wins.
          if (!isLater(now, fingerprint, existing.registered_at, existing.registration_signatures.at(-1) ?? ''))
            throw new StaleOperation()
          tx.dropOperations(entityId)
          record.registration_signatures = [...new Set([...existing.registration_signatures, fingerprint])]
        } else {
          const tombstone = tx.getTombstone(entityId)
          if (remote && tombstone && tombstone.deleted_at >= now) throw new StaleOperation()
          try {
            record.registration_signatures = admitRegistration(tx, entityId, fingerprint, 'entity_deregistered')
          } catch (err) {
            if (remote) throw new StaleOperation()
            throw err
          }
        }
        if (proof)
          createdDeveloper = this.c.developers.ensureForProof(
            tx,
            { developerId: proof.developerId, developerKey: proof.developerKey, signature: proof.stored.signature },
            op,
            now,
            remote
          )
        tx.appendOperation(op)
        tx.putEntity(record)
        // Names travel as their own operations (name.bind), not with a replayed registration.
        return record.entity_name && !remote
          ? this.c.names.bindForRegistration(tx, record.developer_id, entityId, record.entity_name, record.version, op)
          : null
      })
    )

    this.changed(entityId)
    this.c.catalog.upsert(record)
    if (createdDeveloper && proof) this.c.developers.implicitCommitted(proof.developerId)
    this.c.bus.publish(
      'agent_registered',
      {
        entity_id: entityId,
        name,
        type,
        category: record.category,
        tags: record.tags,
        summary: record.summary,
        developer_id: record.developer_id
      },
      record
    )

    const result: RegistrationResult = {
      entity_id: entityId,
      message: `${type} registered`,
      status: 'active',
      fqan: null
    }
    if (record.entity_name && binding) {
      if (typeof binding === 'string') {
        result.name_binding = {
          requested: record.entity_name,
          bound: false,
          fqan: null,
          reason: binding,
          message: `No FQAN was bound: ${BINDING_FAILURES[binding]} The registration itself succeeded.`
        }
      } else {
        const fqan = this.c.names.fqan(binding.handle, binding.entity_name)
        result.fqan = fqan
        result.name_binding = {
          requested: record.entity_name,
          bound: true,
          fqan,
          reason: null,
          message: `Bound as ${fqan}.`
        }
        if (binding.bound_at === now) this.c.names.published(binding, 'name_registered', 'register')
      }
    }
    return result
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
            ? this.refold(current, [...this.c.store.operationsOf(id), op])
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
   * A registration body, checked field by field (no signatures): the entity's ID and key, the
   * developer proof as sent, and the record it makes once the proof is verified.
   */
  private parseRegistration(input: unknown) {
    const body = validate(RegistrationRequest, input)
    const type: EntityType = eitherSpelling(body.type, body.entity_type, 'type', 'entity_type') ?? 'agent'
    const name = body.name ?? body.entity_name
    if (name === undefined || name === null || name === '')
      throw invalidField('name', 'is required (also accepted as entity_name)')
    const publicKey = parsePublicKey(body.public_key) as Buffer
    const entityId = deriveId(type, publicKey)
    const reachability = checkReachability(
      type,
      body.entity_url ?? null,
      body.service_endpoint ?? null,
      body.openapi_url ?? null,
      this.c.settings.allowHttpEntityUrl
    )
    checkCapabilitySummary(body.capability_summary)
    const pricing = storedPricing(
      eitherSpelling(body.pricing_model, body.entity_pricing, 'pricing_model', 'entity_pricing') ?? null
    )
    const proofInput = body.developer_proof ?? null
    if (body.developer_id && !proofInput)
      throw invalidField('developer_proof', 'is required when developer_id is given')
    const build = (proof: ParsedDeveloperProof | null, now: string, home: string, homeId: string): EntityRecord => ({
      entity_id: entityId,
      type,
      name,
      category: body.category,
      summary: body.summary ?? '',
      version: body.version ?? DEFAULT_VERSION,
      tags: body.tags ?? [],
      public_key: formatKey(publicKey),
      signature: body.signature,
      ...reachability,
      codebase_hash: body.codebase_hash ?? null,
      developer_id: proof?.developerId ?? null,
      entity_index: proof?.stored.index ?? body.entity_index ?? null,
      developer_proof: proof?.stored ?? null,
      capability_summary: body.capability_summary ?? null,
      pricing_model: pricing,
      entity_name: body.entity_name ?? null,
      ttl: body.ttl ?? DEFAULT_TTL,
      status: 'active',
      last_heartbeat: null,
      registered_at: now,
      updated_at: now,
      home_registry: home,
      home_registry_id: homeId,
      schema_version: SCHEMA_VERSION,
      registration_signatures: [signatureFingerprint(body.signature)]
    })
    return { body, entityId, publicKey, proofInput, build }
  }

  /**
   * The record its operations make, folded in time order: the registration, then every update
   * after it. Each was verified when it was stored; the status fields stay as they are.
   */
  private refold(current: EntityRecord, ops: readonly Operation[]): EntityRecord {
    const registration = registrationOf(ops, current)
    if (!registration?.body) return current
    const { body, publicKey, proofInput, build } = this.parseRegistration(bodyOf(registration))
    const proof = proofInput
      ? parseDeveloperProof(proofInput, publicKey, body.developer_id ?? null, body.entity_index ?? null)
      : null
    let record: EntityRecord = {
      ...build(proof, registration.accepted_at, current.home_registry, registration.origin),
      status: current.status,
      last_heartbeat: current.last_heartbeat,
      ...(current.status_changed_at !== undefined && { status_changed_at: current.status_changed_at }),
      registration_signatures: current.registration_signatures
    }
    const updates = ops
      .filter(o => o.kind === 'entity.update' && o.body && o.accepted_at >= registration.accepted_at)
      .sort(compareOperations)
    for (const update of updates) {
      const patchBody = validate(UpdateRequest, bodyOf(update))
      record = updatePatch(
        patchBody,
        update.auth.signature,
        update.accepted_at,
        this.c.settings.allowHttpEntityUrl
      )(record)
    }
    return record
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
  async applyStatus(op: Operation, record: EntityRecord | undefined): Promise<void> {
    let body: { entity_id?: unknown; status?: unknown; last_heartbeat?: unknown; registry_id?: unknown } = {}
    if (op.body)
      try {
        body = bodyOf(op) as typeof body
      } catch {
        /* checked below */
      }
    const status = body.status
    if (
      body.entity_id !== op.subject ||
      (status !== 'active' && status !== 'inactive') ||
      body.registry_id !== op.origin ||
      (body.last_heartbeat !== null && typeof body.last_heartbeat !== 'string')
    ) {
      throw new RegistryError(
        'operation_invalid',
        'An entity.status body is {entity_id, status, last_heartbeat, changed_at, registry_id} for its subject and origin.',
        'body'
      )
    }
    if (!parseSignature(op.auth.signature))
      throw new RegistryError('signature_invalid', 'The status is not signed by its origin node.')
    if (!record) throw new MissingDependency(op.subject)
    if (this.homeOf(record) !== op.origin)
      throw new RegistryError(
        'operation_invalid',
        "Status changes are accepted only from the entity's home node.",
        'origin'
      )
    if (op.accepted_at < record.registered_at) throw new StaleOperation()
    const lastHeartbeat = body.last_heartbeat as string | null
    const next = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const current = tx.getEntity(op.subject)
        if (!current) throw new MissingDependency(op.subject)
        // Decided inside the transaction, so that of two concurrent ones the later always wins.
        const latest = this.isLatestStatus(current, op.accepted_at)
        tx.appendOperation(op)
        if (!latest) return null
        const updated: EntityRecord = {
          ...current,
          status,
          last_heartbeat: lastHeartbeat,
          status_changed_at: op.accepted_at
        }
        tx.putEntity(updated)
        return updated
      })
    )
    if (next) this.statusApplied(next)
  }

  /**
   * A batch of status changes another node announced (`entity.status.batch`, signed by that node),
   * each applied as `applyStatus` applies one: only to entities whose home is the origin, the
   * latest change winning. The history of every such entity holds the operation afterwards. Returns
   * how many histories it was added to now, and the entities it names that this node does not store
   * yet: the caller applies it again once they come.
   */
  async applyStatusBatch(op: Operation): Promise<{ added: number; missing: string[] }> {
    const body = validate(StatusBatchBody, bodyOf(op), 'operation_invalid')
    if (body.registry_id !== op.origin || body.changed_at !== op.accepted_at)
      throw new RegistryError(
        'operation_invalid',
        'An entity.status.batch body is {registry_id, changed_at, changes} for its origin and time.',
        'body'
      )
    if (new Set(body.changes.map(c => c.entity_id)).size !== body.changes.length)
      throw new RegistryError('operation_invalid', 'An entity.status.batch names each entity once.', 'body')
    if (!parseSignature(op.auth.signature))
      throw new RegistryError('signature_invalid', 'The status is not signed by its origin node.')
    const missing: string[] = []
    const { updated, added } = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const held: string[] = []
        const updated: EntityRecord[] = []
        for (const change of body.changes) {
          const current = tx.getEntity(change.entity_id)
          if (!current) missing.push(change.entity_id)
          if (!current || this.homeOf(current) !== op.origin || op.accepted_at < current.registered_at) continue
          held.push(change.entity_id)
          if (!this.isLatestStatus(current, op.accepted_at)) continue
          const next: EntityRecord = {
            ...current,
            status: change.status,
            last_heartbeat: change.last_heartbeat,
            status_changed_at: op.accepted_at
          }
          tx.putEntity(next)
          updated.push(next)
        }
        return { updated, added: held.length === 0 ? 0 : tx.appendOperation(op, held) }
      })
    )
    for (const next of updated) this.statusApplied(next)
    return { added, missing }
  }

  /** What follows a status change applied to a record: the catalog, the search index and the event. */
  private statusApplied(next: EntityRecord): void {
    this.changed(next.entity_id)
    this.c.catalog.upsert(next)
    this.c.bus.publish(
      'agent_status',
      {
        entity_id: next.entity_id,
        status: next.status,
        last_heartbeat: next.last_heartbeat,
        changed_at: next.status_changed_at,
        home_registry: next.home_registry
      },
      next
    )
  }

  /** The registry ID of the record's home node: the origin of its registration. */
  private homeOf(record: EntityRecord): string | undefined {
    if (record.home_registry_id !== undefined) return record.home_registry_id
    return registrationOf(this.c.store.operationsOf(record.entity_id), record)?.origin
  }

  /** Whether a status operation of this time is later than every one the record has seen. */
  private isLatestStatus(record: EntityRecord, at: string): boolean {
    if (record.status_changed_at !== undefined) return record.status_changed_at < at
    if (this.c.store.keepsStatusTimes) return true
    return this.c.store
      .operationsOf(record.entity_id)
      .every(o => (o.kind !== 'entity.status' && o.kind !== 'entity.status.batch') || o.accepted_at < at)
  }

  private signerKeys(record: EntityRecord) {
    const developerKey = record.developer_proof ? parsePublicKey(record.developer_proof.developer_public_key) : null
    return { self: parsePublicKey(record.public_key) as Buffer, developer: developerKey }
  }
}

/**
 * What an update does to a record, as a function applied inside the transaction to the record as
 * it is then (so concurrent updates never undo each other); it throws if the result is invalid.
 */
function updatePatch(
  body: UpdateRequest,
  signature: string,
  now: string,
  allowHttp: boolean
): (current: EntityRecord) => EntityRecord {
  const sent = eitherSpelling(body.pricing_model, body.entity_pricing, 'pricing_model', 'entity_pricing')
  const pricing = sent === undefined ? undefined : storedPricing(sent)
  const url = (v: string | null | undefined, current: string | null) => (v == null ? current : v === '' ? null : v)
  return current => {
    const next: EntityRecord = { ...current, signature, updated_at: now }
    if (body.name != null) next.name = body.name
    if (body.category != null) next.category = body.category
    if (body.summary != null) next.summary = body.summary
    if (body.version != null) next.version = body.version
    if (body.tags != null) next.tags = body.tags
    if (body.codebase_hash != null) next.codebase_hash = body.codebase_hash || null
    if (body.capability_summary != null) next.capability_summary = body.capability_summary
    if (pricing !== undefined) next.pricing_model = pricing
    if (body.entity_name != null) next.entity_name = body.entity_name || null
    if (body.ttl != null) next.ttl = body.ttl
    return Object.assign(
      next,
      checkReachability(
        next.type,
        url(body.entity_url, next.entity_url),
        url(body.service_endpoint, next.service_endpoint),
        url(body.openapi_url, next.openapi_url),
        allowHttp
      )
    )
  }
}

const UPDATABLE_FIELDS = Object.keys(UpdateRequest.properties).filter(field => field !== 'signature')

const BINDING_EVENTS = new Set(['name_registered', 'name_updated', 'name_released'])

const BINDING_FAILURES = {
  no_handle: 'the developer holds no handle on this node.',
  invalid_name: 'entity_name must be 1 to 64 characters of a-z, 0-9 and -, starting and ending with a letter or digit.',
  name_taken: 'the name is already bound to another entity under this handle.'
} as const

const IMMUTABLE = [
  'entity_id',
  'public_key',
  'type',
  'entity_type',
  'developer_id',
  'developer_proof',
  'entity_index'
] as const

function rejectImmutable(record: EntityRecord, body: Record<string, unknown>): void {
  for (const field of IMMUTABLE) {
    const sent = body[field]
    if (sent === undefined || sent === null) continue
    const current =
      field === 'entity_type'
        ? record.type
        : field === 'public_key'
          ? null
          : (record as unknown as Record<string, unknown>)[field]
    if (
      field === 'public_key' &&
      typeof sent === 'string' &&
      parsePublicKey(sent)?.equals(parsePublicKey(record.public_key) as Buffer)
    )
      continue
    if (JSON.stringify(sent) !== JSON.stringify(current))
      throw new RegistryError(
        'field_immutable',
        `${field} cannot be changed after registration; register a new entity instead.`,
        field
      )
  }
}

function checkReachability(
  type: EntityType,
  entityUrl: string | null,
  serviceEndpoint: string | null,
  openapiUrl: string | null,
  allowHttp: boolean
) {
  if (entityUrl !== null && entityUrl !== '') checkUrl('entity_url', entityUrl, !allowHttp)
  if (serviceEndpoint !== null && serviceEndpoint !== '') checkUrl('service_endpoint', serviceEndpoint, false)
  if (openapiUrl !== null && openapiUrl !== '') checkUrl('openapi_url', openapiUrl, false)
  const entity_url = entityUrl || null
  const service_endpoint = serviceEndpoint || null
  if (type === 'agent' && !entity_url) throw invalidField('entity_url', 'is required for agents (an HTTPS URL)')
  if (type === 'service' && !entity_url && !service_endpoint)
    throw invalidField('service_endpoint', 'is required for services (or give entity_url)')
  return { entity_url, service_endpoint, openapi_url: openapiUrl || null }
}

/**
 * Pricing as records hold it: the model in the spec's spelling. The deployed clients write
 * `per-request` (the MCP server) or leave the model out and give only `base_price_usd` (both SDKs'
 * agent runtimes); an absent model is per_request when a price is given, else free.
 */
function storedPricing(sent: PricingModelInput | null): PricingModel | null {
  if (sent === null) return null
  const priced = (sent.base_price_usd ?? 0) > 0 || Object.values(sent.rates ?? {}).some(rate => rate > 0)
  const model = sent.model === undefined ? (priced ? 'per_request' : 'free') : sent.model.replaceAll('-', '_')
  return { ...sent, model } as PricingModel
}

function checkCapabilitySummary(summary: Record<string, unknown> | null | undefined): void {
  if (summary && jsonSize(summary) > ENTITY_LIMITS.capabilitySummaryBytes) {
    throw invalidField('capability_summary', `must be at most ${ENTITY_LIMITS.capabilitySummaryBytes} bytes as JSON`)
  }
}
