/**
 * Transitive trust for the rest of the node: the computation (trust-computation.ts) runs in a
 * worker thread (trust-worker.ts) that reads the store itself, so neither a full computation (seconds
 * at a million identities) nor its reads touch the HTTP thread. This side asks for a refresh at start,
 * every hour, REFRESH_DELAY_MS after attestations arrive, and when the worker owes a full computation;
 * keeps the scores the worker reports for `scoreOf`, and hands the entities' changes to search.
 * Reads never compute.
 */
import { setTimeout as delay } from 'node:timers/promises'
import type { Worker } from 'node:worker_threads'
import type { Logger } from 'pino'
import { spawnModuleWorker } from '../../util/module-worker.js'
import { ID_PATTERNS } from '../../identity/ids.js'
import { NO_EXPLANATION, type TrustExplanation } from './trust-computation.js'

export type { TrustExplanation } from './trust-computation.js'

/** Attestations arriving within this long are reflected together. */
const REFRESH_DELAY_MS = 200
const HOUR_MS = 3_600_000
/** A lost worker is started again after this long, at most MAX_WORKER_LOSSES times; then the scores stay as they were. */
const RESTART_DELAY_MS = 5000
const MAX_WORKER_LOSSES = 3
/** How long a stopping node waits for the worker to close its view of the store (a computation may be running). */
const CLOSE_TIMEOUT_MS = 2000
/**
 * How long a stopping node waits for a worker still opening the store before that close wait begins:
 * lmdb's native open, cut short by `terminate()`, aborts the whole process (FATAL ERROR napi_throw),
 * and a worker's start takes seconds on a loaded machine.
 */
const OPEN_TIMEOUT_MS = 30_000

export interface TrustWorkerData {
  dataDir: string
  seeds: readonly string[]
}
export type TrustWorkerRequest =
  | { kind: 'refresh'; id: number; at: number }
  | { kind: 'explain'; id: number; subject: string; top: number }
  /** Closes the worker's view of the store; the worker then ends. */
  | { kind: 'close' }
export type TrustWorkerReply =
  | { kind: 'scores'; id: number; changes: [id: string, transitive: number][]; fullInMs?: number }
  | { kind: 'explained'; id: number; explanation: TrustExplanation }
  | { kind: 'failed'; id: number; error: string }
  | { kind: 'opened' }

export interface TransitiveTrustOptions {
  /** The store's data directory, which the worker opens read-only. */
  dataDir: string
  seeds: readonly string[]
  /** Whether the store holds any attestation: without one every score is 0, and no worker is started until one comes. */
  hasAttestations: () => boolean
  logger: Pick<Logger, 'error' | 'warn'>
  now?: () => Date
}

export class TransitiveTrust {
  private worker: Worker | null = null
  private spawned = false
  /** Resolves once the worker has its view of the store open (or has exited). */
  private workerOpened: Promise<void> = Promise.resolve()
  private losses = 0
  private nextId = 1
  private readonly explaining = new Map<number, (explanation: TrustExplanation) => void>()
  /** The scaled score of every identity above 0, as the worker last reported. */
  private readonly scores = new Map<string, number>()
  private publish: ((changes: [string, number][]) => void) | null = null
  private soon: NodeJS.Timeout | null = null
  private owed: NodeJS.Timeout | null = null
  private hourly: NodeJS.Timeout | null = null
  private restart: NodeJS.Timeout | null = null
  private stopped = false

  constructor(private readonly options: TransitiveTrustOptions) {}

  /** Calls `publish` with the entities whose score changed: after the first computation, after arrivals, every hour. */
  start(publish: (changes: [string, number][]) => void): void {
    if (this.stopped) return
    this.publish = publish
    if (this.options.hasAttestations()) this.spawn()
    this.hourly = setInterval(() => this.refreshNow(), HOUR_MS).unref()
  }

  async stop(): Promise<void> {
    this.stopped = true
    for (const timer of [this.soon, this.owed, this.restart]) if (timer) clearTimeout(timer)
    if (this.hourly) clearInterval(this.hourly)
    this.publish = null
    this.answerExplanations()
    const worker = this.worker
    this.worker = null
    if (!worker) return
    const ended = new Promise<void>(resolve => worker.once('exit', () => resolve()))
    worker.postMessage({ kind: 'close' } satisfies TrustWorkerRequest)
    await Promise.race([this.workerOpened, delay(OPEN_TIMEOUT_MS, undefined, { ref: false })])
    const timer = setTimeout(() => void worker.terminate(), CLOSE_TIMEOUT_MS)
    await ended
    clearTimeout(timer)
  }

  /** The store took an attestation: reflected by the refresh REFRESH_DELAY_MS later (the worker reads it from the log). */
  attestationAdded(): void {
    if (!this.publish) return
    if (!this.spawned) this.spawn()
    else if (!this.soon)
      this.soon = setTimeout(() => {
        this.soon = null
        this.refreshNow()
      }, REFRESH_DELAY_MS).unref()
  }

  /** The scaled transitive score of an entity or developer as last computed (0 when none). */
  scoreOf(id: string): number {
    return this.scores.get(id) ?? 0
  }

  /** The score search was last given for an entity, for indexing it again without a computation. */
  publishedOf(entityId: string): number {
    return this.scoreOf(entityId)
  }

  /** Why `id` has its score, as last computed (none while no worker runs). */
  explain(id: string, top = 5): Promise<TrustExplanation> {
    const worker = this.worker
    if (!worker) return Promise.resolve(NO_EXPLANATION)
    const requestId = this.nextId++
    worker.ref()
    return new Promise(resolve => {
      this.explaining.set(requestId, resolve)
      worker.postMessage({ kind: 'explain', id: requestId, subject: id, top } satisfies TrustWorkerRequest)
    })
  }

  private refreshNow(): void {
    const worker = this.worker
    if (!worker) return
    const at = (this.options.now?.() ?? new Date()).getTime()
    worker.postMessage({ kind: 'refresh', id: this.nextId++, at } satisfies TrustWorkerRequest)
  }

  /** A new worker, whose first refresh is a full computation: its report replaces every score held. */
  private spawn(): void {
    this.spawned = true
    const worker = spawnModuleWorker(import.meta.url, 'trust-worker', {
      workerData: { dataDir: this.options.dataDir, seeds: this.options.seeds } satisfies TrustWorkerData
    })
    worker.unref()
    this.worker = worker
    let markOpened = (): void => {}
    this.workerOpened = new Promise(resolve => {
      markOpened = resolve
    })
    worker.once('exit', markOpened)
    let first = true
    worker.on('message', (reply: TrustWorkerReply) => {
      if (reply.kind === 'opened') markOpened()
      else if (reply.kind === 'explained') {
        this.explaining.get(reply.id)?.(reply.explanation)
        this.explaining.delete(reply.id)
        if (this.explaining.size === 0) worker.unref()
      } else if (reply.kind === 'failed') {
        this.options.logger.error({ error: reply.error }, 'transitive trust not computed')
        this.explaining.get(reply.id)?.(NO_EXPLANATION)
        this.explaining.delete(reply.id)
      } else {
        this.take(reply.changes, first)
        first = false
        if (reply.fullInMs !== undefined && !this.owed)
          this.owed = setTimeout(() => {
            this.owed = null
            this.refreshNow()
          }, reply.fullInMs).unref()
      }
    })
    const lost = (err: Error): void => {
      if (this.worker !== worker || this.stopped) return
      this.worker = null
      this.answerExplanations()
      this.losses++
      const again = this.losses < MAX_WORKER_LOSSES
      this.options.logger.error(
        { err, losses: this.losses },
        again ? 'trust worker lost; starting another' : 'trust worker lost; scores stay as last computed'
      )
      if (again)
        this.restart = setTimeout(() => {
          this.restart = null
          if (!this.stopped) this.spawn()
        }, RESTART_DELAY_MS).unref()
    }
    worker.on('error', lost)
    worker.on('exit', code => lost(new Error(`trust worker exited with code ${code}`)))
    this.refreshNow()
  }

  /** Applies the worker's changes; a new worker's first report holds every score, so what it leaves out is 0. */
  private take(changes: [string, number][], complete: boolean): void {
    const changed: [string, number][] = []
    if (complete) {
      const reported = new Set(changes.map(([id]) => id))
      for (const id of this.scores.keys()) if (!reported.has(id)) changed.push([id, 0])
    }
    for (const [id, score] of changes) if (score !== (this.scores.get(id) ?? 0)) changed.push([id, score])
    for (const [id, score] of changed) {
      if (score > 0) this.scores.set(id, score)
      else this.scores.delete(id)
    }
    const entities = changed.filter(([id]) => ID_PATTERNS.entity.test(id))
    if (entities.length > 0) this.publish?.(entities)
  }

  private answerExplanations(): void {
    for (const resolve of this.explaining.values()) resolve(NO_EXPLANATION)
    this.explaining.clear()
  }
}
