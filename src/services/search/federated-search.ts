/**
 * Federated search: a query with `federated: true` also goes to peers, chosen by the Bloom filters
 * of their home records' terms, and their answers are merged with this node's own.
 *
 * Routing (docs/decisions.md, "Federated search routing"):
 * - a peer is a candidate when it is connected and speaks `/zns/search/1.0.0`;
 * - with a filter: every term of the request's `category` and `tags` (conjunctive filters) must be
 *   in it, and, when the query has terms (its words and their synonym expansions), at least one of
 *   them; a query without terms goes to every peer whose filter is not empty;
 * - without a filter yet (it has not arrived): asked after the matching peers, since it may hold anything;
 * - at most `maxPeers`, those matching most query terms first, then the closest (ping latency).
 * Each peer gets `timeoutMs` (the request's `timeout_ms`, else the setting); requests go out before
 * the local search runs and are awaited together, so a dead peer costs the timeout and no more.
 *
 * Merging: one result per entity ID, preferring the copy from the entity's home registry, then this
 * node's own copy, then the higher score; ranked by score. Scores come from each node's own ranking
 * (text relevance is normalised by each node's best match), so they are comparable only roughly.
 *
 * The mesh implements the port (src/mesh/federation.ts); services never import the mesh.
 */
import type { Logger } from 'pino'
import type { EventBus } from '../../events/bus.js'
import { parsePublicKey } from '../../identity/encoding.js'
import { deriveId } from '../../identity/ids.js'
import { analyze, analyzeQuery } from '../../search/analyzer.js'
import { hashTerm, TermFilter } from '../../search/term-filter.js'
import { millisecondsSince } from '../../util/elapsed.js'
import {
  FEDERATION_LIMITS,
  type PeerSearchRequest,
  type PeerSearchResponse,
  type TermFilterMessage
} from '../../wire/federation.js'
import type { SearchRequest, SearchResult } from '../../wire/search.js'

/** A peer that can be asked, as the mesh sees it. */
export interface FederationPeer {
  peerId: string
  /** Derived from the PeerId's key. */
  registryId: string | null
  /** Self-declared, from its hello. */
  name: string | null
  latencyMs: number | null
  /** The last filter the peer pushed; null while none has arrived. */
  filter: TermFilterMessage | null
}

/** What the search service needs from the mesh. */
export interface SearchFederationPort {
  /** Connected peers that speak the search protocol. */
  peers(): FederationPeer[]
  /** One request to one peer; rejects on any failure, and once `signal` aborts. */
  query(peerId: string, request: PeerSearchRequest, signal: AbortSignal): Promise<PeerSearchResponse>
}

export interface FederationSettings {
  /** Most peers asked per query (`search.federation_max_peers`). */
  maxPeers: number
  /** Per-peer deadline when the request gives no `timeout_ms` (`search.federation_timeout_ms`). */
  timeoutMs: number
}

/** One candidate result, from this node or a peer. */
export interface FederatedHit {
  result: SearchResult
  /** The entity's key (its ID derives from it): enrichment verifies the card against it. */
  publicKey: string
  /** True when the node that produced this copy is the entity's home registry. */
  home: boolean
  /** Registry ID of the peer that answered with it; null for this node's own results. */
  source: string | null
}

export type PeerOutcome = 'answered' | 'failed' | 'timed_out'

export interface PeerReport {
  peer_id: string
  registry_id: string | null
  name: string | null
  outcome: PeerOutcome
  results: number
  total_found: number
  latency_ms: number
  error?: string
}

export interface FederatedOutcome {
  /** Merged, deduplicated, ranked; at most `want`. */
  hits: FederatedHit[]
  /** Local total + the peers' totals − duplicates seen among the returned results (an estimate). */
  total: number
  localTotal: number
  semantic: string
  /** Merged hits that came from peers. */
  federatedResults: number
  peers: PeerReport[]
  /** Peers whose filter ruled them out. */
  skipped: number
  /** Peers that could have been asked but were beyond `maxPeers`. */
  overCap: number
  timeoutMs: number
}

export interface LocalPart {
  hits: FederatedHit[]
  total: number
  /** How the semantic stage went (search_stats.semantic). */
  semantic: string
}

export interface FederatedSearchOptions {
  port: SearchFederationPort
  bus: EventBus
  logger: Logger
  settings: FederationSettings
}

class DeadlineExceeded extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`)
    this.name = 'DeadlineExceeded'
  }
}

export class FederatedSearch {
  /** Decoded filters, per message object: they go when the mesh drops the message (the peer left). */
  private readonly decoded = new WeakMap<TermFilterMessage, TermFilter | null>()

  constructor(private readonly o: FederatedSearchOptions) {}

  /** Peers to ask for this request, in order, and how many the filters ruled out or the cap left out. */
  route(body: SearchRequest): { chosen: FederationPeer[]; skipped: number; overCap: number } {
    // Hashed once here, then checked against every peer's filter.
    const terms = analyzeQuery(body.query ?? '').terms.map(t => ({ term: t.term, hash: hashTerm(t.term) }))
    const required = [
      ...(body.category ? analyze(body.category) : []),
      ...(body.tags ?? []).flatMap(tag => analyze(tag))
    ].map(term => ({ term, hash: hashTerm(term) }))
    const matching: { peer: FederationPeer; hits: number }[] = []
    const unknown: FederationPeer[] = []
    let skipped = 0
    for (const peer of this.o.port.peers()) {
      const filter = peer.filter ? this.filterOf(peer.filter) : null
      if (filter === null) {
        unknown.push(peer)
        continue
      }
      if (required.some(r => !filter.has(r.term, r.hash))) {
        skipped++
        continue
      }
      const hits = terms.reduce((n, t) => n + (filter.has(t.term, t.hash) ? 1 : 0), 0)
      if (terms.length > 0 ? hits === 0 : filter.items === 0) {
        skipped++
        continue
      }
      matching.push({ peer, hits })
    }
    matching.sort(
      (a, b) =>
        b.hits - a.hits ||
        (a.peer.latencyMs ?? Infinity) - (b.peer.latencyMs ?? Infinity) ||
        (a.peer.peerId < b.peer.peerId ? -1 : 1)
    )
    const all = [...matching.map(m => m.peer), ...unknown]
    const chosen = all.slice(0, this.o.settings.maxPeers)
    return { chosen, skipped, overCap: all.length - chosen.length }
  }

  /**
   * Asks the routed peers for their best `want` results (at most FEDERATION_LIMITS.maxPeerResults),
   * runs `local` meanwhile, and merges.
   */
  async search(body: SearchRequest, want: number, local: () => Promise<LocalPart>): Promise<FederatedOutcome> {
    const timeoutMs = body.timeout_ms ?? this.o.settings.timeoutMs
    const { chosen, skipped, overCap } = this.route(body)
    const request = peerRequest(body, Math.min(want, FEDERATION_LIMITS.maxPeerResults))
    // Requests leave before the local search takes the thread.
    const asked = chosen.map(peer => this.ask(peer, request, timeoutMs))
    const mine = await local()
    const answers = await Promise.all(asked)
    const candidates = [...mine.hits]
    let total = mine.total
    for (const answer of answers) {
      candidates.push(...answer.hits)
      total += answer.report.total_found
    }
    const { hits, duplicates } = merge(candidates)
    const kept = hits.slice(0, want)
    return {
      hits: kept,
      total: Math.max(kept.length, total - duplicates),
      localTotal: mine.total,
      semantic: mine.semantic,
      federatedResults: kept.filter(h => h.source !== null).length,
      peers: answers.map(a => a.report),
      skipped,
      overCap,
      timeoutMs
    }
  }

  private filterOf(message: TermFilterMessage): TermFilter | null {
    let filter = this.decoded.get(message)
    if (filter === undefined) {
      try {
        filter = TermFilter.decode(message, Buffer.from(message.filter, 'base64'))
      } catch (err) {
        this.o.logger.warn(
          { err, registry_id: message.registry_id },
          "a peer's term filter does not decode; the peer is treated as unfiltered"
        )
        filter = null
      }
      this.decoded.set(message, filter)
    }
    return filter
  }

  /** One peer: never rejects, and settles by the deadline even if the transport ignores the signal. */
  private async ask(
    peer: FederationPeer,
    request: PeerSearchRequest,
    timeoutMs: number
  ): Promise<{ hits: FederatedHit[]; report: PeerReport }> {
    const started = performance.now()
    const controller = new AbortController()
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new DeadlineExceeded(timeoutMs)
        controller.abort(err)
        reject(err)
      }, timeoutMs)
    })
    this.o.bus.publish('search_outgoing', {
      peer: peer.peerId,
      registry_id: peer.registryId,
      query: request.query ?? '',
      limit: request.limit
    })
    const report: PeerReport = {
      peer_id: peer.peerId,
      registry_id: peer.registryId,
      name: peer.name,
      outcome: 'answered',
      results: 0,
      total_found: 0,
      latency_ms: 0
    }
    let hits: FederatedHit[] = []
    try {
      const response = await Promise.race([this.o.port.query(peer.peerId, request, controller.signal), deadline])
      if (peer.registryId !== null && response.registry_id !== peer.registryId)
        throw new Error(`the answer names ${response.registry_id}, not the peer's own registry ID`)
      hits = response.results.flatMap(r => {
        const { home, public_key: publicKey, ...result } = r
        // A peer cannot pass off another key as an entity's: the ID derives from it.
        const raw = parsePublicKey(publicKey)
        if (!raw || deriveId(result.type === 'service' ? 'service' : 'agent', raw) !== result.entity_id) return []
        return [
          {
            result: { ...result, source_registry_id: response.registry_id },
            publicKey,
            home,
            source: response.registry_id
          }
        ]
      })
      report.results = hits.length
      report.total_found = response.total_found
    } catch (err) {
      report.outcome = err instanceof DeadlineExceeded || controller.signal.aborted ? 'timed_out' : 'failed'
      report.error = err instanceof DeadlineExceeded ? err.message : (err as Error).message.slice(0, 300)
    } finally {
      clearTimeout(timer)
      // Whatever is still running is told to stop (a late answer is dropped by the transport).
      if (!controller.signal.aborted) controller.abort()
    }
    report.latency_ms = millisecondsSince(started)
    this.o.bus.publish('search_result_incoming', {
      peer: peer.peerId,
      registry_id: peer.registryId,
      query: request.query ?? '',
      outcome: report.outcome,
      results: report.results,
      total_found: report.total_found,
      latency_ms: report.latency_ms,
      ...(report.error ? { error: report.error } : {})
    })
    return { hits, report }
  }
}

/** The request a peer gets: the body's search fields, without those that only concern this node. */
export function peerRequest(body: SearchRequest, limit: number): PeerSearchRequest {
  const { federated: _f, enrich: _e, offset: _o, max_results: _m, timeout_ms: _t, ...rest } = body
  return { ...rest, limit }
}

/** One copy per entity ID (home copy, then our own, then the higher score), best score first. */
export function merge(candidates: readonly FederatedHit[]): { hits: FederatedHit[]; duplicates: number } {
  const rank = (h: FederatedHit): number => (h.home ? 2 : h.source === null ? 1 : 0)
  const best = new Map<string, FederatedHit>()
  let duplicates = 0
  for (const hit of candidates) {
    const id = hit.result.entity_id
    const held = best.get(id)
    if (held === undefined) {
      best.set(id, hit)
      continue
    }
    duplicates++
    if (rank(hit) > rank(held) || (rank(hit) === rank(held) && hit.result.score > held.result.score)) best.set(id, hit)
  }
  const hits = [...best.values()].sort(
    (a, b) => b.result.score - a.result.score || (a.result.entity_id < b.result.entity_id ? -1 : 1)
  )
  return { hits, duplicates }
}
