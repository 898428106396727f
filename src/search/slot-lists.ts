/**
 * Slots by an exact value (a category, a tag, a developer): what a filter-only listing visits
 * instead of every document. Like the text index's postings, entries of removed documents stay
 * until `sweep()`, so readers check that the slot still holds a document with that value, and the
 * owner must not reuse a slot before the sweep.
 */
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
}
