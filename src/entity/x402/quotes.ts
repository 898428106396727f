/**
 * Quote nonces: every 402 carries a fresh nonce (in `accepts[].extra.nonce`, which x402 clients
 * return untouched in `accepted`), and a payment must carry one this entity issued, unexpired.
 * A nonce is self-authenticating (its expiry, 12 random bytes and an HMAC over them and the
 * quoted requirements, under a key derived from the entity's own key), so issuing one stores
 * nothing: unpaid requests cost no writes, and quotes stay valid across restarts. Used nonces are
 * remembered by the ledger.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { canonicalJson } from '../../identity/canonical-json.js'

const EXPIRY_BYTES = 4
const RANDOM_BYTES = 12
const MAC_BYTES = 16

export type QuoteCheck = { ok: true; expiresAt: number } | { ok: false; reason: 'malformed' | 'unknown' | 'expired' }

export class QuoteIssuer {
  private readonly key: Buffer

  /** `secret`: the entity's Ed25519 seed; the MAC key is derived from it, never the seed itself. */
  constructor(
    secret: Uint8Array,
    private readonly ttlSeconds: number
  ) {
    this.key = createHmac('sha256', secret).update('registry-node x402 quote nonce v1').digest()
  }

  /** A new nonce for these requirements (without the nonce), valid for the quote's lifetime. */
  issue(requirements: unknown, now = Date.now()): `0x${string}` {
    const head = Buffer.alloc(EXPIRY_BYTES + RANDOM_BYTES)
    head.writeUInt32BE(Math.floor(now / 1000) + this.ttlSeconds, 0)
    randomBytes(RANDOM_BYTES).copy(head, EXPIRY_BYTES)
    return `0x${Buffer.concat([head, this.mac(head, requirements)]).toString('hex')}`
  }

  /** Whether `nonce` was issued here for exactly these requirements, and is unexpired. */
  check(nonce: unknown, requirements: unknown, now = Date.now()): QuoteCheck {
    if (typeof nonce !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(nonce)) return { ok: false, reason: 'malformed' }
    const bytes = Buffer.from(nonce.slice(2), 'hex')
    const head = bytes.subarray(0, EXPIRY_BYTES + RANDOM_BYTES)
    if (!timingSafeEqual(bytes.subarray(EXPIRY_BYTES + RANDOM_BYTES), this.mac(head, requirements)))
      return { ok: false, reason: 'unknown' }
    const expiresAt = head.readUInt32BE(0) * 1000
    return expiresAt <= now ? { ok: false, reason: 'expired' } : { ok: true, expiresAt }
  }

  private mac(head: Buffer, requirements: unknown): Buffer {
    return createHmac('sha256', this.key)
      .update(head)
      .update(canonicalJson(requirements))
      .digest()
      .subarray(0, MAC_BYTES)
  }
}
