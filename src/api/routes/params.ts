import { RegistryError } from '../../errors.js'
import { ID_PATTERNS } from '../../identity/ids.js'
import { parseAuthorization } from '../../identity/authorization.js'
import { normalizePublicKey, parseSignature } from '../../identity/encoding.js'
import type { Credential, WriteRequest } from '../../services/registry/writes.js'
import { handleProblem, isValidName } from '../../services/registry/naming.js'
import type { RequestContext } from '../../http/http.js'

/**
 * An integer query parameter, the default when absent. Out of bounds it is clamped to them, as the
 * origin registry does (deployed clients send limits far above ours); replies state what applied.
 * Only text that is not an integer is refused.
 */
export function intParam(
  query: URLSearchParams,
  name: string,
  bounds: { min: number; max?: number; default: number }
): number {
  const text = query.get(name)
  if (text === null || text === '') return bounds.default
  const n = Number(text)
  if (!Number.isInteger(n)) throw new RegistryError('invalid_query', `${name} must be an integer.`, name)
  return Math.min(Math.max(n, bounds.min), bounds.max ?? Number.MAX_SAFE_INTEGER)
}

/** A handle from the path, lowercased; one that breaks the handle format is refused before any lookup. */
export function handleParam(ctx: RequestContext, name = 'handle'): string {
  const handle = (ctx.params[name] ?? '').toLowerCase()
  if (handleProblem(handle) === 'invalid') throw new RegistryError('handle_invalid', undefined, name)
  return handle
}

/** The `<handle>/<name>` of a names route, lowercased and checked like handleParam. */
export function nameParams(ctx: RequestContext): { handle: string; name: string } {
  const name = (ctx.params.entity ?? '').toLowerCase()
  if (!isValidName(name)) throw new RegistryError('name_invalid', undefined, 'entity')
  return { handle: handleParam(ctx, 'developer'), name }
}

export function entityIdParam(ctx: RequestContext): string {
  const id = ctx.params.entity_id ?? ''
  if (!ID_PATTERNS.entity.test(id))
    throw new RegistryError(
      'invalid_id',
      `${id === '' ? 'The entity ID is missing' : `"${id}" is not an entity ID`}: expected zns:<32 hex> or zns:svc:<32 hex>.`,
      'entity_id'
    )
  return id
}

export function developerIdParam(ctx: RequestContext): string {
  const id = ctx.params.developer_id ?? ''
  if (!ID_PATTERNS.developer.test(id))
    throw new RegistryError(
      'invalid_id',
      `${id === '' ? 'The developer ID is missing' : `"${id}" is not a developer ID`}: expected zns:dev:<32 hex>.`,
      'developer_id'
    )
  return id
}

/** The public key a registration claims to be signed by: what its write limit counts against. */
export function bodyPublicKey(ctx: RequestContext): string | undefined {
  const body = ctx.json()
  const key = body !== null && typeof body === 'object' ? (body as Record<string, unknown>).public_key : undefined
  return typeof key === 'string' ? (normalizePublicKey(key) ?? key) : undefined
}

/** The signature a request carries in a header, parsed here once: Authorization first, then (deletions) X-Signature. */
function headerCredential(ctx: RequestContext, xSignature: boolean): Credential | null {
  const authorization = ctx.headers.authorization
  if (authorization) {
    const auth = parseAuthorization(authorization)
    return auth ? { carrier: 'authorization', ...auth } : { carrier: 'malformed', header: 'Authorization' }
  }
  const header = xSignature ? ctx.headers['x-signature'] : undefined
  if (!header) return null
  const text = header.replace(/^bearer\s+/i, '').trim()
  const signature = parseSignature(text)
  return signature ? { carrier: 'x-signature', signature, text } : { carrier: 'malformed', header: 'X-Signature' }
}

/** A body's own `signature` member, when it has one. */
function bodyCredential(body: unknown): Credential | null {
  const text = body !== null && typeof body === 'object' ? (body as { signature?: unknown }).signature : undefined
  return typeof text === 'string' ? { carrier: 'body', signature: parseSignature(text), text } : null
}

/** A write signed in its own body (a registration, claim or binding), as the services take it. */
export function bodySignedWrite(ctx: RequestContext): WriteRequest {
  return { raw: ctx.raw, body: ctx.json(), path: ctx.path }
}

/** An update: signed in its Authorization header, else by its body's own `signature`. */
export function signedWrite(ctx: RequestContext): WriteRequest {
  const body = ctx.json()
  return { raw: ctx.raw, body, path: ctx.path, credential: headerCredential(ctx, false) ?? bodyCredential(body) }
}

/**
 * A deletion or release: no body, signed in its headers over the path, the ID or the released
 * name, or (replay-proof) over the path with a `timestamp` query: the query then belongs to what
 * was signed, and travels with the operation.
 */
export function signedDeletion(ctx: RequestContext): Omit<WriteRequest, 'raw' | 'body'> {
  const path = ctx.query.has('timestamp') ? `${ctx.path}?${ctx.rawQuery}` : ctx.path
  return { path, credential: headerCredential(ctx, true) }
}
