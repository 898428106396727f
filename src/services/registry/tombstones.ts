import { RegistryError } from '../../errors.js'
import type { SignatureReuse, WriteTransaction } from '../../store/registry-store.js'
import type { Operation, OperationKind, SubjectKind } from '../../store/records.js'

const REGISTRATIONS = new Set<OperationKind>(['entity.register', 'developer.register', 'developer.implicit'])

/**
 * Inside a registration's transaction: refuses a replay of any registration signature the subject
 * has had, lifts its tombstone, and returns the signature history the new record carries on.
 */
export function admitRegistration(
  tx: WriteTransaction,
  subject: string,
  fingerprint: string,
  replay: 'entity_deregistered' | 'developer_deregistered'
): string[] {
  const tombstone = tx.getTombstone(subject)
  if (!tombstone) return [fingerprint]
  if (tombstone.registration_signatures.includes(fingerprint)) throw new RegistryError(replay)
  tx.deleteTombstone(subject)
  tx.dropOperations(subject)
  return [...tombstone.registration_signatures, fingerprint]
}

/**
 * Inside a deregistration's transaction: replaces the record and its history with a tombstone.
 * The registration stays beside the deregistration: a node that never saw the record needs its
 * key to verify the deregistration (sync sends both).
 */
export function bury(
  tx: WriteTransaction,
  kind: SubjectKind,
  subject: string,
  registrationSignatures: string[],
  op: Operation,
  expiresAt: string,
  reuse?: SignatureReuse
): void {
  if (kind === 'entity') tx.deleteEntity(subject)
  else tx.deleteDeveloper(subject)
  tx.dropOperations(subject, kept => REGISTRATIONS.has(kept.kind) && kept.accepted_at <= op.accepted_at)
  tx.appendOperation(op, undefined, reuse)
  tx.putTombstone({
    subject,
    kind,
    deleted_at: op.accepted_at,
    expires_at: expiresAt,
    registration_signatures: registrationSignatures
  })
}
