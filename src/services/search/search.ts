/**
 * Search: keeps the engine in step with the store (through the bus), embeds off the write path
 * (the hash embedder inside the index, on the index's thread; another embedder in batches after the
 * write), turns SearchRequests into engine queries and hits into SearchResults.
 */
import { performance } from 'node:perf_hooks'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { CardFetcher } from '../../cards/card-fetcher.js'
import { RegistryError, invalidField } from '../../errors.js'
import { ID_PATTERNS } from '../../identity/ids.js'
import { analyzeQuery } from '../../search/analyzer.js'
import type { Embedder } from '../../search/embedders/embedder.js'
import { HashEmbedder } from '../../search/embedders/hash-embedder.js'
import type { Fusion, RankingWeights } from '../../search/ranking.js'
import type { EngineQuery, SearchDocument } from '../../search/search-engine.js'
import type { FieldTokens } from '../../search/text-index.js'
import type { EntityRecord } from '../../store/records.js'
import { millisecondsSince } from '../../util/elapsed.js'
import type { PeerSearchRequest, PeerSearchResponse, TermFilterMessage } from '../../wire/federation.js'
import { SEARCH_LIMITS, SearchRequest, type SearchResponse } from '../../wire/search.js'
import { validate } from '../../wire/validate.js'
import type { ServiceComponents } from '../registry/components.js'
import {
  FederatedSearch,
  type FederatedHit,
  type FederatedOutcome,
  type FederationSettings,
  type LocalPart,
  type PeerOutcome,
  type SearchFederationPort
} from './federated-search.js'
import { HomeTermFilterView, isHomeRecord, type HomeFields } from './home-terms.js'
import type { NameService } from '../registry/names.js'
import { parseFqan } from '../registry/naming.js'
import type { LiveView, LivenessView } from '../registry/ports.js'
import {
  CAPABILITY_KEYS,
  analyzeText,
  type CapabilityFilter,
  type CapabilityValues,
  type DocumentText,
  embeddingText,
  type IndexChange,
  type IndexOptions,
  type IndexQuery,
  LocalSearchIndex,
  type SearchIndex
} from './search-index.js'
import { WorkerSearchIndex } from './search-worker-index.js'
import { developerTrustPart } from '../registry/trust.js'

export interface SearchSettings {
  weights: RankingWeights
  fusion: Fusion
  halfLifeDays: number
  minSemantic: number
  /** Federated search: peers per query and the default per-peer deadline. */
  federation: FederationSettings
  /** The filter of home terms peers route by: its false-positive rate and how often it may be rebuilt. */
  termFilter: { falsePositiveRate: number; rebuildIntervalMs: number }
  /** The engine in a worker thread (true) or on the HTTP thread. */
  worker: boolean
  /**
   * With `worker`, the engine runs on the HTTP thread until the store holds this many entities, then
   * moves to its thread at the first quiet second of the HTTP thread, or at MOVE_REGARDLESS_AT
   * entities (0 or absent: the worker from the start).
   */
  workerFromEntities?: number
  /** Add the indexed records' words nearest a query's words to it (src/search/query-expansion.ts). */
  queryExpansion: boolean
}

/** The request fields a local search reads: from POST /v1/search or from a peer. */
type SearchFields = SearchRequest | PeerSearchRequest

export interface SearchComponents extends Pick<ServiceComponents, 'store' | 'bus' | 'settings' | 'identity' | 'now'> {
  names: NameService
  embedder: Embedder
  /** Live cards: enrichment, and card capabilities for the skills/protocols/languages/models filters. */
  cards: Pick<CardFetcher, 'get' | 'cached' | 'freshCards'>
  /** Liveness of home entities (availability, uptime for trust, heartbeat freshness). */
  liveness?: LivenessView
  logger: Logger
  search: SearchSettings
}

const EMBED_BATCH = 64
/** Workers lost in a row (none answering in between) after which the engine runs on the HTTP thread. */
const MAX_WORKER_LOSSES = 3
/** Writes between two looks at the store's entity count while the engine waits to move to its worker. */
const COUNT_EVERY = 64
/**
 * The engine, grown past `workerFromEntities`, moves to its worker once the HTTP thread was busy
 * less than QUIET_UTILIZATION of a QUIET_CHECK_MS period: the move (the worker's start, the records
 * copied to it) costs a few hundred milliseconds of CPU, which a node already loaded by a burst of
 * writes would show as its reply latency (docs/decisions.md). At MOVE_REGARDLESS_AT entities it
 * moves under any load: queries on the HTTP thread cost it more as the index grows.
 */
const QUIET_CHECK_MS = 1000
const QUIET_UTILIZATION = 0.25
const MOVE_REGARDLESS_AT = 25_000
/** Records copied to the worker's index per turn of the event loop while the engine moves. */
const MOVE_CHUNK = 256
/**
 * Records read from the store per turn while the index is built at start (or rebuilt). At most two
 * such chunks are on their way to a worker at a time: at a million entities the whole store sent at
 * once sat about 450 MB deep in the worker's message queue, memory the process kept after.
 */
const BUILD_CHUNK = 5000
const DEFAULT_ENRICH_TIMEOUT_MS = 3000

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

function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value]
  if (Array.isArray(value)) return value.flatMap(stringsIn)
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(stringsIn)
  return []
}

const NOTHING: readonly string[] = Object.freeze([])

/** Distinct lowercased values; the shared empty list when there are none. (The index interns them.) */
function facetValues(values: readonly string[]): readonly string[] {
  if (values.length === 0) return NOTHING
  return [...new Set(values.map(v => v.toLowerCase()))]
}

export function searchDocument(r: EntityRecord, live?: LiveView): SearchDocument {
  const caps = r.capability_summary ?? {}
  const status = live?.status ?? r.status
  const lastHeartbeat = live ? live.last_heartbeat : r.last_heartbeat
  const set = (key: string) => facetValues(stringsIn(caps[key]))
  return {
    entityId: r.entity_id,
    type: r.type === 'service' ? 'service' : 'agent',
    category: r.category.toLowerCase(),
    tags: facetValues(r.tags),
    developerId: r.developer_id,
    active: status === 'active',
    registeredAt: Date.parse(r.registered_at),
    lastChange: Math.max(Date.parse(r.updated_at), lastHeartbeat ? Date.parse(lastHeartbeat) : 0),
    uptime: live?.uptime ?? (status === 'active' ? 1 : 0),
    capabilities: {
      skills: set('skills'),
      protocols: set('protocols'),
      languages: set('languages'),
      models: set('models')
    }
  }
}

function documentText(r: EntityRecord): DocumentText {
  return {
    name: r.name,
    tags: r.tags,
    category: r.category,
    summary: r.summary,
    capabilities: stringsIn(r.capability_summary ?? {})
  }
}

/** A record's analyzed fields, as the index makes them (benchmarks and the eval index records directly). */
export function documentFields(r: EntityRecord): FieldTokens {
  return analyzeText(documentText(r))
}

function homeFields(r: EntityRecord): HomeFields {
  return { entity_id: r.entity_id, home_registry: r.home_registry, home_registry_id: r.home_registry_id }
}

/** What a search counted, as its response reports it: a federated search's outcome, or a local one's. */
type SearchTally = Omit<FederatedOutcome, 'hits' | 'timeoutMs'> & {
  /** The deadline each peer had; null when no peer was asked. */
  timeoutMs: number | null
}

/** A local search counted as a federated one that asked no peers. */
function noPeersAsked(local: LocalPart): SearchTally {
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

/** The engine's move to its worker: the worker's index, filled from the store a chunk at a time. */
interface Move {
  index: WorkerSearchIndex
  /** The last entity ID copied (null: none yet). */
  after: string | null
  /** Developers of the records copied, whose trust part the worker's index is sent at the end. */
  developers: Set<string>
  started: number
}

export class SearchService {
  private index: SearchIndex
  /** While the engine moves to its worker: every change reaches both indexes; queries stay on `index`. */
  private moving: Move | null = null
  /** Samples the HTTP thread's load until a quiet period lets the engine move. */
  private quietWatch: NodeJS.Timeout | null = null
  /** Developers whose trust part the index holds. */
  private readonly knownDevelopers = new Set<string>()
  private workerLosses = 0
  /** Writes since the entity count was last compared with `workerFromEntities` (see indexRecord). */
  private writesSinceCount = 0
  /** The filter of this node's home terms peers route federated queries by, as the index last built it. */
  readonly homeTerms: HomeTermFilterView
  private federation: FederatedSearch | null = null
  private readonly now: () => Date
  private readonly pending = new Map<string, string>()
  private flushing: Promise<void> | null = null
  private flushScheduled = false
  /** Texts the embedder failed on (also logged); exported as a metric. */
  embedFailures = 0
  /** The index being filled from the store (at start, or after a lost worker); searches wait for it. */
  private building: Promise<number> | null = null
  private stopped = false
  /** The hash embedder runs inside the index, on the index's thread (IndexOptions.embedding). */
  private readonly indexEmbeds: boolean

  constructor(private readonly c: SearchComponents) {
    this.homeTerms = new HomeTermFilterView(c.logger)
    this.indexEmbeds = c.embedder instanceof HashEmbedder
    this.index = this.createIndex()
    this.now = c.now ?? (() => new Date())
    c.bus.subscribe(event => {
      const id = event.data.entity_id
      const developerId = event.data.developer_id
      if (typeof developerId === 'string' && (event.type.startsWith('developer_') || event.type.startsWith('handle_')))
        this.refreshDeveloper(developerId)
      if (typeof id !== 'string') return
      if (event.type === 'agent_registered' || event.type === 'agent_updated') this.reindex(id, event.entity)
      else if (event.type === 'agent_deregistered') this.unindex(id)
      else if (
        event.type === 'agent_heartbeat' ||
        event.type === 'agent_became_active' ||
        event.type === 'agent_became_inactive'
      )
        this.refreshLiveness(id)
      // Another home's status change, applied to its record here (this node's own carry no record).
      else if (event.type === 'agent_status' && event.entity) this.refreshStatus(event.entity)
    })
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
    const moving = this.moving
    this.moving = null
    await moving?.index.close()
    await this.index.close()
  }

  /** Resolves once every queued embedding is done and the index holds every change (tests, benchmarks, shutdown). */
  async idle(): Promise<void> {
    await this.built()
    while (this.flushing || this.pending.size > 0) await (this.flushing ?? this.flush())
    await this.index.settled()
  }

  private createIndex(): SearchIndex {
    if (this.workerWanted()) return this.workerIndex()
    return new LocalSearchIndex(this.indexOptions(), this.publishFilter, this.c.logger)
  }

  private workerIndex(): WorkerSearchIndex {
    const index: WorkerSearchIndex = new WorkerSearchIndex(
      this.indexOptions(),
      err => this.lostWorker(index, err),
      this.publishFilter
    )
    return index
  }

  private readonly publishFilter = (message: TermFilterMessage): void => this.homeTerms.publish(message)

  private indexOptions(): IndexOptions {
    const { termFilter } = this.c.search
    return {
      dimension: this.c.embedder.dimension,
      embedding: this.indexEmbeds ? 'hash' : null,
      queryExpansion: this.c.search.queryExpansion,
      homeTerms: {
        registryId: this.c.identity.registryId,
        host: this.c.settings.host,
        falsePositiveRate: termFilter.falsePositiveRate,
        rebuildIntervalMs: termFilter.rebuildIntervalMs
      }
    }
  }

  /**
   * Whether the engine belongs in its worker thread. A small index answers in a fraction of a
   * millisecond, so until it grows the thread would only cost memory (about 55 MiB a node) and a
   * wake-up of one more thread per write: in a 20-node mesh on 2 cores that halved the per-hop
   * delay (docs/decisions.md).
   */
  private workerWanted(): boolean {
    if (!this.c.search.worker || this.workerLosses >= MAX_WORKER_LOSSES) return false
    const from = this.c.search.workerFromEntities ?? 0
    return from === 0 || this.c.store.entityCount() >= from
  }

  /**
   * A lost worker took the index with it: a new one is built from the store, as at start. A worker
   * lost while the engine moved to it held no query: the move is dropped and tried again later.
   */
  private lostWorker(index: WorkerSearchIndex, err: Error): void {
    this.workerLosses++
    const moving = this.moving?.index === index
    this.c.logger.error(
      { err, losses: this.workerLosses, inThread: this.workerLosses >= MAX_WORKER_LOSSES },
      moving
        ? 'search worker lost while the index moved to it; the index stays on the HTTP thread'
        : 'search worker lost; rebuilding the index from the store'
    )
    if (moving) this.moving = null
    else if (this.index === index) this.rebuild()
  }

  /**
   * A new index built from the store, as at start; queries from now on go to it, as the changes
   * reach it in order after the records. Vectors follow from the embedder, as after a write.
   */
  private rebuild(): void {
    this.index = this.createIndex()
    this.knownDevelopers.clear()
    this.startBuild().catch((err: unknown) => this.c.logger.error({ err }, 'search index not rebuilt'))
  }

  /** Resolves once no build runs; a build replaced by another (a lost worker) hands its waiters on to the next. */
  private async built(): Promise<void> {
    while (this.building) await this.building.catch(() => 0)
  }

  private startBuild(): Promise<number> {
    const building: Promise<number> = this.build(this.index).finally(() => {
      if (this.building === building) this.building = null
    })
    this.building = building
    return building
  }

  /**
   * Reads every stored record into `index` a chunk at a time. Writes that land meanwhile reach the
   * index directly: a chunk read later holds the store's latest version, and an entity deregistered
   * before its chunk is no longer there to read (as in the move to the worker). A first chunk, all a
   * small store has, is read in the caller's turn.
   */
  private async build(index: SearchIndex): Promise<number> {
    let after: string | null = null
    let previous: Promise<number> | null = null
    // Text and filters first: vectors and home terms follow the last chunk (a 1M store is searchable
    // 25–40 s sooner; its semantic ranking is complete about 35 s after that).
    index.apply({ op: 'bulk-load' })
    for (;;) {
      const records = this.c.store.entitiesAfter(after, BUILD_CHUNK)
      for (const record of records) this.indexRecord(record)
      if (records.length < BUILD_CHUNK) break
      after = (records[records.length - 1] as EntityRecord).entity_id
      const settled = index.settled()
      // The chunk before this one is in the index: at most two on their way.
      if (previous) await previous
      previous = settled
      await nextTurn()
      // Replaced (its worker lost: a new build runs) or closing.
      if (this.index !== index || this.stopped) return 0
    }
    this.apply({ op: 'home-filter' })
    return index.settled()
  }

  /**
   * Once the store has grown past `workerFromEntities`, moves the engine to its worker thread at the
   * first quiet period of the HTTP thread, or at once past MOVE_REGARDLESS_AT entities.
   */
  private moveToWorkerWhenGrown(): void {
    const from = this.c.search.workerFromEntities ?? 0
    if (!(this.index instanceof LocalSearchIndex) || this.moving || !this.c.search.worker || from === 0) return
    if (++this.writesSinceCount < Math.min(COUNT_EVERY, from)) return
    this.writesSinceCount = 0
    if (this.workerLosses >= MAX_WORKER_LOSSES) return
    const count = this.c.store.entityCount()
    if (count >= Math.max(from, MOVE_REGARDLESS_AT)) this.startMove()
    else if (count >= from) this.watchForQuiet()
  }

  private watchForQuiet(): void {
    if (this.quietWatch) return
    let last = performance.eventLoopUtilization()
    this.quietWatch = setInterval(() => {
      const now = performance.eventLoopUtilization()
      const { utilization } = performance.eventLoopUtilization(now, last)
      last = now
      if (utilization < QUIET_UTILIZATION) this.startMove()
    }, QUIET_CHECK_MS).unref()
  }

  private stopQuietWatch(): void {
    if (this.quietWatch) clearInterval(this.quietWatch)
    this.quietWatch = null
  }

  /**
   * Starts filling a worker's index from the store, a chunk per turn; from now on every change
   * reaches it too, so it holds every record once the copy has gone past the last one.
   */
  private startMove(): void {
    this.stopQuietWatch()
    if (this.moving || !(this.index instanceof LocalSearchIndex) || !this.workerWanted()) return
    const move: Move = { index: this.workerIndex(), after: null, developers: new Set(), started: performance.now() }
    this.moving = move
    setImmediate(() => this.copyToWorker(move))
  }

  private copyToWorker(move: Move): void {
    const from = this.index
    if (this.moving !== move || !(from instanceof LocalSearchIndex)) return
    const records = this.c.store.entitiesAfter(move.after, MOVE_CHUNK)
    for (const record of records) {
      move.index.apply(this.upsertOf(record))
      const vector = this.indexEmbeds ? null : from.vectorOf(record.entity_id)
      if (vector) move.index.apply({ op: 'vector', entityId: record.entity_id, vector })
      if (record.developer_id) move.developers.add(record.developer_id)
      move.after = record.entity_id
    }
    if (records.length === MOVE_CHUNK) setImmediate(() => this.copyToWorker(move))
    else void this.finishMove(move)
  }

  /** The worker's index holds every record: it gets the developers' parts and the filter, then the queries. */
  private async finishMove(move: Move): Promise<void> {
    for (const developerId of new Set([...move.developers, ...this.knownDevelopers]))
      move.index.apply(this.developerChange(developerId))
    move.index.apply({ op: 'home-filter' })
    const size = await move.index.settled().catch(() => null)
    if (this.moving !== move || size === null) return
    const inThread = this.index
    this.index = move.index
    this.moving = null
    void inThread.close()
    this.c.logger.info(
      { entities: size, ms: Math.round(performance.now() - move.started) },
      'search index moved to its worker thread'
    )
  }

  /** A change for the index the queries go to and, while the engine moves, for the worker's too. */
  private apply(change: IndexChange): void {
    this.index.apply(change)
    this.moving?.index.apply(change)
  }

  private reindex(id: string, committed?: EntityRecord): void {
    const record = committed ?? this.c.store.getEntity(id)
    if (record) this.indexRecord(record)
    else this.unindex(id)
  }

  private unindex(id: string): void {
    this.apply({ op: 'remove', entityId: id })
  }

  private refreshLiveness(id: string): void {
    const live = this.c.liveness?.current(id)
    if (!live) return
    this.apply({
      op: 'patch',
      entityId: id,
      change: {
        active: live.status === 'active',
        uptime: live.uptime,
        ...(live.last_heartbeat ? { lastChange: Date.parse(live.last_heartbeat) } : {})
      }
    })
  }

  private refreshStatus(record: EntityRecord): void {
    const { active, uptime, lastChange } = searchDocument(record, this.c.liveness?.current(record.entity_id))
    this.apply({ op: 'patch', entityId: record.entity_id, change: { active, uptime, lastChange } })
  }

  private indexRecord(record: EntityRecord): void {
    // A developer's part changes only with developer and handle events, which refresh it.
    if (record.developer_id && !this.knownDevelopers.has(record.developer_id))
      this.refreshDeveloper(record.developer_id)
    const upsert = this.upsertOf(record)
    this.apply(upsert)
    this.moveToWorkerWhenGrown()
    if (this.indexEmbeds) return
    this.pending.set(record.entity_id, embeddingText(upsert.text))
    if (!this.flushing && !this.flushScheduled) {
      this.flushScheduled = true
      setImmediate(() => {
        this.flushScheduled = false
        void this.flush()
      })
    }
  }

  private upsertOf(record: EntityRecord): Extract<IndexChange, { op: 'upsert' }> {
    return {
      op: 'upsert',
      doc: searchDocument(record, this.c.liveness?.current(record.entity_id)),
      text: documentText(record),
      home: homeFields(record)
    }
  }

  private flush(): Promise<void> {
    // Assigned before the drain can settle (and cleared by the settled promise), so `flushing`
    // never outlives the work even when there is nothing to embed.
    this.flushing ??= this.drainEmbeddings().finally(() => {
      this.flushing = null
    })
    return this.flushing
  }

  private async drainEmbeddings(): Promise<void> {
    while (this.pending.size > 0) {
      const batch: [string, string][] = []
      for (const entry of this.pending) {
        batch.push(entry)
        if (batch.length === EMBED_BATCH) break
      }
      for (const [id] of batch) this.pending.delete(id)
      try {
        const vectors = await this.c.embedder.embed(batch.map(([, text]) => text))
        batch.forEach(([entityId], i) => {
          this.apply({ op: 'vector', entityId, vector: vectors[i] as Float32Array })
        })
      } catch (err) {
        this.embedFailures += batch.length
        this.c.logger.error(
          { err, embedder: this.c.embedder.id, entities: batch.length },
          'embedding failed; these entities are searchable by text only until reindexed'
        )
      }
      // An embedder may finish synchronously (hash): let requests in between batches.
      await nextTurn()
    }
  }

  /** Entities waiting for their vector (a metric: how far semantic search lags behind writes). */
  get embeddingBacklog(): number {
    return this.pending.size
  }

  async search(rawBody: unknown): Promise<SearchResponse> {
    const started = performance.now()
    const body = validate(SearchRequest, clampPaging(rawBody ?? {}))
    const limit = body.max_results ?? SEARCH_LIMITS.defaultResults
    const offset = body.offset ?? 0
    if (body.federated === true && this.federation !== null)
      return this.federatedSearch(body, offset, limit, started, this.federation)
    const local = await this.runLocal(body, offset, limit)
    if (body.enrich) await this.enrich(local.hits, body.timeout_ms ?? DEFAULT_ENRICH_TIMEOUT_MS)
    // A federated search this node cannot run (no federation) reports that it asked no peers.
    return this.respond(local.hits, offset, limit, started, noPeersAsked(local), body.federated === true)
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
    if (body.enrich) await this.enrich(page, body.timeout_ms ?? DEFAULT_ENRICH_TIMEOUT_MS)
    return this.respond(page, offset, limit, started, outcome, true)
  }

  /**
   * The response to a search, local or federated: the page, the totals and search_stats (with the
   * peers' part when the request asked for a federated search).
   */
  private respond(
    page: readonly FederatedHit[],
    offset: number,
    limit: number,
    started: number,
    outcome: SearchTally,
    federated: boolean
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
        embedder: this.c.embedder.id,
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

  /** This node's own search: the best `limit` results after `offset`, with the total. */
  private async runLocal(body: SearchFields, offset: number, limit: number): Promise<LocalPart> {
    await this.built()
    const started = performance.now()
    // An FQAN or ID names at most one entity: resolved once, then the engine looks at that one only.
    // A query that is nothing but an entity ID asks for that entity (deployed clients look IDs up so).
    const idQuery = body.query?.trim()
    const queriedId = !body.fqan && idQuery && ID_PATTERNS.entity.test(idQuery) ? idQuery : undefined
    const onlyEntity = body.fqan ? this.entityOfFqan(body.fqan) : queriedId
    const { matchesNothing, ...filters } = this.filters(body, onlyEntity !== undefined)
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
    const out: FederatedHit[] = []
    for (const hit of hits) {
      const record = this.c.store.getEntity(hit.entityId)
      if (!record) continue
      const binding = this.c.names.primaryOf(record.entity_id)
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
          fqan: binding ? this.c.names.fqan(binding.handle, binding.entity_name) : null,
          capability_summary: record.capability_summary,
          entity_url: record.entity_url,
          service_endpoint: record.service_endpoint,
          home_registry: record.home_registry,
          status: hit.active ? 'active' : 'inactive',
          last_heartbeat: this.c.liveness?.current(record.entity_id)?.last_heartbeat ?? record.last_heartbeat,
          score: hit.score,
          score_breakdown: hit.breakdown
        },
        publicKey: record.public_key,
        home: isHomeRecord(record, this.c.identity.registryId, this.c.settings.host),
        source: null
      })
    }
    const latency = millisecondsSince(started)
    this.c.bus.publish('search_local', {
      query: body.query ?? '',
      results: out.length,
      total_found: total,
      latency_ms: latency
    })
    return { hits: out, total, semantic }
  }

  /** Fetches the page's cards in parallel; whatever is not back by the deadline is reported as such. */
  private async enrich(hits: readonly FederatedHit[], timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<'timeout'>(resolve => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs)
    })
    await Promise.all(
      hits.map(async ({ result, publicKey }) => {
        // A peer's result carries the entity's key (checked against its ID), so its card is verified too.
        const entity = { entity_id: result.entity_id, entity_url: result.entity_url, public_key: publicKey }
        const outcome = await Promise.race([this.c.cards.get(entity).catch((err: unknown) => err as Error), deadline])
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
   * The request's filters (all combined with AND): kind and status as columns; category, tags and
   * developer as lists of slots; capabilities as a predicate. An unknown developer handle matches nothing.
   * No type means every type, as the origin registry and the deployed clients have it (the spec's
   * other variant defaults to agents). A lookup of one entity (`exact`: by FQAN or ID) finds it
   * whatever its status unless a status is asked for.
   */
  private filters(
    body: SearchFields,
    exact: boolean
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
      ? (this.c.store.getHandle(body.developer_handle.toLowerCase())?.developer_id ?? null)
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
      capabilities: this.capabilityFilter(body),
      matchesNothing: nobody
    }
  }

  /** The capability filters of a request, with what the fresh cached cards declare of the wanted values. */
  private capabilityFilter(body: SearchFields): CapabilityFilter | null {
    const wanted: CapabilityValues = {}
    for (const key of CAPABILITY_KEYS) if (body[key]?.length) wanted[key] = [...lower(body[key])]
    if (Object.keys(wanted).length === 0) return null
    const declared: Record<string, CapabilityValues> = {}
    for (const [entityId, card] of this.c.cards.freshCards()) {
      const capabilities = cardCapabilities(card.card)
      for (const key of CAPABILITY_KEYS) {
        const held = wanted[key]?.filter(v => capabilities[key].has(v))
        if (held?.length) (declared[entityId] ??= {})[key] = held
      }
    }
    return { wanted, declared }
  }

  /** The entity an FQAN or entity ID names (null: none on this node). */
  private entityOfFqan(text: string): string | null {
    if (ID_PATTERNS.entity.test(text)) return text
    const parsed = parseFqan(text)
    if (!parsed) throw new RegistryError('fqan_invalid', `"${text}" is neither an FQAN nor an entity ID.`, 'fqan')
    if (parsed.host !== null && parsed.host !== this.c.settings.host.toLowerCase()) return null
    return this.c.names.get(parsed.handle, parsed.name)?.entity_id ?? null
  }

  /** Recomputes the developer's part of trust (verified handle, profile) for all their documents. */
  private refreshDeveloper(developerId: string): void {
    this.knownDevelopers.add(developerId)
    this.apply(this.developerChange(developerId))
  }

  private developerChange(developerId: string): IndexChange {
    const developer = this.c.store.getDeveloper(developerId)
    const handle = developer?.dev_handle ? this.c.store.getHandle(developer.dev_handle) : undefined
    return { op: 'developer', developerId, part: developerTrustPart(developer, handle) }
  }
}

/**
 * `max_results` and `offset` beyond their bounds are clamped, as list limits are (deployed clients
 * ask for more than the maximum); the reply's max_results and offset say what applied.
 */
function clampPaging(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body
  const out = { ...body } as Record<string, unknown>
  const clamp = (key: string, lo: number, hi: number) => {
    if (Number.isInteger(out[key])) out[key] = Math.min(Math.max(out[key] as number, lo), hi)
  }
  clamp('max_results', 1, SEARCH_LIMITS.maxResults)
  clamp('offset', 0, SEARCH_LIMITS.maxOffset)
  return out
}
