/** What the typed client signs with, for the test identities, and a registration body it sends. */
import type { Signer } from '../../src/client/index.js'
import type { Agent, Developer } from './identities.js'

export const entitySigner = (dev: Developer, a: Agent): Signer => ({
  keyPair: a.keyPair,
  developerId: dev.id,
  developerProof: a.proof
})

export const developerSigner = (dev: Developer): Signer => ({
  keyPair: dev.keyPair,
  role: 'developer',
  developerId: dev.id
})

export const registration = (name: string) => ({
  name,
  type: 'agent' as const,
  category: 'tools',
  summary: 'Translates documents',
  tags: ['translation'],
  entity_url: `https://${name.toLowerCase().replace(/\W+/g, '-')}.example.com`
})
