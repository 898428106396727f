/**
 * AgentMessage: the envelope one entity sends another on `/webhook` and `/webhook/sync`.
 *
 * Wire fields: message_id, sender_id, receiver_id, content (deployed SDKs also send `prompt`),
 * message_type, conversation_id, in_reply_to, metadata, timestamp (ISO 8601; the deployed SDKs
 * send unix seconds as a number, accepted too), sender_public_key (optional) and signature: the
 * sender's Ed25519 over the canonical JSON of the message without `signature`. Unknown members
 * are kept (they are covered by the signature).
 */
import { randomUUID } from 'node:crypto'
import { canonicalJson, withoutSignature } from '../identity/canonical-json.js'
import { formatKey } from '../identity/encoding.js'
import { sign, type KeyPair } from '../identity/keys.js'
import { invalidField } from '../errors.js'

export interface AgentMessage {
  message_id: string
  sender_id: string
  receiver_id?: string
  content: string
  message_type: string
  conversation_id: string
  in_reply_to?: string
  metadata: Record<string, unknown>
  /** ISO 8601, or unix seconds as the deployed SDKs send it. */
  timestamp?: string | number
  sender_public_key?: string
  signature?: string
  [extra: string]: unknown
}

const MAX_ID_LENGTH = 256

/**
 * The message as received, checked and normalised for the handler: `content` from `content`,
 * else `prompt` (an object is kept as its JSON text), the SDKs' defaults for absent fields.
 * The signed bytes are computed from the body as received, never from this normalised copy.
 */
export function parseAgentMessage(body: unknown): AgentMessage {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw invalidField('body', 'an AgentMessage is a JSON object')
  const raw = body as Record<string, unknown>
  const content = raw.content ?? raw.prompt
  if (content === undefined || content === null || content === '')
    throw invalidField('content', 'required (or prompt): the text for the entity')
  const text = typeof content === 'string' ? content : JSON.stringify(content)
  const optionalString = (field: string): string | undefined => {
    const v = raw[field]
    if (v === undefined || v === null) return undefined
    if (typeof v !== 'string' || v.length > MAX_ID_LENGTH)
      throw invalidField(field, `a string of at most ${MAX_ID_LENGTH} characters`)
    return v
  }
  const metadata = raw.metadata ?? {}
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
    throw invalidField('metadata', 'an object')
  const timestamp = raw.timestamp
  if (timestamp !== undefined && timestamp !== null && typeof timestamp !== 'string' && typeof timestamp !== 'number')
    throw invalidField('timestamp', 'ISO 8601 text or unix seconds')
  const signature = optionalString('signature')
  const senderPublicKey = optionalString('sender_public_key')
  const receiverId = optionalString('receiver_id')
  const inReplyTo = optionalString('in_reply_to')
  return {
    ...raw,
    message_id: optionalString('message_id') ?? randomUUID(),
    sender_id: optionalString('sender_id') ?? 'unknown',
    content: text,
    message_type: optionalString('message_type') ?? 'query',
    conversation_id: optionalString('conversation_id') ?? randomUUID(),
    metadata: metadata as Record<string, unknown>,
    ...(receiverId !== undefined ? { receiver_id: receiverId } : {}),
    ...(inReplyTo !== undefined ? { in_reply_to: inReplyTo } : {}),
    ...(timestamp !== undefined && timestamp !== null ? { timestamp } : {}),
    ...(senderPublicKey !== undefined ? { sender_public_key: senderPublicKey } : {}),
    ...(signature !== undefined ? { signature } : {})
  }
}

/** Milliseconds since the epoch of a message timestamp (ISO text or unix seconds), or null. */
export function messageTime(timestamp: string | number | undefined): number | null {
  if (typeof timestamp === 'number') return Number.isFinite(timestamp) ? timestamp * 1000 : null
  if (typeof timestamp !== 'string') return null
  const ms = Date.parse(timestamp)
  return Number.isNaN(ms) ? null : ms
}

/** The bytes an AgentMessage signature covers: canonical JSON of the body without `signature`. */
export function agentMessageSignable(body: Record<string, unknown>): string {
  return canonicalJson(withoutSignature(body))
}

export interface OutgoingMessage {
  content: string
  receiverId?: string
  messageType?: string
  conversationId?: string
  inReplyTo?: string
  metadata?: Record<string, unknown>
}

/** A signed AgentMessage from `senderId` (its key in `sender_public_key`, so no lookup is needed). */
export function signAgentMessage(
  keyPair: KeyPair,
  senderId: string,
  message: OutgoingMessage,
  now = new Date()
): AgentMessage {
  const body: AgentMessage = {
    message_id: randomUUID(),
    sender_id: senderId,
    sender_public_key: formatKey(keyPair.publicKey),
    content: message.content,
    message_type: message.messageType ?? 'query',
    conversation_id: message.conversationId ?? randomUUID(),
    metadata: message.metadata ?? {},
    timestamp: now.toISOString(),
    ...(message.receiverId !== undefined ? { receiver_id: message.receiverId } : {}),
    ...(message.inReplyTo !== undefined ? { in_reply_to: message.inReplyTo } : {})
  }
  body.signature = sign(keyPair, agentMessageSignable(body))
  return body
}
