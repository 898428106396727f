import { REGISTRY_PROOF_PATH } from '../../identity/registry-proof.js'
import type { RegistryProofProvider } from '../../services/registry/registry-proof-provider.js'
import { RegistryProofSchema } from '../../wire/registry-proof.js'
import { json, type RouteDefinition } from '../../http/http.js'

/** Caches may keep the proof at most this long, however far off its renewal is. */
export const MAX_PROOF_CACHE_SECONDS = 3600

export function wellKnownRoutes(provider: RegistryProofProvider): RouteDefinition[] {
  return [
    {
      method: 'GET',
      path: REGISTRY_PROOF_PATH,
      summary: 'Registry identity proof: the node key signs this domain, its registry ID and its TLS key',
      tag: 'node',
      limit: 'none',
      responses: { 200: { description: 'the signed proof', schema: RegistryProofSchema } },
      handler: () => {
        const proof = provider.current()
        const maxAge = Math.min(MAX_PROOF_CACHE_SECONDS, provider.secondsUntilRenewal())
        return json(200, proof, { 'Cache-Control': `public, max-age=${maxAge}` })
      }
    }
  ]
}
