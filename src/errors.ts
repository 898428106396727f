/**
 * Every error the node (and an entity run by this package) answers with: one table of machine codes, HTTP statuses and default
 * messages (docs/reference/errors.md is generated from it). Bodies are `{error, message, field?}`.
 */
export const ERRORS = {
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  validation_failed: { status: 400, message: 'A field is missing or invalid.' },
  invalid_id: { status: 400, message: 'The ID in the path is not a valid ID for this resource.' },
  invalid_request: { status: 400, message: 'The request is not valid HTTP/1.1.' },
  invalid_query: { status: 400, message: 'A query parameter is invalid.' },
  field_immutable: { status: 400, message: 'This field cannot be changed after registration.' },
  nothing_to_update: {
    status: 400,
    message: 'The update names no field to change (a body of only its signature is usually a client bug).'
  },
  signature_invalid: { status: 401, message: 'The signature does not verify against the stated public key.' },
  developer_proof_invalid: { status: 401, message: 'The developer proof does not verify.' },
  authorization_required: {
    status: 401,
    message: 'This write must be signed: send Authorization: Bearer ed25519:<signature>.'
  },
  handle_invalid: {
    status: 400,
    message: 'Handles are 3 to 32 characters of a-z, 0-9 and -, starting and ending with a letter or digit.'
  },
  handle_reserved: { status: 400, message: 'This handle is reserved.' },
  name_invalid: {
    status: 400,
    message: 'Entity names are 1 to 64 characters of a-z, 0-9 and -, starting and ending with a letter or digit.'
  },
  fqan_invalid: {
    status: 400,
    message: 'Not a fully qualified agent name: expected [zns://]<host>/<handle>/<entity-name>[@<version>].'
  },
  operation_invalid: {
    status: 400,
    message: 'An operation from the mesh is malformed or its node signature does not verify.'
  },
  verification_failed: { status: 400, message: 'The ownership proof was not found.' },
  heartbeat_invalid: {
    status: 400,
    message:
      'A heartbeat frame is a JSON object {agent_id, timestamp, signature} (agent_id optional on /v1/entities/{id}/ws), timestamp in ISO 8601 or Unix seconds.'
  },
  clock_skew: {
    status: 400,
    message: 'The timestamp differs from the node clock by more than max_clock_skew_seconds.'
  },
  admin_unauthorized: { status: 401, message: 'Admin endpoints need Authorization: Bearer <webhook secret>.' },
  onboarding_required: {
    status: 403,
    message: 'Developer self-registration is disabled on this node (restricted mode).'
  },
  entity_not_owned: { status: 403, message: 'The entity does not belong to the developer who holds this handle.' },
  handle_not_found: { status: 404, message: 'No developer has claimed this handle on this node.' },
  name_not_found: { status: 404, message: 'No entity is bound to this name on this node.' },
  route_not_found: { status: 404, message: 'No route matches this path.' },
  metrics_disabled: {
    status: 404,
    message:
      'This node does not serve metrics: set metrics.enabled = true in the config file (or start with --metrics, or REGISTRY_NODE_METRICS_ENABLED=true) and restart.'
  },
  entity_not_found: { status: 404, message: 'No entity with this ID is registered on this node.' },
  developer_not_found: { status: 404, message: 'No developer with this ID is registered on this node.' },
  issuer_not_found: {
    status: 404,
    message: "The attestation's issuer is not an entity or developer registered on this node."
  },
  attestation_not_found: { status: 404, message: 'No attestation with this ID is held on this node.' },
  self_attestation: {
    status: 400,
    message: 'An identity cannot attest itself, its own developer, or an entity of its own developer.'
  },
  attestation_quota: {
    status: 429,
    message:
      'This issuer has made as many attestations as the node accepts in this period (of everyone, or of this subject).'
  },
  peer_not_found: {
    status: 404,
    message: 'No peer with this PeerId is connected to, known to, or added on this node.'
  },
  peer_not_banned: { status: 404, message: 'This peer is not banned on this node.' },
  method_not_allowed: { status: 405, message: 'This route does not accept this method.' },
  entity_exists: { status: 409, message: 'An entity with this ID is already registered.' },
  entity_deregistered: {
    status: 409,
    message: 'This entity was deregistered; replaying an earlier registration cannot restore it.'
  },
  developer_exists: { status: 409, message: 'A developer with this key is already registered.' },
  developer_deregistered: {
    status: 409,
    message: 'This developer was deregistered; replaying an earlier registration cannot restore it.'
  },
  developer_has_entities: {
    status: 409,
    message: 'This developer still owns registered entities; deregister them first.'
  },
  handle_claimed: { status: 409, message: 'This handle is already claimed.' },
  developer_has_handle: {
    status: 409,
    message: 'This developer already holds a handle; release it first (one handle per developer).'
  },
  name_taken: { status: 409, message: 'This name is already bound to another entity under this handle.' },
  onboarding_disabled: {
    status: 409,
    message: 'This node is in open mode: register developers with POST /v1/developers.'
  },
  signature_replayed: {
    status: 409,
    message: 'This signature already authorized a write; a signature is good for one write.'
  },
  peer_banned: {
    status: 409,
    message: 'This peer is banned on this node; lift the ban first (DELETE /v1/network/bans/{peer_id}).'
  },
  approval_exists: { status: 409, message: 'This approval state was already used.' },
  storage_full: {
    status: 507,
    message: "The node's disk is full: writes are refused until space returns; reads and heartbeats go on."
  },
  body_too_large: { status: 413, message: 'The request body exceeds the size limit.' },
  url_too_long: { status: 414, message: 'The request URL (path and query) is longer than 8 KiB.' },
  headers_too_large: { status: 431, message: 'The request line and headers together exceed 64 KiB.' },
  upgrade_required: { status: 426, message: 'This path is a WebSocket endpoint: connect with a WebSocket upgrade.' },
  read_only_replica: {
    status: 503,
    message:
      'This node is a read-only replica: send writes, onboarding and heartbeats to the registry it replicates (primary_url).'
  },
  not_home_registry: {
    status: 421,
    message: "This node is not the entity's home registry; send its heartbeats to the home registry."
  },
  too_many_entities: {
    status: 429,
    message: 'This connection already carries heartbeats for as many entities as one connection may.'
  },
  unsupported_media_type: { status: 415, message: 'Send the body as application/json.' },
  overloaded: { status: 503, message: 'The node has too many heartbeats waiting for verification; retry later.' },
  rate_limited: { status: 429, message: 'Too many requests; retry after the time in Retry-After.' },
  internal_error: { status: 500, message: 'Internal error.' },
  verification_unavailable: { status: 502, message: 'The verification source (DNS or GitHub) could not be reached.' },
  card_unavailable: { status: 502, message: "The entity's card could not be fetched from its entity_url." },
  card_address_refused: {
    status: 502,
    message:
      "The entity's card URL leads to a private, loopback, link-local or metadata address, which this node does not fetch."
  },
  peer_unreachable: {
    status: 502,
    message: "The peer could not be reached at this address (refused, timed out, or not a registry node's libp2p port)."
  },
  admin_unavailable: { status: 503, message: 'Admin endpoints need restricted mode and a webhook secret.' },
  mesh_disabled: { status: 503, message: 'This node runs without the mesh (p2p.enabled is false).' },
  shutting_down: { status: 503, message: 'The node is shutting down; retry on another node or later.' },
  // Entity side (src/entity/): what an entity run by this package answers its callers.
  signature_required: { status: 401, message: 'This entity accepts signed messages only (auth_mode strict).' },
  sender_unknown: {
    status: 401,
    message: "The sender's key is neither in the message (sender_public_key) nor known to the registry."
  },
  sender_key_mismatch: { status: 401, message: 'sender_public_key is not the key of sender_id.' },
  timestamp_out_of_window: {
    status: 401,
    message: "A signed message carries a timestamp within the skew window of the entity's clock."
  },
  response_not_ready: { status: 404, message: 'No result for this message yet (pending, unknown, or already read).' },
  handler_timeout: { status: 408, message: 'The entity did not answer within its time limit.' },
  message_replayed: { status: 409, message: 'This sender already sent a message with this message_id.' },
  handler_failed: { status: 500, message: "The entity's handler failed on this message." },
  // Entity side, x402 payments on a priced /webhook/sync (every 402 body and PAYMENT-REQUIRED header carries a fresh quote).
  payment_required: {
    status: 402,
    message: 'This endpoint is priced: pay with x402 (the quote is in the PAYMENT-REQUIRED header and this body).'
  },
  payment_invalid: {
    status: 402,
    message: 'The payment header is not a base64 x402 v2 PaymentPayload with an EIP-3009 authorization.'
  },
  payment_quote_unknown: {
    status: 402,
    message: 'The payment does not carry a quote nonce this entity issued for these requirements.'
  },
  payment_requirements_mismatch: {
    status: 402,
    message: "The payment's network, asset, scheme or pay-to address is not the quoted one."
  },
  payment_amount_mismatch: {
    status: 402,
    message: 'The authorized value is not the quoted price (less is underpayment; more is refused too).'
  },
  payment_expired: {
    status: 402,
    message: "The quote or the authorization's validity window has passed (or not begun)."
  },
  payment_signature_invalid: { status: 402, message: 'The transfer authorization is not signed by its from address.' },
  payment_replayed: { status: 402, message: 'This quote or this authorization was already used.' },
  payment_insufficient_funds: { status: 402, message: "The payer's USDC balance is below the price." },
  payment_rejected: { status: 402, message: 'The facilitator refused the payment (its reason is in reason).' },
  payment_settlement_failed: {
    status: 402,
    message: 'The payment could not be settled on chain; no output was released.'
  },
  payment_unavailable: {
    status: 503,
    message: 'The chain or the facilitator could not be reached; no output was released. Retry later.'
  }
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof ERRORS

export interface ErrorBody {
  error: ErrorCode
  message: string
  field?: string
  [extra: string]: unknown
}

export class RegistryError extends Error {
  override name = 'RegistryError'
  readonly code: ErrorCode
  readonly status: number
  readonly field: string | undefined
  /** Further members of the error body, e.g. auth_url on onboarding_required. */
  readonly extra: Record<string, unknown> | undefined

  constructor(code: ErrorCode, message?: string, field?: string, extra?: Record<string, unknown>) {
    super(message ?? ERRORS[code].message)
    this.code = code
    this.status = ERRORS[code].status
    this.field = field
    this.extra = extra
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { error: this.code, message: this.message }
    if (this.field !== undefined) body.field = this.field
    return this.extra ? { ...body, ...this.extra, ...body } : body
  }
}

export function invalidField(field: string, message: string): RegistryError {
  return new RegistryError('validation_failed', `${field}: ${message}`, field)
}
