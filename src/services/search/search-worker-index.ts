/**
 * The search index in a worker thread, so queries run beside the HTTP thread instead of on it (on
 * 2 cores a common-word query spent 3.5 of its 5 ms in the engine, which held up every other request).
 *
 * Changes are queued and sent FLUSH_DELAY_MS after the first of them (or every CHANGES_PER_MESSAGE),
 * which keeps the postMessage and the worker's wake-up per batch rather than per write (sent once per
 * event-loop turn, the worker spent 0.085–0.092 ms per registration at 1,000/s, 0.065–0.067 this
 * way); a query or settle request goes out at once with the changes queued before it, and the worker
 * handles messages in order, so it answers after them.
 * A worker that dies rejects its pending queries and is reported through `onLost`; the owner
 * rebuilds the index (the worker holds no state the store does not).
 */
import type { Worker } from 'node:worker_threads'
import { spawnModuleWorker } from '../../util/module-worker.js'
import type { TermFilterMessage } from '../../wire/federation.js'
import type { IndexAnswer, IndexChange, IndexOptions, IndexQuery, SearchIndex, SnapshotMeta } from './search-index.js'

export type SearchWorkerData = IndexOptions
export interface SearchWorkerRequest {
  changes: IndexChange[]
  ask?:
    | { id: number; kind: 'search'; query: IndexQuery }
    | { id: number; kind: 'settle' }
    | { id: number; kind: 'save' | 'restore'; path: string; meta: SnapshotMeta }
}
export type SearchWorkerReply =
  | { id: number; answer: IndexAnswer }
  | { id: number; size: number }
  /** A snapshot given up (see IndexedEngine.save). */
  | { id: number; size: null }
  | { id: number; error: string }
  /** Unasked: the home term filter was built. */
  | { filter: TermFilterMessage }

const CHANGES_PER_MESSAGE = 1024
const FLUSH_DELAY_MS = 10

interface Pending {
  resolve: (reply: SearchWorkerReply) => void
  reject: (err: Error) => void
}

export class WorkerSearchIndex implements SearchIndex {
  private readonly worker: Worker
  private queue: IndexChange[] = []
  private flushScheduled = false
  private readonly pending = new Map<number, Pending>()
  private nextId = 1
  private closing = false
  private lost: Error | null = null

  constructor(options: IndexOptions, onLost: (err: Error) => void, onFilter: (message: TermFilterMessage) => void) {
    this.worker = spawnModuleWorker(import.meta.url, 'search-worker', {
      workerData: options satisfies SearchWorkerData
    })
    // Only pending asks keep the process alive; an idle index never does.
    this.worker.unref()
    this.worker.on('message', (reply: SearchWorkerReply) => {
      if ('filter' in reply) {
        onFilter(reply.filter)
        return
      }
      const waiting = this.pending.get(reply.id)
      if (!waiting) return
      this.pending.delete(reply.id)
      if (this.pending.size === 0) this.worker.unref()
      if ('error' in reply) waiting.reject(new Error(`search worker: ${reply.error}`))
      else waiting.resolve(reply)
    })
    const fail = (err: Error): void => {
      if (this.closing || this.lost) return
      this.lost = err
      for (const waiting of this.pending.values()) waiting.reject(err)
      this.pending.clear()
      this.queue = []
      onLost(err)
    }
    this.worker.on('error', fail)
    this.worker.on('exit', code => fail(new Error(`search worker exited with code ${code}`)))
  }

  /** Asks sent and not yet answered (queries, and a snapshot being written). */
  get waiting(): number {
    return this.pending.size
  }

  apply(change: IndexChange): void {
    if (this.lost) return
    this.queue.push(change)
    if (this.queue.length >= CHANGES_PER_MESSAGE) this.send()
    else if (!this.flushScheduled) {
      this.flushScheduled = true
      setTimeout(() => {
        this.flushScheduled = false
        if (this.queue.length > 0) this.send()
      }, FLUSH_DELAY_MS)
    }
  }

  async search(query: IndexQuery): Promise<IndexAnswer> {
    const reply = await this.ask(id => ({ id, kind: 'search', query }))
    return (reply as { answer: IndexAnswer }).answer
  }

  async settled(): Promise<number> {
    const reply = await this.ask(id => ({ id, kind: 'settle' }))
    return (reply as { size: number }).size
  }

  async save(path: string, meta: SnapshotMeta): Promise<number | null> {
    const reply = await this.ask(id => ({ id, kind: 'save', path, meta }))
    return (reply as { size: number | null }).size
  }

  async restore(path: string, meta: SnapshotMeta): Promise<number> {
    const reply = await this.ask(id => ({ id, kind: 'restore', path, meta }))
    return (reply as { size: number }).size
  }

  async close(): Promise<void> {
    this.closing = true
    await this.worker.terminate()
  }

  private ask(make: (id: number) => NonNullable<SearchWorkerRequest['ask']>): Promise<SearchWorkerReply> {
    if (this.lost) return Promise.reject(this.lost)
    const ask = make(this.nextId++)
    return new Promise((resolve, reject) => {
      this.pending.set(ask.id, { resolve, reject })
      if (this.pending.size === 1) this.worker.ref()
      this.send(ask)
    })
  }

  private send(ask?: SearchWorkerRequest['ask']): void {
    const changes = this.queue
    this.queue = []
    this.worker.postMessage((ask ? { changes, ask } : { changes }) satisfies SearchWorkerRequest)
  }
}
