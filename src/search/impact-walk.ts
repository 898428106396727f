/**
 * A walk of a query's long posting lists from their highest term weights down (each list in its
 * impact order: its slots by weight), visiting each live document once, until the caller says
 * that no document not yet met can matter. Such a document holds none of the lists read whole
 * (the caller met all of theirs first), so its text score is at most the walk's bound: the sum
 * over the walked lists of idf × the weight where each list's walk stands.
 *
 * A query whose words most documents hold (at a million, "agent" is in 98 % of them) then reads
 * the few thousand postings that can reach its page instead of every one of them.
 */
import type { Postings } from './postings.js'
import { SlotWeights, WeightNumbering } from './slot-weights.js'

/** A query term's posting list, its idf (times the term's weight in the query), and whether it is walked by weight. */
export interface WalkedTerm {
  list: Postings
  idf: number
  long: boolean
}

/**
 * Weights are ordered by bucket, not exactly: a saturated BM25 weight is below k1 + 1 = 2.2, and
 * 4,096 buckets of that range order a list in one counting pass. Within a bucket the order is the
 * lists', and the bound is the bucket's upper edge.
 */
const BUCKETS = 4096
const BUCKET_WIDTH = 2.2 / BUCKETS
/** Added to a bound: the division that finds a weight's bucket may round it down by an ulp. */
const BOUND_SLACK = 1e-6
/** Postings read from one list before the bound is computed again. */
const BLOCK = 256

function bucketOf(weight: number): number {
  return Math.min(BUCKETS - 1, Math.floor(weight / BUCKET_WIDTH))
}

/**
 * Array buffers of evicted walks, taken again by the next orders: at a million documents an order
 * and its weights by slot are megabytes, and allocating them anew at each eviction made V8 collect
 * its whole heap for the memory outside it (300 ms pauses).
 */
export class SpareBuffers {
  private readonly spares: ArrayBuffer[] = []

  constructor(private readonly keep: number) {}

  /** The smallest spare of at least `bytes`, or a new buffer of `bytes` and a quarter more. */
  take(bytes: number): ArrayBuffer {
    let best = -1
    for (let i = 0; i < this.spares.length; i++) {
      const size = (this.spares[i] as ArrayBuffer).byteLength
      if (size >= bytes && (best === -1 || size < (this.spares[best] as ArrayBuffer).byteLength)) best = i
    }
    if (best === -1) return new ArrayBuffer(bytes + (bytes >> 2))
    return this.spares.splice(best, 1)[0] as ArrayBuffer
  }

  give(buffer: ArrayBufferLike): void {
    if (!(buffer instanceof ArrayBuffer) || buffer.byteLength === 0) return
    this.spares.push(buffer)
    if (this.spares.length > this.keep) {
      let smallest = 0
      for (let i = 1; i < this.spares.length; i++)
        if ((this.spares[i] as ArrayBuffer).byteLength < (this.spares[smallest] as ArrayBuffer).byteLength) smallest = i
      this.spares.splice(smallest, 1)
    }
  }
}

/** Keeps nothing: every buffer is new. */
const NO_SPARES = new SpareBuffers(0)

/**
 * Brings the list's impact order up to date: built when missing or when a ninth of its postings
 * came since. False when its weights are too many to number (see slot-weights.ts): it has none.
 */
export function orderByImpact(list: Postings, spares: SpareBuffers = NO_SPARES): boolean {
  const since = list.length - list.impactLength
  if (list.impact !== null && since * 8 <= list.impactLength) return true
  const { slots, weights, length } = list
  const starts = new Uint32Array(BUCKETS + 1)
  for (let i = 0; i < length; i++) {
    const bucket = BUCKETS - 1 - bucketOf(weights[i] as number)
    starts[bucket + 1] = (starts[bucket + 1] as number) + 1
  }
  for (let b = 0; b < BUCKETS; b++) starts[b + 1] = (starts[b + 1] as number) + (starts[b] as number)
  if (list.impact !== null) {
    spares.give(list.impact.buffer)
    spares.give(list.impactCodes.buffer)
  }
  list.dropOrder()
  const impact = new Uint32Array(spares.take(length * 4), 0, length)
  const impactCodes = new Uint16Array(spares.take(length * 2), 0, length)
  const numbering = new WeightNumbering()
  try {
    for (let i = 0; i < length; i++) {
      const weight = weights[i] as number
      const code = numbering.number(weight)
      if (code === 0) return false
      const bucket = BUCKETS - 1 - bucketOf(weight)
      const at = starts[bucket] as number
      impact[at] = slots[i] as number
      impactCodes[at] = code
      starts[bucket] = at + 1
    }
  } finally {
    numbering.finish()
  }
  list.impact = impact
  list.impactCodes = impactCodes
  list.impactValues = numbering.values
  list.impactLength = length
  return true
}

/**
 * Gives the list its weights by slot for `slotCount` slots (kept up to date by the list from then
 * on; a slot the list never held reads 0 only below its length, hence the length at each walk).
 * False when the list has too many distinct weights to number (see slot-weights.ts): it has none.
 */
export function weighBySlot(list: Postings, slotCount: number, spares: SpareBuffers = NO_SPARES): boolean {
  if (list.bySlot === null) list.bySlot = SlotWeights.build(list.slots, list.weights, list.length, slotCount, spares)
  list.bySlot?.ensure(slotCount)
  return list.bySlot !== null
}

/** Buffers kept for the next orders: an eviction gives back two or three. */
const SPARES = 6

/**
 * The lists walked last, which keep what a walk reads (at a million documents the list of a word
 * every document holds keeps 8 MB of order and 4 MB of weights by slot); the others drop it, and
 * their buffers are taken by the next. Lists read only by slot for a filter list (see
 * posting-scores.ts) are kept apart, `keepBySlot` of them, so that they never push out a walk's order.
 */
export class RecentWalks {
  private readonly walked: Postings[] = []
  private readonly bySlotOnly: Postings[] = []
  private readonly spares: SpareBuffers

  constructor(
    private readonly keep: number,
    private readonly keepBySlot = keep
  ) {
    this.spares = new SpareBuffers(SPARES)
  }

  /**
   * Brings the list's impact order (and with `bySlot`, its weights by slot) up to date, and keeps it
   * among the last walked; false when its weights are too many to number (see slot-weights.ts).
   */
  prepare(list: Postings, bySlot: boolean, slotCount: number): boolean {
    const prepared = orderByImpact(list, this.spares) && (!bySlot || weighBySlot(list, slotCount, this.spares))
    remove(this.bySlotOnly, list)
    remove(this.walked, list)
    this.walked.push(list)
    if (this.walked.length > this.keep) {
      const evicted = this.walked.shift() as Postings
      if (evicted.impact !== null) {
        this.spares.give(evicted.impact.buffer)
        this.spares.give(evicted.impactCodes.buffer)
      }
      if (evicted.bySlot !== null) this.spares.give(evicted.bySlot.codes.buffer)
      evicted.dropWalk()
    }
    return prepared
  }

  /** Brings the list's weights by slot up to date (not its impact order), and keeps them among the last read. */
  prepareBySlot(list: Postings, slotCount: number): void {
    weighBySlot(list, slotCount, this.spares)
    if (this.walked.includes(list)) return
    remove(this.bySlotOnly, list)
    this.bySlotOnly.push(list)
    if (this.bySlotOnly.length > this.keepBySlot) {
      const evicted = this.bySlotOnly.shift() as Postings
      if (evicted.bySlot !== null) this.spares.give(evicted.bySlot.codes.buffer)
      evicted.bySlot = null
    }
  }
}

function remove(lists: Postings[], list: Postings): void {
  const at = lists.indexOf(list)
  if (at !== -1) lists.splice(at, 1)
}

/** What a walk does with a live document met for the first time: the term whose list met it, and its weight there. */
export type WalkVisit = (slot: number, term: WalkedTerm, weight: number) => void

/**
 * Visits of live documents, each at most once (marked in `seen`, indexed by slot, all clear before
 * and cleared by `clear`), listed in `visited` in the order met.
 */
export class ImpactWalk {
  count = 0

  constructor(
    private readonly alive: Uint8Array,
    private readonly seen: Uint8Array,
    readonly visited: Int32Array<ArrayBuffer>
  ) {}

  private meet(term: WalkedTerm, slot: number, weight: number, visit: WalkVisit): void {
    if (!this.alive[slot] || this.seen[slot] !== 0) return
    this.seen[slot] = 1
    this.visited[this.count++] = slot
    visit(slot, term, weight)
  }

  /** The document at `slot`, met as a list's are (those of a quoted phrase). */
  include(slot: number): void {
    if (!this.alive[slot] || this.seen[slot] !== 0) return
    this.seen[slot] = 1
    this.visited[this.count++] = slot
  }

  /** Every document of the term's list. */
  all(term: WalkedTerm, visit: WalkVisit): void {
    const { slots, weights, length } = term.list
    for (let i = 0; i < length; i++) this.meet(term, slots[i] as number, weights[i] as number, visit)
  }

  /**
   * The terms' lists (their impact orders up to date, see orderByImpact): first the postings
   * added since each order was built, then a block at a time from the list whose next weight adds
   * most to the bound, asking `stop(bound)` before each block. A document no list has met yet
   * holds no other term of the query (the caller has visited all of theirs) or has a text score of
   * at most the bound.
   */
  byImpact(terms: readonly WalkedTerm[], visit: WalkVisit, stop: (bound: number) => boolean): void {
    for (const term of terms) {
      const { slots, weights, length, impactLength } = term.list
      for (let i = impactLength; i < length; i++) this.meet(term, slots[i] as number, weights[i] as number, visit)
    }
    const at = new Uint32Array(terms.length)
    for (;;) {
      let bound = 0
      let next = -1
      let nextBound = 0
      for (let j = 0; j < terms.length; j++) {
        const { list, idf } = terms[j] as WalkedTerm
        const position = at[j] as number
        if (position >= list.impactCodes.length) continue
        const weight = list.impactValues[list.impactCodes[position] as number] as number
        const upper = idf * (bucketOf(weight) + 1) * BUCKET_WIDTH
        bound += upper
        if (upper > nextBound) {
          nextBound = upper
          next = j
        }
      }
      if (next === -1 || stop(bound * (1 + BOUND_SLACK))) return
      const term = terms[next] as WalkedTerm
      const impact = term.list.impact as Uint32Array
      const { impactCodes, impactValues } = term.list
      const from = at[next] as number
      const to = Math.min(impact.length, from + BLOCK)
      for (let i = from; i < to; i++)
        this.meet(term, impact[i] as number, impactValues[impactCodes[i] as number] as number, visit)
      at[next] = to
    }
  }

  /** Whether the walk has met the slot (alive and visited). */
  met(slot: number): boolean {
    return this.seen[slot] !== 0
  }

  clear(): void {
    for (let i = 0; i < this.count; i++) this.seen[this.visited[i] as number] = 0
  }
}
