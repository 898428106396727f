/**
 * What one attestation adds to its issuer's trust in its subject: a weight by its evidence (what it
 * cost the issuer to make), halved every HALF_LIFE_DAYS of age. Failures and disputes add nothing:
 * local trust stays non-negative (EigenTrust), so nobody's statement can lower a score, and a ring
 * bad-mouthing honest entities moves nothing. Ages are taken at the start of an hour, so nodes
 * computing within the same hour weigh every attestation alike.
 */

export type AttestationKind = 'interaction' | 'endorsement' | 'dispute'

/** How far an attestation's payment evidence was checked. */
export type PaymentCheck = 'none' | 'unchecked' | 'settled' | 'refuted'

export interface AttestationFacts {
  kind: AttestationKind
  outcome?: 'success' | 'failure' | undefined
  /** An AgentMessage `message_id` of the call is given. */
  messageId: boolean
  payment: PaymentCheck
  issuedAtMs: number
}

export const EVIDENCE_WEIGHTS = {
  /** A statement with no evidence. */
  statement: 1,
  /** The `message_id` of a call: cheap to invent, but ties the statement to a call the subject can recognize. */
  message: 1.5,
  /** A payment no RPC was configured to check. */
  paymentUnchecked: 2,
  /** A payment found settled on chain: it cost the issuer money. */
  paymentSettled: 5
} as const

export const HALF_LIFE_DAYS = 180
const DAY_MS = 86_400_000
const HOUR_MS = 3_600_000

/** The start of the hour `ms` falls in: the moment ages are taken at. */
export function hourStart(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS
}

/** The attestation's weight at `asOfMs` (taken at the start of its hour); 0 when it adds no trust. */
export function attestationWeight(facts: AttestationFacts, asOfMs: number): number {
  if (facts.kind === 'dispute' || facts.payment === 'refuted') return 0
  if (facts.kind === 'interaction' && facts.outcome !== 'success') return 0
  const base =
    facts.payment === 'settled'
      ? EVIDENCE_WEIGHTS.paymentSettled
      : facts.payment === 'unchecked'
        ? EVIDENCE_WEIGHTS.paymentUnchecked
        : facts.messageId
          ? EVIDENCE_WEIGHTS.message
          : EVIDENCE_WEIGHTS.statement
  const ageDays = Math.max(0, hourStart(asOfMs) - facts.issuedAtMs) / DAY_MS
  return base * 0.5 ** (ageDays / HALF_LIFE_DAYS)
}
