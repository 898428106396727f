/**
 * Operations as the services make and read them: sealing what this node accepts, and reading back
 * what an operation carries (its body, the registration a record was made from, the developer
 * proof of a registration, checked the same way for a client's request and a replayed one).
 */
import { invalidField, RegistryError } from '../../errors.js'
import { canonicalJson } from '../../identity/canonical-json.js'
import { formatKey, parsePublicKey } from '../../identity/encoding.js'
import { deriveId } from '../../identity/ids.js'
import { sign } from '../../identity/keys.js'
import type { NodeIdentity } from '../../identity/node-identity.js'
import type { DeveloperProof, EntityRecord, Operation, OperationAuth, OperationKind } from '../../store/records.js'
import { bufferView } from '../../util/buffer-view.js'
import type { DeveloperProofInput } from '../../wire/entities.js'
import { parseJsonBytes } from '../../wire/json.js'
import { keepSealedBytes, type StatusBatchBody } from '../../wire/operations.js'
import type { RemoteWrite, WriteRequest } from './writes.js'
import { eitherSpelling } from './validation.js'

/** The bytes the accepting node signs: the operation without its node signature, body as base64. */
export function operationSigningBytes(op: Omit<Operation, 'node_signature'>): string {
  return canonicalJson({ ...op, body: op.body === null ? null : bufferView(op.body).toString('base64') })
}

export function sealOperation(
  identity: NodeIdentity,
  op: Omit<Operation, 'node_signature' | 'origin_key' | 'origin_host'>
): Operation {
  // A derived operation is built by spreading its source: drop the source's seal.
  const { node_signature: _seal, ...unsealed } = op as Operation
  const stamped: Omit<Operation, 'node_signature'> = {
    ...unsealed,
    origin_key: identity.publicKey,
    ...(identity.host !== undefined ? { origin_host: identity.host } : {})
  }
  const signed = Buffer.from(operationSigningBytes(stamped))
  const sealed = { ...stamped, node_signature: sign(identity.keyPair, signed) }
  keepSealedBytes(sealed, signed)
  return sealed
}

/** The node's signed statement of an entity's status: the body and its signature, sealed as an operation. */
export function statusOperation(
  identity: NodeIdentity,
  entityId: string,
  status: 'active' | 'inactive',
  lastHeartbeat: string | null,
  changedAt: string
): Operation {
  const body = Buffer.from(
    canonicalJson({
      entity_id: entityId,
      status,
      last_heartbeat: lastHeartbeat,
      changed_at: changedAt,
      registry_id: identity.registryId
    })
  )
  return sealOperation(identity, {
    kind: 'entity.status',
    subject: entityId,
    body,
    path: null,
    auth: { carrier: 'node', signer: 'node', signature: sign(identity.keyPair, body), form: 'agent_status' },
    accepted_at: changedAt,
    origin: identity.registryId
  })
}

/**
 * The node's signed statement of several of its entities' statuses at once (a sweep's batch): one
 * operation with one seal, stored once and held in the history of every entity it names, where
 * an `entity.status` each cost two signatures, a log entry and an encoding per entity.
 */
export function statusBatchOperation(
  identity: NodeIdentity,
  changes: StatusBatchBody['changes'],
  changedAt: string
): Operation {
  const body = Buffer.from(canonicalJson({ registry_id: identity.registryId, changed_at: changedAt, changes }))
  return sealOperation(identity, {
    kind: 'entity.status.batch',
    subject: identity.registryId,
    body,
    path: null,
    auth: { carrier: 'node', signer: 'node', signature: sign(identity.keyPair, body), form: 'agent_status_batch' },
    accepted_at: changedAt,
    origin: identity.registryId
  })
}

/** An operation this node accepts now from a client request. */
export function acceptOperation(
  identity: NodeIdentity,
  kind: OperationKind,
  subject: string,
  request: { raw: Uint8Array | null; path: string },
  auth: OperationAuth,
  acceptedAt: string
): Operation {
  return sealOperation(identity, {
    kind,
    subject,
    body: request.raw,
    path: request.path,
    auth,
    accepted_at: acceptedAt,
    origin: identity.registryId
  })
}

/**
 * The operation a self-signed registration (developer or entity) commits, and its time. A replayed
 * one is taken as its origin accepted it; its subject must be the ID of the body's key, since that
 * is the key the signature was just verified with. Otherwise this node accepts one now.
 */
export function registrationOperation(
  identity: NodeIdentity,
  kind: 'developer.register' | 'entity.register',
  subject: string,
  request: WriteRequest,
  signed: Pick<OperationAuth, 'signature' | 'form'>,
  remote: RemoteWrite | undefined,
  now: () => Date
): { op: Operation; acceptedAt: string } {
  if (remote && remote.op.subject !== subject)
    throw new RegistryError(
      'validation_failed',
      `The operation's subject is not ${subject}, the ID of the body's public_key.`,
      'subject'
    )
  if (remote) return { op: remote.op, acceptedAt: remote.op.accepted_at }
  const acceptedAt = now().toISOString()
  const auth: OperationAuth = { carrier: 'body', signer: 'self', signature: signed.signature, form: signed.form }
  return { op: acceptOperation(identity, kind, subject, request, auth, acceptedAt), acceptedAt }
}

/**
 * The operation's body as parsed JSON (null when it has none). Bodies are parsed with the same
 * nesting limit as a client's request, so any body this node stored parses again; one from a peer
 * that does not is an invalid operation.
 */
export function bodyOf(op: Pick<Operation, 'body'>): unknown {
  if (!op.body) return null
  try {
    return parseJsonBytes(op.body)
  } catch (err) {
    throw new RegistryError('operation_invalid', `The operation body is not JSON: ${(err as Error).message}.`, 'body')
  }
}

/** The registration a record was made from: the last `entity.register` accepted at its registered_at. */
export function registrationOf(
  ops: readonly Operation[],
  record: Pick<EntityRecord, 'registered_at'>
): Operation | undefined {
  return ops.findLast(o => o.kind === 'entity.register' && o.accepted_at === record.registered_at)
}

/** A developer proof whose fields are checked; its signature is still to be verified. */
export interface ParsedDeveloperProof {
  developerId: string
  developerKey: Buffer
  /** The proof as records keep it: one spelling of each field, keys in their stored form. */
  stored: DeveloperProof
}

/**
 * A developer proof's fields (schema-checked already), checked: the index and the signature may each be sent under several
 * names, which must agree with each other and with the registration's `entity_index`; the proof
 * must be over the entity's key and name the registration's `developer_id`.
 */
export function parseDeveloperProof(
  input: DeveloperProofInput,
  entityKey: Buffer,
  claimedDeveloperId: string | null,
  topLevelIndex: number | null
): ParsedDeveloperProof {
  const indexes = [input.index, input.agent_index, input.entity_index].filter((i): i is number => i !== undefined)
  if (indexes.length === 0)
    throw invalidField('developer_proof.index', 'is required (also accepted as agent_index or entity_index)')
  const index = indexes[0] as number
  if (indexes.some(i => i !== index))
    throw invalidField('developer_proof.index', 'index, agent_index and entity_index disagree')
  if (topLevelIndex !== null && topLevelIndex !== index)
    throw invalidField('entity_index', 'differs from the developer proof index')
  const signatureText = eitherSpelling(
    input.signature,
    input.developer_signature,
    'developer_proof.signature',
    'developer_proof.developer_signature'
  )
  if (!signatureText)
    throw invalidField('developer_proof.signature', 'is required (also accepted as developer_signature)')
  if (input.agent_public_key !== undefined && !(parsePublicKey(input.agent_public_key) as Buffer).equals(entityKey)) {
    throw invalidField('developer_proof.agent_public_key', 'must be the entity public_key')
  }
  const developerKey = parsePublicKey(input.developer_public_key) as Buffer
  const developerId = deriveId('developer', developerKey)
  if (claimedDeveloperId !== null && claimedDeveloperId !== developerId) {
    throw new RegistryError(
      'developer_proof_invalid',
      'developer_id is not the ID of developer_proof.developer_public_key.',
      'developer_id'
    )
  }
  return {
    developerId,
    developerKey,
    stored: {
      developer_public_key: formatKey(developerKey),
      agent_public_key: formatKey(entityKey),
      index,
      signature: signatureText
    }
  }
}

/** Short, stable fingerprint of a signature: what the replay guard remembers. */
export { signatureFingerprint } from '../../store/registry-store.js'
