import { RegistryError } from '../errors.js'
import type { WriteTransaction } from '../store/registry-store.js'
import type { Operation, SubjectKind } from '../store/records.js'

/**
 * Inside a registration's transaction: refuses a replay of any registration signature the subject
 * has had, lifts its tombstone, and returns the signature history the new record carries on.
 */
export function admitRegistration(tx: WriteTransaction, subject: string, fingerprint: string, replay: 'entity_deregistered' | 'developer_deregistered'): string[] {
  const tombstone = tx.getTombstone(subject)
  if (!tombstone) return [fingerprint]
  if (tombstone.registration_signatures.includes(fingerprint)) throw new RegistryError(replay)
  tx.deleteTombstone(subject)
  tx.dropOperations(subject)
  return [...tombstone.registration_signatures, fingerprint]
}

/** Inside a deregistration's transaction: replaces the record and its history with a tombstone. */
export function bury(
  tx: WriteTransaction,
  kind: SubjectKind,
  subject: string,
  registrationSignatures: string[],
  op: Operation,
  expiresAt: string
): void {
  if (kind === 'entity') tx.deleteEntity(subject)
  else tx.deleteDeveloper(subject)
  tx.dropOperations(subject)
  tx.appendOperation(op)
  tx.putTombstone({ subject, kind, deleted_at: op.accepted_at, expires_at: expiresAt, registration_signatures: registrationSignatures })
}
