/**
 * Signed entity registrations for testnets and experiments, as a client would make them: a
 * spec-form body signed over its canonical JSON by an HD-derived entity key, with the developer's
 * proof (the node registers the developer implicitly). Deterministic for a given seed text.
 */
import { createHash } from 'node:crypto'
import { canonicalJson } from '../identity/canonical-json.js'
import { formatKey } from '../identity/encoding.js'
import { deriveAgentKeyPair, developerProofMessage } from '../identity/hd.js'
import { deriveId } from '../identity/ids.js'
import { keyPairFromSeed, sign, type KeyPair } from '../identity/keys.js'

const WORDS = [
  'translate', 'summarize', 'search', 'invoice', 'weather', 'calendar', 'code', 'review', 'image', 'audio',
  'legal', 'medical', 'finance', 'travel', 'support', 'sales', 'data', 'report', 'chat', 'email'
]
const CATEGORIES = ['productivity', 'developer-tools', 'finance', 'travel', 'support', 'research']

export interface SignedRegistration {
  id: string
  body: string
}

export class EntityFactory {
  private readonly developer: KeyPair
  private readonly developerKey: string
  private readonly developerId: string

  constructor(seedText: string) {
    this.developer = keyPairFromSeed(createHash('sha256').update(`testnet developer ${seedText}`).digest())
    this.developerKey = formatKey(this.developer.publicKey)
    this.developerId = deriveId('developer', this.developer.publicKey)
  }

  /** The i-th registration (an agent; every fifth one a service). */
  registration(i: number): SignedRegistration {
    const keyPair = deriveAgentKeyPair(this.developer.seed, i)
    const type = i % 5 === 4 ? 'service' : 'agent'
    const word = (k: number): string => WORDS[(i * 7 + k * 3) % WORDS.length] as string
    const body: Record<string, unknown> = {
      type,
      name: `${word(0)} ${word(1)} ${i}`,
      summary: `Testnet ${type} ${i}: ${word(0)}, ${word(1)} and ${word(2)} on demand.`,
      category: CATEGORIES[i % CATEGORIES.length],
      tags: [word(0), word(2)],
      version: '1.0.0',
      ...(type === 'agent' ? { entity_url: `https://agent${i}.testnet.example` } : { service_endpoint: `https://service${i}.testnet.example/api` }),
      public_key: formatKey(keyPair.publicKey),
      developer_id: this.developerId,
      developer_proof: {
        developer_public_key: this.developerKey,
        agent_public_key: formatKey(keyPair.publicKey),
        index: i,
        signature: sign(this.developer, developerProofMessage(keyPair.publicKey, i))
      }
    }
    body.signature = sign(keyPair, canonicalJson(body))
    return { id: deriveId(type, keyPair.publicKey), body: JSON.stringify(body) }
  }
}
