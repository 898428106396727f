import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
// The node's own import order: nothing here loads lmdb or msgpackr before it does.
import '../../src/node.js'
import type { EntityRecord } from '../../src/store/records.js'
import { RegistryStore } from '../../src/store/registry-store.js'

test("the store's strings are decoded one by one, not sliced from one string per record (msgpackr's native helper is off)", async t => {
  const { isNativeAccelerationEnabled } = await import('msgpackr')
  t.false(isNativeAccelerationEnabled)

  const dir = await mkdtemp(join(tmpdir(), 'unsliced-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const store = await RegistryStore.open(dir)
  t.teardown(() => store.close())
  const record = {
    entity_id: `zns:${'0'.repeat(32)}`,
    name: 'Résumé fixer 🤖',
    summary: 'Réécrit les CV, ΟΔΟΣ. '.repeat(40),
    tags: ['été', 'x'.repeat(200)],
    status: 'active',
    registered_at: new Date(0).toISOString()
  } as unknown as EntityRecord
  await store.commit(tx => tx.putEntity(record))
  t.deepEqual(store.getEntity(record.entity_id), record, 'every string decodes as written')
})
