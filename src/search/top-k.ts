/**
 * The k best slots of a stream of scored slots (TopK), ties broken by entity ID, and the number
 * (idOrder) that orders most entity IDs without comparing the strings.
 */
import type { KeptDocument } from './engine-query.js'

/** What breaks ties between equal scores: entity ID order by slot as numbers, and the documents for the rest. */
export interface Order {
  keys: Float64Array
  docs: readonly (KeptDocument | undefined)[]
}

/**
 * A number ordered as entity IDs are ordered as strings: "zns:<hex>" before "zns:svc:<hex>" ('s'
 * sorts after every hex digit), then by the first 12 hex digits (48 bits, exact in a double).
 * NaN for any other form (callers then compare the strings).
 */
export function idOrder(entityId: string): number {
  const service = entityId.startsWith('zns:svc:')
  const hex = entityId.slice(service ? 8 : 4, service ? 20 : 16)
  if (!entityId.startsWith('zns:') || !/^[0-9a-f]{12}$/.test(hex)) return NaN
  return (service ? 2 ** 48 : 0) + Number.parseInt(hex, 16)
}

/**
 * The k best slots (score descending, entity ID ascending on ties) of a stream, in a binary
 * min-heap of slots and scores; a slot worse than the heap's root is rejected with one comparison.
 */
export class TopK {
  private readonly slots: Int32Array
  private readonly scores: Float64Array
  private size = 0
  /** Scores below this cannot enter (the root's, once the heap is full): checked before a call. */
  floor = Number.NEGATIVE_INFINITY

  constructor(
    readonly k: number,
    /** Breaks ties between equal scores. */
    private readonly order: Order
  ) {
    this.slots = new Int32Array(Math.max(0, k))
    this.scores = new Float64Array(Math.max(0, k))
  }

  /** Whether (sa, a) ranks below (sb, b): a lower score, or the same score and a greater entity ID. */
  private static worse(sa: number, a: number, sb: number, b: number, order: Order): boolean {
    if (sa !== sb) return sa < sb
    const ka = order.keys[a] as number
    const kb = order.keys[b] as number
    // NaN keys (IDs of another form) and equal prefixes compare as strings.
    if (ka !== kb && !Number.isNaN(ka) && !Number.isNaN(kb)) return ka > kb
    return (order.docs[a] as KeptDocument).entityId > (order.docs[b] as KeptDocument).entityId
  }

  offer(slot: number, score: number): void {
    const { slots, scores, k, order } = this
    if (k <= 0) return
    if (this.size < k) {
      let i = this.size++
      while (i > 0) {
        const p = (i - 1) >> 1
        if (!TopK.worse(score, slot, scores[p] as number, slots[p] as number, order)) break
        slots[i] = slots[p] as number
        scores[i] = scores[p] as number
        i = p
      }
      slots[i] = slot
      scores[i] = score
      if (this.size === k) this.floor = scores[0] as number
      return
    }
    if (score < (scores[0] as number) || !TopK.worse(scores[0] as number, slots[0] as number, score, slot, order))
      return
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = -1
      let ms = score
      let mslot = slot
      if (l < k && TopK.worse(scores[l] as number, slots[l] as number, ms, mslot, order)) {
        m = l
        ms = scores[l] as number
        mslot = slots[l] as number
      }
      if (r < k && TopK.worse(scores[r] as number, slots[r] as number, ms, mslot, order)) {
        m = r
        ms = scores[r] as number
        mslot = slots[r] as number
      }
      if (m === -1) break
      slots[i] = mslot
      scores[i] = ms
      i = m
    }
    slots[i] = slot
    scores[i] = score
    this.floor = scores[0] as number
  }

  sorted(): number[] {
    const positions = Array.from({ length: this.size }, (_, i) => i)
    positions.sort((a, b) =>
      TopK.worse(
        this.scores[a] as number,
        this.slots[a] as number,
        this.scores[b] as number,
        this.slots[b] as number,
        this.order
      )
        ? 1
        : -1
    )
    return positions.map(i => this.slots[i] as number)
  }
}

/** The k-th highest of a stream of numbers (a min-heap of the k highest), -Infinity until k came. */
export class KthBest {
  private readonly heap: Float64Array
  private size = 0
  /** Numbers not above this change nothing: checked before a call. */
  floor = Number.NEGATIVE_INFINITY

  constructor(readonly k: number) {
    this.heap = new Float64Array(Math.max(1, k))
  }

  offer(value: number): void {
    const { heap, k } = this
    if (this.size < k) {
      let i = this.size++
      while (i > 0) {
        const p = (i - 1) >> 1
        if ((heap[p] as number) <= value) break
        heap[i] = heap[p] as number
        i = p
      }
      heap[i] = value
      if (this.size === k) this.floor = heap[0] as number
      return
    }
    if (value <= (heap[0] as number)) return
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      if (l >= k) break
      const r = l + 1
      const m = r < k && (heap[r] as number) < (heap[l] as number) ? r : l
      if ((heap[m] as number) >= value) break
      heap[i] = heap[m] as number
      i = m
    }
    heap[i] = value
    this.floor = heap[0] as number
  }

  /** The numbers held, in no order. */
  values(): Float64Array {
    return this.heap.subarray(0, this.size)
  }
}
