/**
 * A read-only replica of another node's registry (`replica_of`): it holds everything through the
 * mesh and answers reads, while writes, onboarding and heartbeats belong to the registry's own node
 * (a load balancer sends them there; a client that reaches a replica is told where to go).
 */
import { RegistryError } from '../errors.js'
import type { RouteDefinition } from '../http/http.js'

/** Routes a replica does not serve: every signed write, and the onboarding flow that creates developers. */
const refused = (route: RouteDefinition): boolean =>
  route.limit === 'write' || route.path.startsWith('/v1/onboarding/') || route.path === '/v1/admin/developers/approve'

/** The routes with those a replica does not serve answering 503 read_only_replica with `primary_url`. */
export function readOnlyReplica(routes: RouteDefinition[], primaryUrl: string): RouteDefinition[] {
  const refusal = (): never => {
    throw new RegistryError(
      'read_only_replica',
      `This node is a read-only replica of ${primaryUrl}; send writes, onboarding and heartbeats there.`,
      undefined,
      { primary_url: primaryUrl }
    )
  }
  return routes.map(route => {
    if (!refused(route)) return route
    // Without its body schema: the refusal comes before any look at what was sent.
    const { body: _body, ...rest } = route
    return { ...rest, errors: [...(route.errors ?? []), 'read_only_replica'], handler: refusal }
  })
}
