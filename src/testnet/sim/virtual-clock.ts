/**
 * Virtual time for a simulation: a discrete-event clock that replaces the process's timers and
 * clocks (`setTimeout`, `setInterval`, `Date`, `performance.now`, `AbortSignal.timeout`). Time
 * stands still while there is work to do now; once every node is idle (no microtask, immediate or
 * real request pending), the clock jumps to the earliest timer and fires every timer due then.
 * Results thus depend on what the code does, not on how fast this machine does it: a node busy
 * for a real second has spent no virtual time.
 *
 * `setImmediate`, `process.nextTick` and promises stay real: they are "now", and the clock waits
 * for them before it moves.
 */

import { setMaxListeners } from 'node:events'

const realSetImmediate = globalThis.setImmediate
const RealDate = globalThis.Date
const realPerformanceNow = performance.now.bind(performance)
const realAbortTimeout = AbortSignal.timeout.bind(AbortSignal)
const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval
}

type Callback = (...args: unknown[]) => void

/** A timer with the methods Node's timers have, which libraries call (`unref`, `refresh`, …). */
export class VirtualTimer {
  /** Its place in the clock's queue; null once fired (not repeating) or cleared. */
  entry: Entry | null = null
  private refed = true

  constructor(
    private readonly clock: VirtualClock,
    readonly id: number,
    readonly delay: number,
    readonly callback: Callback,
    readonly args: unknown[],
    readonly repeats: boolean
  ) {}

  ref(): this {
    this.refed = true
    return this
  }

  unref(): this {
    this.refed = false
    return this
  }

  hasRef(): boolean {
    return this.refed
  }

  /** Due its delay from now again (also after it fired). */
  refresh(): this {
    this.clock.arm(this)
    return this
  }

  close(): this {
    this.clock.clear(this)
    return this
  }

  [Symbol.toPrimitive](): number {
    return this.id
  }
}

/** One place in the queue: refreshing a timer leaves its old entry dead and queues a new one. */
interface Entry {
  at: number
  seq: number
  timer: VirtualTimer
  dead: boolean
}

export class VirtualClock {
  /** Virtual milliseconds since the epoch (fractional: link delays are). */
  private time: number
  private readonly heap: Entry[] = []
  private readonly byId = new Map<number, VirtualTimer>()
  /** Entries in the heap whose timer was cleared or refreshed since. */
  private readonly realWork = new Set<Promise<unknown>>()
  private dead = 0
  private nextId = 1
  private nextSeq = 0
  private installed = false
  /** Timers fired since the clock was made. */
  fired = 0

  constructor(readonly epochMs: number) {
    this.time = epochMs
  }

  get now(): number {
    return this.time
  }

  /** Milliseconds since the clock started. */
  get elapsed(): number {
    return this.time - this.epochMs
  }

  /** Timers waiting. */
  get pending(): number {
    return this.byId.size
  }

  /** Calls `callback` after `delay` virtual ms (and every `delay` ms after that when `repeats`). */
  schedule(delay: number, callback: Callback, args: unknown[] = [], repeats = false): VirtualTimer {
    const wait = Number.isFinite(delay) && delay > 0 ? delay : 0
    const timer = new VirtualTimer(this, this.nextId++, repeats ? Math.max(1, wait) : wait, callback, args, repeats)
    this.arm(timer)
    return timer
  }

  /** Queues `timer` its delay from now, replacing where it stood. */
  arm(timer: VirtualTimer): void {
    if (timer.entry) this.kill(timer.entry)
    const entry: Entry = { at: this.time + timer.delay, seq: this.nextSeq++, timer, dead: false }
    timer.entry = entry
    this.byId.set(timer.id, timer)
    this.push(entry)
  }

  clear(handle: unknown): void {
    const timer =
      handle instanceof VirtualTimer ? handle : typeof handle === 'number' ? this.byId.get(handle) : undefined
    if (!timer?.entry) return
    this.kill(timer.entry)
    timer.entry = null
    this.byId.delete(timer.id)
  }

  /** Replaces the process's timers and clocks with this clock's. */
  install(): void {
    if (this.installed) throw new Error('a virtual clock is already installed')
    this.installed = true
    const g = globalThis as unknown as Record<string, unknown>
    g.setTimeout = (fn: Callback, delay?: number, ...args: unknown[]) => this.schedule(nodeDelay(delay), fn, args)
    g.setInterval = (fn: Callback, delay?: number, ...args: unknown[]) =>
      this.schedule(nodeDelay(delay), fn, args, true)
    g.clearTimeout = (handle: unknown) => this.clear(handle)
    g.clearInterval = (handle: unknown) => this.clear(handle)
    g.Date = virtualDate(() => this.time)
    performance.now = () => this.time - this.epochMs
    AbortSignal.timeout = (ms: number): AbortSignal => {
      const controller = new AbortController()
      // As many listeners as the real one takes without a warning: libraries hang one per operation on it.
      setMaxListeners(Number.POSITIVE_INFINITY, controller.signal)
      this.schedule(ms, () =>
        controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))
      )
      return controller.signal
    }
  }

  /** Puts the real timers and clocks back. */
  uninstall(): void {
    if (!this.installed) return
    this.installed = false
    Object.assign(globalThis, real)
    ;(globalThis as { Date: DateConstructor }).Date = RealDate
    performance.now = realPerformanceNow
    AbortSignal.timeout = realAbortTimeout
  }

  /**
   * Waits until nothing is left to do now: real immediates and microtasks run (each turn of the
   * real event loop drains the microtasks first) and real requests in flight (files) finish.
   */
  async settle(): Promise<void> {
    for (;;) {
      await new Promise<void>(resolve => realSetImmediate(resolve))
      if (this.realWork.size > 0) {
        await Promise.all(this.realWork)
        continue
      }
      if (!realWorkPending()) return
    }
  }

  /**
   * Work on real time that the clock cannot see and must not move under: a store closing on LMDB's
   * own thread. Until it settles no timer fires, so when it ends does not depend on this machine.
   * Only for work that needs no timer of the clock (it would wait forever).
   */
  waitFor(work: Promise<unknown>): void {
    const tracked: Promise<unknown> = work.then(
      () => this.realWork.delete(tracked),
      () => this.realWork.delete(tracked)
    )
    this.realWork.add(tracked)
  }

  /**
   * One step: waits until nothing is left to do now, then, if the earliest timer is due by `until`
   * (ms since the epoch), moves to its time and fires every timer due then. Returns whether it moved.
   */
  async step(until: number): Promise<boolean> {
    await this.settle()
    const next = this.peek()
    if (!next || next.at > until) return false
    this.time = Math.max(this.time, next.at)
    // Every timer due now fires in the order it was set; their microtasks run after.
    for (let due = this.peek(); due && due.at <= this.time; due = this.peek()) {
      this.pop()
      const timer = due.timer
      timer.entry = null
      if (timer.repeats) this.arm(timer)
      else this.byId.delete(timer.id)
      this.fired++
      try {
        timer.callback(...timer.args)
      } catch (err) {
        queueMicrotask(() => {
          throw err
        })
      }
    }
    await this.settle()
    return true
  }

  /**
   * Runs the simulation until virtual time reaches `until` (ms since the epoch); the clock then
   * stands at `until`. `stop`, asked after each step, ends the run early.
   */
  async runUntil(until: number, stop: () => boolean = () => false): Promise<void> {
    while (!stop()) if (!(await this.step(until))) break
    if (!stop() && this.time < until && Number.isFinite(until)) this.time = until
  }

  /** Runs for `ms` more virtual milliseconds. */
  advance(ms: number, stop?: () => boolean): Promise<void> {
    return this.runUntil(this.time + ms, stop)
  }

  /**
   * Marks an entry dead; once most of the heap is dead (libraries set and clear many long
   * timeouts), the heap is rebuilt from the live ones.
   */
  private kill(entry: Entry): void {
    entry.dead = true
    this.dead++
    if (this.dead > 4096 && this.dead * 2 > this.heap.length) {
      const live = this.heap.filter(e => !e.dead)
      this.heap.length = 0
      this.dead = 0
      for (const e of live) this.push(e)
    }
  }

  /** The earliest live entry, dropping dead ones from the top. */
  private peek(): Entry | undefined {
    while (this.heap.length > 0 && (this.heap[0] as Entry).dead) {
      this.pop()
      this.dead--
    }
    return this.heap[0]
  }

  private push(entry: Entry): void {
    const heap = this.heap
    heap.push(entry)
    let i = heap.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      const p = heap[parent] as Entry
      if (!before(entry, p)) break
      heap[i] = p
      i = parent
    }
    heap[i] = entry
  }

  private pop(): Entry | undefined {
    const heap = this.heap
    const top = heap[0]
    const last = heap.pop()
    if (heap.length === 0 || !last) return top
    let i = 0
    for (;;) {
      const left = 2 * i + 1
      if (left >= heap.length) break
      const right = left + 1
      let child = left
      if (right < heap.length && before(heap[right] as Entry, heap[left] as Entry)) child = right
      if (!before(heap[child] as Entry, last)) break
      heap[i] = heap[child] as Entry
      i = child
    }
    heap[i] = last
    return top
  }
}

/** Node's rule: a delay below 1 ms or above 2^31 − 1 is 1 ms (so a timer re-armed at 0 still lets time move). */
function nodeDelay(delay: number | undefined): number {
  const ms = Number(delay)
  return ms >= 1 && ms <= 2_147_483_647 ? ms : 1
}

function before(a: Entry, b: Entry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq)
}

/** Request kinds of libuv in flight (a file read, a DNS lookup): the clock waits for them. */
function realWorkPending(): boolean {
  for (const kind of process.getActiveResourcesInfo()) if (kind === 'Immediate' || kind.includes('Req')) return true
  return false
}

/** A Date whose "now" is the virtual clock's; every other use is the real Date's. */
function virtualDate(now: () => number): DateConstructor {
  class VirtualDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(Math.floor(now()))
      else super(...(args as [string | number | Date]))
    }

    static override now(): number {
      return Math.floor(now())
    }
  }
  return VirtualDate as DateConstructor
}
