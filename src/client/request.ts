/**
 * How this package speaks HTTP to a node, for the typed client and the entity runtime alike: fetch
 * with a deadline, JSON both ways, redirects left unfollowed (the onboarding route answers 303 with
 * a body worth reading), and the node's `{error, message, field?}` bodies turned into
 * RegistryRequestError, a failed connection into RegistryUnreachableError.
 */
import { ERRORS, type ErrorCode } from '../errors.js'
import { networkCause } from './network-cause.js'

/**
 * What a refused request says: a code of the node's error table, or, when nothing answered or the
 * answer was not the node's, one of the client's own. A code this client does not know (a newer
 * node) becomes `http_<status>`; the node's body is kept whole in `body`.
 */
export type ClientErrorCode = ErrorCode | 'registry_unreachable' | 'invalid_response' | `http_${number}`

export class RegistryRequestError extends Error {
  override name = 'RegistryRequestError'
  constructor(
    /** The HTTP status; 0 when nothing answered. */
    readonly status: number,
    readonly code: ClientErrorCode,
    message: string,
    /** The node's error body, as sent. */
    readonly body: Readonly<Record<string, unknown>> = {},
    options?: ErrorOptions
  ) {
    super(message, options)
  }

  /** The offending field, when the node named one. */
  get field(): string | undefined {
    return typeof this.body.field === 'string' ? this.body.field : undefined
  }
}

/** Nothing answered at `url`: refused, no such host, reset, or no answer before the deadline. */
export class RegistryUnreachableError extends RegistryRequestError {
  override name = 'RegistryUnreachableError'
  constructor(
    readonly url: string,
    /** The network failure in words (network-cause.ts). */
    readonly reason: string,
    message: string,
    cause: unknown
  ) {
    super(0, 'registry_unreachable', message, {}, { cause })
  }
}

export interface RequestOptions {
  /** Sent as JSON. */
  body?: unknown
  /** Sent as it is, as JSON: for signatures over the exact bytes of the body. */
  raw?: string
  headers?: Readonly<Record<string, string>>
  /** Statuses beyond 2xx answered rather than thrown. */
  allow?: readonly number[]
}

export interface HttpAnswer<T> {
  status: number
  body: T
  headers: Headers
}

export const DEFAULT_TIMEOUT_MS = 10_000

const isErrorCode = (code: unknown): code is ErrorCode => typeof code === 'string' && Object.hasOwn(ERRORS, code)

export class Transport {
  readonly baseUrl: string

  constructor(
    baseUrl: string,
    readonly timeoutMs = DEFAULT_TIMEOUT_MS
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '')
  }

  /** `path` is sent as given: signed paths must reach the node byte for byte. */
  async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<HttpAnswer<T>> {
    const text = o.raw ?? (o.body !== undefined ? JSON.stringify(o.body) : undefined)
    let res: Response
    try {
      res = await fetch(this.baseUrl + path, {
        method,
        headers: { ...(text !== undefined ? { 'content-type': 'application/json' } : {}), ...o.headers },
        ...(text !== undefined ? { body: text } : {}),
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs)
      })
    } catch (err) {
      const reason = networkCause(err)
      throw new RegistryUnreachableError(
        this.baseUrl,
        reason,
        `cannot reach the registry at ${this.baseUrl} (${method} ${path}: ${reason}); is a node running there? Set --registry URL or REGISTRY_NODE_URL`,
        err
      )
    }
    const answer = await res.text()
    let parsed: unknown
    let parses = true
    try {
      parsed = answer === '' ? {} : JSON.parse(answer)
    } catch {
      parses = false
    }
    const ok = (res.status >= 200 && res.status < 300) || o.allow?.includes(res.status) === true
    if (ok && parses) return { status: res.status, body: parsed as T, headers: res.headers }
    if (ok)
      throw new RegistryRequestError(
        res.status,
        'invalid_response',
        `${method} ${path}: ${res.status} with a body that is not JSON: ${answer.slice(0, 200)}`
      )
    const body = parses && parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {}
    const sent = typeof body.error === 'string' ? body.error : null
    const code: ClientErrorCode = isErrorCode(sent) ? sent : `http_${res.status}`
    const message = typeof body.message === 'string' ? body.message : answer.slice(0, 200)
    throw new RegistryRequestError(
      res.status,
      code,
      `${method} ${path}: ${res.status} ${sent ?? code}: ${message}`,
      body
    )
  }
}
