/**
 * `x-zynd-auth`: the signature block the public TypeScript and Python SDKs put in an A2A
 * message's `metadata["x-zynd-auth"]`:
 *   {v: 1, entity_id, public_key, nonce (base64 of 16 random bytes), issued_at, expires_at
 *    (issued_at + 60 s), fqan?, developer_proof? {developer_public_key, entity_index,
 *    developer_signature}, signature: "ed25519:<base64>"}
 * The signature covers "ZYND-A2A-MSG-v1\n" + canonical JSON of the whole message with the block's
 * `signature` set to "" (keys sorted by UTF-16 code unit, no whitespace, JSON.stringify strings).
 * Verification follows the SDKs: version, window (expired, or issued over 60 s in the future),
 * entity_id = the key's ID, the signature, the developer proof when present; and, after the
 * signature (so forgeries cannot burn another sender's nonces), the nonce once per sender.
 */
import { randomBytes } from 'node:crypto'
import { canonicalJson } from '../identity/canonical-json.js'
import { formatKey, parsePublicKey, parseSignature } from '../identity/encoding.js'
import { developerProofMessage } from '../identity/hd.js'
import { deriveId } from '../identity/ids.js'
import { sign, verifyRaw, type KeyPair } from '../identity/keys.js'
import type { AuthMode } from './message-auth.js'
import type { ReplayCache } from './replay-cache.js'

export const ZYND_AUTH_KEY = 'x-zynd-auth'
export const ZYND_AUTH_DOMAIN_TAG = 'ZYND-A2A-MSG-v1\n'
const DEFAULT_TTL_MS = 60_000

export interface ZyndAuth {
  v: 1
  entity_id: string
  public_key: string
  nonce: string
  issued_at: string
  expires_at: string
  fqan?: string
  developer_proof?: { developer_public_key: string; entity_index: number; developer_signature: string }
  signature: string
}

/** JSON-RPC error codes of the SDKs' A2A servers (answered with HTTP 200). */
export const A2A_AUTH_FAILED = -32100
export const A2A_REPLAY_DETECTED = -32101
export const A2A_AUTH_EXPIRED = -32102

export class A2AAuthError extends Error {
  override name = 'A2AAuthError'
  constructor(
    readonly rpcCode: number,
    readonly reason: string,
    message: string
  ) {
    super(message)
  }
}

type Message = Record<string, unknown> & { metadata?: Record<string, unknown> }

function signingInput(message: Message): Buffer {
  return Buffer.concat([Buffer.from(ZYND_AUTH_DOMAIN_TAG, 'utf8'), Buffer.from(canonicalJson(message), 'utf8')])
}

export interface A2ASignOptions {
  keyPair: KeyPair
  entityId: string
  fqan?: string
  developerProof?: ZyndAuth['developer_proof']
  ttlMs?: number
  now?: Date
  /** Fixed nonce (test vectors); random otherwise. */
  nonce?: string
}

/** Adds a signed `x-zynd-auth` block to `message` (in place) and returns it. */
export function signA2AMessage<M extends Message>(message: M, o: A2ASignOptions): M {
  const issued = o.now ?? new Date()
  const auth: ZyndAuth = {
    v: 1,
    entity_id: o.entityId,
    public_key: formatKey(o.keyPair.publicKey),
    nonce: o.nonce ?? randomBytes(16).toString('base64'),
    issued_at: issued.toISOString(),
    expires_at: new Date(issued.getTime() + (o.ttlMs ?? DEFAULT_TTL_MS)).toISOString(),
    signature: ''
  }
  if (o.fqan) auth.fqan = o.fqan
  if (o.developerProof) auth.developer_proof = o.developerProof
  message.metadata = { ...(message.metadata ?? {}), [ZYND_AUTH_KEY]: auth }
  auth.signature = sign(o.keyPair, signingInput(message))
  return message
}

export interface A2AVerification {
  signed: boolean
  entityId: string | null
  fqan: string | null
}

export interface A2AVerifyOptions {
  mode: AuthMode
  replays: ReplayCache
  skewMs?: number
  now?: number
}

/** Checks the block per `mode`; throws A2AAuthError with the SDKs' JSON-RPC code. */
export function verifyA2AMessage(message: Message, o: A2AVerifyOptions): A2AVerification {
  const auth = message.metadata?.[ZYND_AUTH_KEY]
  if (auth === undefined || auth === null) {
    if (o.mode === 'strict')
      throw new A2AAuthError(
        A2A_AUTH_FAILED,
        'missing_auth',
        'x-zynd-auth is required (auth_mode strict) but the message carries none.'
      )
    return { signed: false, entityId: null, fqan: null }
  }
  if (typeof auth !== 'object' || Array.isArray(auth))
    throw new A2AAuthError(A2A_AUTH_FAILED, 'bad_signature', 'x-zynd-auth is not an object.')
  const a = auth as Partial<Record<keyof ZyndAuth, unknown>>
  if (a.v !== 1)
    throw new A2AAuthError(
      A2A_AUTH_FAILED,
      'unsupported_version',
      `x-zynd-auth.v=${String(a.v)} is not supported (expected 1).`
    )
  const issued = typeof a.issued_at === 'string' ? Date.parse(a.issued_at) : NaN
  const expires = typeof a.expires_at === 'string' ? Date.parse(a.expires_at) : NaN
  const now = o.now ?? Date.now()
  const skew = o.skewMs ?? DEFAULT_TTL_MS
  if (Number.isNaN(issued) || Number.isNaN(expires))
    throw new A2AAuthError(
      A2A_AUTH_EXPIRED,
      'expired_or_skewed',
      'x-zynd-auth.issued_at / expires_at are not RFC 3339 timestamps.'
    )
  if (now > expires)
    throw new A2AAuthError(A2A_AUTH_EXPIRED, 'expired_or_skewed', `x-zynd-auth expired at ${String(a.expires_at)}.`)
  if (now < issued - skew)
    throw new A2AAuthError(
      A2A_AUTH_EXPIRED,
      'expired_or_skewed',
      `x-zynd-auth was issued in the future beyond the clock skew (${String(a.issued_at)}).`
    )
  const key = typeof a.public_key === 'string' ? parsePublicKey(a.public_key) : null
  const entityId = typeof a.entity_id === 'string' ? a.entity_id : ''
  if (key === null || (entityId !== deriveId('agent', key) && entityId !== deriveId('service', key))) {
    throw new A2AAuthError(
      A2A_AUTH_FAILED,
      'entity_id_mismatch',
      'x-zynd-auth.entity_id is not the ID of x-zynd-auth.public_key.'
    )
  }
  const signature = typeof a.signature === 'string' ? parseSignature(a.signature) : null
  const blanked = structuredClone(message)
  ;(blanked.metadata![ZYND_AUTH_KEY] as Record<string, unknown>).signature = ''
  if (signature === null || !verifyRaw(key, signingInput(blanked), signature)) {
    throw new A2AAuthError(A2A_AUTH_FAILED, 'bad_signature', 'x-zynd-auth signature does not verify.')
  }
  if (a.developer_proof !== undefined && !developerProofVerifies(a.developer_proof, key)) {
    throw new A2AAuthError(
      A2A_AUTH_FAILED,
      'bad_developer_proof',
      "x-zynd-auth.developer_proof does not verify against the sender's key."
    )
  }
  if (typeof a.nonce !== 'string' || o.replays.seen(entityId, a.nonce, expires, now)) {
    throw new A2AAuthError(
      A2A_REPLAY_DETECTED,
      'replay_detected',
      `nonce ${String(a.nonce)} already used by ${entityId}.`
    )
  }
  return { signed: true, entityId, fqan: typeof a.fqan === 'string' ? a.fqan : null }
}

function developerProofVerifies(proof: unknown, agentKey: Buffer): boolean {
  if (proof === null || typeof proof !== 'object') return false
  const p = proof as Record<string, unknown>
  const developerKey = typeof p.developer_public_key === 'string' ? parsePublicKey(p.developer_public_key) : null
  const signature = typeof p.developer_signature === 'string' ? parseSignature(p.developer_signature) : null
  const index = p.entity_index
  if (
    developerKey === null ||
    signature === null ||
    typeof index !== 'number' ||
    !Number.isInteger(index) ||
    index < 0 ||
    index > 0xffff_ffff
  )
    return false
  return verifyRaw(developerKey, developerProofMessage(agentKey, index), signature)
}
