/**
 * The store's format version: a new store is written at the current one; a store without one
 * (registry-node 0.2.0's, and the development stores before it, each lacking some of what later
 * stores keep) is migrated at open in one transaction; a store of a newer version is refused
 * untouched. Real LMDB in temp dirs; older stores are made by removing what they had not got.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { open } from 'lmdb'
import type { EntityRecord, Operation } from '../../src/store/records.js'
import {
  type AppliedMigration,
  CURRENT_FORMAT,
  RegistryStore,
  StoreFormatError
} from '../../src/store/registry-store.js'
import { statusOperation } from '../helpers/operations.js'

async function inDataDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'store-format-'))
  try {
    await fn(dir)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

const rawStore = (dir: string) => open({ path: join(dir, 'registry.lmdb'), maxDbs: 16, compression: false })

async function withRaw<T>(dir: string, fn: (raw: ReturnType<typeof rawStore>) => T | Promise<T>): Promise<T> {
  const raw = rawStore(dir)
  try {
    return await fn(raw)
  } finally {
    await raw.close()
  }
}

const clientSigned = (subject: string, n: number): Operation => ({
  ...statusOperation(subject, n),
  kind: 'entity.register',
  auth: { carrier: 'body', signer: 'self', signature: `client-sig-${n}`, form: 'spec' }
})

test('a new store is written at the current format version, with no marker keys and no migration', t =>
  inDataDir(async dir => {
    const applied: AppliedMigration[] = []
    const store = await RegistryStore.open(dir, { migrated: m => applied.push(m) })
    t.is(store.formatVersion, CURRENT_FORMAT)
    await store.close()
    t.deepEqual(applied, [])
    const keys = await withRaw(dir, raw => [...raw.openDB({ name: 'meta' }).getKeys()])
    t.true(keys.includes('format_version'))
    t.false(keys.includes('status_changed_at'))
    t.false(keys.includes('used_signatures'))
  }))

test('a store without a format version is migrated once: seal digests, status times and used signatures filled in, markers gone', t =>
  inDataDir(async dir => {
    let store = await RegistryStore.open(dir)
    const status = (n: number): Operation => ({ ...statusOperation('zns:agent:a', n), kind: 'entity.status' })
    await store.commit(tx => {
      tx.putEntity({ entity_id: 'zns:agent:a', status: 'inactive' } as unknown as EntityRecord)
      tx.putEntity({ entity_id: 'zns:agent:b', status: 'active' } as unknown as EntityRecord)
      tx.appendOperation(clientSigned('zns:agent:a', 1))
      tx.appendOperation(status(5))
      tx.appendOperation(status(3))
      tx.appendOperation(clientSigned('zns:agent:b', 2))
    })
    await store.close()

    // The oldest development store: none of the three, and no format version.
    await withRaw(dir, async raw => {
      const meta = raw.openDB({ name: 'meta' })
      await meta.remove('format_version')
      await raw.openDB({ name: 'used_signatures' }).clearAsync()
      const index = raw.openDB<Uint8Array | null, [string, number]>({ name: 'oplog_by_subject' })
      for (const key of [...index.getKeys()]) await index.put(key, null)
    })

    const applied: AppliedMigration[] = []
    store = await RegistryStore.open(dir, { migrated: m => applied.push(m) })
    t.is(store.formatVersion, CURRENT_FORMAT)
    t.is(applied.length, 1)
    t.like(applied[0], { from: 1, to: 2, counts: { seal_digests: 4, status_times: 1, used_signatures: 2 } })
    t.is(store.getEntity('zns:agent:a')?.status_changed_at, status(5).accepted_at, 'the latest status operation')
    t.is(store.getEntity('zns:agent:b')?.status_changed_at, undefined, 'never changed')
    t.true(store.holds(status(3)))
    await store.close()

    const after = await withRaw(dir, raw => ({
      meta: [...raw.openDB({ name: 'meta' }).getKeys()],
      nulls: [...raw.openDB({ name: 'oplog_by_subject' }).getRange()].filter(r => r.value === null).length,
      used: raw.openDB({ name: 'used_signatures' }).getCount()
    }))
    t.is(after.nulls, 0)
    t.is(after.used, 2)
    t.false(after.meta.includes('status_changed_at'))
    t.false(after.meta.includes('used_signatures'))

    const again: AppliedMigration[] = []
    store = await RegistryStore.open(dir, { migrated: m => again.push(m) })
    t.deepEqual(again, [], 'a migrated store is not migrated again')
    await store.close()
  }))

test('a 0.2.0 store (markers present) keeps its records and loses only its marker keys', t =>
  inDataDir(async dir => {
    let store = await RegistryStore.open(dir)
    await store.commit(tx => tx.appendOperation(clientSigned('zns:agent:c', 7)))
    await store.close()
    await withRaw(dir, async raw => {
      const meta = raw.openDB({ name: 'meta' })
      await meta.remove('format_version')
      await meta.put('status_changed_at', 1)
      await meta.put('used_signatures', 1)
    })
    const applied: AppliedMigration[] = []
    store = await RegistryStore.open(dir, { migrated: m => applied.push(m) })
    t.like(applied[0], { from: 1, to: 2, counts: { seal_digests: 0, status_times: 0, used_signatures: 0 } })
    t.is(store.operationsOf('zns:agent:c').length, 1)
    await store.close()
  }))

test('a store of a newer format version is refused naming both versions, and left as it was', t =>
  inDataDir(async dir => {
    const store = await RegistryStore.open(dir)
    await store.commit(tx => tx.appendOperation(clientSigned('zns:agent:d', 9)))
    await store.close()
    const future = CURRENT_FORMAT + 1
    await withRaw(dir, raw => raw.openDB({ name: 'meta' }).put('format_version', future))
    const before = await withRaw(dir, raw => [...raw.openDB({ name: 'meta' }).getRange()])

    const err = await t.throwsAsync(RegistryStore.open(dir), { instanceOf: StoreFormatError })
    t.regex(err.message, new RegExp(`format version ${future}, written by a newer registry-node`))
    t.regex(err.message, new RegExp(`reads format versions up to ${CURRENT_FORMAT}`))
    t.regex(err.message, /Downgrade is not supported/)
    t.deepEqual(await withRaw(dir, raw => [...raw.openDB({ name: 'meta' }).getRange()]), before)
  }))
