/**
 * Every error the node answers with: one table of machine codes, HTTP statuses and default
 * messages (the README's error reference is generated from it). Bodies are `{error, message, field?}`.
 */
export const ERRORS = {
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  validation_failed: { status: 400, message: 'A field is missing or invalid.' },
  invalid_id: { status: 400, message: 'The ID in the path is not a valid ID for this resource.' },
  invalid_query: { status: 400, message: 'A query parameter is invalid.' },
  field_immutable: { status: 400, message: 'This field cannot be changed after registration.' },
  signature_invalid: { status: 401, message: 'The signature does not verify against the stated public key.' },
  developer_proof_invalid: { status: 401, message: 'The developer proof does not verify.' },
  authorization_required: { status: 401, message: 'This write must be signed: send Authorization: Bearer ed25519:<signature>.' },
  onboarding_required: { status: 403, message: 'Developer self-registration is disabled on this node (restricted mode).' },
  route_not_found: { status: 404, message: 'No route matches this path.' },
  entity_not_found: { status: 404, message: 'No entity with this ID is registered on this node.' },
  developer_not_found: { status: 404, message: 'No developer with this ID is registered on this node.' },
  method_not_allowed: { status: 405, message: 'This route does not accept this method.' },
  entity_exists: { status: 409, message: 'An entity with this ID is already registered.' },
  entity_deregistered: { status: 409, message: 'This entity was deregistered; replaying an earlier registration cannot restore it.' },
  developer_exists: { status: 409, message: 'A developer with this key is already registered.' },
  developer_deregistered: { status: 409, message: 'This developer was deregistered; replaying an earlier registration cannot restore it.' },
  developer_has_entities: { status: 409, message: 'This developer still owns registered entities; deregister them first.' },
  body_too_large: { status: 413, message: 'The request body exceeds the size limit.' },
  unsupported_media_type: { status: 415, message: 'Send the body as application/json.' },
  rate_limited: { status: 429, message: 'Too many requests; retry after the time in Retry-After.' },
  internal_error: { status: 500, message: 'Internal error.' },
  shutting_down: { status: 503, message: 'The node is shutting down; retry on another node or later.' }
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof ERRORS

export interface ErrorBody {
  error: ErrorCode
  message: string
  field?: string
}

export class RegistryError extends Error {
  override name = 'RegistryError'
  readonly code: ErrorCode
  readonly status: number
  readonly field: string | undefined

  constructor(code: ErrorCode, message?: string, field?: string) {
    super(message ?? ERRORS[code].message)
    this.code = code
    this.status = ERRORS[code].status
    this.field = field
  }

  toBody(): ErrorBody {
    return this.field === undefined ? { error: this.code, message: this.message } : { error: this.code, message: this.message, field: this.field }
  }
}

export function invalidField(field: string, message: string): RegistryError {
  return new RegistryError('validation_failed', `${field}: ${message}`, field)
}
