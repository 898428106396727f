/**
 * The steps of an entity registration between parsing its body and announcing it: verifying its
 * signatures, writing it inside the commit's transaction (over the record or tombstone a key
 * already has, with the developer a proof brings and the name it asks for), and the answer the
 * client gets.
 */
import { RegistryError } from '../../errors.js'
import { parseSignature } from '../../identity/encoding.js'
import { type SignedForm, verifyDeveloperProof, verifyEntityRegistration } from '../../identity/verifiers.js'
import type { SignatureVerifier } from '../../identity/verify-pool.js'
import { isLater } from '../../store/operation-order.js'
import type { EntityRecord, NameBinding, Operation } from '../../store/records.js'
import type { WriteTransaction } from '../../store/registry-store.js'
import type { DeveloperService } from './developers.js'
import type { ParsedRegistration } from './entity-records.js'
import type { BindingFailure, NameService } from './names.js'
import { parseDeveloperProof, type ParsedDeveloperProof } from './operations.js'
import { admitRegistration } from './tombstones.js'
import { StaleOperation, type RemoteWrite } from './writes.js'

export interface RegistrationResult {
  entity_id: string
  message: string
  status: 'active'
  fqan: string | null
  name_binding?: { requested: string; bound: boolean; fqan: string | null; reason: string | null; message: string }
}

/** A registration whose signatures verify: the form its own signature is in, and its developer proof. */
export interface VerifiedRegistration {
  form: SignedForm
  proof: ParsedDeveloperProof | null
}

/** What a registration writes: its record, its operation and what is needed to admit them. */
export interface RegistrationWrite {
  /** The record as its request builds it; its signature history is settled inside the transaction. */
  record: EntityRecord
  op: Operation
  proof: ParsedDeveloperProof | null
  /** The registration signature's fingerprint (signatureFingerprint). */
  fingerprint: string
  remote: RemoteWrite | undefined
}

/** What a registration's transaction did besides writing the record. */
export interface CommittedRegistration {
  /** Whether the developer proof brought a developer this node did not hold (see DeveloperService.ensureForProof). */
  createdDeveloper: boolean
  /** The name bound with the registration, or why none was (null: none asked for, or a replayed registration). */
  binding: NameBinding | BindingFailure | null
}

const BINDING_FAILURES = {
  no_handle: 'the developer holds no handle on this node.',
  invalid_name: 'entity_name must be 1 to 64 characters of a-z, 0-9 and -, starting and ending with a letter or digit.',
  name_taken: 'the name is already bound to another entity under this handle.'
} as const

/**
 * Verifies a registration's own signature and its developer proof. Both signatures are checked
 * together (one batch when the pool verifies); the errors keep their order: the registration
 * signature, then the proof's fields, then its signature.
 */
export async function verifyRegistration(
  { body, publicKey, proofInput }: ParsedRegistration,
  verifier: SignatureVerifier
): Promise<VerifiedRegistration> {
  const verifyingForm = verifyEntityRegistration(
    body as Record<string, unknown>,
    publicKey,
    parseSignature(body.signature) as Buffer,
    verifier
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
        verifier
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
  return { form, proof }
}

/**
 * Inside the commit's transaction: writes a verified registration, with the developer its proof
 * brings and, for a client's registration, the name it asks for.
 */
export function commitRegistration(
  tx: WriteTransaction,
  { record, op, proof, fingerprint, remote }: RegistrationWrite,
  services: { developers: DeveloperService; names: NameService }
): CommittedRegistration {
  const acceptedAt = record.registered_at
  record.registration_signatures = admitSignatures(tx, record.entity_id, fingerprint, acceptedAt, remote)
  const createdDeveloper = proof
    ? services.developers.ensureForProof(
        tx,
        { developerId: proof.developerId, developerKey: proof.developerKey, signature: proof.stored.signature },
        op,
        acceptedAt,
        remote
      )
    : false
  tx.appendOperation(op)
  tx.putEntity(record)
  // Names travel as their own operations (name.bind), not with a replayed registration.
  const binding =
    record.entity_name && !remote
      ? services.names.bindForRegistration(
          tx,
          record.developer_id,
          record.entity_id,
          record.entity_name,
          record.version,
          op
        )
      : null
  return { createdDeveloper, binding }
}

/**
 * The registration signatures the new record carries, once the registration is admitted over
 * what the key already has: a client may not register a key twice, a replayed registration wins
 * over a record or tombstone only if it is later, and no registration signature is taken twice.
 */
function admitSignatures(
  tx: WriteTransaction,
  entityId: string,
  fingerprint: string,
  acceptedAt: string,
  remote: RemoteWrite | undefined
): string[] {
  const existing = tx.getEntity(entityId)
  if (existing && !remote)
    throw new RegistryError(
      'entity_exists',
      `${entityId} is already registered; update it with PUT /v1/entities/${entityId}.`
    )
  if (existing) {
    // Two registrations of one key (at two homes, or replayed): the later one wins.
    if (!isLater(acceptedAt, fingerprint, existing.registered_at, existing.registration_signatures.at(-1) ?? ''))
      throw new StaleOperation()
    tx.dropOperations(entityId)
    return [...new Set([...existing.registration_signatures, fingerprint])]
  }
  const tombstone = tx.getTombstone(entityId)
  if (remote && tombstone && tombstone.deleted_at >= acceptedAt) throw new StaleOperation()
  try {
    return admitRegistration(tx, entityId, fingerprint, 'entity_deregistered')
  } catch (err) {
    if (remote) throw new StaleOperation()
    throw err
  }
}

/** The client's answer: the entity's ID and, when a name was asked for, whether it was bound and as what. */
export function registrationResult(
  record: EntityRecord,
  binding: NameBinding | BindingFailure | null,
  names: NameService
): RegistrationResult {
  const result: RegistrationResult = {
    entity_id: record.entity_id,
    message: `${record.type} registered`,
    status: 'active',
    fqan: null
  }
  if (!record.entity_name || !binding) return result
  if (typeof binding === 'string') {
    result.name_binding = {
      requested: record.entity_name,
      bound: false,
      fqan: null,
      reason: binding,
      message: `No FQAN was bound: ${BINDING_FAILURES[binding]} The registration itself succeeded.`
    }
    return result
  }
  const fqan = names.fqan(binding.handle, binding.entity_name)
  result.fqan = fqan
  result.name_binding = {
    requested: record.entity_name,
    bound: true,
    fqan,
    reason: null,
    message: `Bound as ${fqan}.`
  }
  return result
}
