/**
 * Wire forms of keys and signatures: `ed25519:` + standard base64 with padding.
 * Public keys are accepted with or without the prefix (deployed clients send both);
 * signatures must carry it (docs/compatibility.md).
 */
import { bufferView } from '../util/buffer-view.js'

export const KEY_PREFIX = 'ed25519:'

const BASE64_32 = /^[A-Za-z0-9+/]{43}=$/
const BASE64_64 = /^[A-Za-z0-9+/]{86}==$/

/** Raw 32-byte public key from its wire form, or null when malformed. */
export function parsePublicKey(text: string): Buffer | null {
  const b64 = text.startsWith(KEY_PREFIX) ? text.slice(KEY_PREFIX.length) : text
  return BASE64_32.test(b64) ? Buffer.from(b64, 'base64') : null
}

/** Raw 64-byte signature from its wire form (prefix mandatory), or null when malformed. */
export function parseSignature(text: string): Buffer | null {
  if (!text.startsWith(KEY_PREFIX)) return null
  const b64 = text.slice(KEY_PREFIX.length)
  return BASE64_64.test(b64) ? Buffer.from(b64, 'base64') : null
}

export function formatKey(raw: Uint8Array): string {
  return KEY_PREFIX + bufferView(raw).toString('base64')
}

/** Canonical stored form of a public key string: always prefixed. */
export function normalizePublicKey(text: string): string | null {
  const raw = parsePublicKey(text)
  return raw ? formatKey(raw) : null
}
