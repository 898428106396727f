import { Type } from '@sinclair/typebox'
import type { NameService } from '../../services/registry/names.js'
import type { ResolutionService } from '../../services/registry/resolution.js'
import { Message } from '../../wire/common.js'
import {
  NameAvailability,
  NameBindRequest,
  NameUpdateRequest,
  NameVersionView,
  NameView,
  ResolveResponse
} from '../../wire/names.js'
import { createdOrExisting, json, type RequestContext, type RouteDefinition } from '../../http/http.js'
import { bodySignedWrite, entityIdParam, nameParams, signedDeletion, signedWrite } from './params.js'

/** `?card=true` is accepted; the card proxy arrives with search, so the reply says so. */
function withCardNote<T extends object>(ctx: RequestContext, view: T): T & { card_note?: string } {
  return ctx.query.get('card') === 'true'
    ? { ...view, card_note: 'The live card is not served yet: the card proxy arrives with search.' }
    : view
}

export function nameRoutes(names: NameService, resolution: ResolutionService): RouteDefinition[] {
  const tag = 'names'
  return [
    {
      method: 'POST',
      path: '/v1/names',
      summary: "Bind a name under a handle to an entity of the handle's developer",
      tag,
      limit: 'write',
      writer: ctx => {
        const b = ctx.json() as { developer_handle?: unknown }
        return typeof b?.developer_handle === 'string' ? `handle:${b.developer_handle}` : undefined
      },
      body: NameBindRequest,
      responses: {
        201: { description: 'bound', schema: NameView },
        200: { description: 'already bound to this entity', schema: NameView }
      },
      errors: [
        'invalid_json',
        'validation_failed',
        'name_invalid',
        'handle_not_found',
        'entity_not_found',
        'entity_not_owned',
        'signature_invalid',
        'name_taken'
      ],
      handler: async ctx => {
        const { binding, created } = await names.bind(bodySignedWrite(ctx))
        return createdOrExisting(created, names.view(binding), {
          created: 'name registered',
          existing: 'name already bound to this entity'
        })
      }
    },
    {
      method: 'GET',
      path: '/v1/names/{developer}/{entity}',
      summary: 'A name binding (developer = the handle)',
      tag,
      limit: 'read',
      responses: { 200: { description: 'the binding', schema: NameView } },
      errors: ['handle_invalid', 'name_invalid', 'name_not_found'],
      handler: ctx => {
        const { handle, name } = nameParams(ctx)
        return json(200, names.view(names.require(handle, name)))
      }
    },
    {
      method: 'PUT',
      path: '/v1/names/{developer}/{entity}',
      summary: "Change a binding's version and/or capability tags (signed; history kept)",
      tag,
      limit: 'write',
      writer: ctx => `handle:${nameParams(ctx).handle}`,
      body: NameUpdateRequest,
      responses: { 200: { description: 'the updated binding', schema: NameView } },
      errors: [
        'invalid_json',
        'validation_failed',
        'handle_invalid',
        'name_invalid',
        'name_not_found',
        'authorization_required',
        'signature_invalid'
      ],
      handler: async ctx => {
        const { handle, name } = nameParams(ctx)
        return json(200, names.view(await names.update(handle, name, signedWrite(ctx))))
      }
    },
    {
      method: 'DELETE',
      path: '/v1/names/{developer}/{entity}',
      summary: 'Release a name (Authorization over "release:<fqan>")',
      tag,
      limit: 'write',
      writer: ctx => `handle:${nameParams(ctx).handle}`,
      responses: { 200: { description: 'released', schema: Message } },
      errors: ['handle_invalid', 'name_invalid', 'name_not_found', 'authorization_required', 'signature_invalid'],
      handler: async ctx => {
        const { handle, name } = nameParams(ctx)
        return json(200, await names.release(handle, name, signedDeletion(ctx)))
      }
    },
    {
      method: 'GET',
      path: '/v1/names/{developer}/{entity}/available',
      summary: 'Whether a name can be bound',
      tag,
      limit: 'read',
      responses: { 200: { description: 'availability', schema: NameAvailability } },
      handler: ctx =>
        json(
          200,
          names.availability((ctx.params.developer ?? '').toLowerCase(), (ctx.params.entity ?? '').toLowerCase())
        )
    },
    {
      method: 'GET',
      path: '/v1/names/{developer}/{entity}/versions',
      summary: "A binding's full version history, newest first",
      tag,
      limit: 'read',
      responses: { 200: { description: 'the history (a JSON array)', schema: Type.Array(NameVersionView) } },
      errors: ['handle_invalid', 'name_invalid', 'name_not_found'],
      handler: ctx => {
        const { handle, name } = nameParams(ctx)
        return json(200, names.history(handle, name))
      }
    },
    {
      method: 'GET',
      path: '/v1/resolve/{developer}/{entity}',
      summary: 'Resolve <handle>/<name>[@version] on this node (card=true: see the response note)',
      tag: 'resolution',
      limit: 'read',
      responses: { 200: { description: 'the resolution', schema: ResolveResponse } },
      errors: ['fqan_invalid', 'name_not_found', 'entity_not_found'],
      handler: async ctx =>
        json(200, withCardNote(ctx, await resolution.resolveFqan(`${ctx.params.developer}/${ctx.params.entity}`)))
    },
    {
      method: 'GET',
      path: '/v1/resolve/agent/{entity_id}',
      summary: 'Resolve an entity ID',
      tag: 'resolution',
      limit: 'read',
      responses: { 200: { description: 'the resolution', schema: ResolveResponse } },
      errors: ['invalid_id', 'entity_not_found'],
      handler: ctx => json(200, withCardNote(ctx, resolution.resolveEntity(entityIdParam(ctx))))
    },
    {
      method: 'GET',
      path: '/v1/resolve',
      summary: 'Resolve a full FQAN given as ?fqan=[zns://]<host>/<handle>/<name>[@version]',
      tag: 'resolution',
      limit: 'read',
      query: Type.Object({ fqan: Type.String(), card: Type.Optional(Type.Boolean()) }),
      responses: { 200: { description: 'the resolution', schema: ResolveResponse } },
      errors: ['fqan_invalid', 'name_not_found', 'entity_not_found'],
      handler: async ctx => json(200, withCardNote(ctx, await resolution.resolveFqan(ctx.query.get('fqan') ?? '')))
    }
  ]
}
