import { RegistryError } from '../../errors.js'
import type { EntityService } from '../../services/registry/entities.js'
import {
  DeregistrationResponse,
  EntityList,
  EntityListQuery,
  EntityRecordView,
  RegistrationRequest,
  RegistrationResponse,
  UpdateRequest,
  EntityUpdateAnswer
} from '../../wire/entities.js'
import { json, jsonText, type RequestContext, type RouteDefinition } from '../../http/http.js'
import { bodyPublicKey, bodySignedWrite, entityIdParam, intParam, signedDeletion, signedWrite } from './params.js'

export interface EntityRouteOptions {
  maxListLimit: number
}

const TYPE_FILTERS: Record<string, 'agent' | 'service' | undefined> = {
  agent: 'agent',
  service: 'service',
  all: undefined,
  any: undefined,
  '': undefined
}

export function entityRoutes(entities: EntityService, options: EntityRouteOptions): RouteDefinition[] {
  const register = async (ctx: RequestContext) => json(201, await entities.register(bodySignedWrite(ctx)))
  const registration = {
    method: 'POST',
    tag: 'entities',
    limit: 'write',
    writer: bodyPublicKey,
    body: RegistrationRequest,
    responses: { 201: { description: 'registered', schema: RegistrationResponse } },
    errors: [
      'invalid_json',
      'validation_failed',
      'signature_invalid',
      'developer_proof_invalid',
      'onboarding_required',
      'entity_exists',
      'entity_deregistered',
      'developer_deregistered',
      'body_too_large',
      'unsupported_media_type'
    ],
    handler: register
  } as const

  return [
    { ...registration, path: '/v1/entities', summary: 'Register an agent or a service' },
    { ...registration, path: '/v1/services', summary: 'Register an entity (alias of POST /v1/entities)' },
    {
      method: 'GET',
      path: '/v1/entities',
      summary: 'List entities (limit/offset/type/category or page/page_size/entity_type/developer_id)',
      tag: 'entities',
      limit: 'read',
      query: EntityListQuery,
      responses: { 200: { description: 'one page of entities', schema: EntityList } },
      errors: ['invalid_query'],
      handler: ctx => {
        const q = ctx.query
        const typeText = (q.get('type') ?? q.get('entity_type') ?? '').toLowerCase()
        if (!(typeText in TYPE_FILTERS))
          throw new RegistryError('invalid_query', 'type must be agent, service or all.', 'type')
        const paged = q.has('page') || q.has('page_size')
        const max = options.maxListLimit
        const limit = paged
          ? intParam(q, 'page_size', { min: 1, max, default: 50 })
          : intParam(q, 'limit', { min: 1, max, default: 50 })
        const offset = paged
          ? (intParam(q, 'page', { min: 1, default: 1 }) - 1) * limit
          : intParam(q, 'offset', { min: 0, default: 0 })
        const { records, total } = entities.list({
          type: TYPE_FILTERS[typeText],
          category: q.get('category') || undefined,
          developerId: q.get('developer_id') || undefined,
          offset,
          limit
        })
        return json(200, {
          entities: records.map(r => entities.view(r)),
          count: records.length,
          total,
          limit,
          offset,
          page: Math.floor(offset / limit) + 1,
          page_size: limit,
          has_more: offset + records.length < total
        })
      }
    },
    {
      method: 'GET',
      path: '/v1/entities/{entity_id}',
      summary: 'Get an entity record',
      tag: 'entities',
      limit: 'read',
      responses: { 200: { description: 'the record', schema: EntityRecordView } },
      errors: ['invalid_id', 'entity_not_found'],
      handler: async ctx => {
        const id = entityIdParam(ctx)
        try {
          return jsonText(200, entities.viewJson(id))
        } catch (err) {
          // Not held here: the mesh may know its home (the reply then says source: network).
          const found =
            err instanceof RegistryError && err.code === 'entity_not_found' ? await entities.fromNetwork(id) : null
          if (found === null) throw err
          return jsonText(200, found)
        }
      }
    },
    {
      method: 'PUT',
      path: '/v1/entities/{entity_id}',
      summary: 'Update an entity (only supplied fields change)',
      tag: 'entities',
      limit: 'write',
      writer: ctx => ctx.params.entity_id,
      body: UpdateRequest,
      responses: { 200: { description: 'the updated record and the fields changed', schema: EntityUpdateAnswer } },
      errors: [
        'invalid_id',
        'invalid_json',
        'validation_failed',
        'field_immutable',
        'nothing_to_update',
        'signature_invalid',
        'authorization_required',
        'entity_not_found'
      ],
      handler: async ctx => {
        const id = entityIdParam(ctx)
        const record = await entities.update(id, signedWrite(ctx))
        return json(200, { ...entities.view(record), changed: record.changed })
      }
    },
    {
      method: 'DELETE',
      path: '/v1/entities/{entity_id}',
      summary:
        'Deregister an entity (leaves a tombstone). Authorization: Bearer ed25519:<sig over the ID> or X-Signature over the path',
      tag: 'entities',
      limit: 'write',
      writer: ctx => ctx.params.entity_id,
      responses: { 200: { description: 'deregistered', schema: DeregistrationResponse } },
      errors: ['invalid_id', 'signature_invalid', 'authorization_required', 'entity_not_found'],
      handler: async ctx => json(200, await entities.deregister(entityIdParam(ctx), signedDeletion(ctx)))
    }
  ]
}
