/**
 * Entities: registration, update, deregistration, reads and listings. Every write is verified
 * (the owner's signature in any accepted form, the developer proof), committed as a signed
 * operation together with the record in one transaction, and only then acknowledged.
 */
import { RegistryError, invalidField } from '../errors.js'
import { parsePublicKey, parseSignature, formatKey } from '../identity/encoding.js'
import { deriveId } from '../identity/ids.js'
import { verifyDeveloperProof, verifyEntityRegistration } from '../identity/verifiers.js'
import { SCHEMA_VERSION, type DeveloperProof, type EntityRecord, type EntityType, type PricingModel } from '../store/records.js'
import { validate } from '../wire/validate.js'
import { ENTITY_LIMITS, RegistrationRequest, UpdateRequest, type EntityRecordView } from '../wire/entities.js'
import { authorizeDeletion, authorizeUpdate } from './authorize.js'
import type { ServiceComponents, WriteRequest } from './components.js'
import type { DeveloperService } from './developers.js'
import type { LivenessView } from './liveness.js'
import type { NameService } from './names.js'
import { acceptOperation, signatureFingerprint } from './operations.js'
import { admitRegistration, bury } from './tombstones.js'
import { checkUrl, eitherSpelling, jsonSize } from './validation.js'

export const DEFAULT_VERSION = '0.1.0'
/** Rendered records kept for reads; each write to a record drops its entry. */
const RENDERED_CACHE_SIZE = 20_000
export const DEFAULT_TTL = 86_400

export interface EntityServiceComponents extends ServiceComponents {
  developers: DeveloperService
  names: NameService
  /** Status and last heartbeat of home entities, fresher than the stored record. */
  liveness?: LivenessView
}

export interface RegistrationResult {
  entity_id: string
  message: string
  status: 'active'
  fqan: string | null
  name_binding?: { requested: string; bound: boolean; fqan: string | null; reason: string | null; message: string }
}

interface VerifiedProof {
  developerId: string
  developerKey: Buffer
  stored: DeveloperProof
}

export class EntityService {
  private readonly now: () => Date
  /** Rendered JSON, with the liveness it shows (heartbeats change it without a write). */
  private readonly rendered = new Map<string, { text: string; live: string }>()

  constructor(private readonly c: EntityServiceComponents) {
    this.now = c.now ?? (() => new Date())
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
    throw new RegistryError('entity_not_found', tombstone ? `${id} was deregistered at ${tombstone.deleted_at}.` : `No entity ${id} is registered on this node.`)
  }

  /** The record as JSON text, rendered once and served from memory until it changes. */
  viewJson(id: string): string {
    const current = this.c.liveness?.current(id)
    const live = current ? `${current.status} ${current.last_heartbeat}` : ''
    const cached = this.rendered.get(id)
    if (cached !== undefined && cached.live === live) return cached.text
    const text = JSON.stringify(this.view(this.require(id)))
    if (cached === undefined && this.rendered.size >= RENDERED_CACHE_SIZE) this.rendered.delete(this.rendered.keys().next().value as string)
    this.rendered.set(id, { text, live })
    return text
  }

  private changed(id: string): void {
    this.rendered.delete(id)
  }

  private liveness(record: EntityRecord): Pick<EntityRecordView, 'status' | 'last_heartbeat'> {
    const live = this.c.liveness?.current(record.entity_id)
    return live ? { status: live.status, last_heartbeat: live.last_heartbeat } : { status: record.status, last_heartbeat: record.last_heartbeat }
  }

  view(record: EntityRecord): EntityRecordView {
    const binding = this.c.names.primaryOf(record.entity_id)
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
      fqan: binding ? this.c.names.fqan(binding.handle, binding.entity_name) : null,
      developer_handle: binding?.handle ?? null,
      ...this.liveness(record),
      ttl: record.ttl,
      registered_at: record.registered_at,
      updated_at: record.updated_at,
      home_registry: record.home_registry,
      schema_version: record.schema_version
    }
  }

  list(q: { type?: EntityType | undefined; category?: string | undefined; developerId?: string | undefined; offset: number; limit: number }): { records: EntityRecord[]; total: number } {
    const { ids, total } = this.c.catalog.list(q)
    const records: EntityRecord[] = []
    for (const id of ids) {
      const r = this.c.store.getEntity(id)
      if (r) records.push(r)
    }
    return { records, total }
  }

  async register(req: WriteRequest): Promise<RegistrationResult> {
    const body = validate(RegistrationRequest, req.body)
    const type: EntityType = eitherSpelling(body.type, body.entity_type, 'type', 'entity_type') ?? 'agent'
    const name = body.name ?? body.entity_name
    if (name === undefined || name === null || name === '') throw invalidField('name', 'is required (also accepted as entity_name)')
    const publicKey = parsePublicKey(body.public_key) as Buffer
    const signature = parseSignature(body.signature) as Buffer
    const entityId = deriveId(type, publicKey)
    const reachability = checkReachability(type, body.entity_url ?? null, body.service_endpoint ?? null, body.openapi_url ?? null)
    checkCapabilitySummary(body.capability_summary)
    const pricing = eitherSpelling(body.pricing_model, body.entity_pricing, 'pricing_model', 'entity_pricing') ?? null
    const proofInput = body.developer_proof ?? null
    if (body.developer_id && !proofInput) throw invalidField('developer_proof', 'is required when developer_id is given')

    // Both signatures are checked together (one batch when the pool verifies); the errors keep
    // their order: the registration signature, then the proof's fields, then its signature.
    const verifyingForm = verifyEntityRegistration(body as Record<string, unknown>, publicKey, signature, this.c.verifier)
    let proof: VerifiedProof | null = null
    let proofProblem: unknown = null
    try {
      proof = proofInput ? this.parseProof(proofInput, publicKey, body.developer_id ?? null, body.entity_index ?? null) : null
    } catch (err) {
      proofProblem = err
    }
    const verifyingProof = proof ? verifyDeveloperProof(proof.developerKey, publicKey, proof.stored.index, parseSignature(proof.stored.signature) as Buffer, this.c.verifier) : true
    const [form, proofVerifies] = await Promise.all([verifyingForm, verifyingProof])
    if (!form) throw new RegistryError('signature_invalid', 'The registration signature does not verify against public_key.', 'signature')
    if (proofProblem !== null) throw proofProblem
    if (!proofVerifies) throw new RegistryError('developer_proof_invalid', 'The developer proof signature does not verify over the entity key and index.', 'developer_proof.signature')

    const now = this.now().toISOString()
    const fingerprint = signatureFingerprint(body.signature)
    const op = acceptOperation(this.c.identity, 'entity.register', entityId, req, { carrier: 'body', signer: 'self', signature: body.signature, form }, now)

    const record: EntityRecord = {
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
      pricing_model: (pricing as PricingModel | null) ?? null,
      entity_name: body.entity_name ?? null,
      ttl: body.ttl ?? DEFAULT_TTL,
      status: 'active',
      last_heartbeat: null,
      registered_at: now,
      updated_at: now,
      home_registry: this.c.settings.host,
      schema_version: SCHEMA_VERSION,
      registration_signatures: [fingerprint]
    }

    let createdDeveloper = false
    const binding = await this.c.writes.run(() => this.c.store.commit(tx => {
      if (tx.getEntity(entityId)) throw new RegistryError('entity_exists', `${entityId} is already registered; update it with PUT /v1/entities/${entityId}.`)
      record.registration_signatures = admitRegistration(tx, entityId, fingerprint, 'entity_deregistered')
      if (proof) createdDeveloper = this.c.developers.ensureForProof(tx, { developerId: proof.developerId, developerKey: proof.developerKey, signature: proof.stored.signature }, op, now)
      tx.appendOperation(op)
      tx.putEntity(record)
      return record.entity_name ? this.c.names.bindForRegistration(tx, record.developer_id, entityId, record.entity_name, record.version, op) : null
    }))

    this.changed(entityId)
    this.c.catalog.upsert(record)
    if (createdDeveloper && proof) this.c.developers.implicitCommitted(proof.developerId)
    this.c.bus.publish('agent_registered', { entity_id: entityId, name, type, category: record.category, tags: record.tags, summary: record.summary, developer_id: record.developer_id })

    const result: RegistrationResult = { entity_id: entityId, message: `${type} registered`, status: 'active', fqan: null }
    if (record.entity_name && binding) {
      if (typeof binding === 'string') {
        result.name_binding = { requested: record.entity_name, bound: false, fqan: null, reason: binding, message: `No FQAN was bound: ${BINDING_FAILURES[binding]} The registration itself succeeded.` }
      } else {
        const fqan = this.c.names.fqan(binding.handle, binding.entity_name)
        result.fqan = fqan
        result.name_binding = { requested: record.entity_name, bound: true, fqan, reason: null, message: `Bound as ${fqan}.` }
        if (binding.bound_at === now) this.c.names.published(binding, 'name_registered', 'register')
      }
    }
    return result
  }

  async update(id: string, req: WriteRequest): Promise<EntityRecord> {
    const existing = this.require(id)
    if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body)) throw invalidField('body', 'must be a JSON object')
    const raw = req.body as Record<string, unknown>
    rejectImmutable(existing, raw)
    const body = validate(UpdateRequest, raw)
    const auth = await authorizeUpdate(req.credentials ?? {}, this.signerKeys(existing), req.raw, raw, this.c.verifier)

    if (body.capability_summary != null) checkCapabilitySummary(body.capability_summary)
    const pricing = eitherSpelling(body.pricing_model, body.entity_pricing, 'pricing_model', 'entity_pricing')
    const url = (v: string | null | undefined, current: string | null) => (v == null ? current : v === '' ? null : v)
    const now = this.now().toISOString()
    // Applied inside the transaction, to the record as it is then: concurrent updates never undo each other.
    const patch = (current: EntityRecord): EntityRecord => {
      const next: EntityRecord = { ...current, signature: auth.signature, updated_at: now }
      if (body.name != null) next.name = body.name
      if (body.category != null) next.category = body.category
      if (body.summary != null) next.summary = body.summary
      if (body.version != null) next.version = body.version
      if (body.tags != null) next.tags = body.tags
      if (body.codebase_hash != null) next.codebase_hash = body.codebase_hash || null
      if (body.capability_summary != null) next.capability_summary = body.capability_summary
      if (pricing !== undefined) next.pricing_model = pricing as PricingModel
      if (body.entity_name != null) next.entity_name = body.entity_name || null
      if (body.ttl != null) next.ttl = body.ttl
      return Object.assign(next, checkReachability(next.type, url(body.entity_url, next.entity_url), url(body.service_endpoint, next.service_endpoint), url(body.openapi_url, next.openapi_url)))
    }
    patch(existing) // validates the result before anything is written

    const op = acceptOperation(this.c.identity, 'entity.update', id, req, auth, now)
    const next = await this.c.writes.run(() => this.c.store.commit(tx => {
      const current = tx.getEntity(id)
      if (!current) throw new RegistryError('entity_not_found')
      const updated = patch(current)
      tx.appendOperation(op)
      tx.putEntity(updated)
      return updated
    }))
    this.changed(id)
    this.c.catalog.upsert(next)
    this.c.bus.publish('agent_updated', { entity_id: id, name: next.name, category: next.category, tags: next.tags, summary: next.summary })
    return next
  }

  async deregister(id: string, req: Omit<WriteRequest, 'body' | 'raw'>): Promise<{ entity_id: string; message: string; tombstone: { deleted_at: string; expires_at: string } }> {
    const existing = this.require(id)
    const auth = await authorizeDeletion(req.credentials ?? {}, this.signerKeys(existing), id, req.path, this.c.verifier)
    const now = this.now()
    const deletedAt = now.toISOString()
    const expiresAt = new Date(now.getTime() + this.c.settings.tombstoneRetentionMs).toISOString()
    const op = acceptOperation(this.c.identity, 'entity.deregister', id, { raw: null, path: req.path }, auth, deletedAt)
    const releasedNames = await this.c.writes.run(() => this.c.store.commit(tx => {
      const current = tx.getEntity(id)
      if (!current) throw new RegistryError('entity_not_found')
      bury(tx, 'entity', id, current.registration_signatures, op, expiresAt)
      return this.c.names.releaseEntityInTx(tx, id)
    }))
    for (const binding of releasedNames) this.c.names.published(binding, 'name_released', 'release', { reason: 'entity_deregistered' })
    this.changed(id)
    this.c.catalog.remove(id)
    this.c.bus.publish('agent_deregistered', { entity_id: id, name: existing.name, category: existing.category, tags: existing.tags })
    return { entity_id: id, message: `${existing.type} deregistered`, tombstone: { deleted_at: deletedAt, expires_at: expiresAt } }
  }

  private signerKeys(record: EntityRecord) {
    const developerKey = record.developer_proof ? parsePublicKey(record.developer_proof.developer_public_key) : null
    return { self: parsePublicKey(record.public_key) as Buffer, developer: developerKey }
  }

  /** The developer proof's fields, checked; its signature is checked by the caller. */
  private parseProof(
    input: NonNullable<RegistrationRequest['developer_proof']>,
    entityKey: Buffer,
    claimedDeveloperId: string | null,
    topLevelIndex: number | null
  ): VerifiedProof {
    const indexes = [input.index, input.agent_index, input.entity_index].filter((i): i is number => i !== undefined)
    if (indexes.length === 0) throw invalidField('developer_proof.index', 'is required (also accepted as agent_index or entity_index)')
    const index = indexes[0] as number
    if (indexes.some(i => i !== index)) throw invalidField('developer_proof.index', 'index, agent_index and entity_index disagree')
    if (topLevelIndex !== null && topLevelIndex !== index) throw invalidField('entity_index', 'differs from the developer proof index')
    const signatureText = eitherSpelling(input.signature, input.developer_signature, 'developer_proof.signature', 'developer_proof.developer_signature')
    if (!signatureText) throw invalidField('developer_proof.signature', 'is required (also accepted as developer_signature)')
    if (input.agent_public_key !== undefined && !(parsePublicKey(input.agent_public_key) as Buffer).equals(entityKey)) {
      throw invalidField('developer_proof.agent_public_key', 'must be the entity public_key')
    }
    const developerKey = parsePublicKey(input.developer_public_key) as Buffer
    const developerId = deriveId('developer', developerKey)
    if (claimedDeveloperId !== null && claimedDeveloperId !== developerId) {
      throw new RegistryError('developer_proof_invalid', 'developer_id is not the ID of developer_proof.developer_public_key.', 'developer_id')
    }
    return {
      developerId,
      developerKey,
      stored: { developer_public_key: formatKey(developerKey), agent_public_key: formatKey(entityKey), index, signature: signatureText }
    }
  }
}

const BINDING_EVENTS = new Set(['name_registered', 'name_updated', 'name_released'])

const BINDING_FAILURES = {
  no_handle: 'the developer holds no handle on this node.',
  invalid_name: 'entity_name must be 1 to 64 characters of a-z, 0-9 and -, starting and ending with a letter or digit.',
  name_taken: 'the name is already bound to another entity under this handle.'
} as const

const IMMUTABLE = ['entity_id', 'public_key', 'type', 'entity_type', 'developer_id', 'developer_proof', 'entity_index'] as const

function rejectImmutable(record: EntityRecord, body: Record<string, unknown>): void {
  for (const field of IMMUTABLE) {
    const sent = body[field]
    if (sent === undefined || sent === null) continue
    const current = field === 'entity_type' ? record.type : field === 'public_key' ? null : (record as unknown as Record<string, unknown>)[field]
    if (field === 'public_key' && typeof sent === 'string' && parsePublicKey(sent)?.equals(parsePublicKey(record.public_key) as Buffer)) continue
    if (JSON.stringify(sent) !== JSON.stringify(current)) throw new RegistryError('field_immutable', `${field} cannot be changed after registration; register a new entity instead.`, field)
  }
}

function checkReachability(type: EntityType, entityUrl: string | null, serviceEndpoint: string | null, openapiUrl: string | null) {
  if (entityUrl !== null && entityUrl !== '') checkUrl('entity_url', entityUrl, true)
  if (serviceEndpoint !== null && serviceEndpoint !== '') checkUrl('service_endpoint', serviceEndpoint, false)
  if (openapiUrl !== null && openapiUrl !== '') checkUrl('openapi_url', openapiUrl, false)
  const entity_url = entityUrl || null
  const service_endpoint = serviceEndpoint || null
  if (type === 'agent' && !entity_url) throw invalidField('entity_url', 'is required for agents (an HTTPS URL)')
  if (type === 'service' && !entity_url && !service_endpoint) throw invalidField('service_endpoint', 'is required for services (or give entity_url)')
  return { entity_url, service_endpoint, openapi_url: openapiUrl || null }
}

function checkCapabilitySummary(summary: Record<string, unknown> | null | undefined): void {
  if (summary && jsonSize(summary) > ENTITY_LIMITS.capabilitySummaryBytes) {
    throw invalidField('capability_summary', `must be at most ${ENTITY_LIMITS.capabilitySummaryBytes} bytes as JSON`)
  }
}
