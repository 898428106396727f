import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { RegistryStore } from '../../src/store/registry-store.js'
import { statusOperation } from '../helpers/operations.js'

const op = statusOperation

test('more concurrent commits than may be queued: the surplus waits its turn, and every one is committed', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'store-'))
  const store = await RegistryStore.open(dir)
  try {
    const count = 6000
    const results = await Promise.all(
      Array.from({ length: count }, (_, n) =>
        store.commit(tx => {
          tx.appendOperation(op(`subject-${n}`, n))
          return n
        })
      )
    )
    t.deepEqual(
      results,
      Array.from({ length: count }, (_, n) => n)
    )
    for (const n of [0, 2047, 2048, 2049, count - 1]) t.is(store.operationsOf(`subject-${n}`).length, 1, `subject-${n}`)
    // A commit that throws frees its place too, and its writes are not kept.
    const failing = Array.from({ length: 3000 }, (_, n) =>
      store.commit(tx => {
        tx.appendOperation(op(`failed-${n}`, n))
        throw new Error('refused')
      })
    )
    for (const outcome of await Promise.allSettled(failing)) t.is(outcome.status, 'rejected')
    t.is(store.operationsOf('failed-0').length, 0)
    t.is(await store.commit(() => 'after'), 'after')
  } finally {
    await store.close()
    await rm(dir, { recursive: true, force: true })
  }
})
