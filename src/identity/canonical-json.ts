/**
 * Canonical JSON: object keys sorted by UTF-16 code unit (recursively), compact separators,
 * strings written as JSON.stringify writes them. Undefined members are dropped, as JSON does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map(v => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`
  const obj = value as Record<string, unknown>
  const parts: string[] = []
  for (const key of Object.keys(obj).sort()) {
    const v = obj[key]
    if (v === undefined || typeof v === 'function') continue
    parts.push(`${JSON.stringify(key)}:${canonicalJson(v)}`)
  }
  return `{${parts.join(',')}}`
}

// These characters can only occur inside JSON strings, so a plain replace is exact.
const GO_ESCAPES: Record<string, string> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029'
}
const GO_ESCAPABLE = /[<>&\u2028\u2029]/g

/**
 * The form Go tools sometimes sign: `< > &` and U+2028/U+2029 escaped. Returns null when the
 * text has none of them (the escaped form then equals the plain one, so there is nothing to retry).
 */
export function goEscapedJson(canonical: string): string | null {
  if (!/[<>&\u2028\u2029]/.test(canonical)) return null
  return canonical.replace(GO_ESCAPABLE, ch => GO_ESCAPES[ch] as string)
}

/** A copy of an object without its `signature` member. */
export function withoutSignature<T extends Record<string, unknown>>(body: T): Omit<T, 'signature'> {
  const { signature: _signature, ...rest } = body
  return rest
}
