/**
 * Entity records as requests make them: a registration body checked field by field into the
 * record it makes, an update as a patch of a record, the record a history of operations folds
 * into, and the field rules both share (reachability URLs, pricing, capability summary size,
 * fields fixed at registration).
 */
import { RegistryError, invalidField } from '../../errors.js'
import { formatKey, parsePublicKey } from '../../identity/encoding.js'
import { deriveId } from '../../identity/ids.js'
import { compareOperations } from '../../store/operation-order.js'
import {
  SCHEMA_VERSION,
  type EntityRecord,
  type EntityType,
  type Operation,
  type PricingModel
} from '../../store/records.js'
import {
  ENTITY_LIMITS,
  RegistrationRequest,
  UpdateRequest,
  type DeveloperProofInput,
  type PricingModelInput
} from '../../wire/entities.js'
import { validate } from '../../wire/validate.js'
import {
  bodyOf,
  parseDeveloperProof,
  registrationOf,
  signatureFingerprint,
  type ParsedDeveloperProof
} from './operations.js'
import { checkUrl, eitherSpelling, jsonSize } from './validation.js'

export const DEFAULT_VERSION = '0.1.0'
export const DEFAULT_TTL = 86_400

/** The fields a client may change with an update (all but its signature). */
export const UPDATABLE_FIELDS = Object.keys(UpdateRequest.properties).filter(field => field !== 'signature')

/** The record a registration makes, once its developer proof is verified and its time and home are known. */
export type RecordBuilder = (
  proof: ParsedDeveloperProof | null,
  acceptedAt: string,
  home: string,
  homeId: string
) => EntityRecord

/** A registration body whose fields are checked; its signatures are still to be verified. */
export interface ParsedRegistration {
  body: RegistrationRequest
  entityId: string
  publicKey: Buffer
  /** The developer proof as sent (null: none). */
  proofInput: DeveloperProofInput | null
  build: RecordBuilder
}

/**
 * A registration body, checked field by field (no signatures): the entity's ID and key, the
 * developer proof as sent, and the record it makes once the proof is verified.
 */
export function parseRegistration(input: unknown, allowHttp: boolean): ParsedRegistration {
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
    allowHttp
  )
  checkCapabilitySummary(body.capability_summary)
  const pricing = storedPricing(
    eitherSpelling(body.pricing_model, body.entity_pricing, 'pricing_model', 'entity_pricing') ?? null
  )
  const proofInput = body.developer_proof ?? null
  if (body.developer_id && !proofInput) throw invalidField('developer_proof', 'is required when developer_id is given')
  const build: RecordBuilder = (proof, acceptedAt, home, homeId) => ({
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
    registered_at: acceptedAt,
    updated_at: acceptedAt,
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
export function refold(current: EntityRecord, ops: readonly Operation[], allowHttp: boolean): EntityRecord {
  const registration = registrationOf(ops, current)
  if (!registration?.body) return current
  const { body, publicKey, proofInput, build } = parseRegistration(bodyOf(registration), allowHttp)
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
    record = updatePatch(patchBody, update.auth.signature, update.accepted_at, allowHttp)(record)
  }
  return record
}

/**
 * What an update does to a record, as a function applied inside the transaction to the record as
 * it is then (so concurrent updates never undo each other); it throws if the result is invalid.
 */
export function updatePatch(
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

const IMMUTABLE = [
  'entity_id',
  'public_key',
  'type',
  'entity_type',
  'developer_id',
  'developer_proof',
  'entity_index'
] as const

/** Refuses an update that sends a field fixed at registration with another value than the record's. */
export function rejectImmutable(record: EntityRecord, body: Record<string, unknown>): void {
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

export function checkCapabilitySummary(summary: Record<string, unknown> | null | undefined): void {
  if (summary && jsonSize(summary) > ENTITY_LIMITS.capabilitySummaryBytes) {
    throw invalidField('capability_summary', `must be at most ${ENTITY_LIMITS.capabilitySummaryBytes} bytes as JSON`)
  }
}
