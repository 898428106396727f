/**
 * The search index in several worker threads, each holding the whole index, so as many queries run
 * at once as there are threads (one search thread was saturated at a million entities while the
 * HTTP thread was 4–17 % busy; docs/decisions.md). Every change goes to every replica in the same
 * order, so each answers a query after every change made before it, as one index does; a query goes
 * to the replica with the fewest asks waiting. The first replica alone builds the home term filter
 * and writes the snapshot: the others answer queries only.
 *
 * The others are not filled beside the first at start, which slowed it: a restore reads the snapshot
 * into the first, and into the others once the node has loaded (`restoreOthers`); a build fills the
 * first alone, and the others read the first snapshot it writes (`buildFirstOnly`). Meanwhile their
 * changes wait in order, and queries go to the first. They read a snapshot through a link (a .tmp
 * file, which a start clears away as a cut-short write), so one written meanwhile does not replace it.
 */
import { linkSync, rmSync } from 'node:fs'
import type { TermFilterMessage } from '../../wire/federation.js'
import type { IndexAnswer, IndexChange, IndexOptions, IndexQuery, SearchIndex, SnapshotMeta } from './search-index.js'
import { WorkerSearchIndex } from './search-worker-index.js'

interface Replica {
  index: WorkerSearchIndex
  /** Changes waiting for the replica's restore to be asked, in order (null: none waits). */
  held: IndexChange[] | null
  /** Left empty while the first replica is built: it drops changes until a snapshot seeds it. */
  dormant: boolean
  /** Whether it takes queries (not while it waits for its restore or runs it). */
  ready: boolean
}

export class ReplicatedSearchIndex implements SearchIndex {
  private replicas: Replica[]
  private readonly first: WorkerSearchIndex
  private lost = false
  /** The snapshot the waiting replicas read at `restoreOthers`. */
  private othersWait: { link: string; meta: SnapshotMeta } | null = null

  constructor(
    count: number,
    options: IndexOptions,
    onLost: (err: Error) => void,
    onFilter: (message: TermFilterMessage) => void,
    /** A replica whose restore failed is dropped: the others answer. */
    private readonly onDropped: (err: unknown) => void
  ) {
    // A replica lost takes the index with it: the owner builds a new one, as for a single worker.
    const lose = (err: Error): void => {
      if (this.lost) return
      this.lost = true
      void this.close()
      onLost(err)
    }
    this.first = new WorkerSearchIndex(options, lose, onFilter)
    this.replicas = [{ index: this.first, held: null, dormant: false, ready: true }]
    for (let n = 1; n < count; n++)
      this.replicas.push({
        index: new WorkerSearchIndex({ ...options, summarizeHome: false }, lose, ignoreFilter),
        held: null,
        dormant: false,
        ready: true
      })
  }

  apply(change: IndexChange): void {
    for (const replica of this.replicas)
      if (replica.held) replica.held.push(change)
      else if (!replica.dormant) replica.index.apply(change)
  }

  search(query: IndexQuery): Promise<IndexAnswer> {
    let chosen = this.first
    for (const { index, ready } of this.replicas) if (ready && index.waiting < chosen.waiting) chosen = index
    return chosen.search(query)
  }

  /** The first replica's: each of the others answers a query after the changes made before it anyway. */
  settled(): Promise<number> {
    return this.first.settled()
  }

  /**
   * Written by the first replica. Dormant replicas record the changes made from now on and, when
   * the snapshot is written, read it and apply them; when it is given up, they stay dormant.
   */
  async save(path: string, meta: SnapshotMeta): Promise<number | null> {
    const seeded = this.replicas.filter(replica => replica.dormant)
    for (const replica of seeded) replica.held = []
    let size: number | null = null
    try {
      size = await this.first.save(path, meta)
      return size
    } finally {
      const link = size === null || seeded.length === 0 ? null : linkedCopy(path)
      if (link) {
        this.othersWait = { link, meta }
        this.restoreOthers()
      } else for (const replica of seeded) replica.held = null
    }
  }

  /** Restores the first replica; the others wait for `restoreOthers`, their changes held in order. */
  async restore(path: string, meta: SnapshotMeta): Promise<number> {
    const link = linkedCopy(path)
    for (const replica of this.replicas.slice(1)) {
      replica.held = []
      replica.ready = false
    }
    try {
      const size = await this.first.restore(path, meta)
      this.othersWait = { link: link ?? path, meta }
      return size
    } catch (err) {
      if (link) rmSync(link, { force: true })
      throw err
    }
  }

  /**
   * The first replica is built from the store alone; the others are seeded by the first snapshot it
   * writes (`save`). Built beside it, they made a build at a million entities searchable after
   * 191 s instead of 150.
   */
  buildFirstOnly(): void {
    for (const replica of this.replicas.slice(1)) {
      replica.dormant = true
      replica.held = null
      replica.ready = false
    }
  }

  /**
   * The replicas waiting with their changes read the snapshot the first was restored from (once the
   * node has loaded: read beside the node's own loading, they delayed a restart at a million
   * entities by 15–21 s) or the one it wrote.
   */
  restoreOthers(): void {
    const waiting = this.othersWait
    if (!waiting) return
    this.othersWait = null
    const restored = this.replicas
      .filter(replica => replica.held !== null)
      .map(replica => {
        const done = replica.index.restore(waiting.link, waiting.meta)
        for (const change of replica.held ?? []) replica.index.apply(change)
        // A seeded replica completes what its snapshot left waiting (vectors), as after a start.
        if (replica.dormant) replica.index.apply({ op: 'home-filter' })
        replica.held = null
        replica.dormant = false
        return done.then(
          () => {
            replica.ready = true
          },
          (err: unknown) => {
            this.replicas = this.replicas.filter(r => r !== replica)
            void replica.index.close()
            if (!this.lost) this.onDropped(err)
          }
        )
      })
    void Promise.all(restored).finally(() => removeLink(waiting.link))
  }

  async close(): Promise<void> {
    if (this.othersWait) removeLink(this.othersWait.link)
    await Promise.all(this.replicas.map(replica => replica.index.close()))
  }
}

function ignoreFilter(): void {}

const LINK_SUFFIX = '.replicas.tmp'

/** A second name for the file, so a snapshot written meanwhile does not replace it (null where links cannot be made). */
function linkedCopy(path: string): string | null {
  const link = `${path}${LINK_SUFFIX}`
  try {
    rmSync(link, { force: true })
    linkSync(path, link)
    return link
  } catch {
    return null
  }
}

function removeLink(path: string): void {
  if (path.endsWith(LINK_SUFFIX)) rmSync(path, { force: true })
}
