import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { open } from 'lmdb'
import type { EntityRecord, Operation } from '../../src/store/records.js'
import { DuplicateOperation, RegistryStore } from '../../src/store/registry-store.js'
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

/** An operation whose stored value is well over the compression threshold (and compresses well). */
const bulky = (subject: string, n: number): Operation => ({
  ...op(subject, n),
  body: Buffer.from(JSON.stringify({ summary: `entity ${n} `.repeat(200) }))
})

/** Runs `fn` on a fresh data directory, removed afterwards. */
async function inDataDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'store-'))
  try {
    await fn(dir)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** The store's LMDB file opened by lmdb-js alone, uncompressed: as an older or newer version left it. */
const rawStore = (dir: string) => open({ path: join(dir, 'registry.lmdb'), maxDbs: 16, compression: false })

const subjectsInLog = (store: RegistryStore) => [...store.allOperations()].map(o => o.subject)

test('with a commit delay a lone commit begins at once, and commits within the delay share one transaction', t =>
  inDataDir(async dir => {
    // Long enough that a commit's flush and ten turns of a busy event loop fit in it on a loaded machine.
    const delayMs = 10_000
    const store = await RegistryStore.open(dir, { commitDelayMs: delayMs })
    // The same environment, opened beside the store to read its last transaction ID.
    const raw = rawStore(dir)
    const lastTxnId = () => (raw.getStats() as { lastTxnId: number }).lastTxnId
    try {
      const before = lastTxnId()
      const started = performance.now()
      await store.commit(tx => tx.appendOperation(op('lone', 0)))
      t.true(performance.now() - started < delayMs / 2, 'the first commit in a while does not wait')
      t.is(lastTxnId(), before + 1)
      // Each in its own turn of the event loop, all within the delay of the first.
      const gathered: Promise<number>[] = []
      for (let n = 0; n < 10; n++) {
        gathered.push(
          store.commit(tx => {
            tx.appendOperation(op(`gathered-${n}`, n))
            return n
          })
        )
        await new Promise(resolve => setImmediate(resolve))
      }
      t.true(performance.now() - started < delayMs, 'the ten were asked for within the delay')
      t.deepEqual(await Promise.all(gathered), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
      t.is(lastTxnId(), before + 2, 'ten commits, one transaction')
      t.deepEqual(subjectsInLog(store), ['lone', ...Array.from({ length: 10 }, (_, n) => `gathered-${n}`)])
    } finally {
      await raw.close()
      await store.close()
    }
  }))

test('a store closed while a commit waits to gather writes that commit first', t =>
  inDataDir(async dir => {
    const store = await RegistryStore.open(dir, { commitDelayMs: 200 })
    await store.commit(tx => tx.appendOperation(op('first', 0)))
    const waiting = store.commit(tx => tx.appendOperation(op('waiting', 0)))
    await store.close()
    await waiting
    const reopened = await RegistryStore.open(dir)
    t.is(reopened.operationsOf('waiting').length, 1)
    await reopened.close()
  }))

test('the operation log appends in order across aborted commits and a reopen; a new store compresses its large values', t =>
  inDataDir(async dir => {
    let store = await RegistryStore.open(dir)
    await store.commit(tx => tx.appendOperation(bulky('a', 1)))
    await t.throwsAsync(
      store.commit(tx => {
        tx.appendOperation(bulky('aborted', 2))
        throw new Error('refused')
      })
    )
    await store.commit(tx => tx.appendOperation(bulky('b', 3)))
    await store.close()
    store = await RegistryStore.open(dir)
    await store.commit(tx => tx.appendOperation(bulky('c', 4)))
    t.deepEqual(subjectsInLog(store), ['a', 'b', 'c'])
    t.deepEqual(store.operationsOf('b')[0]?.body, bulky('b', 3).body)
    await store.close()

    // What is on disk is smaller than the value itself.
    const raw = rawStore(dir)
    const [stored] = [...raw.openDB<Buffer, number>({ name: 'oplog', encoding: 'binary' }).getRange({ limit: 1 })]
    t.true((stored?.value.length ?? Infinity) < (bulky('a', 1).body?.length ?? 0) / 2)
    await raw.close()
  }))

test('an operation already held is refused; one of the same subject with another seal is appended', t =>
  inDataDir(async dir => {
    const store = await RegistryStore.open(dir)
    await store.commit(tx => tx.appendOperation(op('s', 1)))
    await t.throwsAsync(
      store.commit(tx => tx.appendOperation(op('s', 1))),
      { instanceOf: DuplicateOperation }
    )
    t.true(store.holds(op('s', 1)))
    t.false(store.holds(op('s', 2)))
    await store.commit(tx => tx.appendOperation(op('s', 2)))
    t.is(store.operationsOf('s').length, 2)
    await store.close()
  }))

test('a store written before value compression opens as it was, and keeps reading and writing', t =>
  inDataDir(async dir => {
    const old = rawStore(dir)
    await old.openDB({ name: 'meta' }).put('created_at', '2026-01-01T00:00:00.000Z')
    await old.openDB({ name: 'oplog' }).put(1, bulky('old', 1))
    await old.openDB({ name: 'oplog_by_subject' }).put(['old', 1], null)
    await old.close()

    let store = await RegistryStore.open(dir)
    t.deepEqual(store.operationsOf('old')[0]?.body, bulky('old', 1).body)
    // Its subject index holds no seal fingerprints: the duplicate is still found, by decoding.
    await t.throwsAsync(
      store.commit(tx => tx.appendOperation(bulky('old', 1))),
      { instanceOf: DuplicateOperation }
    )
    await store.commit(tx => tx.appendOperation(bulky('new', 2)))
    await store.close()
    store = await RegistryStore.open(dir)
    t.deepEqual(subjectsInLog(store), ['old', 'new'])
    await store.close()
  }))

test('a store whose values are compressed in a way this version does not know is refused, not misread', t =>
  inDataDir(async dir => {
    const later = rawStore(dir)
    await later.openDB({ name: 'meta' }).put('created_at', '2027-01-01T00:00:00.000Z')
    await later.openDB({ name: 'meta' }).put('value_compression', 'lz4-99')
    await later.close()
    await t.throwsAsync(RegistryStore.open(dir), { message: /compressed as lz4-99/ })
  }))

/** An operation carrying a client signature accepted at `acceptedAt` (remembered as used until a purge forgets it). */
const clientSigned = (subject: string, n: number, acceptedAt: string): Operation => ({
  ...op(subject, n),
  accepted_at: acceptedAt,
  auth: { carrier: 'body', signer: 'self', signature: `client-sig-${n}`, form: 'spec' }
})

const tombstone = (subject: string, expiresAt: string) => ({
  subject,
  kind: 'entity' as const,
  deleted_at: '2026-01-01T00:00:00.000Z',
  expires_at: expiresAt,
  registration_signatures: []
})

/** A purge on 2026-03-01 of what expired, and of the signatures used, before 2026-02-01. */
const purgeOnMarchFirst = (store: RegistryStore) =>
  store.purgeExpiredTombstones(new Date('2026-03-01T00:00:00.000Z'), new Date('2026-02-01T00:00:00.000Z'))

/** The used signatures the store in `dir` remembers, read with lmdb-js alone. */
const usedSignatureCount = (dir: string): Promise<number> =>
  readRaw(dir, raw => raw.openDB({ name: 'used_signatures' }).getCount())

/** What `read` finds in the store in `dir` opened with lmdb-js alone. */
async function readRaw<T>(dir: string, read: (raw: ReturnType<typeof rawStore>) => T): Promise<T> {
  const raw = rawStore(dir)
  try {
    return read(raw)
  } finally {
    await raw.close()
  }
}

test('a purge drops the tombstones past their expiry with their operations, and forgets signatures older than retention', t =>
  inDataDir(async dir => {
    let store = await RegistryStore.open(dir)
    await store.commit(tx => {
      tx.appendOperation(clientSigned('gone', 1, '2026-01-01T00:00:00.000Z'))
      tx.appendOperation(clientSigned('kept', 2, '2026-06-01T00:00:00.000Z'))
      tx.putTombstone(tombstone('gone', '2026-02-01T00:00:00.000Z'))
      tx.putTombstone(tombstone('kept', '2027-01-01T00:00:00.000Z'))
    })
    t.is(await purgeOnMarchFirst(store), 1)
    t.deepEqual(
      [...store.allTombstones()].map(s => s.subject),
      ['kept']
    )
    t.deepEqual(subjectsInLog(store), ['kept'])
    await store.close()
    t.is(await usedSignatureCount(dir), 1, 'only the signature newer than the cutoff is remembered')
    store = await RegistryStore.open(dir)
    t.deepEqual(subjectsInLog(store), ['kept'])
    await store.close()
  }))

test('a purge reads and deletes in chunks: thousands of old signatures and expired tombstones all go, the newer stay', t =>
  inDataDir(async dir => {
    const store = await RegistryStore.open(dir)
    // More than two chunks of each (a chunk is 2,000 rows).
    const oldSignatures = 4_100
    const expired = 2_050
    await store.commit(tx => {
      for (let n = 0; n < oldSignatures; n++) tx.appendOperation(clientSigned(`s-${n}`, n, '2026-01-01T00:00:00.000Z'))
      tx.appendOperation(clientSigned('recent', oldSignatures, '2026-06-01T00:00:00.000Z'))
      for (let n = 0; n < expired; n++) tx.putTombstone(tombstone(`s-${n}`, '2026-02-01T00:00:00.000Z'))
    })
    t.is(await purgeOnMarchFirst(store), expired)
    t.deepEqual([...store.allTombstones()], [])
    t.is(store.operationsOf('s-0').length, 0, 'an expired tombstone takes its operations')
    t.is(store.operationsOf(`s-${expired}`).length, 1, 'a subject without a tombstone keeps them')
    await store.close()
    t.is(await usedSignatureCount(dir), 1, 'only the signature newer than the cutoff is remembered')
  }))

const liveness = (lastSeen: number) => ({
  last_seen: lastSeen,
  active: true,
  active_since: lastSeen,
  active_ms: 0,
  observed_since: lastSeen
})

/** The first byte of each stored value of `name`, in hex: `d4` opens a value carrying its own key list, `40` names the first shared one. */
const valueHeads = (dir: string, name: string): Promise<string[]> =>
  readRaw(dir, raw =>
    [...raw.openDB<Buffer, string>({ name, encoding: 'binary' }).getRange()].map(({ value }) =>
      value.subarray(0, 1).toString('hex')
    )
  )

test('a new store keeps the key lists of its records once per database, not in each value, and reads them back after a reopen', t =>
  inDataDir(async dir => {
    let store = await RegistryStore.open(dir)
    await store.commit(tx => {
      tx.putLiveness('a', liveness(1))
      tx.putLiveness('b', liveness(2))
      tx.putEntity({ entity_id: 'e1', name: 'one' } as unknown as EntityRecord)
    })
    t.is(store.entityCount(), 1, 'the structures entry is not an entity')
    await store.close()
    t.deepEqual(await valueHeads(dir, 'liveness'), ['40', '40'], 'the shared structure 0x40, no key list')
    store = await RegistryStore.open(dir)
    t.deepEqual(
      [...store.allLiveness()],
      [
        ['a', liveness(1)],
        ['b', liveness(2)]
      ]
    )
    t.is(store.entityCount(), 1)
    await store.close()
  }))

test('a store made before shared record structures keeps the key list in each value, and reads and writes as before', t =>
  inDataDir(async dir => {
    const old = rawStore(dir)
    await old.openDB({ name: 'meta' }).put('created_at', '2026-01-01T00:00:00.000Z')
    await old.openDB({ name: 'liveness' }).put('a', liveness(1))
    await old.close()
    let store = await RegistryStore.open(dir)
    await store.commit(tx => tx.putLiveness('b', liveness(2)))
    await store.close()
    t.deepEqual(await valueHeads(dir, 'liveness'), ['d4', 'd4'])
    store = await RegistryStore.open(dir)
    t.deepEqual(
      [...store.allLiveness()].map(([id]) => id),
      ['a', 'b']
    )
    await store.close()

    const later = rawStore(dir)
    await later.openDB({ name: 'meta' }).put('value_structures', 'shared-99')
    await later.close()
    await t.throwsAsync(RegistryStore.open(dir), { message: /structures kept as shared-99/ })
  }))

test('a record shape first written by a commit that aborted is saved again by the next one, alone or in the same transaction', t =>
  inDataDir(async dir => {
    let store = await RegistryStore.open(dir)
    await t.throwsAsync(
      store.commit(tx => {
        tx.putLiveness('lost', liveness(1))
        throw new Error('refused')
      })
    )
    await store.commit(tx => tx.putLiveness('a', liveness(2)))
    // Two commits begun in one turn share a transaction: the first aborts after writing a new shape
    // (an approval), the second writes that shape and commits.
    const approval = (n: number) => ({ developer_id: `d${n}`, approved_at: `t${n}` })
    const [aborted, committed] = await Promise.allSettled([
      store.commit(tx => {
        tx.putApproval('h1', approval(1))
        throw new Error('refused')
      }),
      store.commit(tx => tx.putApproval('h2', approval(2)))
    ])
    t.is(aborted.status, 'rejected')
    t.is(committed.status, 'fulfilled')
    await store.close()
    store = await RegistryStore.open(dir)
    t.deepEqual([...store.allLiveness()], [['a', liveness(2)]])
    t.deepEqual(await store.commit(tx => [tx.getApproval('h1'), tx.getApproval('h2')]), [undefined, approval(2)])
    await store.close()
  }))
