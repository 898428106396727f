/**
 * Documents by pair of adjacent common words ("agent ai"), for quoted phrases whose words are all
 * common. The documents of such a phrase are found only by reading its words' sequences in every
 * document holding all of them (at a million documents, hundreds of thousands for two of the
 * most frequent words: 40–100 ms); here they are one list. Like the filter lists, entries of
 * removed documents stay until the sweep.
 *
 * Only pairs of words that were common when the pairs were built (their posting lists long enough
 * to be walked) are kept: about seven a document at a million. A word that becomes common later is
 * not covered until the pairs are built again. The common words are numbered densely, so a pair's
 * list is found by index, not by a key.
 */

const EMPTY = new Uint32Array(0)

/** The term numbers of the common words: those whose posting lists hold `walkFrom` postings or more. */
export function commonTermIds(lists: readonly ({ length: number } | undefined)[], walkFrom: number): number[] {
  const common: number[] = []
  lists.forEach((list, id) => {
    if (list !== undefined && list.length >= walkFrom) common.push(id)
  })
  return common
}

export class PhrasePairs {
  /** By term number: the word's number among the common words, or -1. */
  private readonly numberOf: Int32Array
  private readonly count: number
  /** By pair (first's number × count + second's): its slots, and how many are listed. */
  private readonly lists: Uint32Array[]
  private readonly lengths: Int32Array

  /** `commonTerms`: the term numbers of the common words. */
  private constructor(commonTerms: readonly number[], termCount: number) {
    this.numberOf = new Int32Array(termCount).fill(-1)
    commonTerms.forEach((id, n) => {
      this.numberOf[id] = n
    })
    this.count = commonTerms.length
    this.lists = Array.from({ length: this.count * this.count }, () => EMPTY)
    this.lengths = new Int32Array(this.count * this.count)
  }

  /**
   * The pairs of every live document (`starts` and `lengths` by slot locate its term sequence in
   * `sequences`): counted first, so each list is allocated once, in one buffer with room for a
   * quarter more (lists grown one by one made V8 collect its whole heap for the memory outside it).
   */
  static build(
    commonTerms: readonly number[],
    termCount: number,
    live: { slots: number; alive: Uint8Array; sequences: Uint32Array; starts: Uint32Array; lengths: Uint32Array }
  ): PhrasePairs {
    const pairs = new PhrasePairs(commonTerms, termCount)
    const { slots, alive, sequences, starts, lengths } = live
    const { numberOf, count } = pairs
    const counts = new Int32Array(pairs.lengths.length)
    const last = new Int32Array(pairs.lengths.length).fill(-1)
    for (let slot = 0; slot < slots; slot++) {
      if (!alive[slot]) continue
      const end = (starts[slot] as number) + (lengths[slot] as number)
      let previous = -1
      for (let at = starts[slot] as number; at < end; at++) {
        const id = sequences[at] as number
        const current = id < numberOf.length ? (numberOf[id] as number) : -1
        if (previous !== -1 && current !== -1) {
          const pair = previous * count + current
          if (last[pair] !== slot) {
            last[pair] = slot
            counts[pair] = (counts[pair] as number) + 1
          }
        }
        previous = current
      }
    }
    let total = 0
    for (let pair = 0; pair < counts.length; pair++) total += (counts[pair] as number) + ((counts[pair] as number) >> 2)
    const buffer = new Uint32Array(total)
    let at = 0
    for (let pair = 0; pair < counts.length; pair++) {
      const room = (counts[pair] as number) + ((counts[pair] as number) >> 2)
      if (room > 0) pairs.lists[pair] = buffer.subarray(at, at + room)
      at += room
    }
    for (let slot = 0; slot < slots; slot++)
      if (alive[slot])
        pairs.add(slot, sequences, starts[slot] as number, (starts[slot] as number) + (lengths[slot] as number))
    return pairs
  }

  /** Whether the pairs were built for exactly these common words (term numbers). */
  coversExactly(commonTerms: readonly number[]): boolean {
    return commonTerms.length === this.count && commonTerms.every(id => this.numberOfTerm(id) !== -1)
  }

  /** Whether every word of the phrase (term numbers) was common when the pairs were built. */
  covers(ids: Uint32Array): boolean {
    for (const id of ids) if (this.numberOfTerm(id) === -1) return false
    return true
  }

  /**
   * The documents that may hold the phrase (term numbers, two or more): those of its adjacent pair
   * listing fewest, removed ones included. Null when a word is not covered.
   */
  candidates(ids: Uint32Array): Uint32Array | null {
    if (!this.covers(ids)) return null
    let fewest = this.slots(ids[0] as number, ids[1] as number)
    for (let j = 2; j < ids.length; j++) {
      const slots = this.slots(ids[j - 1] as number, ids[j] as number)
      if (slots.length < fewest.length) fewest = slots
    }
    return fewest
  }

  /** Lists the document at `slot` under each pair of adjacent common words in its term sequence (`sequences` from `start` to `end`). */
  add(slot: number, sequences: Uint32Array, start: number, end: number): void {
    const { numberOf, count, lengths } = this
    let previous = -1
    for (let at = start; at < end; at++) {
      const id = sequences[at] as number
      const current = id < numberOf.length ? (numberOf[id] as number) : -1
      if (previous !== -1 && current !== -1) this.append(previous * count + current, slot, lengths)
      previous = current
    }
  }

  /** Lists the slot under the pair once: a document's pairs are added together, so a repeat is the last entry. */
  private append(pair: number, slot: number, lengths: Int32Array): void {
    const length = lengths[pair] as number
    let slots = this.lists[pair] as Uint32Array
    if (length > 0 && slots[length - 1] === slot) return
    if (length === slots.length) {
      const grown = new Uint32Array(Math.max(8, length * 2))
      grown.set(slots)
      this.lists[pair] = slots = grown
    }
    slots[length] = slot
    lengths[pair] = length + 1
  }

  /** The documents listed under the pair, removed ones included (a view valid until the next write). */
  private slots(first: number, second: number): Uint32Array {
    const pair = this.numberOfTerm(first) * this.count + this.numberOfTerm(second)
    return (this.lists[pair] as Uint32Array).subarray(0, this.lengths[pair] as number)
  }

  /** Drops the removed documents. */
  sweep(alive: Uint8Array): void {
    for (let pair = 0; pair < this.lists.length; pair++) {
      const slots = this.lists[pair] as Uint32Array
      let kept = 0
      for (let i = 0; i < (this.lengths[pair] as number); i++) {
        const slot = slots[i] as number
        if (alive[slot]) slots[kept++] = slot
      }
      this.lengths[pair] = kept
    }
  }

  /** The term's number among the common words (-1: not one; the field break is not a term). */
  private numberOfTerm(id: number): number {
    return id < this.numberOf.length ? (this.numberOf[id] as number) : -1
  }
}
