/**
 * A term's posting list (the slots holding it, their field counts and saturated term weights), and
 * the checks the text index makes on counts and term sequences.
 */
import { widened } from '../util/typed-arrays.js'
import type { SlotWeights } from './slot-weights.js'
import { F } from './text-fields.js'

export class Postings {
  slots = new Uint32Array(2)
  tfs = new Uint8Array(2 * F)
  /** Saturated BM25F term weight of each posting (before idf). */
  weights = new Float32Array(2)
  length = 0
  /** Live documents holding the term (for idf). */
  df = 0
  /**
   * The slots of the postings below `impactLength` by weight, highest first, and their weights
   * (see impact-walk.ts) as numbers into `impactValues` (see slot-weights.ts), or null until a
   * walk needs them; the postings from `impactLength` on were added since.
   */
  impact: Uint32Array | null = null
  impactCodes = new Uint16Array(0)
  impactValues = new Float32Array(1)
  impactLength = 0
  /** Each slot's weight (0: not held), or null until a walk of several terms needs it (see impact-walk.ts). */
  bySlot: SlotWeights | null = null

  constructor(readonly term: string) {}

  /** A list as a snapshot held it: views of the snapshot's arrays, copied out when the list grows. */
  static restored(
    term: string,
    slots: Uint32Array<ArrayBuffer>,
    tfs: Uint8Array<ArrayBuffer>,
    weights: Float32Array<ArrayBuffer>,
    df: number
  ): Postings {
    const list = new Postings(term)
    // An empty view would never grow (its next capacity is twice nothing).
    if (slots.length > 0) {
      list.slots = slots
      list.tfs = tfs
      list.weights = weights
    }
    list.length = slots.length
    list.df = df
    return list
  }

  /** Drops what a walk reads (its weights have changed, or it is not walked often enough to keep it). */
  dropWalk(): void {
    this.dropOrder()
    this.bySlot = null
  }

  /** Drops the impact order. */
  dropOrder(): void {
    this.impact = null
    this.impactCodes = new Uint16Array(0)
    this.impactValues = new Float32Array(1)
    this.impactLength = 0
  }

  /** `tfs` holds the F field counts of this posting from `at`. */
  add(slot: number, tfs: Uint8Array, at: number, weight: number): void {
    if (this.length === this.slots.length) {
      const capacity = this.length < 64 ? this.length * 2 : this.length + (this.length >> 1)
      this.slots = widened(this.slots, capacity)
      this.tfs = widened(this.tfs, capacity * F)
      this.weights = widened(this.weights, capacity)
    }
    this.slots[this.length] = slot
    for (let f = 0; f < F; f++) this.tfs[this.length * F + f] = tfs[at + f] as number
    this.weights[this.length] = weight
    this.length++
    this.df++
    if (this.bySlot !== null && !this.bySlot.set(slot, weight)) this.bySlot = null
  }

  /** Drops the postings of dead slots (and their slots from the impact order). */
  compact(alive: Uint8Array): void {
    let w = 0
    let ordered = 0
    for (let r = 0; r < this.length; r++) {
      const slot = this.slots[r] as number
      if (!alive[slot]) {
        // The slot may be reused once swept.
        this.bySlot?.clear(slot)
        continue
      }
      if (w !== r) {
        this.slots[w] = slot
        this.tfs.copyWithin(w * F, r * F, r * F + F)
        this.weights[w] = this.weights[r] as number
      }
      if (r < this.impactLength) ordered++
      w++
    }
    this.length = w
    const impact = this.impact
    if (impact === null) return
    let kept = 0
    for (let i = 0; i < impact.length; i++) {
      const slot = impact[i] as number
      if (!alive[slot]) continue
      impact[kept] = slot
      this.impactCodes[kept++] = this.impactCodes[i] as number
    }
    this.impact = impact.subarray(0, kept)
    this.impactCodes = this.impactCodes.subarray(0, kept)
    this.impactLength = ordered
  }
}

/** Whether row `row` of `counts` (F field counts each) has a count. */
export function holds(counts: Uint8Array, row: number): boolean {
  for (let f = row * F; f < row * F + F; f++) if (counts[f] !== 0) return true
  return false
}

/** Whether the term numbers `ids` stand consecutively in `sequences[start, end)`. */
export function holdsPhrase(sequences: Uint32Array, start: number, end: number, ids: Uint32Array): boolean {
  const span = ids.length
  if (span === 0) return false
  const first = ids[0] as number
  outer: for (let at = start; at <= end - span; at++) {
    if (sequences[at] !== first) continue
    for (let j = 1; j < span; j++) if (sequences[at + j] !== ids[j]) continue outer
    return true
  }
  return false
}

/** Sets `bit` in the mask of every live slot of the list. */
export function markTerm({ slots, length }: Postings, alive: Uint8Array, masks: Uint32Array, bit: number): void {
  for (let i = 0; i < length; i++) {
    const slot = slots[i] as number
    if (alive[slot]) masks[slot] = (masks[slot] as number) | bit
  }
}

/** One column of every posting list (`perPosting` values a posting), the lists one after another. */
export function* column<T extends ArrayBufferView & { subarray(begin: number, end: number): T }>(
  lists: readonly (Postings | undefined)[],
  perPosting: number,
  of: (list: Postings) => T
): Generator<T> {
  for (const list of lists) if (list && list.length > 0) yield of(list).subarray(0, list.length * perPosting)
}
