/**
 * Search: keeps the engine in step with the store (through the bus), embeds off the write path
 * (the hash embedder inside the index, on the index's thread; another embedder in batches after the
 * write), turns SearchRequests into engine queries and hits into SearchResults.
 *
 * The service is built in layers: where the index runs (search-placement.ts), what feeds it
 * (search-indexing.ts), and here the requests, composed of the parts in search-queries.ts.
 */
import { performance } from 'node:perf_hooks'
import { ID_PATTERNS } from '../../identity/ids.js'
import { analyzeQuery } from '../../search/analyzer.js'
import { millisecondsSince } from '../../util/elapsed.js'
import type { PeerSearchRequest, PeerSearchResponse } from '../../wire/federation.js'
import { SEARCH_LIMITS, SearchRequest, type SearchResponse } from '../../wire/search.js'
import { validate } from '../../wire/validate.js'
import { FederatedSearch, type LocalPart, type SearchFederationPort } from './federated-search.js'
import type { IndexQuery } from './search-index.js'
import type { SearchComponents } from './search-components.js'
import { SearchIndexing } from './search-indexing.js'
export type { SearchComponents, SearchSettings } from './search-components.js'
import {
  clampPaging,
  enrich,
  entityOfFqan,
  localHits,
  noPeersAsked,
  requestFilters,
  type SearchFields,
  searchResponse
} from './search-queries.js'

const DEFAULT_ENRICH_TIMEOUT_MS = 3000

export class SearchService extends SearchIndexing {
  private federation: FederatedSearch | null = null
  private readonly now: () => Date

  constructor(c: SearchComponents) {
    super(c)
    this.now = c.now ?? (() => new Date())
  }

  /**
   * Once the other views are loaded (search ranks by liveness): fills the index from the store,
   * BUILD_CHUNK records per turn, then builds the home term filter. Resolves with the number of
   * documents once the index holds them all; searches wait until then.
   */
  loaded(): Promise<number> {
    return this.startBuild()
  }

  /** Lets `federated: true` reach peers through the mesh (the node calls this once its mesh runs). */
  federate(port: SearchFederationPort): void {
    this.federation = new FederatedSearch({
      port,
      bus: this.c.bus,
      logger: this.c.logger,
      settings: this.c.search.federation
    })
  }

  /** Stops the filter's rebuild timer, lets queued embeddings finish, then stops the index (its worker). */
  async close(): Promise<void> {
    this.stopped = true
    this.federation = null
    this.homeTerms.stop()
    this.stopQuietWatch()
    await this.idle()
    await this.saveSnapshot('stopping')
    const moving = this.moving
    this.moving = null
    await moving?.index.close()
    await this.index.close()
  }

  async search(rawBody: unknown): Promise<SearchResponse> {
    const started = performance.now()
    const body = validate(SearchRequest, clampPaging(rawBody ?? {}))
    const limit = body.max_results ?? SEARCH_LIMITS.defaultResults
    const offset = body.offset ?? 0
    if (body.federated === true && this.federation !== null)
      return this.federatedSearch(body, offset, limit, started, this.federation)
    const local = await this.runLocal(body, offset, limit)
    if (body.enrich) await enrich(local.hits, body.timeout_ms ?? DEFAULT_ENRICH_TIMEOUT_MS, this.c.cards)
    // A federated search this node cannot run (no federation) reports that it asked no peers.
    return searchResponse(
      local.hits,
      offset,
      limit,
      started,
      noPeersAsked(local),
      body.federated === true,
      this.c.embedder.id
    )
  }

  /**
   * A peer's request (`/zns/search/1.0.0`): this node's own index only, never fanned out again, so
   * federated queries cannot loop. Results carry the entity's key and whether this node is its home.
   */
  async answerPeer(request: PeerSearchRequest): Promise<PeerSearchResponse> {
    const started = performance.now()
    const local = await this.runLocal(request, 0, request.limit)
    return {
      registry_id: this.c.identity.registryId,
      results: local.hits.map(h => ({ ...h.result, public_key: h.publicKey, home: h.home })),
      total_found: local.total,
      latency_ms: millisecondsSince(started)
    }
  }

  private async federatedSearch(
    body: SearchRequest,
    offset: number,
    limit: number,
    started: number,
    federation: FederatedSearch
  ): Promise<SearchResponse> {
    const outcome = await federation.search(body, offset + limit, () => this.runLocal(body, 0, offset + limit))
    const page = outcome.hits.slice(offset, offset + limit)
    if (body.enrich) await enrich(page, body.timeout_ms ?? DEFAULT_ENRICH_TIMEOUT_MS, this.c.cards)
    return searchResponse(page, offset, limit, started, outcome, true, this.c.embedder.id)
  }

  /** This node's own search: the best `limit` results after `offset`, with the total. */
  private async runLocal(body: SearchFields, offset: number, limit: number): Promise<LocalPart> {
    await this.built()
    const started = performance.now()
    // An FQAN or ID names at most one entity: resolved once, then the engine looks at that one only.
    // A query that is nothing but an entity ID asks for that entity (deployed clients look IDs up so).
    const idQuery = body.query?.trim()
    const queriedId = !body.fqan && idQuery && ID_PATTERNS.entity.test(idQuery) ? idQuery : undefined
    const onlyEntity = body.fqan ? entityOfFqan(body.fqan, this.c) : queriedId
    const { matchesNothing, ...filters } = requestFilters(body, onlyEntity !== undefined, this.c)
    const only = matchesNothing || onlyEntity === null ? [] : onlyEntity === undefined ? undefined : [onlyEntity]
    // The index adds the expansions (src/search/query-expansion.ts) on its thread.
    const analyzed = analyzeQuery(queriedId ? '' : (body.query ?? ''))
    let vector: Float32Array | null = null
    let semantic = 'used'
    if (analyzed.terms.length > 0) {
      try {
        vector = (await this.c.embedder.embed([body.query as string]))[0] ?? null
      } catch (err) {
        this.embedFailures++
        semantic = 'unavailable'
        this.c.logger.error({ err, embedder: this.c.embedder.id }, 'query embedding failed; searching by text only')
      }
    } else {
      semantic = 'not used (no query)'
    }
    const now = this.now().getTime()
    const query: IndexQuery = {
      terms: analyzed.terms,
      phrases: analyzed.phrases,
      vector,
      ...filters,
      minTrust: body.min_trust_score ?? 0,
      minSemantic: this.c.search.minSemantic,
      weights: this.c.search.weights,
      fusion: body.fusion ?? this.c.search.fusion,
      halfLifeDays: this.c.search.halfLifeDays,
      now,
      offset,
      limit,
      ...(only ? { only } : {})
    }
    const index = this.index
    // A query in flight when its worker was lost runs again on the rebuilt index.
    const { hits, total } = await index.search(query).catch((err: unknown) => {
      if (this.index === index) throw err
      return this.index.search(query)
    })
    this.workerLosses = 0
    const out = localHits(hits, this.c)
    const latency = millisecondsSince(started)
    this.c.bus.publish('search_local', {
      query: body.query ?? '',
      results: out.length,
      total_found: total,
      latency_ms: latency
    })
    return { hits: out, total, semantic }
  }
}
