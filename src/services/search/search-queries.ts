/**
 * The parts of a search request the service composes: its paging and filters as the index takes
 * them, the index's hits as results, enrichment with the entities' cards, and the response with
 * its search_stats.
 */
import type { CardFetcher } from '../../cards/card-fetcher.js'
import { RegistryError, invalidField } from '../../errors.js'
import { ID_PATTERNS } from '../../identity/ids.js'
import type { EngineQuery } from '../../search/search-engine.js'
import { millisecondsSince } from '../../util/elapsed.js'
import type { PeerSearchRequest } from '../../wire/federation.js'
import { SEARCH_LIMITS, type SearchRequest, type SearchResponse } from '../../wire/search.js'
import type { FederatedHit, FederatedOutcome, LocalPart, PeerOutcome } from './federated-search.js'
import { isHomeRecord } from './home-terms.js'
import { parseFqan } from '../registry/naming.js'
import type { SearchComponents } from './search-components.js'
import { stringsIn } from './search-documents.js'
import { CAPABILITY_KEYS, type CapabilityFilter, type CapabilityValues, type IndexHit } from './search-index.js'

/** The request fields a local search reads: from POST /v1/search or from a peer. */
export type SearchFields = SearchRequest | PeerSearchRequest

/** What a search counted, as its response reports it: a federated search's outcome, or a local one's. */
export type SearchTally = Omit<FederatedOutcome, 'hits' | 'timeoutMs'> & {
  /** The deadline each peer had; null when no peer was asked. */
  timeoutMs: number | null
}

/** A local search counted as a federated one that asked no peers. */
export function noPeersAsked(local: LocalPart): SearchTally {
  return {
    total: local.total,
    localTotal: local.total,
    semantic: local.semantic,
    federatedResults: 0,
    peers: [],
    skipped: 0,
    overCap: 0,
    timeoutMs: null
  }
}

/**
 * `max_results` and `offset` beyond their bounds are clamped, as list limits are (deployed clients
 * ask for more than the maximum); the reply's max_results and offset say what applied.
 */
export function clampPaging(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body
  const out = { ...body } as Record<string, unknown>
  const clamp = (key: string, lo: number, hi: number) => {
    if (Number.isInteger(out[key])) out[key] = Math.min(Math.max(out[key] as number, lo), hi)
  }
  clamp('max_results', 1, SEARCH_LIMITS.maxResults)
  clamp('offset', 0, SEARCH_LIMITS.maxOffset)
  return out
}

/** Capability words a card declares (A2A skills by id, name and tags; plain lists otherwise). */
function cardCapabilities(card: unknown): Record<(typeof CAPABILITY_KEYS)[number], Set<string>> {
  const c = (card ?? {}) as Record<string, unknown>
  const skills = Array.isArray(c.skills)
    ? c.skills.flatMap(s =>
        s && typeof s === 'object'
          ? stringsIn([
              (s as Record<string, unknown>).id,
              (s as Record<string, unknown>).name,
              (s as Record<string, unknown>).tags
            ])
          : stringsIn(s)
      )
    : []
  const metadata = (c.metadata ?? {}) as Record<string, unknown>
  return {
    skills: lower([...skills, ...stringsIn(c.capabilities)]),
    protocols: lower(stringsIn(c.protocols)),
    languages: lower(stringsIn(c.languages)),
    models: lower([...stringsIn(c.models), ...stringsIn(metadata.model)])
  }
}

function lower(values: readonly string[]): Set<string> {
  return new Set(values.map(v => v.toLowerCase()))
}

/**
 * The request's filters (all combined with AND): kind and status as columns; category, tags and
 * developer as lists of slots; capabilities as a predicate. An unknown developer handle matches nothing.
 * No type means every type, as the origin registry and the deployed clients have it (the spec's
 * other variant defaults to agents). A lookup of one entity (`exact`: by FQAN or ID) finds it
 * whatever its status unless a status is asked for.
 */
export function requestFilters(
  body: SearchFields,
  exact: boolean,
  c: Pick<SearchComponents, 'store' | 'cards'>
): Pick<EngineQuery, 'type' | 'active' | 'category' | 'tags' | 'developerId'> & {
  capabilities: CapabilityFilter | null
  matchesNothing: boolean
} {
  const typeText = (body.type ?? body.entity_type ?? 'any').toLowerCase()
  if (typeText !== 'agent' && typeText !== 'service' && typeText !== 'any' && typeText !== 'all')
    throw invalidField('type', 'must be agent, service or any')
  const status = (body.status ?? (exact ? 'any' : 'active')).toLowerCase()
  if (!['active', 'online', 'offline', 'inactive', 'any'].includes(status))
    throw invalidField('status', 'must be online, active, offline or any')
  const owner = body.developer_handle
    ? (c.store.getHandle(body.developer_handle.toLowerCase())?.developer_id ?? null)
    : undefined
  const wanted = body.developer_id || null
  const developerId = wanted ?? owner ?? null
  const nobody = owner === null || (owner !== undefined && wanted !== null && owner !== wanted)
  return {
    type: typeText === 'agent' || typeText === 'service' ? typeText : null,
    active: status === 'any' ? null : status === 'active' || status === 'online',
    category: body.category ? body.category.toLowerCase() : null,
    tags: body.tags?.length ? [...lower(body.tags)] : [],
    developerId,
    capabilities: capabilityFilter(body, c.cards),
    matchesNothing: nobody
  }
}

/** The capability filters of a request, with what the fresh cached cards declare of the wanted values. */
function capabilityFilter(body: SearchFields, cards: Pick<CardFetcher, 'freshCards'>): CapabilityFilter | null {
  const wanted: CapabilityValues = {}
  for (const key of CAPABILITY_KEYS) if (body[key]?.length) wanted[key] = [...lower(body[key])]
  if (Object.keys(wanted).length === 0) return null
  const declared: Record<string, CapabilityValues> = {}
  for (const [entityId, card] of cards.freshCards()) {
    const capabilities = cardCapabilities(card.card)
    for (const key of CAPABILITY_KEYS) {
      const held = wanted[key]?.filter(v => capabilities[key].has(v))
      if (held?.length) (declared[entityId] ??= {})[key] = held
    }
  }
  return { wanted, declared }
}

/** The entity an FQAN or entity ID names (null: none on this node). */
export function entityOfFqan(text: string, c: Pick<SearchComponents, 'settings' | 'names'>): string | null {
  if (ID_PATTERNS.entity.test(text)) return text
  const parsed = parseFqan(text)
  if (!parsed) throw new RegistryError('fqan_invalid', `"${text}" is neither an FQAN nor an entity ID.`, 'fqan')
  if (parsed.host !== null && parsed.host !== c.settings.host.toLowerCase()) return null
  return c.names.get(parsed.handle, parsed.name)?.entity_id ?? null
}

/** The index's hits as results, from the stored records (a hit whose record is gone meanwhile is left out). */
export function localHits(
  hits: readonly IndexHit[],
  c: Pick<SearchComponents, 'store' | 'names' | 'liveness' | 'identity' | 'settings'>
): FederatedHit[] {
  const out: FederatedHit[] = []
  for (const hit of hits) {
    const record = c.store.getEntity(hit.entityId)
    if (!record) continue
    const binding = c.names.primaryOf(record.entity_id)
    out.push({
      result: {
        entity_id: record.entity_id,
        name: record.name,
        summary: record.summary,
        category: record.category,
        tags: record.tags,
        type: record.type,
        entity_type: record.type,
        developer_id: record.developer_id,
        developer_handle: binding?.handle ?? null,
        fqan: binding ? c.names.fqan(binding.handle, binding.entity_name) : null,
        capability_summary: record.capability_summary,
        entity_url: record.entity_url,
        service_endpoint: record.service_endpoint,
        home_registry: record.home_registry,
        status: hit.active ? 'active' : 'inactive',
        last_heartbeat: c.liveness?.current(record.entity_id)?.last_heartbeat ?? record.last_heartbeat,
        score: hit.score,
        score_breakdown: hit.breakdown
      },
      publicKey: record.public_key,
      home: isHomeRecord(record, c.identity.registryId, c.settings.host),
      source: null
    })
  }
  return out
}

/** Fetches the page's cards in parallel; whatever is not back by the deadline is reported as such. */
export async function enrich(
  hits: readonly FederatedHit[],
  timeoutMs: number,
  cards: Pick<CardFetcher, 'get'>
): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<'timeout'>(resolve => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs)
  })
  await Promise.all(
    hits.map(async ({ result, publicKey }) => {
      // A peer's result carries the entity's key (checked against its ID), so its card is verified too.
      const entity = { entity_id: result.entity_id, entity_url: result.entity_url, public_key: publicKey }
      const outcome = await Promise.race([cards.get(entity).catch((err: unknown) => err as Error), deadline])
      if (outcome === 'timeout') {
        result.card = null
        result.agent_card = null
        result.card_error = `no card within ${timeoutMs} ms`
      } else if (outcome instanceof Error) {
        result.card = null
        result.agent_card = null
        result.card_error = outcome.message
      } else {
        result.card = outcome.card
        result.agent_card = outcome.card
        result.card_verification = outcome.verification
      }
    })
  )
  clearTimeout(timer)
}

/**
 * The response to a search, local or federated: the page, the totals and search_stats (with the
 * peers' part when the request asked for a federated search).
 */
export function searchResponse(
  page: readonly FederatedHit[],
  offset: number,
  limit: number,
  started: number,
  outcome: SearchTally,
  federated: boolean,
  embedderId: string
): SearchResponse {
  const results = page.map(h => h.result)
  const count = (o: PeerOutcome): number => outcome.peers.filter(p => p.outcome === o).length
  return {
    results,
    total_found: outcome.total,
    total: outcome.total,
    has_more: offset + results.length < outcome.total,
    offset,
    max_results: limit,
    federated_peer_count: count('answered'),
    search_stats: {
      local_results: outcome.localTotal,
      federated_results: outcome.federatedResults,
      peers_queried: outcome.peers.length,
      latency_ms: millisecondsSince(started),
      embedder: embedderId,
      semantic: outcome.semantic,
      ...(federated
        ? {
            federated: true,
            peers_answered: count('answered'),
            peers_failed: count('failed'),
            peers_timed_out: count('timed_out'),
            peers_skipped: outcome.skipped,
            peers_over_cap: outcome.overCap,
            ...(outcome.timeoutMs !== null ? { peer_timeout_ms: outcome.timeoutMs } : {}),
            peers: outcome.peers
          }
        : {})
    }
  }
}
