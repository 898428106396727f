/**
 * Documents by pair of adjacent common words ("agent ai"), for quoted phrases whose words are all
 * common. The documents of such a phrase are found only by reading its words' sequences in every
 * document holding all of them (at a million documents, hundreds of thousands for two of the
 * most frequent words: 40–100 ms); here they are one list. Like the filter lists, entries of
 * removed documents stay until the sweep.
 *
 * Only pairs of words that were common when the pairs were built (their posting lists long enough
 * to be walked) are kept: about seven a document at a million. A word that becomes common later is
 * not covered until the pairs are built again.
 */
import { SlotLists } from './slot-lists.js'
import { FIELD_BREAK } from './text-fields.js'

const key = (first: number, second: number): string => `${first} ${second}`

export class PhrasePairs {
  private readonly lists = new SlotLists()
  /** The pair keys met in the document being added (a pair listed once per document). */
  private readonly met = new Set<string>()

  /** `common`: by term number, 1 for a common word. */
  constructor(private readonly common: Uint8Array) {}

  /** Whether both words (term numbers) were common when the pairs were built. */
  covers(first: number, second: number): boolean {
    return this.isCommon(first) && this.isCommon(second)
  }

  /** Lists the document at `slot` under each pair of adjacent common words in its term sequence. */
  add(slot: number, sequence: Uint32Array): void {
    const { met } = this
    let previous = FIELD_BREAK
    for (let i = 0; i < sequence.length; i++) {
      const id = sequence[i] as number
      if (this.isCommon(previous) && this.isCommon(id)) {
        const pair = key(previous, id)
        if (!met.has(pair)) {
          met.add(pair)
          this.lists.add(pair, slot)
        }
      }
      previous = id
    }
    met.clear()
  }

  /** The documents listed under the pair, removed ones included (a view valid until the next write). */
  slots(first: number, second: number): Uint32Array {
    return this.lists.get(key(first, second))
  }

  /** Drops the removed documents. */
  sweep(alive: Uint8Array): void {
    this.lists.sweep(slot => alive[slot] === 1)
  }

  private isCommon(id: number): boolean {
    return id < this.common.length && this.common[id] === 1
  }
}
