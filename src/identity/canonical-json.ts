/**
 * Canonical JSON: object keys sorted by UTF-16 code unit (recursively), compact separators,
 * strings written as JSON.stringify writes them. Undefined members are dropped, as JSON does.
 * Built as one string, without an array per object: every write's signature checks and seal run
 * it (about 3 % of a registration's CPU with the arrays).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) {
    let out = '['
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i]
      if (i > 0) out += ','
      out += v === undefined ? 'null' : canonicalJson(v)
    }
    return `${out}]`
  }
  const obj = value as Record<string, unknown>
  const keys = sortedKeys(obj)
  let out = '{'
  for (const key of keys) {
    const v = obj[key]
    if (v === undefined || typeof v === 'function') continue
    if (out.length > 1) out += ','
    out += `${JSON.stringify(key)}:${canonicalJson(v)}`
  }
  return `${out}}`
}

/**
 * An object's keys by UTF-16 code unit, as `sort()` orders strings. Objects are small (a request
 * body, an operation: a dozen keys, often nearly in order), where an insertion sort in place beats
 * `Array.prototype.sort`, which copies the array first (about 4 KB a registration).
 */
function sortedKeys(obj: Record<string, unknown>): string[] {
  const keys = Object.keys(obj)
  if (keys.length > INSERTION_SORT_MAX) return keys.sort()
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i] as string
    let j = i - 1
    while (j >= 0 && (keys[j] as string) > key) {
      keys[j + 1] = keys[j] as string
      j--
    }
    keys[j + 1] = key
  }
  return keys
}

const INSERTION_SORT_MAX = 32

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

/** A private-use character: JSON strings may hold it as it is (a control character they may not). */
const NUMBER_MARK = '\ue000n:'

/**
 * Parses JSON text keeping each number as it was written (`1.0` stays `1.0`, where JSON.parse
 * would make it `1`): numbers become marked strings that `numbersAsWritten` turns back. Python's
 * json writes a float 1 as `1.0` and the Python SDK signs its cards so, which canonical JSON of
 * the parsed value cannot reproduce. Null when the text is not JSON.
 */
export function parseKeepingNumbers(text: string): unknown {
  let out = ''
  let from = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string
    if (inString) {
      if (ch === '\\') i++
      else if (ch === '"') inString = false
      continue
    }
    if (ch === '"') inString = true
    else if (ch === '-' || (ch >= '0' && ch <= '9')) {
      let end = i + 1
      while (end < text.length && /[0-9eE.+-]/.test(text[end] as string)) end++
      out += `${text.slice(from, i)}"${NUMBER_MARK}${text.slice(i, end)}"`
      from = end
      i = end - 1
    }
  }
  try {
    return JSON.parse(out + text.slice(from))
  } catch {
    return null
  }
}

/** Canonical JSON of a value from parseKeepingNumbers, its numbers written as they were. */
export function numbersAsWritten(canonical: string): string {
  return canonical.replace(/"\ue000n:([0-9eE.+-]+)"/g, '$1')
}
