/**
 * Attestations: an entity or developer states its experience with an entity, signed by its own
 * key over the canonical JSON of the body without `signature`. The node derives the attestation's
 * ID from those signed bytes, so the same statement sent twice is one attestation.
 */
import { type Static, Type } from '@sinclair/typebox'
import { DeveloperId, EntityId, Nullable, Signature, Timestamp } from './common.js'

export const ATTESTATION_LIMITS = { messageIdChars: 128, transactionChars: 130, commentChars: 280 } as const

export const AttestationKind = Type.Union(
  [Type.Literal('interaction'), Type.Literal('endorsement'), Type.Literal('dispute')],
  {
    description:
      'interaction: the issuer called or paid the subject (give `outcome`); endorsement: a statement of trust; dispute: a complaint'
  }
)
export type AttestationKind = Static<typeof AttestationKind>

export const AttestationOutcome = Type.Union([Type.Literal('success'), Type.Literal('failure')])
export type AttestationOutcome = Static<typeof AttestationOutcome>

export const PaymentEvidence = Type.Object(
  {
    network: Type.String({ pattern: '^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$', description: 'CAIP-2, e.g. eip155:8453' }),
    transaction: Type.String({
      minLength: 1,
      maxLength: ATTESTATION_LIMITS.transactionChars,
      description: 'the settlement transaction (an x402 settle response’s `transaction`)'
    }),
    amount: Type.Optional(Type.String({ pattern: '^[0-9]{1,78}$', description: 'in the asset’s base units' })),
    asset: Type.Optional(Type.String({ maxLength: 130 }))
  },
  { additionalProperties: false }
)

export const AttestationEvidence = Type.Object(
  {
    message_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: ATTESTATION_LIMITS.messageIdChars,
        description: 'the AgentMessage `message_id` of the call'
      })
    ),
    payment: Type.Optional(PaymentEvidence)
  },
  { additionalProperties: false }
)
export type AttestationEvidence = Static<typeof AttestationEvidence>

export const AttestationRequest = Type.Object(
  {
    issuer: Type.Union([EntityId, DeveloperId], { description: 'the entity or developer making the statement' }),
    subject: EntityId,
    kind: AttestationKind,
    outcome: Type.Optional(AttestationOutcome),
    issued_at: Type.String({
      pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?(Z|[+-]\\d{2}:\\d{2})$',
      errorMessage: 'must be an RFC 3339 time, e.g. 2026-11-29T12:00:00Z',
      description: 'when the issuer made the statement (RFC 3339); within the node’s clock skew when sent'
    }),
    nonce: Type.String({ pattern: '^[0-9a-f]{16,64}$', description: '8–32 random bytes, hex' }),
    evidence: Type.Optional(AttestationEvidence),
    comment: Type.Optional(Type.String({ maxLength: ATTESTATION_LIMITS.commentChars })),
    signature: Signature
  },
  {
    $id: 'AttestationRequest',
    additionalProperties: false,
    description: "Signed by the issuer's registered key over the canonical JSON of the body without `signature`."
  }
)
export type AttestationRequest = Static<typeof AttestationRequest>

export const AttestationView = Type.Object(
  {
    attestation_id: Type.String({ pattern: '^zns:att:[0-9a-f]{32}$' }),
    issuer: Type.String(),
    subject: EntityId,
    kind: AttestationKind,
    outcome: Nullable(AttestationOutcome),
    issued_at: Timestamp,
    evidence: Nullable(AttestationEvidence),
    comment: Nullable(Type.String()),
    weight: Type.Number({
      description: 'what it adds to the issuer’s trust in the subject now (0 for failures and disputes)'
    }),
    payment_check: Type.Union(
      [Type.Literal('none'), Type.Literal('unchecked'), Type.Literal('settled'), Type.Literal('refuted')],
      {
        description:
          'the payment evidence as this node checked it on chain when it accepted the attestation (trust.payment_rpc): none without payment evidence, unchecked without an RPC for its network or a receipt'
      }
    ),
    accepted_at: Timestamp,
    home_registry: Type.String()
  },
  { $id: 'Attestation' }
)

export const AttestationListQuery = Type.Object({
  subject: Type.Optional(Type.String({ description: 'the entity attested (this or issuer)' })),
  issuer: Type.Optional(Type.String({ description: 'the entity or developer that attested' })),
  after: Type.Optional(
    Type.String({ description: 'an attestation ID: the page after it (the previous page’s `next`)' })
  ),
  limit: Type.Optional(Type.Integer({ description: 'page size (default and most: limits.max_list_limit)' }))
})

export const AttestationList = Type.Object(
  {
    attestations: Type.Array(AttestationView),
    count: Type.Integer(),
    next: Nullable(Type.String({ description: 'pass as `after` for the next page (null: this was the last)' }))
  },
  { $id: 'AttestationList' }
)

export const TrustExplanation = Type.Object(
  {
    entity_id: EntityId,
    transitive: Type.Number({ minimum: 0, maximum: 1, description: 'the transitive score on [0, 1]' }),
    share: Type.Number({ description: 'the share of all trust in the graph it holds' }),
    seed: Type.Boolean({ description: 'trusted from the start (a seed)' }),
    attesters: Type.Array(
      Type.Object({
        issuer: Type.String(),
        share: Type.Number({ description: 'the part of its trust this issuer passes it' })
      }),
      { description: 'who passes it the most trust, strongest first' }
    ),
    received: Type.Object({
      interaction_success: Type.Integer(),
      interaction_failure: Type.Integer(),
      endorsement: Type.Integer(),
      dispute: Type.Integer()
    })
  },
  { $id: 'TrustExplanation' }
)
