/**
 * Signed entity registrations for testnets and experiments, as a client would make them: a
 * spec-form body signed over its canonical JSON by an HD-derived entity key, with the developer's
 * proof (the node registers the developer implicitly). Deterministic for a given seed text.
 *
 * The builders below (developer keys, developer proof, spec and deployed signing, a whole spec-form
 * registration) are the one place where registration bodies are signed: the benchmarks
 * (scripts/lib, scripts/bench) and the tests (test/helpers/identities.ts) build theirs with them.
 */
import { createHash } from 'node:crypto'
import { canonicalJson, withoutSignature } from '../identity/canonical-json.js'
import { formatKey } from '../identity/encoding.js'
import { deriveAgentKeyPair, developerProofMessage } from '../identity/hd.js'
import { deriveId } from '../identity/ids.js'
import { keyPairFromSeed, sign, type KeyPair } from '../identity/keys.js'
import { deployedRegistrationSignable } from '../identity/verifiers.js'

/** A developer's key pair with the two forms a registration names it by. */
export interface DeveloperKeys {
  keyPair: KeyPair
  /** `ed25519:…`, as in `developer_proof.developer_public_key`. */
  publicKey: string
  /** The developer ID, as in `developer_id`. */
  id: string
}

export function developerKeys(keyPair: KeyPair): DeveloperKeys {
  return { keyPair, publicKey: formatKey(keyPair.publicKey), id: deriveId('developer', keyPair.publicKey) }
}

/** The spec form of a developer proof: the developer's signature over the entity key and its HD index. */
export interface DeveloperProof {
  developer_public_key: string
  agent_public_key: string
  index: number
  signature: string
}

export function developerProof(developer: DeveloperKeys, entity: KeyPair, index: number): DeveloperProof {
  return {
    developer_public_key: developer.publicKey,
    agent_public_key: formatKey(entity.publicKey),
    index,
    signature: sign(developer.keyPair, developerProofMessage(entity.publicKey, index))
  }
}

/** Spec form: the signature over the canonical JSON of the whole body without `signature`. */
export function signSpec(keyPair: KeyPair, body: Record<string, unknown>): Record<string, unknown> {
  const unsigned = withoutSignature(body)
  return { ...unsigned, signature: sign(keyPair, canonicalJson(unsigned)) }
}

/** The deployed clients' form (docs/compatibility.md): the signature over the fixed subset of Go-spelled fields. */
export function signDeployed(keyPair: KeyPair, body: Record<string, unknown>): Record<string, unknown> {
  return { ...body, signature: sign(keyPair, canonicalJson(deployedRegistrationSignable(body))) }
}

/**
 * A spec-form registration: `content` (type, name, summary, …), the entity's public key and, for an
 * HD-derived entity key, its developer's ID and proof; signed by the entity key.
 */
export function signedRegistration(
  entity: KeyPair,
  content: Record<string, unknown>,
  hd?: { developer: DeveloperKeys; index: number }
): Record<string, unknown> {
  return signSpec(entity, {
    ...content,
    public_key: formatKey(entity.publicKey),
    ...(hd ? { developer_id: hd.developer.id, developer_proof: developerProof(hd.developer, entity, hd.index) } : {})
  })
}

const WORDS = [
  'translate',
  'summarize',
  'search',
  'invoice',
  'weather',
  'calendar',
  'code',
  'review',
  'image',
  'audio',
  'legal',
  'medical',
  'finance',
  'travel',
  'support',
  'sales',
  'data',
  'report',
  'chat',
  'email'
]
const CATEGORIES = ['productivity', 'developer-tools', 'finance', 'travel', 'support', 'research']

export interface SignedRegistration {
  id: string
  body: string
}

export class EntityFactory {
  private readonly developer: DeveloperKeys

  constructor(seedText: string) {
    this.developer = developerKeys(
      keyPairFromSeed(createHash('sha256').update(`testnet developer ${seedText}`).digest())
    )
  }

  /** The i-th registration (an agent; every fifth one a service). */
  /** The i-th entity's key (what signs its registration and, in a simulation, its heartbeats). */
  keyPair(i: number): KeyPair {
    return deriveAgentKeyPair(this.developer.keyPair.seed, i)
  }

  registration(i: number): SignedRegistration {
    const keyPair = this.keyPair(i)
    const type = i % 5 === 4 ? 'service' : 'agent'
    const word = (k: number): string => WORDS[(i * 7 + k * 3) % WORDS.length] as string
    const body = signedRegistration(
      keyPair,
      {
        type,
        name: `${word(0)} ${word(1)} ${i}`,
        summary: `Testnet ${type} ${i}: ${word(0)}, ${word(1)} and ${word(2)} on demand.`,
        category: CATEGORIES[i % CATEGORIES.length],
        tags: [word(0), word(2)],
        version: '1.0.0',
        ...(type === 'agent'
          ? { entity_url: `https://agent${i}.testnet.example` }
          : { service_endpoint: `https://service${i}.testnet.example/api` })
      },
      { developer: this.developer, index: i }
    )
    return { id: deriveId(type, keyPair.publicKey), body: JSON.stringify(body) }
  }
}
