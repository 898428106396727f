import { RegistryError } from '../../errors.js'
import { ID_PATTERNS } from '../../identity/ids.js'
import { normalizePublicKey } from '../../identity/encoding.js'
import type { RequestContext } from '../http.js'

/** An integer query parameter within bounds, or the default when absent. */
export function intParam(query: URLSearchParams, name: string, bounds: { min: number; max?: number; default: number }): number {
  const text = query.get(name)
  if (text === null || text === '') return bounds.default
  const n = Number(text)
  if (!Number.isInteger(n) || n < bounds.min || (bounds.max !== undefined && n > bounds.max)) {
    throw new RegistryError('invalid_query', `${name} must be an integer${bounds.max === undefined ? ` of at least ${bounds.min}` : ` from ${bounds.min} to ${bounds.max}`}.`, name)
  }
  return n
}

export function entityIdParam(ctx: RequestContext): string {
  const id = ctx.params.entity_id ?? ''
  if (!ID_PATTERNS.entity.test(id)) throw new RegistryError('invalid_id', `${id === '' ? 'The entity ID is missing' : `"${id}" is not an entity ID`}: expected zns:<32 hex> or zns:svc:<32 hex>.`, 'entity_id')
  return id
}

export function developerIdParam(ctx: RequestContext): string {
  const id = ctx.params.developer_id ?? ''
  if (!ID_PATTERNS.developer.test(id)) throw new RegistryError('invalid_id', `${id === '' ? 'The developer ID is missing' : `"${id}" is not a developer ID`}: expected zns:dev:<32 hex>.`, 'developer_id')
  return id
}

/** The public key a registration claims to be signed by: what its write limit counts against. */
export function bodyPublicKey(ctx: RequestContext): string | undefined {
  const body = ctx.json()
  const key = body !== null && typeof body === 'object' ? (body as Record<string, unknown>).public_key : undefined
  return typeof key === 'string' ? normalizePublicKey(key) ?? key : undefined
}

export function credentials(ctx: RequestContext) {
  return { authorization: ctx.headers.authorization, xSignature: ctx.headers['x-signature'] }
}
