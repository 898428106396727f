/**
 * The trust worker's computation over a real store (LMDB in a temporary directory, read through a
 * second, read-only view as the worker reads it): a full computation from one snapshot, later
 * attestations read from the log and merged (never counted twice, close to a full computation), and
 * identities that appear owed a full computation, run once the last one has been idle long enough.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { TrustComputation } from '../../src/services/registry/trust-computation.js'
import type { AttestationRecord } from '../../src/store/records.js'
import { RegistryStore } from '../../src/store/registry-store.js'
import { StoreReader } from '../../src/store/store-reader.js'
import {
  attestationOperation,
  storedAttestation,
  storedDeveloper,
  storedEntity
} from '../../scripts/lib/stored-records.js'

const hex = (n: number): string => n.toString(16).padStart(32, '0')
const developerId = (n: number) => `zns:dev:${hex(n)}`
const entityId = (n: number) => `zns:${hex(n)}`
const NOW = Date.parse('2026-11-29T12:30:00Z')

async function withStore(run: (store: RegistryStore, reader: StoreReader) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'trust-computation-'))
  const store = await RegistryStore.open(dir)
  const reader = StoreReader.open(dir)
  try {
    await run(store, reader)
  } finally {
    await reader.close()
    await store.close()
    await rm(dir, { recursive: true, force: true })
  }
}

/** Developers 1–3 (1 verified), each with entities 10d+0 … 10d+4. */
async function population(store: RegistryStore): Promise<void> {
  await store.commit(tx => {
    for (let d = 1; d <= 3; d++) {
      tx.putDeveloper(storedDeveloper(developerId(d), d === 1))
      for (let k = 0; k < 5; k++)
        tx.putEntity(
          storedEntity({
            entity_id: entityId(10 * d + k),
            name: `e${10 * d + k}`,
            summary: 'x',
            home_registry: 'bench.test',
            developer_id: developerId(d)
          })
        )
    }
  })
}

let counter = 0
async function attest(store: RegistryStore, pairs: [number, number][]): Promise<void> {
  const records: AttestationRecord[] = pairs.map(([from, to]) =>
    storedAttestation(counter++, entityId(from), entityId(to), null, new Date(NOW).toISOString())
  )
  await store.commit(tx => {
    for (const r of records) {
      tx.appendOperation(attestationOperation(r))
      tx.putAttestation(r)
    }
  })
}

const scores = (changes: [string, number][]) => new Map(changes)

test('no attestation: nothing computed; then trust flows from the verified developer', async t => {
  await withStore(async (store, reader) => {
    await population(store)
    const computation = new TrustComputation(reader, [])
    t.deepEqual(computation.refresh(NOW), { changes: [] })
    await attest(store, [
      [10, 20],
      [20, 30]
    ])
    const first = scores(computation.refresh(NOW).changes)
    t.true(first.get(entityId(20))! > 0)
    t.true(first.get(entityId(30))! > 0)
    t.true(first.get(developerId(1))! > 0)
    t.true(computation.explain(entityId(20)).attesters.some(a => a.issuer === entityId(10)))
  })
})

test('attestations added later are read from the log once and merged close to a full computation', async t => {
  await withStore(async (store, reader) => {
    await population(store)
    await attest(store, [[10, 20]])
    const incremental = new TrustComputation(reader, [])
    const shown = scores(incremental.refresh(NOW).changes)
    t.deepEqual(incremental.refresh(NOW), { changes: [] }, 'nothing new: nothing changes (nothing counted twice)')
    await attest(store, [
      [11, 21],
      [21, 31],
      [12, 22]
    ])
    const merged = incremental.refresh(NOW)
    t.true(merged.changes.length > 0)
    for (const [id, score] of merged.changes) shown.set(id, score)
    t.deepEqual(incremental.refresh(NOW), { changes: [] })
    const full = new TrustComputation(reader, [])
    const exact = scores(full.refresh(NOW).changes)
    for (const [id, score] of exact) {
      const close = incremental.explain(id).transitive
      t.true(Math.abs(close - score) <= 0.002, `${id}: ${close} against ${score}`)
      t.is(close, shown.get(id) ?? 0, `${id}: the explanation shows the score reported`)
    }
  })
})

test('a new identity owes a full computation, run once the last one has been idle ten times its length', async t => {
  await withStore(async (store, reader) => {
    await population(store)
    await attest(store, [[10, 20]])
    let clock = 0
    const computation = new TrustComputation(reader, [], () => clock)
    computation.refresh(NOW)
    await store.commit(tx => {
      tx.putEntity(
        storedEntity({
          entity_id: entityId(40),
          name: 'e40',
          summary: 'x',
          home_registry: 'bench.test',
          developer_id: developerId(1)
        })
      )
    })
    await attest(store, [[10, 40]])
    // The fake clock: the first computation took 0 ms, so the full one may run at once.
    const next = computation.refresh(NOW)
    t.is(next.fullInMs, undefined)
    t.true(scores(next.changes).get(entityId(40))! > 0)
    // A full computation that took 50 ms is owed again 500 ms after it ended.
    clock = 1000
    const slow = new TrustComputation(reader, [], () => {
      clock += 25
      return clock
    })
    slow.refresh(NOW)
    await attest(store, [[10, 41]])
    const deferred = slow.refresh(NOW)
    t.true(deferred.fullInMs !== undefined && deferred.fullInMs > 0 && deferred.fullInMs <= 500)
  })
})

test('between full computations, an explanation shows the score last reported, which resolve and search show', async t => {
  await withStore(async (store, reader) => {
    await population(store)
    await attest(store, [[10, 20]])
    const computation = new TrustComputation(reader, [])
    const shown = scores(computation.refresh(NOW).changes)
    const ids = [1, 2, 3].flatMap(d => [developerId(d), ...[0, 1, 2, 3, 4].map(k => entityId(10 * d + k))])
    for (let round = 0; round < 30; round++) {
      await attest(store, [[10 + (round % 5), 20 + ((round * 3) % 5)]])
      for (const [id, score] of computation.refresh(NOW).changes) shown.set(id, score)
      for (const id of ids) t.is(computation.explain(id).transitive, shown.get(id) ?? 0, `round ${round}: ${id}`)
    }
  })
})
