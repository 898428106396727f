/**
 * Operations as the services make and read them: sealing what this node accepts, and reading back
 * what an operation carries (its body, the registration a record was made from).
 */
import { RegistryError } from '../errors.js'
import { canonicalJson } from '../identity/canonical-json.js'
import { sign } from '../identity/keys.js'
import type { NodeIdentity } from '../identity/node-identity.js'
import type { EntityRecord, Operation, OperationAuth, OperationKind } from '../store/records.js'
import { parseJsonBytes } from '../wire/json.js'

/** The bytes the accepting node signs: the operation without its node signature, body as base64. */
export function operationSigningBytes(op: Omit<Operation, 'node_signature'>): string {
  return canonicalJson({ ...op, body: op.body === null ? null : Buffer.from(op.body).toString('base64') })
}

export function sealOperation(identity: NodeIdentity, op: Omit<Operation, 'node_signature' | 'origin_key' | 'origin_host'>): Operation {
  // A derived operation is built by spreading its source: drop the source's seal.
  const { node_signature: _seal, ...unsealed } = op as Operation
  const stamped: Omit<Operation, 'node_signature'> = { ...unsealed, origin_key: identity.publicKey, ...(identity.host !== undefined ? { origin_host: identity.host } : {}) }
  return { ...stamped, node_signature: sign(identity.keyPair, operationSigningBytes(stamped)) }
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
  return sealOperation(identity, { kind, subject, body: request.raw, path: request.path, auth, accepted_at: acceptedAt, origin: identity.registryId })
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
export function registrationOf(ops: readonly Operation[], record: Pick<EntityRecord, 'registered_at'>): Operation | undefined {
  return ops.findLast(o => o.kind === 'entity.register' && o.accepted_at === record.registered_at)
}

/** Short, stable fingerprint of a signature: what the replay guard remembers. */
export { signatureFingerprint } from '../store/registry-store.js'
