import { Type, type Static } from '@sinclair/typebox'
import {
  DeveloperId,
  EntityId,
  Nullable,
  PublicKey,
  Semver,
  Signature,
  Timestamp,
  Uint32,
  Url,
  Changed
} from './common.js'

/** Field limits, enforced by the schemas and listed in docs/reference/http-api.md. */
export const ENTITY_LIMITS = {
  name: 100,
  category: 64,
  summary: 500,
  tags: 20,
  tag: 50,
  entityName: 100,
  codebaseHash: 256,
  capabilitySummaryBytes: 8192,
  paymentMethods: 10,
  rates: 32
} as const

export const ENTITY_TYPES = ['agent', 'service'] as const
export const PRICING_MODELS = ['per_request', 'per_token', 'tiered', 'subscription', 'free'] as const

const EntityType = Type.Union(
  ENTITY_TYPES.map(t => Type.Literal(t)),
  { errorMessage: 'must be "agent" or "service"' }
)

export const DeveloperProofInput = Type.Object(
  {
    developer_public_key: PublicKey,
    agent_public_key: Type.Optional(PublicKey),
    index: Type.Optional(Uint32),
    agent_index: Type.Optional(Uint32),
    entity_index: Type.Optional(Uint32),
    signature: Type.Optional(Signature),
    developer_signature: Type.Optional(Signature)
  },
  {
    $id: 'DeveloperProofInput',
    description:
      'Proof that the entity key is HD-derived from the developer key: the developer key signs raw agent key ‖ uint32be(index). The index may be spelled index, agent_index or entity_index; the signature signature or developer_signature.'
  }
)
export type DeveloperProofInput = Static<typeof DeveloperProofInput>

/** The deployed clients' spelling of the models: `per-request` for `per_request`, and so on. */
const HYPHENATED_MODELS = PRICING_MODELS.map(m => m.replace('_', '-')).filter(m => !PRICING_MODELS.includes(m as never))

export const PricingModel = Type.Object(
  {
    model: Type.Optional(
      Type.Union(
        [...PRICING_MODELS, ...HYPHENATED_MODELS].map(m => Type.Literal(m)),
        {
          errorMessage: `must be one of ${PRICING_MODELS.join(', ')} (or spelled with a hyphen)`,
          description:
            'absent: per_request when base_price_usd or rates gives a price, else free; per-request and the other hyphenated spellings are the same models'
        }
      )
    ),
    base_price_usd: Type.Optional(Type.Number({ minimum: 0 })),
    currency: Type.Optional(
      Type.Union([Type.Literal('USDC'), Type.Literal('')], {
        errorMessage: 'must be "USDC" (the only settlement asset)'
      })
    ),
    payment_methods: Type.Optional(
      Nullable(Type.Array(Type.String({ maxLength: 32 }), { maxItems: ENTITY_LIMITS.paymentMethods }))
    ),
    rates: Type.Optional(
      Nullable(
        Type.Record(Type.String({ maxLength: 64 }), Type.Number({ minimum: 0 }), { maxProperties: ENTITY_LIMITS.rates })
      )
    )
  },
  { $id: 'PricingModel' }
)
export type PricingModelInput = Static<typeof PricingModel>

/** What records hold and return: the input rules, without re-asserting them on output. */
const PricingModelView = Type.Object(
  {
    model: Type.String(),
    base_price_usd: Type.Optional(Type.Number()),
    currency: Type.Optional(Type.String()),
    payment_methods: Type.Optional(Nullable(Type.Array(Type.String()))),
    rates: Type.Optional(Nullable(Type.Record(Type.String(), Type.Number())))
  },
  { $id: 'PricingModelView' }
)

const Tags = Type.Array(Type.String({ minLength: 1, maxLength: ENTITY_LIMITS.tag }), {
  maxItems: ENTITY_LIMITS.tags,
  description: `at most ${ENTITY_LIMITS.tags} tags of 1 to ${ENTITY_LIMITS.tag} characters`
})

/** Fields an update may change (all optional; a null leaves the field as it is). */
const mutableFields = {
  name: Type.Optional(Type.String({ minLength: 1, maxLength: ENTITY_LIMITS.name })),
  category: Type.Optional(Type.String({ minLength: 1, maxLength: ENTITY_LIMITS.category })),
  summary: Type.Optional(Nullable(Type.String({ maxLength: ENTITY_LIMITS.summary }))),
  version: Type.Optional(Nullable(Semver)),
  tags: Type.Optional(Nullable(Tags)),
  entity_url: Type.Optional(Nullable(Url)),
  service_endpoint: Type.Optional(Nullable(Url)),
  openapi_url: Type.Optional(Nullable(Url)),
  codebase_hash: Type.Optional(Nullable(Type.String({ maxLength: ENTITY_LIMITS.codebaseHash }))),
  capability_summary: Type.Optional(
    Nullable(Type.Record(Type.String(), Type.Unknown(), { description: 'free-form object (at most 8 KiB as JSON)' }))
  ),
  pricing_model: Type.Optional(Nullable(PricingModel)),
  entity_pricing: Type.Optional(Nullable(PricingModel)),
  entity_name: Type.Optional(Nullable(Type.String({ maxLength: ENTITY_LIMITS.entityName }))),
  ttl: Type.Optional(Nullable(Type.Integer({ minimum: 60, maximum: 31_536_000 })))
}

export const RegistrationRequest = Type.Object(
  {
    ...mutableFields,
    type: Type.Optional(EntityType),
    entity_type: Type.Optional(EntityType),
    category: Type.String({ minLength: 1, maxLength: ENTITY_LIMITS.category }),
    public_key: PublicKey,
    signature: Signature,
    developer_id: Type.Optional(Nullable(DeveloperId)),
    developer_proof: Type.Optional(Nullable(DeveloperProofInput)),
    entity_index: Type.Optional(Nullable(Uint32))
  },
  {
    $id: 'RegistrationRequest',
    description:
      "Registers an agent or a service. `name` may be sent as `entity_name`, `type` as `entity_type`, `pricing_model` as `entity_pricing`. `signature` is by the entity key, over the canonical JSON of the body without `signature` (or the deployed clients' fixed field subset)."
  }
)
export type RegistrationRequest = Static<typeof RegistrationRequest>

export const UpdateRequest = Type.Object(
  { ...mutableFields, signature: Type.Optional(Signature) },
  {
    $id: 'UpdateRequest',
    description:
      "Only supplied fields change. Signed either by `signature` in the body (over the canonical JSON of the body without it) or by `Authorization: Bearer ed25519:<sig>` over the raw body bytes (`Bearer-Dev` for the owning developer's key)."
  }
)
export type UpdateRequest = Static<typeof UpdateRequest>

const DeveloperProofStored = Type.Object({
  developer_public_key: PublicKey,
  agent_public_key: PublicKey,
  index: Uint32,
  signature: Signature
})

export { PricingModelView }

export const EntityRecordView = Type.Object(
  {
    entity_id: EntityId,
    name: Type.String(),
    type: EntityType,
    entity_type: EntityType,
    category: Type.String(),
    summary: Type.String(),
    version: Type.String(),
    tags: Type.Array(Type.String()),
    public_key: PublicKey,
    signature: Signature,
    entity_url: Nullable(Type.String()),
    service_endpoint: Nullable(Type.String()),
    openapi_url: Nullable(Type.String()),
    codebase_hash: Nullable(Type.String()),
    developer_id: Nullable(DeveloperId),
    owner: Nullable(DeveloperId),
    entity_index: Nullable(Uint32),
    developer_proof: Nullable(DeveloperProofStored),
    capability_summary: Nullable(Type.Record(Type.String(), Type.Unknown())),
    pricing_model: Nullable(PricingModelView),
    entity_pricing: Nullable(PricingModelView),
    entity_name: Nullable(Type.String()),
    fqan: Nullable(Type.String()),
    developer_handle: Nullable(Type.String()),
    status: Type.Union([Type.Literal('active'), Type.Literal('inactive')]),
    last_heartbeat: Nullable(Timestamp),
    ttl: Type.Integer(),
    registered_at: Timestamp,
    updated_at: Timestamp,
    home_registry: Type.String(),
    schema_version: Type.String()
  },
  {
    $id: 'RegistryRecord',
    description:
      'An entity record. Both spellings `type`/`entity_type` and `pricing_model`/`entity_pricing` are returned.'
  }
)
export type EntityRecordView = Static<typeof EntityRecordView>

export const EntityUpdateAnswer = Type.Composite([EntityRecordView, Changed], { $id: 'EntityUpdateAnswer' })

export const NameBindingOutcome = Type.Object(
  {
    requested: Type.String(),
    bound: Type.Boolean(),
    fqan: Nullable(Type.String()),
    reason: Nullable(Type.String({ description: 'why no FQAN was bound: no_handle, name_taken, invalid_name' })),
    message: Type.String()
  },
  { $id: 'NameBindingOutcome' }
)

export const RegistrationResponse = Type.Object(
  {
    entity_id: EntityId,
    message: Type.String(),
    status: Type.Literal('active'),
    fqan: Nullable(Type.String()),
    name_binding: Type.Optional(NameBindingOutcome)
  },
  { $id: 'RegistrationResponse' }
)

export const DeregistrationResponse = Type.Object(
  {
    entity_id: EntityId,
    message: Type.String(),
    tombstone: Type.Object({ deleted_at: Timestamp, expires_at: Timestamp })
  },
  { $id: 'DeregistrationResponse' }
)

export const EntityListQuery = Type.Object({
  type: Type.Optional(Type.String({ description: 'agent, service or all (default all); also spelled entity_type' })),
  entity_type: Type.Optional(Type.String({ description: 'same as type' })),
  category: Type.Optional(Type.String()),
  developer_id: Type.Optional(Type.String()),
  limit: Type.Optional(Type.Integer({ description: 'page size (default 50, at most limits.max_list_limit)' })),
  offset: Type.Optional(Type.Integer({ description: 'items to skip (default 0)' })),
  page: Type.Optional(Type.Integer({ description: '1-based page number (with page_size, instead of limit/offset)' })),
  page_size: Type.Optional(Type.Integer({ description: 'page size for page' }))
})

export const EntityList = Type.Object(
  {
    entities: Type.Array(EntityRecordView),
    count: Type.Integer({ description: 'items in this page' }),
    total: Type.Integer({ description: 'items matching the filters' }),
    limit: Type.Integer(),
    offset: Type.Integer(),
    page: Type.Integer(),
    page_size: Type.Integer(),
    has_more: Type.Boolean()
  },
  { $id: 'EntityList' }
)
