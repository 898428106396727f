import { createPrivateKey, createPublicKey, generateKeyPairSync, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto'
import { formatKey } from './encoding.js'

// DER prefixes that wrap a raw Ed25519 seed (PKCS#8) or public key (SPKI) for node:crypto.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')

export interface KeyPair {
  seed: Buffer
  publicKey: Buffer
  privateKeyObject: KeyObject
}

export function keyPairFromSeed(seed: Uint8Array): KeyPair {
  if (seed.length !== 32) throw new TypeError('an Ed25519 seed is 32 bytes')
  const privateKeyObject = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' })
  const spki = createPublicKey(privateKeyObject).export({ format: 'der', type: 'spki' })
  return { seed: Buffer.from(seed), publicKey: spki.subarray(SPKI_PREFIX.length), privateKeyObject }
}

export function generateKeyPair(): KeyPair {
  const { privateKey } = generateKeyPairSync('ed25519')
  const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' })
  return keyPairFromSeed(pkcs8.subarray(PKCS8_PREFIX.length))
}

export function sign(keyPair: KeyPair, message: Uint8Array | string): string {
  const bytes = typeof message === 'string' ? Buffer.from(message, 'utf8') : message
  return formatKey(cryptoSign(null, bytes, keyPair.privateKeyObject))
}

/**
 * Public KeyObjects are cached: importing a key on every verify halves the verify rate
 * (STACK.md). The cache is bounded; the oldest entries go first.
 */
const MAX_CACHED_KEYS = 100_000
const keyCache = new Map<string, KeyObject>()

function publicKeyObject(raw: Buffer): KeyObject {
  const cacheKey = raw.toString('latin1')
  let key = keyCache.get(cacheKey)
  if (key === undefined) {
    // JWK import costs about a tenth of DER import here, which matters for first-seen keys.
    key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' })
    if (keyCache.size >= MAX_CACHED_KEYS) keyCache.delete(keyCache.keys().next().value as string)
    keyCache.set(cacheKey, key)
  }
  return key
}

/** Verifies a raw signature; malformed keys or signatures verify as false, never throw. */
export function verifyRaw(publicKey: Buffer, message: Uint8Array | string, signature: Buffer): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false
  const bytes = typeof message === 'string' ? Buffer.from(message, 'utf8') : message
  try {
    return cryptoVerify(null, bytes, publicKeyObject(publicKey), signature)
  } catch {
    return false
  }
}
