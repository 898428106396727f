import test from 'ava'
import { SortedRuns } from '../../src/util/sorted-runs.js'

test('sorted runs give every item once, in key order, whatever the run length and batch size', t => {
  for (const runLength of [1, 3, 7, 100, 10_000])
    for (const count of [0, 1, 5, 99, 1_000]) {
      const keys = Array.from({ length: count }, (_, i) => `zns:${((i * 7919) % 1009).toString(16)}:${i}`)
      const runs = new SortedRuns<{ id: string }>(item => item.id, runLength)
      let closed = 0
      for (const id of keys) if (runs.push({ id })) closed++
      t.is(closed, Math.floor(count / runLength))
      t.is(runs.size, count)
      const taken: string[] = []
      for (let batch = runs.take(50); batch.length > 0; batch = runs.take(50)) taken.push(...batch.map(item => item.id))
      t.deepEqual(taken, [...keys].sort())
      t.is(runs.size, 0)
    }
})
