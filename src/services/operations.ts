import { canonicalJson } from '../identity/canonical-json.js'
import { sign } from '../identity/keys.js'
import type { NodeIdentity } from '../identity/node-identity.js'
import type { Operation, OperationAuth, OperationKind } from '../store/records.js'

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

/** Short, stable fingerprint of a signature: what the replay guard remembers. */
export { signatureFingerprint } from '../store/registry-store.js'
