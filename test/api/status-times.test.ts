/**
 * A node applies an entity's status changes in time order, whichever arrives first. Since the
 * entity record keeps `status_changed_at`, the record decides; in a store created before that (its
 * meta lacks the marker) the entity's operations decide for records that have not got the field.
 * Real node, real LMDB; the older store is made by removing the marker, as such a store has none.
 */
import test from 'ava'
import { open } from 'lmdb'
import { join } from 'node:path'
import { statusOperation } from '../../src/services/registry/operations.js'
import type { EntityRecord } from '../../src/store/records.js'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { http, startTestNode } from '../helpers/node.js'

const at = (seconds: number): string => new Date(Date.UTC(2030, 0, 1, 0, 0, seconds)).toISOString()

test('status changes apply in time order in a store older than status_changed_at', async t => {
  const dev = developer(77)
  const x = agent(dev, 1)
  const first = await startTestNode({ liveness: { inactive_after_seconds: 3600 } })
  const dataDir = first.dataDir
  t.is((await http(first.url, 'POST', '/v1/entities', { body: specRegistration(dev, x) })).status, 201)
  const identity = first.node.identity
  await first.stop(true)

  // What a store created before the field looks like: no marker in its meta.
  const env = open({ path: join(dataDir, 'registry.lmdb'), maxDbs: 16 })
  await env.openDB({ name: 'meta' }).remove('status_changed_at')
  await env.close()

  const n = await startTestNode({ liveness: { inactive_after_seconds: 3600 } }, dataDir)
  t.teardown(() => n.stop())
  t.false(n.node.store.keepsStatusTimes)
  const record = (): EntityRecord => n.node.store.getEntity(x.agentId) as EntityRecord
  const apply = (status: 'active' | 'inactive', seconds: number) =>
    n.node.entities.applyStatus(statusOperation(identity, x.agentId, status, null, at(seconds)), record())

  // A later change is shown; then, as an older record would have been written, the field goes.
  await apply('inactive', 20)
  t.is(record().status, 'inactive')
  t.is(record().status_changed_at, at(20))
  await n.node.store.commit(tx => {
    const { status_changed_at: _dropped, ...older } = tx.getEntity(x.agentId) as EntityRecord
    tx.putEntity(older)
  })
  t.is(record().status_changed_at, undefined)

  // An earlier change arriving later is kept in the log, not shown: the operations say 20 s is later.
  await apply('active', 10)
  t.is(record().status, 'inactive')
  t.true(n.node.store.operationsOf(x.agentId).some(o => o.kind === 'entity.status' && o.accepted_at === at(10)))
  // A later one still applies, and the record carries its time from then on.
  await apply('active', 30)
  t.is(record().status, 'active')
  t.is(record().status_changed_at, at(30))
})
