/**
 * The index fed from the store: every record read in at start (and after a lost worker), then the
 * bus's changes as they are committed, and the vectors of an embedder other than the index's own
 * embedded in batches after the write.
 */
import { existsSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { EntityRecord } from '../../store/records.js'
import type { SearchComponents } from './search-components.js'
import { developerChange, searchDocument, upsertChange } from './search-documents.js'
import { embeddingText, type SearchIndex } from './search-index.js'
import { IndexPlacement } from './search-placement.js'
import { removeSnapshot, snapshotMeta, type UsableSnapshot, usableSnapshot } from './search-snapshot.js'

const EMBED_BATCH = 64
/**
 * Records read from the store per turn while the index is built at start (or rebuilt). At most two
 * such chunks are on their way to a worker at a time: at a million entities the whole store sent at
 * once sat about 450 MB deep in the worker's message queue, memory the process kept after.
 */
const BUILD_CHUNK = 5000
/** The default of SearchSettings.snapshotFromEntities. */
const SNAPSHOT_FROM_ENTITIES = 50_000
/**
 * While the node runs, a snapshot is written when the store changed since the last one, at most
 * every SNAPSHOT_EVERY_MS, tried every SNAPSHOT_CHECK_MS. The search thread writes it a slice at a
 * time between queries; one given up (the index changed meanwhile) is tried again at the next check.
 */
const SNAPSHOT_CHECK_MS = 30_000
const SNAPSHOT_EVERY_MS = 10 * 60_000
/**
 * At stop, a snapshot is written only for an index smaller than this: a node must stop within 5 s,
 * and at a million entities writing one took 13 s here. A larger index's last snapshot is brought
 * up to date from the operation log at the next start.
 */
const SAVE_AT_STOP_BELOW = 150_000

interface Restoring {
  index: SearchIndex
  found: UsableSnapshot
  started: number
  done: Promise<boolean>
}

export abstract class SearchIndexing extends IndexPlacement {
  private readonly pending = new Map<string, string>()
  private flushing: Promise<void> | null = null
  private flushScheduled = false
  /** Texts the embedder failed on (also logged); exported as a metric. */
  embedFailures = 0
  /** The index being filled from the store (at start, or after a lost worker); searches wait for it. */
  private building: Promise<number> | null = null
  protected stopped = false
  /** Whether the index holds the whole store (a build or restore finished), so a snapshot of it may be written. */
  private complete = false
  /** Only the first build may start from the snapshot: later ones replace a lost worker's index. */
  private snapshotTried = false
  /** The snapshot being read into the index while the node loads its other views. */
  private restoring: Restoring | null = null
  /** The snapshot on disk: the store's sequence number it holds (null: none), when it was written, the timer. */
  private readonly snapshot = {
    seq: null as number | null,
    at: 0,
    saving: false,
    timer: null as NodeJS.Timeout | null
  }

  constructor(c: SearchComponents) {
    super(c)
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

  /** Resolves once every queued embedding is done and the index holds every change (tests, benchmarks, shutdown). */
  async idle(): Promise<void> {
    await this.built()
    while (this.flushing || this.pending.size > 0) await (this.flushing ?? this.flush())
    await this.index.settled()
  }

  /** Resolves once no build runs; a build replaced by another (a lost worker) hands its waiters on to the next. */
  protected async built(): Promise<void> {
    while (this.building) await this.building.catch(() => 0)
  }

  protected startBuild(): Promise<number> {
    this.complete = false
    const building: Promise<number> = this.buildOrRestore().finally(() => {
      if (this.building === building) this.building = null
    })
    this.building = building
    return building
  }

  /**
   * Starts filling the index from its snapshot, when there is one that fits the store: the search
   * thread reads it while the node loads its other views (the index is brought up to date in
   * `loaded()`). A snapshot that does not fit is removed.
   */
  beginRestore(): void {
    const path = this.c.search.snapshotFile
    if (!path || this.restoring || this.snapshotTried) return
    this.snapshotTried = true
    // What a write cut short (a stop, a crash) left.
    removeSnapshot(path, { keepFile: true })
    if (!existsSync(path)) return
    const found = usableSnapshot(path, this.c.store, this.c.embedder.id)
    if ('unusable' in found) {
      this.c.logger.info({ file: path, reason: found.unusable }, 'search snapshot not used; building the index')
      removeSnapshot(path)
      return
    }
    const index = this.index
    const started = performance.now()
    this.restoring = {
      index,
      found,
      started,
      done: index.restore(path, found.meta).then(
        () => true,
        (err: unknown) => {
          this.c.logger.warn({ err, file: path }, 'search snapshot not used; building the index')
          removeSnapshot(path)
          return false
        }
      )
    }
  }

  private async buildOrRestore(): Promise<number> {
    this.beginRestore()
    const restoring = this.restoring
    this.restoring = null
    if (restoring) {
      const restored = await restoring.done
      // A lost worker's index is rebuilt by its own build.
      if (this.index !== restoring.index) return 0
      if (restored) return this.bringUpToDate(restoring)
      this.replaceIndex()
    }
    return this.build(this.index)
  }

  /**
   * A restored index brought up to date: the entities the store changed since its snapshot, the
   * liveness of home entities and the developers' trust parts; then the home term filter is built.
   */
  private async bringUpToDate({ index, found, started }: Restoring): Promise<number> {
    for (const id of found.changed) this.reindex(id)
    // A home entity's status comes from liveness below; another's from its record, not its text.
    for (const id of found.statusChanged) if (!this.c.liveness?.current(id)) this.restatus(id)
    for (const id of this.c.liveness?.homeEntityIds() ?? []) this.refreshLiveness(id)
    for (const developer of this.c.store.allDevelopers()) this.refreshDeveloper(developer.developer_id)
    const entities = await index.settled()
    if (this.index !== index || this.stopped) return 0
    // Searchable now; the home records' terms are read back from the index in the background.
    this.apply({ op: 'home-filter' })
    this.completed(Number(found.meta.seq))
    this.c.logger.info(
      {
        entities,
        changed: found.changed.size,
        status_changed: found.statusChanged.size,
        ms: Math.round(performance.now() - started)
      },
      'search index restored from its snapshot'
    )
    index.restoreOthers?.()
    return entities
  }

  /** The index holds the whole store (built, or restored from a snapshot at `snapshotSeq`): snapshots may follow. */
  private completed(snapshotSeq: number | null): void {
    this.complete = true
    this.snapshot.seq = snapshotSeq
    // A built index is written at the first check; a restored one SNAPSHOT_EVERY_MS after.
    this.snapshot.at = snapshotSeq === null ? Number.NEGATIVE_INFINITY : performance.now()
    if (!this.c.search.snapshotFile || this.snapshot.timer) return
    this.snapshot.timer = setInterval(() => {
      if (performance.now() - this.snapshot.at >= (this.c.search.snapshotEveryMs ?? SNAPSHOT_EVERY_MS))
        void this.saveSnapshot('running')
    }, this.c.search.snapshotCheckMs ?? SNAPSHOT_CHECK_MS)
    this.snapshot.timer.unref()
  }

  /** The fewest entities a store has for the index to be snapshotted (and built first alone with several threads). */
  private get snapshotFromEntities(): number {
    return this.c.search.snapshotFromEntities ?? SNAPSHOT_FROM_ENTITIES
  }

  /**
   * Writes the index's snapshot when it holds the whole store and at least `snapshotFromEntities`
   * entities, and the store changed since the last one; at stop, only when the index is small
   * enough to be written at once (a larger one's last snapshot is brought up to date from the
   * operation log at the next start). The index's state is copied at once and written while it
   * goes on answering.
   */
  protected async saveSnapshot(when: 'running' | 'stopping'): Promise<void> {
    if (when === 'stopping' && this.snapshot.timer) clearInterval(this.snapshot.timer)
    const path = this.c.search.snapshotFile
    if (!path || this.snapshot.saving || !this.complete || this.moving || this.pending.size > 0) return
    if (this.stopped && when === 'running') return
    if (this.c.store.lastSeq() === this.snapshot.seq) return
    const stored = this.c.store.entityCount()
    if (stored < this.snapshotFromEntities) {
      // The snapshot on disk is out of date and no new one is due: a start would only replay it.
      if (this.snapshot.seq !== null && when === 'stopping') removeSnapshot(path)
      return
    }
    if (when === 'stopping' && stored >= SAVE_AT_STOP_BELOW) return
    const started = performance.now()
    this.snapshot.saving = true
    try {
      // The sequence number is read between two waits for the writes in flight: the first lets the
      // writes begun before the timer store their operations, the second lets every write that stored
      // an operation up to `seq` commit and reach the index. The entities are counted at `seq`.
      await this.c.writes?.settled()
      const seq = this.c.store.lastSeq()
      await this.c.writes?.settled()
      const entities = this.c.store.entityCount()
      await nextTurn()
      const bytes = await this.index.save(path, snapshotMeta(this.c.store, this.c.embedder.id, seq))
      if (bytes === null) {
        this.c.logger.debug({ entities, file: path }, 'search index snapshot given up: the index changed meanwhile')
        return
      }
      this.snapshot.seq = seq
      this.snapshot.at = performance.now()
      this.c.logger.info(
        { entities, seq, bytes, ms: Math.round(performance.now() - started), file: path },
        'search index snapshot written'
      )
    } catch (err) {
      if (!this.stopped) this.c.logger.warn({ err, file: path }, 'search index snapshot not written')
    } finally {
      this.snapshot.saving = false
    }
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
    if (this.c.search.snapshotFile && this.c.store.entityCount() >= this.snapshotFromEntities) index.buildFirstOnly?.()
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
    const entities = await index.settled()
    if (this.index === index && !this.stopped) this.completed(null)
    return entities
  }

  /** New transitive trust scores of entities (transitive-trust.ts): ranking and `min_trust_score` use them at once. */
  setTransitive(changes: Iterable<readonly [entityId: string, transitive: number]>): void {
    for (const [entityId, transitive] of changes) this.apply({ op: 'patch', entityId, change: { transitive } })
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

  private restatus(id: string): void {
    const record = this.c.store.getEntity(id)
    if (record) this.refreshStatus(record)
    else this.unindex(id)
  }

  private refreshStatus(record: EntityRecord): void {
    const { active, uptime, lastChange } = searchDocument(record, this.c.liveness?.current(record.entity_id))
    this.apply({ op: 'patch', entityId: record.entity_id, change: { active, uptime, lastChange } })
  }

  private indexRecord(record: EntityRecord): void {
    // A developer's part changes only with developer and handle events, which refresh it.
    if (record.developer_id && !this.knownDevelopers.has(record.developer_id))
      this.refreshDeveloper(record.developer_id)
    const upsert = upsertChange(
      record,
      this.c.liveness?.current(record.entity_id),
      this.c.transitive?.publishedOf(record.entity_id)
    )
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

  /** Recomputes the developer's part of trust (verified handle, profile) for all their documents. */
  private refreshDeveloper(developerId: string): void {
    this.knownDevelopers.add(developerId)
    this.apply(developerChange(this.c.store, developerId))
  }
}
