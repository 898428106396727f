import type { DeveloperService } from '../../services/registry/developers.js'
import type { EntityService } from '../../services/registry/entities.js'
import { Message } from '../../wire/common.js'
import {
  DeveloperEntities,
  DeveloperRecordView,
  DeveloperRegistrationRequest,
  DeveloperRegistrationResponse,
  DeveloperUpdateRequest,
  DeveloperUpdateAnswer
} from '../../wire/developers.js'
import { json, type RouteDefinition } from '../../http/http.js'
import { bodyPublicKey, bodySignedWrite, developerIdParam, intParam, signedDeletion, signedWrite } from './params.js'

export function developerRoutes(
  developers: DeveloperService,
  entities: EntityService,
  options: { maxListLimit: number }
): RouteDefinition[] {
  const listEntities: Omit<RouteDefinition, 'path' | 'summary'> = {
    method: 'GET',
    tag: 'developers',
    limit: 'read',
    responses: {
      200: { description: "the developer's entities (under both `entities` and `agents`)", schema: DeveloperEntities }
    },
    errors: ['invalid_id', 'developer_not_found', 'invalid_query'],
    handler: ctx => {
      const id = developerIdParam(ctx)
      const limit = intParam(ctx.query, 'limit', { min: 1, max: options.maxListLimit, default: options.maxListLimit })
      const offset = intParam(ctx.query, 'offset', { min: 0, default: 0 })
      const { records, total } = entities.list({ developerId: id, offset, limit })
      if (total === 0) developers.require(id)
      const views = records.map(r => entities.view(r))
      return json(200, { developer_id: id, entities: views, agents: views, count: views.length, total, limit, offset })
    }
  }

  return [
    {
      method: 'POST',
      path: '/v1/developers',
      summary: 'Register a developer (open mode)',
      tag: 'developers',
      limit: 'write',
      writer: bodyPublicKey,
      body: DeveloperRegistrationRequest,
      responses: { 201: { description: 'registered', schema: DeveloperRegistrationResponse } },
      errors: [
        'invalid_json',
        'validation_failed',
        'signature_invalid',
        'onboarding_required',
        'developer_exists',
        'developer_deregistered'
      ],
      handler: async ctx => json(201, await developers.register(bodySignedWrite(ctx)))
    },
    {
      method: 'GET',
      path: '/v1/developers/{developer_id}',
      summary: 'Get a developer record',
      tag: 'developers',
      limit: 'read',
      responses: { 200: { description: 'the record', schema: DeveloperRecordView } },
      errors: ['invalid_id', 'developer_not_found'],
      handler: ctx => json(200, developers.view(developers.require(developerIdParam(ctx))))
    },
    {
      method: 'PUT',
      path: '/v1/developers/{developer_id}',
      summary: 'Update a developer profile (Authorization: Bearer over the raw body, or body signature)',
      tag: 'developers',
      limit: 'write',
      writer: ctx => ctx.params.developer_id,
      body: DeveloperUpdateRequest,
      responses: { 200: { description: 'the updated record and the fields changed', schema: DeveloperUpdateAnswer } },
      errors: [
        'invalid_id',
        'invalid_json',
        'validation_failed',
        'field_immutable',
        'nothing_to_update',
        'signature_invalid',
        'authorization_required',
        'developer_not_found'
      ],
      handler: async ctx => {
        const record = await developers.update(developerIdParam(ctx), signedWrite(ctx))
        return json(200, { ...developers.view(record), changed: record.changed })
      }
    },
    {
      method: 'DELETE',
      path: '/v1/developers/{developer_id}',
      summary: 'Deregister a developer (Authorization: Bearer over the developer ID)',
      tag: 'developers',
      limit: 'write',
      writer: ctx => ctx.params.developer_id,
      responses: { 200: { description: 'deregistered', schema: Message } },
      errors: [
        'invalid_id',
        'signature_invalid',
        'authorization_required',
        'developer_not_found',
        'developer_has_entities'
      ],
      handler: async ctx => json(200, await developers.deregister(developerIdParam(ctx), signedDeletion(ctx)))
    },
    { ...listEntities, path: '/v1/developers/{developer_id}/entities', summary: "List a developer's entities" },
    { ...listEntities, path: '/v1/developers/{developer_id}/agents', summary: "List a developer's entities (alias)" }
  ]
}
