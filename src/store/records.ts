/**
 * Storage shapes. These are what LMDB holds; the API renders them into wire shapes (src/wire)
 * and never hands them out as they are.
 */
export const SCHEMA_VERSION = '1.0'

export type EntityType = 'agent' | 'service'
export type LivenessStatus = 'active' | 'inactive'

export interface PricingModel {
  model: string
  base_price_usd?: number
  currency?: string
  payment_methods?: string[]
  rates?: Record<string, number>
}

export interface DeveloperProof {
  developer_public_key: string
  agent_public_key: string
  index: number
  signature: string
}

export interface EntityRecord {
  entity_id: string
  type: EntityType
  name: string
  category: string
  summary: string
  version: string
  tags: string[]
  public_key: string
  signature: string
  entity_url: string | null
  service_endpoint: string | null
  openapi_url: string | null
  codebase_hash: string | null
  developer_id: string | null
  entity_index: number | null
  developer_proof: DeveloperProof | null
  capability_summary: Record<string, unknown> | null
  pricing_model: PricingModel | null
  /** The name the registration asked to bind under the developer's handle. */
  entity_name: string | null
  ttl: number
  /**
   * As the home node last announced it (`entity.status`). On the home node itself these stay as
   * registered: its liveness state (LivenessRecord) is the live status, and reads take it there.
   */
  status: LivenessStatus
  last_heartbeat: string | null
  /** The time of the status operation these two fields show (absent before the first one). */
  status_changed_at?: string
  registered_at: string
  updated_at: string
  home_registry: string
  /** The registry ID of the home node (absent on records written before the mesh replicated them: home_registry decides). */
  home_registry_id?: string
  schema_version: string
  /** SHA-256 (hex, 16 bytes) of every registration signature this ID has had: the replay guard. */
  registration_signatures: string[]
}

export interface DeveloperRecord {
  developer_id: string
  /** Null for a developer that came into being implicitly through an entity's developer proof. */
  name: string | null
  public_key: string
  signature: string | null
  github: string | null
  profile_url: string | null
  dev_handle: string | null
  dev_handle_verified: boolean
  verification_method: string | null
  verification_proof: string | null
  home_registry: string
  registered_at: string
  updated_at: string
  schema_version: string
  implicit: boolean
  registration_signatures: string[]
}

/** A claimed handle. The owning developer's record mirrors `dev_handle` and the verification state. */
export interface HandleRecord {
  handle: string
  developer_id: string
  claimed_at: string
  signature: string
  verified: boolean
  verification_method: string | null
  verification_proof: string | null
  verified_at: string | null
}

/** A name bound under a handle: FQAN = <host>/<handle>/<entity_name>. */
export interface NameBinding {
  handle: string
  entity_name: string
  entity_id: string
  developer_id: string
  version: string | null
  capability_tags: string[]
  bound_at: string
  updated_at: string
  signature: string
}

/** One entry of a binding's version history (a bind or an update). */
export interface NameVersion {
  version: string | null
  entity_id: string
  capability_tags: string[]
  bound_at: string
  signature: string
}

/** A restricted-mode approval, remembered by a hash of its state so a redelivered webhook cannot mint a second identity. */
export interface Approval {
  developer_id: string
  approved_at: string
}

export type SubjectKind = 'entity' | 'developer'

export interface Tombstone {
  subject: string
  kind: SubjectKind
  deleted_at: string
  expires_at: string
  /** Carried over from the deleted record: a registration with one of these signatures is a replay. */
  registration_signatures: string[]
}

/** A signed statement of an entity or developer about an entity (src/wire/attestations.ts), as accepted. */
export interface AttestationRecord {
  attestation_id: string
  issuer: string
  subject: string
  kind: 'interaction' | 'endorsement' | 'dispute'
  outcome: 'success' | 'failure' | null
  issued_at: string
  nonce: string
  evidence: {
    message_id?: string
    payment?: { network: string; transaction: string; amount?: string; asset?: string }
  } | null
  comment: string | null
  signature: string
  accepted_at: string
  home_registry: string
  /** How far the payment evidence was checked on chain (`none` without payment evidence). */
  payment_check: 'none' | 'unchecked' | 'settled' | 'refuted'
}

export type OperationKind =
  | 'entity.register'
  | 'entity.update'
  | 'entity.deregister'
  | 'entity.status'
  | 'entity.status.batch'
  | 'developer.register'
  | 'developer.implicit'
  | 'developer.update'
  | 'developer.deregister'
  | 'handle.claim'
  | 'handle.verify'
  | 'handle.release'
  | 'name.bind'
  | 'name.update'
  | 'name.release'
  | 'attestation.add'

/**
 * What this node has observed of a home entity's heartbeats (times in ms since the epoch). Kept
 * in memory, flushed in batches; uptime = (active_ms + time active since active_since) / time
 * since observed_since.
 */
export interface LivenessRecord {
  last_seen: number
  active: boolean
  /** When the current active period began (null while inactive). */
  active_since: number | null
  /** Total time of the finished active periods. */
  active_ms: number
  /** When this node began observing the entity (its registration here). */
  observed_since: number
}

/** How the owner's signature on an operation was carried and which signed form verified. */
export interface OperationAuth {
  /** body: the `signature` member; authorization / x-signature: those headers. */
  carrier: 'body' | 'authorization' | 'x-signature' | 'proof' | 'node'
  signer: 'self' | 'developer' | 'node'
  signature: string
  form: string
}

/**
 * A signed operation, kept as received so any node can verify the owner's signature again:
 * the exact request body bytes, the signature and where it was carried, and when and where
 * the home node accepted it.
 */
export interface Operation {
  kind: OperationKind
  subject: string
  body: Uint8Array | null
  /** The request path as received, for signatures over the path. */
  path: string | null
  auth: OperationAuth
  accepted_at: string
  origin: string
  /** The accepting node's public key (its registry ID derives from it), so any node can check node_signature. */
  origin_key?: string
  /** The accepting node's public host: `home_registry` of what the operation creates. */
  origin_host?: string
  /** The accepting node's signature over the canonical operation without this field. */
  node_signature: string
}
