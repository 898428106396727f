import { Type, type Static } from '@sinclair/typebox'
import { DeveloperId, Nullable, PublicKey, Signature, Timestamp, Url, Changed } from './common.js'
import { EntityRecordView } from './entities.js'

export const DEVELOPER_LIMITS = { name: 100, github: 39 } as const

const profileFields = {
  name: Type.String({ minLength: 1, maxLength: DEVELOPER_LIMITS.name }),
  github: Type.Optional(
    Nullable(
      Type.String({
        maxLength: DEVELOPER_LIMITS.github,
        pattern: '^$|^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9]))*$',
        errorMessage: 'must be a GitHub user name'
      })
    )
  ),
  profile_url: Type.Optional(Nullable(Url))
}

export const DeveloperRegistrationRequest = Type.Object(
  {
    ...profileFields,
    public_key: PublicKey,
    signature: Signature,
    handle: Type.Optional(Nullable(Type.String({ description: 'a handle to claim in the same write' })))
  },
  {
    $id: 'DeveloperRegistrationRequest',
    description:
      '`signature` is by the developer key over the canonical JSON of the body without `signature` (or the deployed form: {github, name, profile_url, public_key}).'
  }
)
export type DeveloperRegistrationRequest = Static<typeof DeveloperRegistrationRequest>

export const DeveloperUpdateRequest = Type.Object(
  {
    name: Type.Optional(profileFields.name),
    github: profileFields.github,
    profile_url: profileFields.profile_url,
    signature: Type.Optional(Signature)
  },
  {
    $id: 'DeveloperUpdateRequest',
    description:
      'Signed by `Authorization: Bearer ed25519:<sig>` over the raw body bytes, or by `signature` in the body over the canonical JSON of the body without it.'
  }
)
export type DeveloperUpdateRequest = Static<typeof DeveloperUpdateRequest>

export const DeveloperRecordView = Type.Object(
  {
    developer_id: DeveloperId,
    name: Nullable(Type.String()),
    public_key: PublicKey,
    signature: Nullable(Signature),
    github: Nullable(Type.String()),
    profile_url: Nullable(Type.String()),
    dev_handle: Nullable(Type.String()),
    handle: Nullable(Type.String()),
    dev_handle_verified: Type.Boolean(),
    verification_method: Nullable(Type.String()),
    verification_proof: Nullable(Type.String()),
    verification_tier: Type.String({ description: 'dns-verified, github-verified, self-claimed or unclaimed' }),
    entity_count: Type.Integer(),
    trust_score: Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        "the developer's own signals (verified handle 0.40, profile 0.10) raised by the transitive trust its entities bring it"
    }),
    implicit: Type.Boolean({
      description:
        'true when the developer came into being through an entity registration rather than POST /v1/developers'
    }),
    home_registry: Type.String(),
    registered_at: Timestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
    schema_version: Type.String()
  },
  { $id: 'DeveloperRecord' }
)
export type DeveloperRecordView = Static<typeof DeveloperRecordView>

export const DeveloperUpdateAnswer = Type.Composite([DeveloperRecordView, Changed], { $id: 'DeveloperUpdateAnswer' })

export const DeveloperRegistrationResponse = Type.Object(
  {
    developer_id: DeveloperId,
    message: Type.String(),
    name: Type.String(),
    public_key: PublicKey,
    handle: Nullable(Type.String({ description: 'the handle claimed in the same write, if the body had one' }))
  },
  { $id: 'DeveloperRegistrationResponse' }
)

export const DeveloperEntities = Type.Object(
  {
    developer_id: DeveloperId,
    entities: Type.Array(EntityRecordView),
    agents: Type.Array(EntityRecordView, { description: 'the same list, under the key deployed clients read' }),
    count: Type.Integer(),
    total: Type.Integer(),
    limit: Type.Integer({ description: 'the page size applied (a larger ?limit is clamped to the maximum)' }),
    offset: Type.Integer()
  },
  { $id: 'DeveloperEntities' }
)
