import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { readEntityViews, type StoredEntityView } from '../../src/store/entity-views.js'
import type { EntityRecord, LivenessRecord } from '../../src/store/records.js'
import { RegistryStore } from '../../src/store/registry-store.js'

const record = (n: number): EntityRecord =>
  ({
    entity_id: `zns:${String(n).padStart(4, '0')}`,
    name: `entity ${n}`,
    summary: 'x'.repeat(500),
    type: n % 3 === 0 ? 'service' : 'agent',
    category: n % 2 === 0 ? 'Tools' : 'finance',
    developer_id: n % 4 === 0 ? null : `zns:dev:${n % 5}`,
    tags: ['Translation', `t${n % 7}`],
    registered_at: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
    home_registry: n % 5 === 0 ? 'elsewhere.test' : 'a.test',
    ...(n % 2 === 0 ? { home_registry_id: `zns:registry:${n % 5 === 0 ? 'b' : 'a'}` } : {}),
    public_key: `ed25519:${Buffer.alloc(32, n).toString('base64')}`,
    status: n % 2 === 0 ? 'active' : 'inactive',
    last_heartbeat: n % 3 === 0 ? null : new Date(Date.UTC(2026, 0, 2)).toISOString()
  }) as unknown as EntityRecord

const flushed = (n: number): LivenessRecord => ({
  last_seen: n,
  active: n % 2 === 0,
  active_since: n % 2 === 0 ? n : null,
  active_ms: 10 * n,
  observed_since: 1
})

/** Runs `fn` on a store in a fresh data directory, closed and removed afterwards. */
async function withStore(fn: (store: RegistryStore, dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'views-'))
  const store = await RegistryStore.open(dir)
  try {
    await fn(store, dir)
  } finally {
    await store.close()
    await rm(dir, { recursive: true, force: true })
  }
}

test('a child process reads the same views of the stored entities as the node itself, in parts and with their flushed liveness', t =>
  withStore(async (store, dir) => {
    const count = 5000
    await store.commit(tx => {
      for (let n = 0; n < count; n++) tx.putEntity(record(n))
      for (let n = 0; n < count; n += 10) tx.putLiveness(record(n).entity_id, flushed(n))
    })
    const read = async (childFrom: number) => {
      const parts: StoredEntityView[][] = []
      const where = await readEntityViews(store, dir, part => parts.push(part), childFrom)
      return { where, parts }
    }
    const here = await read(Number.POSITIVE_INFINITY)
    const child = await read(0)
    t.deepEqual(here.where, { in: 'node' })
    t.deepEqual(child.where, { in: 'child' })
    t.true(child.parts.length > 1, 'more than one part')
    t.deepEqual(child.parts, here.parts)
    const views = here.parts.flat()
    t.is(views.length, count)
    const first = views[0] as StoredEntityView
    t.deepEqual(first.liveness, flushed(0))
    t.is(views[1]?.liveness, undefined)
    t.deepEqual(
      views.filter(v => v.liveness !== undefined).map(v => v.liveness),
      Array.from({ length: count / 10 }, (_, k) => flushed(10 * k)),
      'each flushed state with its entity'
    )
    t.deepEqual(Object.keys(first.fields).sort(), [
      'category',
      'developer_id',
      'entity_id',
      'home_registry',
      'home_registry_id',
      'last_heartbeat',
      'public_key',
      'registered_at',
      'status',
      'tags',
      'type'
    ])
    t.false('summary' in first.fields, 'only what the views read')
  }))

test('a store no child can read is read by the node itself', t =>
  withStore(async (store, dir) => {
    await store.commit(tx => {
      tx.putEntity(record(1))
    })
    // The child is given another directory, which holds no store: it fails before sending anything.
    const parts: StoredEntityView[][] = []
    const where = await readEntityViews(store, join(dir, 'missing'), part => parts.push(part), 0)
    t.is(where.in, 'node')
    t.regex(where.childFailed ?? '', /holds no registry store/)
    t.deepEqual(
      parts.flat().map(v => v.fields.entity_id),
      [record(1).entity_id]
    )
  }))
