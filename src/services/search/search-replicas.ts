/**
 * The search index in several worker threads, each holding the whole index, so as many queries run
 * at once as there are threads (one search thread was saturated at a million entities while the
 * HTTP thread was 4–17 % busy; docs/decisions.md). Every change goes to every replica in the same
 * order, so each answers a query after every change made before it, as one index does; a query goes
 * to the replica with the fewest asks waiting. The first replica alone builds the home term filter
 * and writes the snapshot: the others answer queries only.
 *
 * A restore reads the snapshot into the first replica, and into the others once the node has loaded
 * (`restoreOthers`); meanwhile their changes wait in order and queries go to the first. They read it
 * through a link made before the first read (a .tmp file, which a start clears away as a cut-short
 * write), so a snapshot written in between does not replace it.
 */
import { linkSync, rmSync } from 'node:fs'
import type { TermFilterMessage } from '../../wire/federation.js'
import type { IndexAnswer, IndexChange, IndexOptions, IndexQuery, SearchIndex, SnapshotMeta } from './search-index.js'
import { WorkerSearchIndex } from './search-worker-index.js'

interface Replica {
  index: WorkerSearchIndex
  /** Changes waiting for the replica's restore to be asked (null: none waits). */
  held: IndexChange[] | null
  /** Whether it takes queries (not while its restore waits or runs). */
  ready: boolean
}

export class ReplicatedSearchIndex implements SearchIndex {
  private replicas: Replica[]
  private readonly first: WorkerSearchIndex
  private lost = false
  /** A restored first replica's snapshot, which the others read at `restoreOthers`. */
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
    this.replicas = [{ index: this.first, held: null, ready: true }]
    for (let n = 1; n < count; n++)
      this.replicas.push({
        index: new WorkerSearchIndex({ ...options, summarizeHome: false }, lose, ignoreFilter),
        held: null,
        ready: true
      })
  }

  get threads(): number {
    return this.replicas.length
  }

  apply(change: IndexChange): void {
    for (const replica of this.replicas)
      if (replica.held) replica.held.push(change)
      else replica.index.apply(change)
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

  save(path: string, meta: SnapshotMeta): Promise<number | null> {
    return this.first.save(path, meta)
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
   * The other replicas read the snapshot the first was restored from, once the node has loaded:
   * read beside the node's own loading, they delayed a restart at a million entities by 15–21 s.
   */
  restoreOthers(): void {
    const waiting = this.othersWait
    if (!waiting) return
    this.othersWait = null
    const restored = this.replicas.slice(1).map(replica => {
      const done = replica.index.restore(waiting.link, waiting.meta)
      for (const change of replica.held ?? []) replica.index.apply(change)
      replica.held = null
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
