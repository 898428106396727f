/**
 * Where the search index runs: in its worker thread or on the HTTP thread, the index rebuilt when
 * a worker is lost, and the engine's move to its worker once the store has grown. The base of
 * SearchService, so the index it holds is the one the service's queries and changes go to.
 */
import { availableParallelism } from 'node:os'
import { performance } from 'node:perf_hooks'
import { HashEmbedder } from '../../search/embedders/hash-embedder.js'
import type { TermFilterMessage } from '../../wire/federation.js'
import { HomeTermFilterView } from './home-terms.js'
import type { SearchComponents } from './search-components.js'
import { developerChange, upsertChange } from './search-documents.js'
import { type IndexChange, type IndexOptions, LocalSearchIndex, type SearchIndex } from './search-index.js'
import { ReplicatedSearchIndex } from './search-replicas.js'
import { WorkerSearchIndex } from './search-worker-index.js'
import { busyShare } from '../../util/busy-share.js'

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

/** The engine's move to its worker: the worker's index, filled from the store a chunk at a time. */
interface Move {
  index: SearchIndex
  /** The last entity ID copied (null: none yet). */
  after: string | null
  /** Developers of the records copied, whose trust part the worker's index is sent at the end. */
  developers: Set<string>
  started: number
}

/**
 * A base class rather than a part the service holds: the index changes hands (a rebuild, the move)
 * under the indexing and the queries, which read `index` and `moving` at every change and query.
 */
export abstract class IndexPlacement {
  /** The index queries go to. */
  protected index: SearchIndex
  /** While the engine moves to its worker: every change reaches both indexes; queries stay on `index`. */
  protected moving: Move | null = null
  /** Samples the HTTP thread's load until a quiet period lets the engine move. */
  private quietWatch: NodeJS.Timeout | null = null
  /** Developers whose trust part the index holds. */
  protected readonly knownDevelopers = new Set<string>()
  protected workerLosses = 0
  /** Writes since the entity count was last compared with `workerFromEntities` (see moveToWorkerWhenGrown). */
  private writesSinceCount = 0
  /** The filter of this node's home terms peers route federated queries by, as the index last built it. */
  readonly homeTerms: HomeTermFilterView
  /** The hash embedder runs inside the index, on the index's thread (IndexOptions.embedding). */
  protected readonly indexEmbeds: boolean

  constructor(protected readonly c: SearchComponents) {
    this.homeTerms = new HomeTermFilterView(c.logger)
    this.indexEmbeds = c.embedder instanceof HashEmbedder
    this.index = this.createIndex()
  }

  /** Fills `index` from the store, as at start; resolves with its number of documents. */
  protected abstract startBuild(): Promise<number>

  private createIndex(): SearchIndex {
    if (this.workerWanted()) return this.workerIndex()
    return new LocalSearchIndex(this.indexOptions(), this.publishFilter, this.c.logger)
  }

  private workerIndex(): SearchIndex {
    const lost = (err: Error): void => this.lostWorker(index, err)
    const threads = Math.max(1, Math.min(this.c.search.threads ?? 1, availableParallelism()))
    const index: SearchIndex =
      threads > 1
        ? new ReplicatedSearchIndex(threads, this.indexOptions(), lost, this.publishFilter, err =>
            this.c.logger.warn({ err }, 'a search thread could not read the snapshot; the others answer')
          )
        : new WorkerSearchIndex(this.indexOptions(), lost, this.publishFilter)
    return index
  }

  private readonly publishFilter = (message: TermFilterMessage): void => this.homeTerms.publish(message)

  private indexOptions(): IndexOptions {
    const { termFilter } = this.c.search
    return {
      dimension: this.c.embedder.dimension,
      embedding: this.indexEmbeds ? 'hash' : null,
      queryExpansion: this.c.search.queryExpansion,
      fullScanBelow: this.c.search.fullScanBelow,
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
  private lostWorker(index: SearchIndex, err: Error): void {
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

  /** A new, empty index in place of the current one (which is closed); the caller fills it. */
  protected replaceIndex(): SearchIndex {
    const old = this.index
    this.index = this.createIndex()
    this.knownDevelopers.clear()
    void old.close()
    return this.index
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

  /**
   * Once the store has grown past `workerFromEntities`, moves the engine to its worker thread at the
   * first quiet period of the HTTP thread, or at once past MOVE_REGARDLESS_AT entities.
   */
  protected moveToWorkerWhenGrown(): void {
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
    const busy = busyShare()
    this.quietWatch = setInterval(() => {
      if (busy() < QUIET_UTILIZATION) this.startMove()
    }, QUIET_CHECK_MS).unref()
  }

  protected stopQuietWatch(): void {
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
      move.index.apply(
        upsertChange(
          record,
          this.c.liveness?.current(record.entity_id),
          this.c.transitive?.publishedOf(record.entity_id)
        )
      )
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
      move.index.apply(developerChange(this.c.store, developerId))
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
  protected apply(change: IndexChange): void {
    this.index.apply(change)
    this.moving?.index.apply(change)
  }
}
