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

interface SlotList {
  slots: Uint32Array
  length: number
}

const EMPTY = new Uint32Array(0)

export class PhrasePairs {
  /** By term number: the word's number among the common words, or -1. */
  private readonly numberOf: Int32Array
  private readonly count: number
  /** By pair (first's number × count + second's). */
  private readonly lists: (SlotList | undefined)[]

  /** `commonTerms`: the term numbers of the common words. */
  constructor(commonTerms: readonly number[], termCount: number) {
    this.numberOf = new Int32Array(termCount).fill(-1)
    commonTerms.forEach((id, n) => {
      this.numberOf[id] = n
    })
    this.count = commonTerms.length
    this.lists = new Array<SlotList | undefined>(this.count * this.count)
  }

  /** Whether both words (term numbers) were common when the pairs were built. */
  covers(first: number, second: number): boolean {
    return this.numberOfTerm(first) !== -1 && this.numberOfTerm(second) !== -1
  }

  /** Lists the document at `slot` under each pair of adjacent common words in its term sequence. */
  add(slot: number, sequence: Uint32Array): void {
    let previous = -1
    for (let i = 0; i < sequence.length; i++) {
      const current = this.numberOfTerm(sequence[i] as number)
      if (previous !== -1 && current !== -1) this.append(previous * this.count + current, slot)
      previous = current
    }
  }

  /** The documents listed under the pair, removed ones included (a view valid until the next write). */
  slots(first: number, second: number): Uint32Array {
    const list = this.lists[this.numberOfTerm(first) * this.count + this.numberOfTerm(second)]
    return list ? list.slots.subarray(0, list.length) : EMPTY
  }

  /** Drops the removed documents. */
  sweep(alive: Uint8Array): void {
    for (const list of this.lists) {
      if (list === undefined) continue
      let kept = 0
      for (let i = 0; i < list.length; i++) {
        const slot = list.slots[i] as number
        if (alive[slot]) list.slots[kept++] = slot
      }
      list.length = kept
    }
  }

  /** The term's number among the common words (-1: not one; the field break is not a term). */
  private numberOfTerm(id: number): number {
    return id < this.numberOf.length ? (this.numberOf[id] as number) : -1
  }

  /** Lists the slot under the pair once: a document's pairs are added together, so a repeat is the last entry. */
  private append(pair: number, slot: number): void {
    let list = this.lists[pair]
    if (list === undefined) this.lists[pair] = list = { slots: new Uint32Array(4), length: 0 }
    else if (list.slots[list.length - 1] === slot) return
    if (list.length === list.slots.length) {
      const grown = new Uint32Array(list.length * 2)
      grown.set(list.slots)
      list.slots = grown
    }
    list.slots[list.length++] = slot
  }
}
