/**
 * Signs the `entity.status` operations of a sweep off the HTTP thread. Each costs two Ed25519
 * signatures and two canonical JSON encodings, about half of what a transition costs that thread
 * (docs/decisions.md): a mass silence (a load without heartbeats, a restart after downtime) flips
 * as many entities a minute as were registered, and while it runs every registration and search
 * waited behind the signing. A worker thread holding the node's key signs whole batches; the
 * operations are byte for byte those the main thread would make (Ed25519 signatures are
 * deterministic).
 *
 * The worker starts on the first batch; until it is ready, and for good after it died three times
 * in a row, batches are signed inline. Batches held by a worker that dies are signed inline.
 */
import type { Worker } from 'node:worker_threads'
import type { NodeIdentity } from '../identity/node-identity.js'
import type { Operation } from '../store/records.js'
import { spawnModuleWorker } from '../util/module-worker.js'
import { type StatusSignatures, type StatusStatement, statusOperation, statusOperationSigned } from './operations.js'
import {
  STATUS_SIGNER_WORKER,
  type StatusSignerReply,
  type StatusSignerRequest,
  type StatusSignerWorkerData
} from './status-signer-worker.js'

export interface StatusSignerOptions {
  /** Signs in a worker thread; false signs every batch inline. */
  worker: boolean
  /** Told when the worker fails (what it held is signed inline). */
  onWorkerError?: (err: Error) => void
}

const MAX_CONSECUTIVE_DEATHS = 3

interface Pending {
  statements: StatusStatement[]
  resolve: (operations: Operation[]) => void
}

export class StatusSigner {
  private worker: Worker | null = null
  private ready = false
  private closed = false
  private deaths = 0
  private sent = 0
  private readonly pending = new Map<number, Pending>()

  constructor(
    private readonly identity: NodeIdentity,
    private readonly options: StatusSignerOptions
  ) {}

  /** The sealed status operations of `statements`, in their order. Never rejects. */
  sign(statements: StatusStatement[]): Promise<Operation[]> {
    const worker = this.readyWorker()
    if (worker === null) return Promise.resolve(this.signInline(statements))
    const id = ++this.sent
    return new Promise(resolve => {
      this.pending.set(id, { statements, resolve })
      if (this.pending.size === 1) worker.ref()
      worker.postMessage({ id, statements } satisfies StatusSignerRequest)
    })
  }

  /** Starts the worker now rather than on the first batch, and waits until it is ready (or gone). */
  async start(): Promise<void> {
    this.readyWorker()
    const worker = this.worker
    if (worker === null || this.ready) return
    await new Promise<void>(resolve => {
      const done = (): void => {
        worker.off('message', done)
        worker.off('exit', done)
        resolve()
      }
      worker.on('message', done)
      worker.on('exit', done)
    })
  }

  /** Stops the worker; what it held is signed inline. */
  async close(): Promise<void> {
    this.closed = true
    const worker = this.worker
    this.worker = null
    this.ready = false
    this.signOrphansInline()
    await worker?.terminate()
  }

  private signInline(statements: readonly StatusStatement[]): Operation[] {
    return statements.map(s => statusOperation(this.identity, s))
  }

  /** The worker if it can take a batch now; starts it when there is none yet. */
  private readyWorker(): Worker | null {
    if (!this.options.worker || this.closed || this.deaths >= MAX_CONSECUTIVE_DEATHS) return null
    if (this.worker === null) this.spawn()
    return this.ready ? this.worker : null
  }

  private spawn(): void {
    const data: StatusSignerWorkerData = {
      kind: STATUS_SIGNER_WORKER,
      seed: new Uint8Array(this.identity.keyPair.seed),
      ...(this.identity.host !== undefined ? { host: this.identity.host } : {})
    }
    let worker: Worker
    try {
      worker = spawnModuleWorker(import.meta.url, 'status-signer-worker', { workerData: data, execArgv: [] })
    } catch (err) {
      this.deaths = MAX_CONSECUTIVE_DEATHS
      this.options.onWorkerError?.(err as Error)
      return
    }
    this.worker = worker
    worker.unref()
    worker.on('message', (reply: StatusSignerReply) => {
      if (reply.type === 'ready') {
        this.ready = true
        return
      }
      const job = this.pending.get(reply.id)
      if (!job) return
      this.pending.delete(reply.id)
      this.deaths = 0
      if (this.pending.size === 0) worker.unref()
      job.resolve(
        job.statements.map((s, i) => statusOperationSigned(this.identity, s, reply.signed[i] as StatusSignatures))
      )
    })
    worker.on('error', err => this.options.onWorkerError?.(err))
    worker.on('exit', () => {
      if (this.worker !== worker) return
      this.worker = null
      this.ready = false
      this.signOrphansInline()
      if (!this.closed && ++this.deaths === MAX_CONSECUTIVE_DEATHS)
        this.options.onWorkerError?.(
          new Error(`status signing worker died ${MAX_CONSECUTIVE_DEATHS} times in a row; signing inline from now on`)
        )
    })
  }

  private signOrphansInline(): void {
    const orphans = [...this.pending.values()]
    this.pending.clear()
    for (const job of orphans) job.resolve(this.signInline(job.statements))
  }
}
