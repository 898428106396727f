/**
 * The sync digests follow the operation log; recheck() recomputes a subject's digest from the log,
 * which sync uses so that a digest that fell behind cannot keep two nodes apart.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { open } from 'lmdb'
import { DuplicateOperation, RegistryStore } from '../../src/store/registry-store.js'
import { BUCKETS, SubjectDigests, bucketOf } from '../../src/store/subject-digests.js'
import { setTimeout as sleep } from 'node:timers/promises'
import { statusOperation } from '../helpers/operations.js'

const op = statusOperation

test('digests follow commits; recheck finds and repairs a digest that fell behind its log', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'digests-'))
  const store = await RegistryStore.open(dir)
  try {
    await store.commit(tx => {
      tx.appendOperation(op('a', 1))
      tx.appendOperation(op('b', 2))
    })
    const digests = new SubjectDigests(store)
    digests.start()
    const before = digests.digestOf('a')
    t.truthy(before)
    await store.commit(tx => tx.appendOperation(op('a', 3)))
    t.not(digests.digestOf('a'), before, 'a commit updates the digest')
    t.false(digests.recheck('a'), 'a followed digest is not stale')

    // Not following: the log moves on, the digest does not.
    digests.stop()
    const held = digests.bucketDigests()[bucketOf('a')]!.toString('hex')
    await store.commit(tx => tx.appendOperation(op('a', 4)))
    t.is(digests.bucketDigests()[bucketOf('a')]!.toString('hex'), held)
    t.true(digests.recheck('a'), 'the stale digest is found')
    const rebuilt = new SubjectDigests(store)
    rebuilt.start()
    rebuilt.stop()
    t.deepEqual(digests.bucketDigests(), rebuilt.bucketDigests(), 'and repaired: the same as one built from the log')
    t.is(rebuilt.bucketDigests().length, BUCKETS)
  } finally {
    await store.close()
    await rm(dir, { recursive: true, force: true })
  }
})

test('one operation delivered twice at once (gossip and sync) is appended once: the second append is refused', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'digests-'))
  const store = await RegistryStore.open(dir)
  try {
    const digests = new SubjectDigests(store)
    digests.start()
    const same = op('c', 5)
    const results = await Promise.allSettled([
      store.commit(tx => tx.appendOperation(same)),
      store.commit(tx => tx.appendOperation({ ...same }))
    ])
    t.deepEqual(results.map(r => r.status).sort(), ['fulfilled', 'rejected'])
    t.true((results.find(r => r.status === 'rejected') as PromiseRejectedResult).reason instanceof DuplicateOperation)
    t.is(store.operationsOf('c').length, 1)
    const single = new SubjectDigests(store)
    single.start()
    single.stop()
    t.is(digests.digestOf('c'), single.digestOf('c'))
    digests.stop()
  } finally {
    await store.close()
    await rm(dir, { recursive: true, force: true })
  }
})

test('the digests built at start read the seal digests of the subject index, and a store that kept none is migrated to keep them', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'digests-'))
  try {
    let store = await RegistryStore.open(dir)
    await store.commit(tx => {
      for (let n = 0; n < 6; n++) tx.appendOperation(op(n % 2 === 0 ? 'even' : 'odd', n))
    })
    const fresh = new SubjectDigests(store)
    fresh.start()
    fresh.stop()
    await store.close()

    // As a store written before the index kept seal digests (and format versions): no value for the
    // subject 'odd'. The migration at open fills them in.
    const raw = open({ path: join(dir, 'registry.lmdb'), maxDbs: 16, compression: false })
    const index = raw.openDB<Uint8Array | null, [string, number]>({ name: 'oplog_by_subject' })
    const odd = [...index.getKeys({ start: ['odd', 0], end: ['odd', Number.MAX_SAFE_INTEGER] })]
    t.is(odd.length, 3)
    for (const key of odd) await index.put(key, null)
    await raw.openDB({ name: 'meta' }).remove('format_version')
    await raw.close()

    store = await RegistryStore.open(dir)
    const built = new SubjectDigests(store)
    built.start()
    built.stop()
    t.deepEqual(built.bucketDigests(), fresh.bucketDigests())
    for (const subject of ['even', 'odd']) {
      t.is(built.digestOf(subject), fresh.digestOf(subject))
      t.false(built.recheck(subject), `${subject}: the same as computed from its operations`)
    }
    t.is(built.size, 2)
    // A duplicate of an operation indexed without its seal digest is still refused.
    await t.throwsAsync(
      store.commit(tx => tx.appendOperation(op('odd', 1))),
      { instanceOf: DuplicateOperation }
    )
    await store.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('digests of many subjects, some dropped and their rows reused, match digests built from the log', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'digests-'))
  const store = await RegistryStore.open(dir)
  try {
    const digests = new SubjectDigests(store)
    digests.start()
    const subjects = Array.from({ length: 3000 }, (_, i) => `s${i}`)
    const append = (names: string[], from: number) =>
      store.commit(tx => {
        names.forEach((s, i) => {
          tx.appendOperation(op(s, from + i))
        })
      })
    await append(subjects, 0)
    await store.commit(tx => {
      for (const s of subjects.slice(0, 1000)) tx.dropOperations(s)
    })
    t.is(digests.size, 2000)
    t.is(digests.digestOf('s0'), undefined, 'a dropped subject has no digest')
    await append(
      subjects.slice(0, 500).map(s => `new-${s}`),
      10_000
    )
    await append(subjects.slice(1000, 1200), 20_000)
    const rebuilt = new SubjectDigests(store)
    rebuilt.start()
    rebuilt.stop()
    digests.stop()
    t.is(digests.size, 2500)
    t.deepEqual(digests.bucketDigests(), rebuilt.bucketDigests())
    for (const s of ['s1000', 's1199', 's2999', 'new-s0', 'new-s499']) t.is(digests.digestOf(s), rebuilt.digestOf(s), s)
    const inBucket = (d: SubjectDigests) => [...d.subjectsIn([bucketOf('s1500')])].sort()
    t.deepEqual(inBucket(digests), inBucket(rebuilt))
  } finally {
    await store.close()
    await rm(dir, { recursive: true, force: true })
  }
})

test('an operation on several subjects is stored once, held in each history, and leaves the log with the last of them', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'digests-'))
  const store = await RegistryStore.open(dir)
  try {
    const batch = { ...op('zns:registry:0', 1), kind: 'entity.status.batch' as const }
    const digests = new SubjectDigests(store)
    digests.start()
    t.is(await store.commit(tx => tx.appendOperation(batch, ['a', 'b'])), 2)
    // Applied again naming a subject whose record came since: added to that history only.
    t.is(await store.commit(tx => tx.appendOperation(batch, ['a', 'b', 'c'])), 1)
    t.is(await store.commit(tx => tx.appendOperation(batch, ['b', 'c'])), 0)
    t.is([...store.allOperations()].length, 1, 'stored once')
    for (const subject of ['a', 'b', 'c']) t.deepEqual(store.operationsOf(subject), [batch], subject)
    t.is(digests.digestOf('a'), digests.digestOf('c'), 'the same operation in each history')
    const rebuilt = () => {
      const fresh = new SubjectDigests(store)
      fresh.start()
      fresh.stop()
      return fresh.bucketDigests().map(d => d.toString('hex'))
    }
    t.deepEqual(
      digests.bucketDigests().map(d => d.toString('hex')),
      rebuilt()
    )

    await store.commit(tx => tx.dropOperations('a'))
    t.deepEqual(store.operationsOf('a'), [])
    t.deepEqual(store.operationsOf('b'), [batch], 'still held by the others')
    t.is(digests.digestOf('a'), undefined)
    await store.commit(tx => {
      tx.dropOperations('b')
      tx.dropOperations('c')
    })
    t.is([...store.allOperations()].length, 0, 'gone with the last subject holding it')
    t.deepEqual(
      digests.bucketDigests().map(d => d.toString('hex')),
      rebuilt()
    )
    // Stored again afresh after it left.
    t.is(await store.commit(tx => tx.appendOperation(batch, ['a'])), 1)
    t.deepEqual(store.operationsOf('a'), [batch])
  } finally {
    await store.close()
    await rm(dir, { recursive: true, force: true })
  }
})

test('two stores holding the same operations, applied in other orders, sum up to the same digest; the time of the last change moves only with a change', async t => {
  const dirs = await Promise.all([mkdtemp(join(tmpdir(), 'digests-')), mkdtemp(join(tmpdir(), 'digests-'))])
  const [one, two] = await Promise.all(dirs.map(dir => RegistryStore.open(dir)))
  try {
    const a = new SubjectDigests(one!)
    const b = new SubjectDigests(two!)
    a.start()
    b.start()
    t.is(a.summary().digest, b.summary().digest, 'empty alike')
    t.regex(a.summary().digest, /^[0-9a-f]{64}$/)
    const ops = [op('x', 1), op('y', 2), op('x', 3)]
    await one!.commit(tx => {
      for (const o of ops) tx.appendOperation(o)
    })
    for (const o of [...ops].reverse()) await two!.commit(tx => tx.appendOperation(o))
    t.deepEqual(
      { ...a.summary(), changedAt: 0 },
      { ...b.summary(), changedAt: 0 },
      'the same digest, operations and subjects'
    )
    t.like(a.summary(), { operations: 3, subjects: 2 })

    const before = a.summary()
    await sleep(5)
    // A commit that leaves the log alone, and an operation refused as already held, change nothing.
    await one!.commit(() => {})
    await t.throwsAsync(
      one!.commit(tx => tx.appendOperation(ops[0]!)),
      { instanceOf: DuplicateOperation }
    )
    t.deepEqual(a.summary(), before)

    const applying = Date.now()
    await one!.commit(tx => tx.appendOperation(op('z', 4)))
    const after = a.summary()
    t.not(after.digest, before.digest)
    t.is(after.operations, 4)
    t.true(after.changedAt >= applying && after.changedAt <= Date.now(), 'taken when the commit was applied')
    t.not(after.digest, b.summary().digest, 'the other store lacks it')
    await two!.commit(tx => tx.appendOperation(op('z', 4)))
    t.is(b.summary().digest, after.digest)

    await one!.commit(tx => tx.dropOperations('y'))
    t.like(a.summary(), { operations: 3, subjects: 2 })
    a.stop()
    b.stop()
  } finally {
    await Promise.all([one!.close(), two!.close()])
    await Promise.all(dirs.map(dir => rm(dir, { recursive: true, force: true })))
  }
})

test('a child process builds the digests the calling thread builds; a commit while it works makes start build them itself', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'digests-'))
  const store = await RegistryStore.open(dir)
  try {
    // Attestation subjects too: their share of each bucket is kept apart.
    await store.commit(tx => {
      for (let i = 0; i < 300; i++) tx.appendOperation(op(i % 7 === 0 ? `zns:att:${i}` : `s${i % 120}`, i + 1))
    })
    const inline = new SubjectDigests(store)
    await inline.start()
    inline.stop()
    const byChild = new SubjectDigests(store)
    byChild.prepare(dir, 1)
    t.is(await byChild.start(), 'child')
    t.is(byChild.size, inline.size)
    t.deepEqual(byChild.bucketDigests(), inline.bucketDigests())
    t.deepEqual(byChild.bucketDigests('without-attestations'), inline.bucketDigests('without-attestations'))
    t.deepEqual(byChild.summary().operations, inline.summary().operations)
    t.deepEqual(byChild.subjectsIn([...Array(BUCKETS).keys()]), inline.subjectsIn([...Array(BUCKETS).keys()]))
    // It follows commits as one built inline does.
    await store.commit(tx => tx.appendOperation(op('s1', 1000)))
    const rebuilt = new SubjectDigests(store)
    await rebuilt.start()
    rebuilt.stop()
    t.deepEqual(byChild.bucketDigests(), rebuilt.bucketDigests())
    byChild.stop()

    const raced = new SubjectDigests(store)
    raced.prepare(dir, 1)
    await store.commit(tx => tx.appendOperation(op('late', 2000)))
    t.is(await raced.start(), 'log', 'the worker read the log before that commit, or may have')
    raced.stop()
    t.truthy(raced.digestOf('late'), 'the commit made while the worker read is in the digests')
    const after = new SubjectDigests(store)
    await after.start()
    after.stop()
    t.deepEqual(raced.bucketDigests(), after.bucketDigests())
  } finally {
    await store.close()
    await rm(dir, { recursive: true, force: true })
  }
})
