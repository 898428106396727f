/**
 * Ed25519 verification off the HTTP thread. Under load a registration's two or three verifies are
 * the largest cost on the main thread (docs/decisions.md), so a pool of worker threads takes them
 * when the rate calls for it:
 *
 * - Inline below `inlineMaxRate` signatures per second while nothing is queued in the pool; at or
 *   above it, or while the pool still has jobs in flight, jobs go to the workers, and stay there
 *   until the rate falls below 85 % of it (POOLING_KEPT_ABOVE). A job costs the
 *   main thread 3–9 µs through the pool (9 with one job per event-loop turn, 3 with sixteen) plus
 *   the postMessage of its batch, and the worker's thread as much again as the verification; inline
 *   it costs the verification alone: about 50 µs with libsodium, 125–150 µs with node:crypto (a
 *   600-byte message, the 2-core development machine). Measured at 1,000 registrations/s with the
 *   mesh on (issue 16): the pool cost 0.06–0.1 ms more CPU per registration than inline. So with
 *   libsodium the default (2,500/s) keeps verification inline at 1,000 registrations/s (two
 *   signatures each) and hands it to the pool from about 1,250–1,600/s, where the HTTP thread is
 *   the one that limits the rate (a 1M load: 2,189/s pooled against 1,857–1,966/s inline; at the
 *   earlier 4,000/s a load of 1.6 signatures per registration never reached it, and an inline
 *   HTTP thread slowed the rate further below it); with node:crypto it is 500/s.
 *   Workers start with the pool (`prestart`, as the node does: a worker takes 20–50 ms of CPU
 *   to start from dist/, 200–250 ms from the sources under tsx, and starting one only when load
 *   arrives lengthened the first seconds of a burst) or else on the first need; until one is
 *   ready, verification stays inline.
 * - Jobs leave as soon as a worker has room (one batch in flight each: with two, nearly every
 *   request's jobs left in a postMessage of their own, which cost the main thread more than the
 *   verification it saved), packed into one transferred ArrayBuffer per batch. While
 *   every worker is full, jobs accumulate and each answer sends them on as one batch: batches grow
 *   with the load, and the postMessage cost is paid per batch, not per job.
 * - Answers are read from memory shared with the worker at the end of the event-loop turn that
 *   sent the batch (setImmediate) when the worker has finished by then; otherwise on its message.
 *   A message is only handled in a later turn, after the requests that turn brings: under load
 *   that is 10–30 ms added to every verification. (Sending at the end of the turn, too, added one.)
 * - Each worker caches public KeyObjects (keys.ts), as the main thread does.
 * - A worker that dies takes nothing with it: its jobs are verified inline and it is replaced;
 *   after three deaths in a row without an answer in between the pool stays inline for good.
 *
 * The worker is verify-worker.js next to this module (dist/), or verify-worker.ts loaded through
 * tsx when running from the sources (tests, benchmarks, `npm run dev`).
 */
import type { Worker } from 'node:worker_threads'
import { DEFAULT_INLINE_MAX_RATE } from '../config/settings-node.js'
import { spawnModuleWorker } from '../util/module-worker.js'
import { verifyRaw } from './keys.js'
import {
  sharedViews,
  VERIFY_WORKER,
  type VerifyWorkerData,
  type VerifyWorkerReply,
  type VerifyWorkerRequest
} from './verify-worker.js'

export type SignedMessage = string | Uint8Array

/**
 * A message to try, or how to build it when it is reached (null: no such form, nothing to try).
 * A check inline builds only the forms it reaches: the first of a registration's forms usually
 * verifies, and the others are whole canonical JSON texts of the body.
 */
export type CandidateMessage = SignedMessage | (() => SignedMessage | null)

const built = (message: CandidateMessage): SignedMessage | null => (typeof message === 'function' ? message() : message)

/**
 * `low`: work that may wait (heartbeats of connections on probation, which a flood of invalid
 * signatures uses): queued jobs of normal priority always leave for the workers first.
 */
export type VerifyPriority = 'normal' | 'low'

/** Checks a signature against candidate messages: how services verify (verifiers.ts). */
export interface SignatureVerifier {
  /**
   * The index of the first message `signature` verifies for under `publicKey`, or -1. Never
   * rejects, unless building a message throws.
   */
  firstVerifying(
    publicKey: Buffer,
    signature: Buffer,
    messages: readonly CandidateMessage[],
    priority?: VerifyPriority
  ): Promise<number>
}

export function firstVerifyingInline(
  publicKey: Buffer,
  signature: Buffer,
  messages: readonly CandidateMessage[]
): number {
  for (let i = 0; i < messages.length; i++) {
    const message = built(messages[i] as CandidateMessage)
    if (message !== null && verifyRaw(publicKey, message, signature)) return i
  }
  return -1
}

/** Verifies on the calling thread. */
export const inlineVerifier: SignatureVerifier = {
  firstVerifying: (publicKey, signature, messages) =>
    Promise.resolve(firstVerifyingInline(publicKey, signature, messages))
}

export interface VerifyPoolOptions {
  /** Worker threads; 0 verifies everything inline. */
  workers: number
  /** Verifications per second below which an idle pool verifies inline; 0 sends every job to the workers. */
  inlineMaxRate?: number
  /** Most jobs in one message to a worker. */
  maxBatch?: number
  /** Told when a worker fails (the jobs it held are verified inline). */
  onWorkerError?: (err: Error) => void
  /** Starts the workers now (in the background) rather than on the first need. */
  prestart?: boolean
  /** Replaces the worker entry (tests). */
  workerUrl?: URL
}

export interface VerifyPoolStats {
  inline: number
  pooled: number
  batches: number
  /** Batches whose answers were read in the turn that sent them, without waiting for the message. */
  answeredSameTurn: number
  /** Jobs of dead workers, verified inline instead. */
  retriedInline: number
  workerDeaths: number
  workersReady: number
  broken: boolean
}

/**
 * Jobs in one message to a worker. Small enough that a job arriving while a worker is busy waits
 * for little more than one batch (32 × ~0.06 ms); the message cost per job stays small.
 */
const DEFAULT_MAX_BATCH = 32
const RATE_WINDOW_MS = 250
/**
 * Once pooling, the pool keeps the work until the rate falls below this share of `inlineMaxRate`.
 * Without it a load near the threshold flapped between the two: in the last tenth of a 1M load
 * (about 1,800 registrations/s, 2,900 signatures/s) the 250 ms windows that dipped under 2,500/s
 * put 18 % of verifications back on the HTTP thread (5 % in the first tenths), which slowed the
 * load further (docs/decisions.md).
 */
const POOLING_KEPT_ABOVE = 0.85
const MAX_CONSECUTIVE_DEATHS = 3
const MAX_BATCHES_IN_FLIGHT = 1

interface Job {
  publicKey: Buffer
  signature: Buffer
  messages: readonly SignedMessage[]
  resolve: (index: number) => void
}

interface Slot {
  worker: Worker
  ready: boolean
  dead: boolean
  /** Jobs sent and not yet answered. */
  load: number
  /** Batches in flight by id; ids count up from 1 per worker. */
  batches: Map<number, Job[]>
  sent: number
  collected: number
  finished: Int32Array
  results: Int16Array
}

export class VerifyPool implements SignatureVerifier {
  private readonly size: number
  private readonly inlineMaxRate: number
  private readonly maxBatch: number
  private readonly slots: Slot[] = []
  private queued: Job[] = []
  private queuedLow: Job[] = []
  private flushScheduled = false
  private checkScheduled = false
  private closed = false
  private broken = false
  private consecutiveDeaths = 0
  private windowStart = performance.now()
  private windowCount = 0
  private lastRate = 0
  /** Whether the last job went to the workers (see POOLING_KEPT_ABOVE). */
  private pooling = false
  private readonly counts = { inline: 0, pooled: 0, batches: 0, answeredSameTurn: 0, retriedInline: 0, workerDeaths: 0 }

  constructor(private readonly options: VerifyPoolOptions) {
    this.size = Math.max(0, Math.floor(options.workers))
    this.inlineMaxRate = options.inlineMaxRate ?? DEFAULT_INLINE_MAX_RATE
    this.maxBatch = Math.max(1, options.maxBatch ?? DEFAULT_MAX_BATCH)
    if (options.prestart) this.spawnMissing()
  }

  firstVerifying(
    publicKey: Buffer,
    signature: Buffer,
    candidates: readonly CandidateMessage[],
    priority: VerifyPriority = 'normal'
  ): Promise<number> {
    if (publicKey.length !== 32 || signature.length !== 64 || candidates.length === 0) return Promise.resolve(-1)
    if (!this.offload() || candidates.length > 255) {
      this.counts.inline++
      return Promise.resolve(firstVerifyingInline(publicKey, signature, candidates))
    }
    this.counts.pooled++
    // A worker gets every form there is, and answers with its position among them.
    const messages: SignedMessage[] = []
    const positions: number[] = []
    candidates.forEach((candidate, position) => {
      const message = built(candidate)
      if (message === null) return
      messages.push(message)
      positions.push(position)
    })
    return new Promise(resolve => {
      const job: Job = { publicKey, signature, messages, resolve: index => resolve(positions[index] ?? -1) }
      ;(priority === 'low' ? this.queuedLow : this.queued).push(job)
      // After the current task: the jobs a request submits together leave together.
      if (!this.flushScheduled) {
        this.flushScheduled = true
        queueMicrotask(() => this.flush())
      }
    })
  }

  /** Starts the workers now rather than on the first need, and waits until they are ready. */
  async start(): Promise<void> {
    this.spawnMissing()
    await Promise.all(
      this.slots.map(slot =>
        slot.ready || slot.dead
          ? undefined
          : new Promise<void>(resolve => {
              const done = (): void => {
                slot.worker.off('message', done)
                slot.worker.off('exit', done)
                resolve()
              }
              slot.worker.on('message', done)
              slot.worker.on('exit', done)
            })
      )
    )
  }

  stats(): VerifyPoolStats {
    return { ...this.counts, workersReady: this.slots.filter(s => s.ready && !s.dead).length, broken: this.broken }
  }

  /** Stops the workers; jobs they held, and any later ones, are verified inline. */
  async close(): Promise<void> {
    this.closed = true
    const slots = this.slots.splice(0)
    this.flush()
    await Promise.all(slots.map(slot => slot.worker.terminate()))
  }

  /** Whether this job goes to the workers: by the recent rate, or because the pool is busy anyway. */
  private offload(): boolean {
    if (this.size === 0 || this.closed || this.broken) return false
    const now = performance.now()
    const elapsed = now - this.windowStart
    if (elapsed >= RATE_WINDOW_MS) {
      this.lastRate = (this.windowCount * 1000) / elapsed
      this.windowStart = now
      this.windowCount = 0
    }
    this.windowCount++
    const rate = Math.max(this.lastRate, (this.windowCount * 1000) / RATE_WINDOW_MS)
    const busy = this.pending > 0 || this.slots.some(s => s.load > 0)
    const threshold = this.pooling ? this.inlineMaxRate * POOLING_KEPT_ABOVE : this.inlineMaxRate
    if (!busy && rate < threshold) {
      this.pooling = false
      return false
    }
    this.spawnMissing()
    this.pooling = this.slots.some(s => s.ready)
    return this.pooling
  }

  private spawnMissing(): void {
    if (this.closed || this.broken) return
    try {
      while (this.slots.length < this.size) this.slots.push(this.spawn())
    } catch (err) {
      this.broken = true
      this.options.onWorkerError?.(err as Error)
    }
  }

  private spawn(): Slot {
    const data: VerifyWorkerData = {
      kind: VERIFY_WORKER,
      shared: new SharedArrayBuffer(4 + 4 * this.maxBatch),
      maxBatch: this.maxBatch
    }
    const worker = spawnModuleWorker(
      import.meta.url,
      'verify-worker',
      { workerData: data, execArgv: [] },
      this.options.workerUrl
    )
    const slot: Slot = {
      worker,
      ready: false,
      dead: false,
      load: 0,
      batches: new Map(),
      sent: 0,
      collected: 0,
      ...sharedViews(data)
    }
    worker.unref()
    worker.on('message', (reply: VerifyWorkerReply) => {
      if (reply.type === 'ready') slot.ready = true
      else if (this.collect(slot) > 0 && this.pending > 0) this.flush()
    })
    worker.on('error', err => this.options.onWorkerError?.(err))
    worker.on('exit', () => this.died(slot))
    return slot
  }

  /** Answers the jobs of every batch the worker has finished; how many batches that was. */
  private collect(slot: Slot): number {
    const finished = Atomics.load(slot.finished, 0)
    if (slot.collected >= finished) return 0
    const before = slot.collected
    while (slot.collected < finished) {
      const id = ++slot.collected
      const jobs = slot.batches.get(id)
      if (!jobs) continue
      slot.batches.delete(id)
      slot.load -= jobs.length
      const base = (id % 2) * this.maxBatch
      for (let i = 0; i < jobs.length; i++) (jobs[i] as Job).resolve(slot.results[base + i] ?? -1)
    }
    if (slot.load === 0) slot.worker.unref()
    this.consecutiveDeaths = 0
    return finished - before
  }

  /** End of a turn that sent batches: answers what the workers have finished already. */
  private readonly check = (): void => {
    this.checkScheduled = false
    let answered = 0
    for (const slot of this.slots) answered += this.collect(slot)
    this.counts.answeredSameTurn += answered
    if (answered > 0 && this.pending > 0) this.flush()
  }

  private died(slot: Slot): void {
    this.collect(slot)
    slot.dead = true
    slot.ready = false
    const index = this.slots.indexOf(slot)
    if (index !== -1) this.slots.splice(index, 1)
    const orphans = [...slot.batches.values()].flat()
    slot.batches.clear()
    slot.load = 0
    for (const job of orphans) job.resolve(firstVerifyingInline(job.publicKey, job.signature, job.messages))
    this.counts.retriedInline += orphans.length
    // Jobs waiting for room go to the other workers, or inline when none is left.
    if (this.pending > 0) this.flush()
    if (this.closed) return
    this.counts.workerDeaths++
    if (++this.consecutiveDeaths >= MAX_CONSECUTIVE_DEATHS) {
      this.broken = true
      this.options.onWorkerError?.(
        new Error(
          `verification workers died ${MAX_CONSECUTIVE_DEATHS} times in a row; verifying on the main thread from now on`
        )
      )
    }
  }

  private get pending(): number {
    return this.queued.length + this.queuedLow.length
  }

  /** Sends queued jobs to workers with room, normal priority first; what finds none waits for the next answer. */
  private flush(): void {
    this.flushScheduled = false
    if (this.pending === 0) return
    const ready = this.slots.filter(s => s.ready)
    if (ready.length === 0) {
      const jobs = [...this.queued, ...this.queuedLow]
      this.queued = []
      this.queuedLow = []
      this.counts.retriedInline += jobs.length
      for (const job of jobs) job.resolve(firstVerifyingInline(job.publicKey, job.signature, job.messages))
      return
    }
    const open = ready.filter(s => s.batches.size < MAX_BATCHES_IN_FLIGHT)
    if (open.length === 0) return
    const jobs = this.queuedLow.length === 0 ? this.queued : [...this.queued, ...this.queuedLow]
    // Spread the queue over the workers with room, least loaded first.
    const chunk = Math.min(this.maxBatch, Math.ceil(jobs.length / open.length))
    let start = 0
    while (start < jobs.length) {
      let slot: Slot | undefined
      for (const s of open)
        if (s.batches.size < MAX_BATCHES_IN_FLIGHT && (slot === undefined || s.load < slot.load)) slot = s
      if (slot === undefined) break
      const part = jobs.slice(start, start + chunk)
      start += part.length
      const id = ++slot.sent
      const batch = encodeBatch(part)
      slot.batches.set(id, part)
      if (slot.load === 0) slot.worker.ref()
      slot.load += part.length
      this.counts.batches++
      slot.worker.postMessage({ id, batch } satisfies VerifyWorkerRequest, [batch])
    }
    const sentNormal = Math.min(start, this.queued.length)
    this.queuedLow = this.queuedLow.slice(start - sentNormal)
    this.queued = this.queued.slice(sentNormal)
    if (!this.checkScheduled) {
      this.checkScheduled = true
      setImmediate(this.check)
    }
  }
}

/** Packs jobs in the layout verify-worker.ts reads. */
export function encodeBatch(jobs: readonly Pick<Job, 'publicKey' | 'signature' | 'messages'>[]): ArrayBuffer {
  let size = 4
  const lengths: number[] = []
  for (const job of jobs) {
    size += 97
    for (const m of job.messages) {
      const length = typeof m === 'string' ? Buffer.byteLength(m, 'utf8') : m.byteLength
      lengths.push(length)
      size += 4 + length
    }
  }
  const batch = new ArrayBuffer(size)
  const buf = Buffer.from(batch)
  buf.writeUInt32LE(jobs.length, 0)
  let off = 4
  let l = 0
  for (const job of jobs) {
    job.publicKey.copy(buf, off)
    job.signature.copy(buf, off + 32)
    buf[off + 96] = job.messages.length
    off += 97
    for (const m of job.messages) {
      const length = lengths[l++] as number
      buf.writeUInt32LE(length, off)
      off += 4
      if (typeof m === 'string') buf.write(m, off, length, 'utf8')
      else buf.set(m, off)
      off += length
    }
  }
  return batch
}
