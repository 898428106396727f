/**
 * Who sent an AgentMessage, per the entity's `auth_mode`:
 *   strict      unsigned → 401 signature_required; invalid → 401
 *   permissive  unsigned → accepted, the handler is told signed: false; invalid → 401
 * A signed message must carry a timestamp within the skew window of this entity's clock (401
 * timestamp_out_of_window otherwise), and its message_id is accepted once per sender within that
 * window (409 message_replayed). The replay check runs after the signature check, so forged
 * messages cannot use up another sender's IDs.
 */
import { RegistryError } from '../errors.js'
import { goEscapedJson } from '../identity/canonical-json.js'
import { parseSignature } from '../identity/encoding.js'
import { verifyRaw } from '../identity/keys.js'
import { agentMessageSignable, messageTime, type AgentMessage } from './agent-message.js'
import type { ReplayCache } from './replay-cache.js'
import type { SenderKeys } from './sender-keys.js'

export type AuthMode = 'strict' | 'permissive'
export const AUTH_MODES: readonly AuthMode[] = ['strict', 'permissive']

export interface SenderCheck {
  /** True when the message carried a signature that verified. */
  signed: boolean
  /** The verified sender, or null for an unsigned message. */
  senderId: string | null
}

export interface MessageAuthOptions {
  mode: AuthMode
  skewMs: number
  keys: SenderKeys
  replays: ReplayCache
  now?: () => number
}

export class MessageAuthenticator {
  constructor(private readonly o: MessageAuthOptions) {}

  get mode(): AuthMode {
    return this.o.mode
  }

  /** Checks `raw` (the body as received) whose parsed form is `message`; throws a RegistryError. */
  async check(raw: Record<string, unknown>, message: AgentMessage): Promise<SenderCheck> {
    if (raw.signature === undefined || raw.signature === null) {
      if (this.o.mode === 'strict')
        throw new RegistryError(
          'signature_required',
          "This entity accepts signed messages only (auth_mode strict): sign the message with the sender's key.",
          'signature'
        )
      return { signed: false, senderId: null }
    }
    const signature = typeof raw.signature === 'string' ? parseSignature(raw.signature) : null
    if (signature === null)
      throw new RegistryError('signature_invalid', 'signature is not ed25519:<base64 of 64 bytes>.', 'signature')
    const now = (this.o.now ?? Date.now)()
    const sent = messageTime(message.timestamp)
    if (sent === null || Math.abs(now - sent) > this.o.skewMs) {
      throw new RegistryError(
        'timestamp_out_of_window',
        `A signed message carries its timestamp, within ${this.o.skewMs / 1000} s of this entity's clock (${new Date(now).toISOString()}).`,
        'timestamp'
      )
    }
    const key = await this.o.keys.resolve(message.sender_id, raw.sender_public_key)
    const signable = agentMessageSignable(raw)
    const escaped = goEscapedJson(signable)
    if (!verifyRaw(key, signable, signature) && (escaped === null || !verifyRaw(key, escaped, signature))) {
      throw new RegistryError(
        'signature_invalid',
        `The signature does not verify against the key of ${message.sender_id} over the canonical JSON of the message without signature.`,
        'signature'
      )
    }
    if (this.o.replays.seen(message.sender_id, message.message_id, sent + this.o.skewMs, now)) {
      throw new RegistryError(
        'message_replayed',
        `${message.sender_id} already sent message ${message.message_id}.`,
        'message_id'
      )
    }
    return { signed: true, senderId: message.sender_id }
  }
}
