/**
 * Slots by an exact value (a category, a tag, a developer): what a filter-only listing visits
 * instead of every document. Like the text index's postings, entries of removed documents stay
 * until `sweep()`, so readers check that the slot still holds a document with that value, and the
 * owner must not reuse a slot before the sweep.
 */
import { FRESH, type SnapshotReader, type SnapshotWriter } from '../util/snapshot-file.js'

const EMPTY = new Uint32Array(0)

interface SlotList {
  slots: Uint32Array
  length: number
}

export class SlotLists {
  private readonly lists = new Map<string, SlotList>()

  add(value: string, slot: number): void {
    let list = this.lists.get(value)
    if (!list) this.lists.set(value, (list = { slots: new Uint32Array(2), length: 0 }))
    if (list.length === list.slots.length) {
      const slots = new Uint32Array(list.length < 64 ? list.length * 2 : list.length + (list.length >> 1))
      slots.set(list.slots)
      list.slots = slots
    }
    list.slots[list.length++] = slot
  }

  /** The slots listed under `value`, removed documents' included. A view valid until the next write. */
  get(value: string): Uint32Array {
    const list = this.lists.get(value)
    return list ? list.slots.subarray(0, list.length) : EMPTY
  }

  /** Drops the slots that no longer hold `value`. */
  sweep(holds: (slot: number, value: string) => boolean): void {
    for (const [value, list] of this.lists) {
      let w = 0
      for (let r = 0; r < list.length; r++) {
        const slot = list.slots[r] as number
        if (holds(slot, value)) list.slots[w++] = slot
      }
      list.length = w
      if (w === 0) this.lists.delete(value)
    }
  }

  /** Plans the lists under `prefix`: their values, lengths, and slots one list after another. */
  save(out: SnapshotWriter, prefix: string): void {
    let values: string[] = []
    out.strings(`${prefix}.values`, () => {
      values = [...this.lists.keys()]
      return values
    })
    out.array(
      `${prefix}.lengths`,
      () => Uint32Array.from(values, value => (this.lists.get(value) as SlotList).length),
      FRESH
    )
    out.arraySlices(`${prefix}.slots`, 'Uint32Array', () =>
      values.map(value => {
        const list = this.lists.get(value) as SlotList
        return list.slots.subarray(0, list.length)
      })
    )
  }

  /** Takes the lists `save` wrote under `prefix` (each a view of one array, copied out when it grows). */
  restore(input: SnapshotReader, prefix: string): void {
    const values = input.strings(`${prefix}.values`)
    const lengths = input.array(`${prefix}.lengths`, Uint32Array)
    const slots = input.array(`${prefix}.slots`, Uint32Array)
    let at = 0
    values.forEach((value, i) => {
      const length = lengths[i] as number
      this.lists.set(value, { slots: slots.subarray(at, at + length), length })
      at += length
    })
  }
}
