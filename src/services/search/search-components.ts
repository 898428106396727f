/**
 * What the search service is built from and how it is set: shared by its parts (placement, indexing,
 * queries) and its constructor, so none of them imports another for its types.
 */
import type { WriteTracker } from '../registry/write-tracker.js'
import type { Logger } from 'pino'
import type { CardFetcher } from '../../cards/card-fetcher.js'
import type { Embedder } from '../../search/embedders/embedder.js'
import type { Fusion, RankingWeights } from '../../search/ranking.js'
import type { ServiceComponents } from '../registry/components.js'
import type { NameService } from '../registry/names.js'
import type { LivenessView } from '../registry/ports.js'
import type { FederationSettings } from './federated-search.js'

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
  /**
   * Worker threads answering queries, each with a whole copy of the index (ReplicatedSearchIndex);
   * at most one per core. Absent: 1.
   */
  threads?: number
  /** Add the indexed records' words nearest a query's words to it (src/search/query-expansion.ts). */
  queryExpansion: boolean
  /** From this many entities on, text queries take their candidates from their text matches (SearchEngine). */
  fullScanBelow: number
  /** Where the index's snapshot is kept (src/services/search/search-snapshot.ts); absent: none is written or read. */
  snapshotFile?: string
  /** A snapshot is written when the index holds at least this many entities (default 50,000). */
  snapshotFromEntities?: number
  /** How often a running node looks for a quiet moment to write a snapshot in, and how long it waits between two (tests). */
  snapshotCheckMs?: number
  snapshotEveryMs?: number
}

export interface SearchComponents extends Pick<ServiceComponents, 'store' | 'bus' | 'settings' | 'identity' | 'now'> {
  names: NameService
  embedder: Embedder
  /** Live cards: enrichment, and card capabilities for the skills/protocols/languages/models filters. */
  cards: Pick<CardFetcher, 'get' | 'cached' | 'freshCards'>
  /** Liveness of home entities (availability, uptime for trust, heartbeat freshness). */
  liveness?: LivenessView & { homeEntityIds(): Iterable<string> }
  /** The writes in flight: a snapshot waits for those that may hold operations it is to include. */
  writes?: Pick<WriteTracker, 'settled'>
  /** The transitive trust each entity was last given (transitive-trust.ts), kept on re-indexing. */
  transitive?: { publishedOf(entityId: string): number }
  logger: Logger
  search: SearchSettings
}
