import type { TObject, TSchema } from '@sinclair/typebox'
import type { ErrorCode } from '../errors.js'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE'

export interface RequestContext {
  method: string
  /** The path exactly as received (percent-encoding intact). */
  path: string
  /** Path parameters, percent-decoded. */
  params: Record<string, string>
  query: URLSearchParams
  /** The query string exactly as received, without its `?` (empty when there is none). */
  rawQuery: string
  /** Header names lowercased. */
  headers: Record<string, string>
  ip: string
  /** The body bytes exactly as received (empty when there is none). */
  raw: Buffer
  /** The body parsed as JSON; throws invalid_json. Parsed once. */
  json(): unknown
}

export interface Reply {
  status: number
  body: unknown
  headers?: Record<string, string>
  /** Set for non-JSON bodies (body is then a string or Buffer sent as is). */
  contentType?: string
}

export type RateLimitClass = 'read' | 'write' | 'none'

export interface RouteDefinition {
  method: HttpMethod
  /** OpenAPI-style template: /v1/entities/{entity_id} */
  path: string
  summary: string
  tag: string
  limit: RateLimitClass
  /** For writes: the signer the per-key write limit counts against (a public key or a record ID). */
  writer?: (ctx: RequestContext) => string | undefined
  body?: TSchema
  /** The largest body this route takes, when it is not http.body_limit_bytes (an admin's bulk import). */
  bodyLimitBytes?: number
  query?: TObject
  responses: Record<number, { description: string; schema?: TSchema }>
  /** Error codes this route can answer with (documented in the API description). */
  errors?: readonly ErrorCode[]
  /** Not listed in the API description (static assets). */
  hidden?: boolean
  handler: (ctx: RequestContext) => Reply | Promise<Reply>
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/** The longest request URL (path, `?` and query) routed; longer ones get 414 url_too_long. */
export const MAX_URL_BYTES = 8 * 1024
/** The largest request head (request line and headers) a front reads; larger ones get 431 (or 414 when the request line alone overflows). */
export const MAX_HEAD_BYTES = 64 * 1024

export const json = (status: number, body: unknown, headers?: Record<string, string>): Reply =>
  headers ? { status, body, headers } : { status, body }

/**
 * The reply to a create that may find it done already (a repeated claim or binding): 201 when it
 * created, 200 when nothing changed, the record's view with a message saying which.
 */
export const createdOrExisting = (
  created: boolean,
  view: object,
  messages: { created: string; existing: string }
): Reply => json(created ? 201 : 200, { ...view, message: created ? messages.created : messages.existing })

/** A reply whose body is already JSON text. */
export const jsonText = (status: number, text: string): Reply => ({
  status,
  body: text,
  contentType: JSON_CONTENT_TYPE
})
