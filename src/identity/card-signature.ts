/**
 * Card signatures, in both forms seen in the wild (used by the node's card proxy and by callers
 * that fetch a card themselves).
 */
import { canonicalJson, goEscapedJson, numbersAsWritten, parseKeepingNumbers } from './canonical-json.js'
import { parsePublicKey, parseSignature } from './encoding.js'
import { verifyRaw } from './keys.js'

export type CardVerification = 'verified' | 'invalid' | 'unsigned'

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Canonical JSON, then its Go-escaped form when it differs. */
function canonicalForms(value: unknown): string[] {
  const plain = canonicalJson(value)
  const escaped = goEscapedJson(plain)
  return escaped === null ? [plain] : [plain, escaped]
}

/**
 * Canonical JSON of the card's text without `omit`, its numbers as written, when that differs
 * from the canonical JSON of the parsed card (a Python signer's `1.0`).
 */
function asWritten(text: string | undefined, omit: string): string[] {
  if (text === undefined || !/[0-9](\.0|[eE][+-]?[0-9])/.test(text)) return []
  const parsed = parseKeepingNumbers(text)
  if (!isObject(parsed)) return []
  const { [omit]: _omitted, ...rest } = parsed
  const canonical = canonicalJson(rest)
  const written = numbersAsWritten(canonical)
  return written === canonical ? [] : [written]
}

function base64urlBytes(text: unknown): Buffer | null {
  if (typeof text !== 'string' || !/^[A-Za-z0-9_-]*$/.test(text)) return null
  return Buffer.from(text, 'base64url')
}

const ED25519_ALGS = new Set(['EdDSA', 'Ed25519'])

/**
 * Checks a card's signatures against the entity's key, in both forms seen in the wild:
 * the spec's `signature` ('ed25519:<base64>') over canonical JSON of the card without it, and
 * A2A's JWS `signatures[]` ({protected, signature}, detached payload) whose signing input is
 * `protected '.' base64url(canonical JSON of the card without signatures)`, or that JSON itself
 * (RFC 7797's unencoded payload, as the zyndai SDKs sign it). One valid signature
 * makes the card verified; signatures of which none verifies make it invalid.
 */
export function verifyCard(
  card: unknown,
  publicKeyText: string,
  text?: string
): { verification: CardVerification; note?: string } {
  if (!isObject(card)) return { verification: 'unsigned' }
  const hasSpec = 'signature' in card
  const hasJws = 'signatures' in card
  if (!hasSpec && !hasJws) return { verification: 'unsigned', note: 'the card carries no signature' }
  const key = parsePublicKey(publicKeyText)
  if (key === null) return { verification: 'invalid', note: "the entity's registered public key is malformed" }
  const problems: string[] = []

  if (hasSpec) {
    const signature = typeof card.signature === 'string' ? parseSignature(card.signature) : null
    if (signature === null) {
      problems.push('signature is not ed25519:<base64 of 64 bytes>')
    } else {
      const { signature: _signature, ...rest } = card
      if (
        [...canonicalForms(rest), ...asWritten(text, 'signature')].some(message => verifyRaw(key, message, signature))
      ) {
        return {
          verification: 'verified',
          note: 'signature (canonical JSON of the card without signature) verifies against the registered key'
        }
      }
      problems.push('signature does not verify against the registered key')
    }
  }

  if (hasJws) {
    const list = card.signatures
    if (!Array.isArray(list) || list.length === 0) {
      problems.push('signatures is not a non-empty array')
    } else {
      const { signatures: _signatures, ...rest } = card
      const payloads = [...canonicalForms(rest), ...asWritten(text, 'signatures')]
      for (const [i, entry] of list.entries()) {
        const outcome = verifyJws(entry, payloads, key)
        if (outcome === null)
          return { verification: 'verified', note: `signatures[${i}] (JWS, EdDSA) verifies against the registered key` }
        problems.push(`signatures[${i}]: ${outcome}`)
      }
    }
  }
  return { verification: 'invalid', note: problems.join('; ') }
}

/** null when the JWS entry verifies over one of the payloads, else why not. */
function verifyJws(entry: unknown, payloads: string[], key: Buffer): string | null {
  if (!isObject(entry)) return 'not an object'
  const protectedText = entry.protected
  const headerBytes = base64urlBytes(protectedText)
  if (headerBytes === null || headerBytes.length === 0) return 'protected is not base64url'
  let header: unknown
  try {
    header = JSON.parse(headerBytes.toString('utf8'))
  } catch {
    return 'protected header is not JSON'
  }
  if (!isObject(header)) return 'protected header is not a JSON object'
  if (typeof header.alg !== 'string' || !ED25519_ALGS.has(header.alg))
    return `alg ${JSON.stringify(header.alg ?? null)} is not EdDSA`
  const signature = base64urlBytes(entry.signature)
  if (signature === null || signature.length !== 64) return 'signature is not a base64url Ed25519 signature'
  // RFC 7797: with "b64": false the payload enters the signing input as is. The zyndai SDKs sign
  // it as is without saying so (no b64 header): that input is tried after the standard one.
  const inputs = payloads.flatMap(payload =>
    header.b64 === false ? [payload] : [Buffer.from(payload, 'utf8').toString('base64url'), payload]
  )
  for (const payload of inputs) if (verifyRaw(key, `${protectedText as string}.${payload}`, signature)) return null
  return 'does not verify against the registered key'
}
