import { RegistryError, invalidField } from '../../errors.js'

/** Checks an absolute URL; entity URLs must be HTTPS, other reachability URLs HTTP(S). */
export function checkUrl(field: string, value: string, httpsOnly: boolean): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw invalidField(field, 'must be an absolute URL')
  }
  if (httpsOnly && url.protocol !== 'https:') throw invalidField(field, 'must be an HTTPS URL')
  if (!httpsOnly && url.protocol !== 'https:' && url.protocol !== 'http:')
    throw invalidField(field, 'must be an HTTP or HTTPS URL')
  return value
}

export function jsonSize(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value))
}

/** Two spellings of one field: either may be sent; when both are, they must agree. */
export function eitherSpelling<T>(
  a: T | null | undefined,
  b: T | null | undefined,
  fieldA: string,
  fieldB: string
): T | undefined {
  if (a !== undefined && a !== null && b !== undefined && b !== null && JSON.stringify(a) !== JSON.stringify(b)) {
    throw invalidField(fieldB, `conflicts with ${fieldA}; send one of them`)
  }
  return a ?? b ?? undefined
}

const BOOKKEEPING = new Set(['signature', 'updated_at'])

/** Fields an update left different: what a client's PUT did (none, when it sent nothing to change). */
export function changedFields<T extends object>(before: T, after: T): string[] {
  return Object.keys(after).filter(
    key =>
      !BOOKKEEPING.has(key) &&
      JSON.stringify((before as Record<string, unknown>)[key]) !==
        JSON.stringify((after as Record<string, unknown>)[key])
  )
}

/**
 * A client's update must name a field to change: a body of nothing but its signature (a client
 * that lost its fields on the way) would otherwise answer 200 and look like success.
 */
export function requireSomethingToUpdate(body: Record<string, unknown>, fields: readonly string[]): void {
  if (!fields.some(field => body[field] !== undefined && body[field] !== null))
    throw new RegistryError(
      'nothing_to_update',
      `The body names no field to change; send at least one of ${fields.join(', ')}.`,
      'body'
    )
}
