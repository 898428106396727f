import { invalidField } from '../errors.js'

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
