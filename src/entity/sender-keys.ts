/**
 * The public key of a message's sender: from `sender_public_key` when the message carries one
 * (it must hash to the claimed sender ID), else from the registry, cached. Unknown senders are
 * remembered briefly so a flood of made-up IDs does not become a flood of registry requests.
 */
import { RegistryError } from '../errors.js'
import { parsePublicKey } from '../identity/encoding.js'
import { deriveId, ID_PATTERNS } from '../identity/ids.js'
import type { RegistryClient } from './registry-client.js'

const KNOWN_TTL_MS = 10 * 60_000
const UNKNOWN_TTL_MS = 30_000
const MAX_ENTRIES = 50_000

interface Entry {
  key: Buffer | null
  until: number
}

export class SenderKeys {
  private readonly cache = new Map<string, Entry>()

  constructor(
    private readonly registry: RegistryClient | null,
    private readonly now: () => number = Date.now
  ) {}

  /** The raw key; throws sender_key_mismatch or sender_unknown (both 401). */
  async resolve(senderId: string, statedKey: unknown): Promise<Buffer> {
    if (statedKey !== undefined && statedKey !== null) {
      const key = typeof statedKey === 'string' ? parsePublicKey(statedKey) : null
      if (key === null)
        throw new RegistryError(
          'sender_key_mismatch',
          'sender_public_key is not an ed25519:<base64> public key.',
          'sender_public_key'
        )
      if (senderId !== deriveId('agent', key) && senderId !== deriveId('service', key)) {
        throw new RegistryError(
          'sender_key_mismatch',
          `sender_public_key is not the key of ${senderId}.`,
          'sender_public_key'
        )
      }
      return key
    }
    if (!ID_PATTERNS.entity.test(senderId))
      throw new RegistryError(
        'sender_unknown',
        `sender_id ${JSON.stringify(senderId.slice(0, 80))} is not an entity ID, and the message carries no sender_public_key.`,
        'sender_id'
      )
    const now = this.now()
    const cached = this.cache.get(senderId)
    if (cached && cached.until > now) return cached.key ?? unknown(senderId)
    const record = this.registry ? await this.registry.getEntity(senderId).catch(() => null) : null
    const key = typeof record?.public_key === 'string' ? parsePublicKey(record.public_key) : null
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value as string)
    this.cache.set(senderId, { key, until: now + (key ? KNOWN_TTL_MS : UNKNOWN_TTL_MS) })
    return key ?? unknown(senderId)
  }
}

function unknown(senderId: string): never {
  throw new RegistryError(
    'sender_unknown',
    `The registry does not know ${senderId}, and the message carries no sender_public_key.`,
    'sender_id'
  )
}
