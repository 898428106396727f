import { Type, type Static } from '@sinclair/typebox'
import { DeveloperId, EntityId, Nullable, PublicKey, SemverOrEmpty, Signature, Timestamp } from './common.js'

export const CAPABILITY_TAG_LIMITS = { tags: 20, tag: 50 } as const

const CapabilityTags = Type.Array(Type.String({ minLength: 1, maxLength: CAPABILITY_TAG_LIMITS.tag }), {
  maxItems: CAPABILITY_TAG_LIMITS.tags
})
/** A handle as a request names it; its format is the service's to check (with its own error codes). */
const HandleText = Type.String({ maxLength: 64 })
/** A handle an update may repeat, so that its signature covers it. */
const HandleOfPath = Type.String({ description: 'when sent (and signed), must be the handle in the path' })
/** How an update under a handle (its verification, a name's new version) is signed. */
const SIGNED_BY_HANDLE_DEVELOPER =
  "Signed by the handle's developer: `signature` over the canonical JSON of the body without it, or Authorization: Bearer over the raw body."

const VerificationTier = Type.String({
  description: 'dns-verified, github-verified, self-claimed (handle not verified) or unclaimed (no handle)'
})

export const HandleClaimRequest = Type.Object(
  { developer_id: DeveloperId, handle: HandleText, public_key: PublicKey, signature: Signature },
  {
    $id: 'HandleClaimRequest',
    description:
      "Signed by the developer's registered key over the canonical JSON of the body without `signature` (or the deployed form {developer_id, handle, public_key})."
  }
)
export type HandleClaimRequest = Static<typeof HandleClaimRequest>

export const HandleView = Type.Object(
  {
    handle: Type.String(),
    developer_id: DeveloperId,
    developer_name: Nullable(Type.String()),
    verified: Type.Boolean(),
    verification_method: Nullable(Type.String()),
    verification_proof: Nullable(Type.String()),
    verification_tier: VerificationTier,
    claimed_at: Timestamp,
    verified_at: Nullable(Timestamp)
  },
  { $id: 'Handle' }
)

export const HandleAvailability = Type.Object(
  {
    handle: Type.String(),
    available: Type.Boolean(),
    reason: Type.Optional(Type.String({ description: 'claimed, invalid or reserved' }))
  },
  { $id: 'HandleAvailability' }
)

export const HandleVerifyRequest = Type.Object(
  {
    method: Type.String({ description: 'dns or github' }),
    proof: Type.String({
      maxLength: 253,
      description:
        'dns: a domain publishing TXT _zns-verify.<domain> = <developer key> or "v=zns1; k=ed25519; p=<key>"; github: a user name with a public gist holding the key'
    }),
    handle: Type.Optional(HandleOfPath),
    signature: Type.Optional(Signature)
  },
  {
    $id: 'HandleVerifyRequest',
    description: SIGNED_BY_HANDLE_DEVELOPER
  }
)

export const NameBindRequest = Type.Object(
  {
    entity_id: EntityId,
    entity_name: Type.String({ maxLength: 100 }),
    developer_handle: HandleText,
    signature: Signature,
    version: Type.Optional(Nullable(SemverOrEmpty)),
    capability_tags: Type.Optional(Nullable(CapabilityTags))
  },
  {
    $id: 'NameBindRequest',
    description:
      "Signed by the handle's developer over the canonical JSON of the body without `signature` (or the deployed form {capability_tags, developer_handle, entity_id, entity_name, version})."
  }
)
export type NameBindRequest = Static<typeof NameBindRequest>

export const NameUpdateRequest = Type.Object(
  {
    version: Type.Optional(Nullable(SemverOrEmpty)),
    capability_tags: Type.Optional(Nullable(CapabilityTags)),
    developer_handle: Type.Optional(HandleOfPath),
    entity_name: Type.Optional(Type.String({ description: 'when sent, must be the name in the path' })),
    fqan: Type.Optional(Type.String({ description: "when sent, must be this binding's FQAN" })),
    signature: Type.Optional(Signature)
  },
  {
    $id: 'NameUpdateRequest',
    description: SIGNED_BY_HANDLE_DEVELOPER
  }
)
export type NameUpdateRequest = Static<typeof NameUpdateRequest>

export const NameView = Type.Object(
  {
    fqan: Type.String(),
    entity_name: Type.String(),
    developer_handle: Type.String(),
    registry_host: Type.String(),
    entity_id: EntityId,
    developer_id: DeveloperId,
    version: Nullable(Type.String()),
    current_version: Nullable(Type.String()),
    capability_tags: Type.Array(Type.String()),
    bound_at: Timestamp,
    registered_at: Timestamp,
    updated_at: Timestamp,
    signature: Signature
  },
  { $id: 'NameBinding' }
)

export const NameVersionView = Type.Object(
  {
    version: Nullable(Type.String()),
    entity_id: EntityId,
    capability_tags: Type.Array(Type.String()),
    bound_at: Timestamp,
    signature: Signature
  },
  { $id: 'NameVersion' }
)

export const NameAvailability = Type.Object(
  {
    developer: Type.String(),
    entity_name: Type.String(),
    available: Type.Boolean(),
    reason: Type.Optional(Type.String({ description: 'taken, invalid or handle_unclaimed' })),
    existing_entity_id: Type.Optional(EntityId)
  },
  { $id: 'NameAvailability' }
)

export const TrustView = Type.Object(
  {
    score: Type.Number({ minimum: 0, maximum: 1 }),
    verification_tier: VerificationTier,
    signals: Type.Record(Type.String(), Type.Number(), { description: "each signal's contribution to the score" }),
    transitive: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description:
          'transitive trust from attestations (EigenTrust from verified developers); GET /v1/entities/{id}/trust explains it'
      })
    )
  },
  { $id: 'Trust' }
)

export const ResolveResponse = Type.Object(
  {
    fqan: Nullable(Type.String()),
    entity_id: EntityId,
    name: Type.String(),
    type: Type.String(),
    entity_type: Type.String(),
    developer_id: Nullable(DeveloperId),
    developer_handle: Nullable(Type.String()),
    registry_host: Type.String(),
    home_registry: Type.String(),
    version: Nullable(Type.String()),
    capability_tags: Type.Array(Type.String()),
    entity_url: Nullable(Type.String()),
    service_endpoint: Nullable(Type.String()),
    public_key: PublicKey,
    status: Type.String(),
    last_heartbeat: Nullable(Timestamp),
    trust_score: Type.Number(),
    verification_tier: VerificationTier,
    trust: TrustView,
    card_note: Type.Optional(
      Type.String({ description: 'card=true cannot be served yet: the card proxy arrives with search' })
    )
  },
  {
    $id: 'Resolution',
    description:
      'What a name or ID resolves to. `card=true` is accepted but the live card is not served yet (the card proxy arrives with search).'
  }
)

export const ApprovalRequest = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    state: Type.String({
      minLength: 8,
      maxLength: 512,
      description: "the client's random state; the private key is encrypted with SHA-256 of it"
    }),
    callback_port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    handle: Type.Optional(Nullable(Type.String()))
  },
  { $id: 'ApprovalRequest' }
)
export type ApprovalRequest = Static<typeof ApprovalRequest>

export const ApprovalResponse = Type.Object(
  {
    developer_id: DeveloperId,
    public_key: PublicKey,
    private_key_enc: Type.String({
      description:
        'base64(12-byte nonce ‖ AES-256-GCM ciphertext ‖ 16-byte tag); key = SHA-256(state); plaintext = base64 of the 64-byte private key (seed ‖ public key)'
    }),
    handle: Type.Optional(Nullable(Type.String()))
  },
  { $id: 'ApprovalResponse' }
)
