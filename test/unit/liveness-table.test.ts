import test from 'ava'
import { LivenessTable } from '../../src/services/liveness/liveness-table.js'
import type { LivenessRecord } from '../../src/store/records.js'

const record = (i: number, active = i % 2 === 0): LivenessRecord => ({
  last_seen: 1_700_000_000_000 + i,
  active,
  active_since: active ? 1_700_000_000_500 + i : null,
  active_ms: i * 1000,
  observed_since: 1_600_000_000_000 + i
})
const key = (i: number) => Buffer.alloc(32, i % 256)

test('states keep their times, status and key through growth of the columns', t => {
  const table = new LivenessTable()
  const states = Array.from({ length: 5000 }, (_, i) => table.add(record(i), key(i)))
  states.forEach((state, i) => {
    t.deepEqual(state.record(), record(i))
    t.deepEqual(state.publicKey, key(i))
  })
})

test('a removed state frees its row: its successor starts from its own record and the old handle reads nothing of it', t => {
  const table = new LivenessTable()
  const first = table.add(record(1), key(1))
  const kept = table.add(record(2), key(2))
  const heldKey = first.publicKey
  table.remove(first)
  const next = table.add(record(3), key(3))
  t.is(next.row, 0, 'the freed row is reused')
  t.deepEqual(next.record(), record(3))
  t.deepEqual(next.publicKey, key(3))
  t.deepEqual(heldKey, key(1), 'a key read before the removal is a copy')
  t.deepEqual(first.publicKey, Buffer.alloc(32), 'the removed handle has no key')
  first.last_seen = 42
  first.active_since = 43
  t.deepEqual(next.record(), record(3), 'writes through the removed handle go nowhere')
  t.deepEqual(kept.record(), record(2))
  table.remove(first)
  t.is(table.add(record(4), key(4)).row, 2, 'a second removal of one state frees nothing')
})

test('writes through a live handle land in its row; a key of the wrong length is stored as zeros', t => {
  const table = new LivenessTable()
  const state = table.add(record(7, false), Buffer.alloc(31, 1))
  t.deepEqual(state.publicKey, Buffer.alloc(32))
  state.set({ ...record(7, true), last_seen: 5 })
  t.is(state.last_seen, 5)
  t.true(state.active)
  t.is(state.active_since, record(7, true).active_since)
  state.active_since = null
  t.is(state.active_since, null)
})
