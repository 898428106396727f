import type { HandleService } from '../../services/registry/handles.js'
import type { NameService } from '../../services/registry/names.js'
import { Message } from '../../wire/common.js'
import { HandleAvailability, HandleClaimRequest, HandleVerifyRequest, HandleView, NameView } from '../../wire/names.js'
import { Type } from '@sinclair/typebox'
import { createdOrExisting, json, type RouteDefinition } from '../../http/http.js'
import { bodyPublicKey, bodySignedWrite, handleParam, signedDeletion, signedWrite } from './params.js'

export function handleRoutes(handles: HandleService, names: NameService): RouteDefinition[] {
  const tag = 'handles'
  const bindings: Omit<RouteDefinition, 'path' | 'summary'> = {
    method: 'GET',
    tag,
    limit: 'read',
    responses: {
      200: { description: 'the bindings (a JSON array, as deployed clients expect)', schema: Type.Array(NameView) }
    },
    errors: ['handle_invalid', 'handle_not_found'],
    handler: ctx => {
      const handle = handleParam(ctx)
      handles.require(handle)
      return json(
        200,
        names.ofHandle(handle).map(b => names.view(b))
      )
    }
  }
  return [
    {
      method: 'POST',
      path: '/v1/handles',
      summary: "Claim a handle (signed by the developer's registered key)",
      tag,
      limit: 'write',
      writer: bodyPublicKey,
      body: HandleClaimRequest,
      responses: {
        201: { description: 'claimed', schema: HandleView },
        200: { description: 'already claimed by this developer; nothing changed', schema: HandleView }
      },
      errors: [
        'invalid_json',
        'validation_failed',
        'handle_invalid',
        'handle_reserved',
        'signature_invalid',
        'developer_not_found',
        'handle_claimed',
        'developer_has_handle'
      ],
      handler: async ctx => {
        const { record, created } = await handles.claim(bodySignedWrite(ctx))
        return createdOrExisting(created, handles.view(record), {
          created: 'handle claimed',
          existing: 'handle already yours'
        })
      }
    },
    {
      method: 'GET',
      path: '/v1/handles/{handle}',
      summary: 'Look up a handle',
      tag,
      limit: 'read',
      responses: { 200: { description: 'the handle', schema: HandleView } },
      errors: ['handle_invalid', 'handle_not_found'],
      handler: ctx => json(200, handles.view(handles.require(handleParam(ctx))))
    },
    {
      method: 'GET',
      path: '/v1/handles/{handle}/available',
      summary: 'Whether a handle can be claimed',
      tag,
      limit: 'read',
      responses: { 200: { description: 'availability', schema: HandleAvailability } },
      handler: ctx => json(200, handles.availability((ctx.params.handle ?? '').toLowerCase()))
    },
    { ...bindings, path: '/v1/handles/{handle}/entities', summary: 'Every name bound under a handle' },
    {
      ...bindings,
      path: '/v1/handles/{handle}/agents',
      summary: 'Every name bound under a handle (alias of /v1/handles/{handle}/entities, read by deployed clients)'
    },
    {
      method: 'POST',
      path: '/v1/handles/{handle}/verify',
      summary: 'Verify handle ownership by DNS TXT or a GitHub gist (signed by the owner)',
      tag,
      limit: 'write',
      writer: ctx => `handle:${handleParam(ctx)}`,
      body: HandleVerifyRequest,
      responses: { 200: { description: 'verified', schema: HandleView } },
      errors: [
        'invalid_json',
        'validation_failed',
        'handle_invalid',
        'handle_not_found',
        'authorization_required',
        'signature_invalid',
        'verification_failed',
        'verification_unavailable'
      ],
      handler: async ctx => {
        const record = await handles.verify(handleParam(ctx), signedWrite(ctx))
        return json(200, { ...handles.view(record), message: `handle verified via ${record.verification_method}` })
      }
    },
    {
      method: 'DELETE',
      path: '/v1/handles/{handle}',
      summary: 'Release a handle and every name under it (Authorization over "release:<handle>")',
      tag,
      limit: 'write',
      writer: ctx => `handle:${handleParam(ctx)}`,
      responses: { 200: { description: 'released', schema: Message } },
      errors: ['handle_invalid', 'handle_not_found', 'authorization_required', 'signature_invalid'],
      handler: async ctx => json(200, await handles.release(handleParam(ctx), signedDeletion(ctx)))
    }
  ]
}
