/**
 * The sync digests follow the operation log; recheck() recomputes a subject's digest from the log,
 * which sync uses so that a digest that fell behind cannot keep two nodes apart.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { DuplicateOperation, RegistryStore } from '../../src/store/registry-store.js'
import { BUCKETS, SubjectDigests, bucketOf } from '../../src/store/subject-digests.js'
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
