import type { AttestationRecord } from '../../store/records.js'
import type { AttestationFacts } from '../../trust/weights.js'

/** What the weight of an attestation depends on. */
export function facts(record: AttestationRecord): AttestationFacts {
  return {
    kind: record.kind,
    outcome: record.outcome ?? undefined,
    messageId: record.evidence?.message_id !== undefined,
    payment: record.payment_check,
    issuedAtMs: Date.parse(record.issued_at)
  }
}
