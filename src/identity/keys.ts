import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign as cryptoSign,
  verify as cryptoVerify,
  type KeyObject
} from 'node:crypto'
import { createRequire } from 'node:module'
import { BoundedMap } from '../util/bounded-map.js'
import { formatKey } from './encoding.js'

/** The parts of sodium-native (libsodium) used here. */
interface Sodium {
  crypto_sign_detached(signature: Buffer, message: Uint8Array, secretKey: Buffer): void
  crypto_sign_verify_detached(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean
}

/**
 * libsodium signs in about 19 µs and verifies in about 50 µs here, OpenSSL (node:crypto) in 48 and
 * 125 µs: two verifications are most of a registration's cost (issue 16). It is an optional
 * dependency (prebuilt for the common platforms); without it, or with REGISTRY_NODE_CRYPTO=node,
 * node:crypto does the work. Both follow RFC 8032 and agree on every valid signature; libsodium also
 * refuses small-order keys and non-canonical encodings, which no honest signer produces.
 */
function loadSodium(): Sodium | null {
  if (process.env.REGISTRY_NODE_CRYPTO === 'node') return null
  try {
    return createRequire(import.meta.url)('sodium-native') as Sodium
  } catch {
    return null
  }
}
const sodium = loadSodium()

/** Which library signs and verifies: `libsodium` or `node:crypto`. */
export const ED25519_BACKEND: 'libsodium' | 'node:crypto' = sodium ? 'libsodium' : 'node:crypto'

// The DER prefix that wraps a raw Ed25519 seed (PKCS#8) for node:crypto.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

export interface KeyPair {
  seed: Buffer
  publicKey: Buffer
  privateKeyObject: KeyObject
  /** libsodium's secret key: seed ‖ public key. */
  secretKey: Buffer
}

export function keyPairFromSeed(seed: Uint8Array): KeyPair {
  if (seed.length !== 32) throw new TypeError('an Ed25519 seed is 32 bytes')
  // A JWK import costs about a tenth of a PKCS#8 DER import (OpenSSL 3's decoders); Node derives
  // the key from `d` alone (the unit tests check it against RFC 8032's vectors).
  const privateKeyObject = createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', d: Buffer.from(seed).toString('base64url'), x: '' },
    format: 'jwk'
  })
  const publicKey = Buffer.from(createPublicKey(privateKeyObject).export({ format: 'jwk' }).x as string, 'base64url')
  return { seed: Buffer.from(seed), publicKey, privateKeyObject, secretKey: Buffer.concat([seed, publicKey]) }
}

export function generateKeyPair(): KeyPair {
  const { privateKey } = generateKeyPairSync('ed25519')
  const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' })
  return keyPairFromSeed(pkcs8.subarray(PKCS8_PREFIX.length))
}

export function sign(keyPair: KeyPair, message: Uint8Array | string): string {
  const bytes = typeof message === 'string' ? Buffer.from(message, 'utf8') : message
  if (sodium) {
    const signature = Buffer.allocUnsafe(64)
    sodium.crypto_sign_detached(signature, bytes, keyPair.secretKey)
    return formatKey(signature)
  }
  return formatKey(cryptoSign(null, bytes, keyPair.privateKeyObject))
}

/**
 * Public KeyObjects are cached: importing a key on every verify halves the verify rate
 * (docs/compatibility.md). The cache is bounded; the oldest entries go first.
 */
const MAX_CACHED_KEYS = 100_000
const keyCache = new BoundedMap<string, KeyObject>(MAX_CACHED_KEYS)

function publicKeyObject(raw: Buffer): KeyObject {
  const cacheKey = raw.toString('latin1')
  let key = keyCache.get(cacheKey)
  if (key === undefined) {
    // JWK import costs about a tenth of DER import here, which matters for first-seen keys.
    key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' })
    keyCache.set(cacheKey, key)
  }
  return key
}

/** Verifies a raw signature; malformed keys or signatures verify as false, never throw. */
export function verifyRaw(publicKey: Buffer, message: Uint8Array | string, signature: Buffer): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false
  const bytes = typeof message === 'string' ? Buffer.from(message, 'utf8') : message
  if (sodium) return sodium.crypto_sign_verify_detached(signature, bytes, publicKey)
  try {
    return cryptoVerify(null, bytes, publicKeyObject(publicKey), signature)
  } catch {
    return false
  }
}
