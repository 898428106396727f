import type { OnboardingService } from '../../services/registry/onboarding.js'
import { ApprovalRequest, ApprovalResponse } from '../../wire/names.js'
import { json, type RequestContext, type RouteDefinition } from '../../http/http.js'

/** `scheme`: how this node is reached when `publicUrl` is empty (https when it serves TLS itself). */
export function onboardingRoutes(
  onboarding: OnboardingService,
  publicUrl: string,
  scheme: 'http' | 'https' = 'http'
): RouteDefinition[] {
  const approve = async (ctx: RequestContext) => {
    onboarding.checkAdmin(ctx.headers.authorization)
    return json(201, await onboarding.approve(ctx.json(), ctx.path))
  }
  const approval: Omit<RouteDefinition, 'path' | 'summary'> = {
    method: 'POST',
    tag: 'onboarding',
    limit: 'none',
    body: ApprovalRequest,
    responses: {
      201: {
        description: 'the generated developer identity; the private key is encrypted with SHA-256(state)',
        schema: ApprovalResponse
      }
    },
    errors: [
      'admin_unavailable',
      'admin_unauthorized',
      'invalid_json',
      'validation_failed',
      'approval_exists',
      'handle_claimed',
      'handle_invalid',
      'handle_reserved'
    ],
    handler: approve
  }
  return [
    {
      ...approval,
      path: '/v1/admin/developers/approve',
      summary: 'Approve a developer (restricted mode; Authorization: Bearer <webhook secret>)'
    },
    { ...approval, path: '/v1/onboarding/approve', summary: 'Operator webhook: same as /v1/admin/developers/approve' },
    {
      method: 'POST',
      path: '/v1/onboarding/request',
      summary:
        'Start restricted onboarding: 303 to auth_url with state, callback_port and registry_url (JSON body or query)',
      tag: 'onboarding',
      limit: 'read',
      responses: { 303: { description: 'redirect to auth_url' } },
      errors: ['onboarding_disabled', 'admin_unavailable', 'validation_failed'],
      handler: ctx => {
        const params: Record<string, unknown> = Object.fromEntries(ctx.query)
        if (ctx.raw.length > 0) Object.assign(params, ctx.json())
        const registryUrl = publicUrl || `${scheme}://${ctx.headers.host ?? 'localhost'}`
        const location = onboarding.redirectUrl(params, registryUrl)
        return { status: 303, body: { location }, headers: { Location: location } }
      }
    }
  ]
}
