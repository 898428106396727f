import { Type } from '@sinclair/typebox'
import { RegistryError } from '../../errors.js'
import type { CardFetcher } from '../../cards/card-fetcher.js'
import { JSON_CONTENT_TYPE, type RouteDefinition } from '../../http/http.js'
import { entityIdParam } from './params.js'

/** What the card route needs of an entity record. */
export interface CardEntitySource {
  /** The record; throws entity_not_found. */
  require(id: string): { entity_id: string; entity_url: string | null; public_key: string }
}

const EntityCard = Type.Object(
  {},
  {
    additionalProperties: true,
    description: "the card exactly as the entity serves it (A2A agent card or the spec's EntityCard)"
  }
)

export function cardRoutes(entities: CardEntitySource, fetcher: CardFetcher): RouteDefinition[] {
  return [
    {
      method: 'GET',
      path: '/v1/entities/{entity_id}/card',
      summary:
        'The live card fetched from entity_url (/.well-known/agent-card.json, then the older paths), passed through unchanged; X-Card-Verification tells whether its signature verifies against the registered key',
      tag: 'entities',
      limit: 'read',
      responses: {
        200: {
          description: 'the card bytes as served by the entity (headers X-Card-Verification, X-Card-Source)',
          schema: EntityCard
        }
      },
      errors: ['invalid_id', 'entity_not_found', 'card_unavailable', 'card_address_refused'],
      handler: async ctx => {
        const record = entities.require(entityIdParam(ctx))
        if (record.entity_url === null || record.entity_url === '') {
          throw new RegistryError('card_unavailable', `${record.entity_id} has no entity_url to fetch a card from.`)
        }
        const fetched = await fetcher.get({
          entity_id: record.entity_id,
          entity_url: record.entity_url,
          public_key: record.public_key
        })
        return {
          status: 200,
          body: fetched.body,
          contentType: JSON_CONTENT_TYPE,
          headers: {
            'X-Card-Verification': fetched.verification,
            'X-Card-Source': fetched.source_url,
            'Cache-Control': `public, max-age=${fetcher.remainingSeconds(fetched)}`
          }
        }
      }
    }
  ]
}
