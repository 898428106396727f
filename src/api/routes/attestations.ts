import { RegistryError } from '../../errors.js'
import { createdOrExisting, json, type RouteDefinition } from '../../http/http.js'
import type { AttestationService } from '../../services/registry/attestations.js'
import {
  AttestationList,
  AttestationListQuery,
  AttestationRequest,
  AttestationView,
  TrustExplanation
} from '../../wire/attestations.js'
import { bodySignedWrite, entityIdParam, intParam } from './params.js'

export function attestationRoutes(
  attestations: AttestationService,
  options: { maxListLimit: number }
): RouteDefinition[] {
  const tag = 'attestations'
  return [
    {
      method: 'POST',
      path: '/v1/attestations',
      summary: "State an experience with an entity (signed by the issuer's registered key)",
      tag,
      limit: 'write',
      writer: ctx => {
        const body = ctx.json()
        const issuer = body !== null && typeof body === 'object' ? (body as { issuer?: unknown }).issuer : undefined
        return typeof issuer === 'string' ? `attestation:${issuer}` : undefined
      },
      body: AttestationRequest,
      responses: {
        201: { description: 'accepted', schema: AttestationView },
        200: { description: 'already held (the same signed statement); nothing changed', schema: AttestationView }
      },
      errors: [
        'invalid_json',
        'validation_failed',
        'issuer_not_found',
        'entity_not_found',
        'self_attestation',
        'signature_invalid',
        'clock_skew',
        'attestation_quota'
      ],
      handler: async ctx => {
        const { record, created } = await attestations.add(bodySignedWrite(ctx))
        return createdOrExisting(created, attestations.view(record), {
          created: 'attestation accepted',
          existing: 'attestation already held'
        })
      }
    },
    {
      method: 'GET',
      path: '/v1/attestations',
      summary: 'Attestations of an entity (`subject`) or by an entity or developer (`issuer`), in ID order',
      tag,
      limit: 'read',
      query: AttestationListQuery,
      responses: { 200: { description: 'a page of attestations', schema: AttestationList } },
      errors: ['invalid_query'],
      handler: ctx => {
        const subject = ctx.query.get('subject') ?? undefined
        const issuer = ctx.query.get('issuer') ?? undefined
        if ((subject === undefined) === (issuer === undefined))
          throw new RegistryError('invalid_query', 'Give exactly one of subject and issuer.', 'subject')
        const limit = intParam(ctx.query, 'limit', { min: 1, max: options.maxListLimit, default: options.maxListLimit })
        const page = attestations.list({
          ...(subject !== undefined ? { subject } : { issuer: issuer as string }),
          after: ctx.query.get('after'),
          limit
        })
        return json(200, {
          attestations: page.map(r => attestations.view(r)),
          count: page.length,
          next: page.length === limit ? (page.at(-1)?.attestation_id ?? null) : null
        })
      }
    },
    {
      method: 'GET',
      path: '/v1/entities/{entity_id}/trust',
      summary:
        'Why an entity has its transitive trust: its score, its share of all trust, who gives it the most, what it received',
      tag,
      limit: 'read',
      responses: { 200: { description: 'the explanation', schema: TrustExplanation } },
      errors: ['invalid_id', 'entity_not_found'],
      handler: async ctx => json(200, await attestations.explain(entityIdParam(ctx)))
    },
    {
      method: 'GET',
      path: '/v1/attestations/{id}',
      summary: 'One attestation',
      tag,
      limit: 'read',
      responses: { 200: { description: 'the attestation', schema: AttestationView } },
      errors: ['attestation_not_found'],
      handler: ctx => json(200, attestations.view(attestations.require(ctx.params.id ?? '')))
    }
  ]
}
