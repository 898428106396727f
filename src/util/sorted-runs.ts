/**
 * Items sorted by a string key without one long sort: runs of at most `runLength` are sorted as they
 * come (a few milliseconds each, so a caller can yield between them), then `take` merges the runs'
 * heads through a binary heap, in key order.
 */
export class SortedRuns<T> {
  private readonly runs: T[][] = []
  private current: T[] = []
  /** Heap of run indexes ordered by the key of each run's next item. */
  private heap: number[] = []
  private readonly next: number[] = []
  private merging = false
  private left = 0

  constructor(
    private readonly keyOf: (item: T) => string,
    private readonly runLength: number
  ) {}

  /** Adds an item; true when this closed (sorted) a run, a moment to yield. */
  push(item: T): boolean {
    if (this.merging) throw new Error('SortedRuns: push after take')
    this.current.push(item)
    this.left++
    if (this.current.length < this.runLength) return false
    this.close()
    return true
  }

  /** Up to `n` items, the smallest keys left first. */
  take(n: number): T[] {
    if (!this.merging) this.startMerge()
    const out: T[] = []
    while (out.length < n && this.heap.length > 0) {
      const run = this.heap[0] as number
      const items = this.runs[run] as T[]
      const at = this.next[run] as number
      out.push(items[at] as T)
      this.next[run] = at + 1
      if (at + 1 === items.length) {
        const last = this.heap.pop() as number
        if (this.heap.length > 0) {
          this.heap[0] = last
          this.siftDown(0)
        }
      } else this.siftDown(0)
    }
    this.left -= out.length
    return out
  }

  /** Items pushed and not yet taken. */
  get size(): number {
    return this.left
  }

  private close(): void {
    if (this.current.length === 0) return
    const keyOf = this.keyOf
    this.current.sort((a, b) => {
      const ka = keyOf(a)
      const kb = keyOf(b)
      return ka < kb ? -1 : ka > kb ? 1 : 0
    })
    this.runs.push(this.current)
    this.current = []
  }

  private startMerge(): void {
    this.close()
    this.merging = true
    for (let run = 0; run < this.runs.length; run++) this.next.push(0)
    this.heap = this.runs.map((_, run) => run)
    for (let i = (this.heap.length >> 1) - 1; i >= 0; i--) this.siftDown(i)
  }

  private headKey(run: number): string {
    return this.keyOf((this.runs[run] as T[])[this.next[run] as number] as T)
  }

  private siftDown(i: number): void {
    const heap = this.heap
    for (;;) {
      const left = 2 * i + 1
      if (left >= heap.length) return
      const right = left + 1
      let smallest = left
      if (right < heap.length && this.headKey(heap[right] as number) < this.headKey(heap[left] as number))
        smallest = right
      if (this.headKey(heap[smallest] as number) >= this.headKey(heap[i] as number)) return
      const swap = heap[i] as number
      heap[i] = heap[smallest] as number
      heap[smallest] = swap
      i = smallest
    }
  }
}
