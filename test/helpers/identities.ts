/**
 * Deterministic test identities: the test-vector developer of docs/compatibility.md (seed 0x01 × 32) and its HD agents, plus
 * builders for signed bodies in the spec's form and in the deployed clients' forms (signed by the
 * registration builders of src/testnet/entity-factory.ts, which the benchmarks use too).
 */
import { canonicalJson } from '../../src/identity/canonical-json.js'
import { formatKey } from '../../src/identity/encoding.js'
import { deriveAgentKeyPair } from '../../src/identity/hd.js'
import { deriveId } from '../../src/identity/ids.js'
import { generateKeyPair, keyPairFromSeed, sign, type KeyPair } from '../../src/identity/keys.js'
import type { NodeIdentity } from '../../src/identity/node-identity.js'
import {
  developerKeys,
  developerProof,
  signDeployed,
  signSpec,
  type DeveloperKeys,
  type DeveloperProof
} from '../../src/testnet/entity-factory.js'

export type Developer = DeveloperKeys

export function developer(seedByte = 1): Developer {
  return developerKeys(keyPairFromSeed(Buffer.alloc(32, seedByte)))
}

export interface Agent {
  keyPair: KeyPair
  index: number
  publicKey: string
  agentId: string
  serviceId: string
  proof: DeveloperProof
}

export function agent(dev: Developer, index: number): Agent {
  const keyPair = deriveAgentKeyPair(dev.keyPair.seed, index)
  return {
    keyPair,
    index,
    publicKey: formatKey(keyPair.publicKey),
    agentId: deriveId('agent', keyPair.publicKey),
    serviceId: deriveId('service', keyPair.publicKey),
    proof: developerProof(dev, keyPair, index)
  }
}

export { signSpec }

/** A spec-form agent registration with a developer proof. */
export function specRegistration(
  dev: Developer,
  a: Agent,
  fields: Record<string, unknown> = {}
): Record<string, unknown> {
  return signSpec(a.keyPair, {
    name: `Agent ${a.index}`,
    type: 'agent',
    category: 'tools',
    summary: 'Translates documents between languages',
    tags: ['translation', 'documents'],
    entity_url: `https://agent${a.index}.example.com`,
    public_key: a.publicKey,
    developer_id: dev.id,
    // A copy: tests change the body's proof, never the agent's.
    developer_proof: { ...a.proof },
    ...fields
  })
}

/** A deployed-client registration: Go field spellings, signature over the fixed subset. */
export function deployedRegistration(
  dev: Developer,
  a: Agent,
  fields: Record<string, unknown> = {}
): Record<string, unknown> {
  const body = {
    name: `Deployed ${a.index}`,
    entity_type: 'agent',
    category: 'tools',
    tags: ['x'],
    entity_url: `https://deployed${a.index}.example.com`,
    public_key: a.publicKey,
    developer_id: dev.id,
    developer_proof: {
      developer_public_key: dev.publicKey,
      entity_index: a.index,
      developer_signature: a.proof.signature
    },
    entity_pricing: {
      model: 'per_request',
      base_price_usd: 0.01,
      currency: 'USDC',
      payment_methods: ['x402'],
      rates: { default: 0.01 }
    },
    ...fields
  }
  return signDeployed(a.keyPair, body)
}

/** `Authorization: Bearer <signature of message>` by a developer's or an agent's key. */
export function bearer(signer: { keyPair: KeyPair }, message: string): { authorization: string } {
  return { authorization: `Bearer ${sign(signer.keyPair, message)}` }
}

export function developerRegistration(dev: Developer, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return signSpec(dev.keyPair, {
    name: 'Alice the Builder',
    public_key: dev.publicKey,
    github: 'alice',
    profile_url: 'https://alice.example.com',
    ...fields
  })
}

export { sign, canonicalJson }

/** A node identity with a fresh key, for services tested without a node. */
export function nodeIdentity(host = 'a.test'): NodeIdentity {
  const keyPair = generateKeyPair()
  return { keyPair, registryId: deriveId('registry', keyPair.publicKey), publicKey: formatKey(keyPair.publicKey), host }
}
