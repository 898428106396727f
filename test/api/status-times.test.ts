/**
 * A node applies an entity's status changes in time order, whichever arrives first: the entity
 * record keeps `status_changed_at` and decides. A store created before records kept it (no format
 * version, no marker in its meta) is migrated at open: the time comes from the entity's operations.
 * Real node, real LMDB; the older store is made by removing what such a store has not got.
 */
import test from 'ava'
import { open } from 'lmdb'
import { join } from 'node:path'
import { statusOperation } from '../../src/services/registry/operations.js'
import type { EntityRecord } from '../../src/store/records.js'
import { CURRENT_FORMAT } from '../../src/store/registry-store.js'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { http, startTestNode } from '../helpers/node.js'

const at = (seconds: number): string => new Date(Date.UTC(2030, 0, 1, 0, 0, seconds)).toISOString()

test('status changes apply in time order in a store migrated from before status_changed_at', async t => {
  const dev = developer(77)
  const x = agent(dev, 1)
  const first = await startTestNode({ liveness: { inactive_after_seconds: 3600 } })
  const dataDir = first.dataDir
  t.is((await http(first.url, 'POST', '/v1/entities', { body: specRegistration(dev, x) })).status, 201)
  const identity = first.node.identity
  const record = (n: typeof first): EntityRecord => n.node.store.getEntity(x.agentId) as EntityRecord
  const apply = (n: typeof first, status: 'active' | 'inactive', seconds: number) =>
    n.node.entities.applyStatus(statusOperation(identity, x.agentId, status, null, at(seconds)), record(n))
  await apply(first, 'inactive', 20)
  t.is(record(first).status_changed_at, at(20))
  await first.stop(true)

  // What a store created before the field looks like: no marker, no format version, records without it.
  const env = open({ path: join(dataDir, 'registry.lmdb'), maxDbs: 16 })
  const meta = env.openDB({ name: 'meta' })
  await meta.remove('status_changed_at')
  await meta.remove('format_version')
  await env.close()
  const older = await startTestNode({ liveness: { inactive_after_seconds: 3600 } }, dataDir)
  await older.node.store.commit(tx => {
    const { status_changed_at: _dropped, ...without } = tx.getEntity(x.agentId) as EntityRecord
    tx.putEntity(without)
  })
  await older.stop(true)
  const env2 = open({ path: join(dataDir, 'registry.lmdb'), maxDbs: 16 })
  await env2.openDB({ name: 'meta' }).remove('format_version')
  await env2.close()

  const n = await startTestNode({ liveness: { inactive_after_seconds: 3600 } }, dataDir)
  t.teardown(() => n.stop())
  t.is(n.node.store.formatVersion, CURRENT_FORMAT)
  t.is(record(n).status_changed_at, at(20), 'the migration took the time from the operations')

  // An earlier change arriving later is kept in the log, not shown.
  await apply(n, 'active', 10)
  t.is(record(n).status, 'inactive')
  t.true(n.node.store.operationsOf(x.agentId).some(o => o.kind === 'entity.status' && o.accepted_at === at(10)))
  // A later one applies.
  await apply(n, 'active', 30)
  t.is(record(n).status, 'active')
  t.is(record(n).status_changed_at, at(30))
})
