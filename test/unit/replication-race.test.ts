/**
 * Gossip validates messages concurrently: an update can fail for want of its entity while the
 * registration it needs is being applied. The update must then be applied, not left deferred
 * until the next sync. The race is forced here with services that wait on gates the test opens;
 * the seal checks are real.
 */
import { nodeIdentity } from '../helpers/identities.js'
import test from 'ava'
import { VerifyPool } from '../../src/identity/verify-pool.js'
import { MissingDependency } from '../../src/services/registry/writes.js'
import type { AttestationService } from '../../src/services/registry/attestations.js'
import type { DeveloperService } from '../../src/services/registry/developers.js'
import type { EntityService } from '../../src/services/registry/entities.js'
import type { NameDirectory } from '../../src/services/replication/name-directory.js'
import { sealOperation } from '../../src/services/registry/operations.js'
import { ReplicationService } from '../../src/services/replication/replication.js'
import type { Operation } from '../../src/store/records.js'
import type { RegistryStore } from '../../src/store/registry-store.js'
import { OriginQuota } from '../../src/services/replication/origin-quota.js'

const gate = (): { opened: Promise<void>; open: () => void } => {
  let open = (): void => {}
  const opened = new Promise<void>(resolve => {
    open = resolve
  })
  return { opened, open }
}

test('an update that fails while its registration is being applied is applied, not left deferred', async t => {
  const origin = nodeIdentity('a.test')
  const entityId = 'zns:0123456789abcdef0123456789abcdef'
  const op = (kind: Operation['kind'], at: string): Operation =>
    sealOperation(origin, {
      kind,
      subject: entityId,
      body: Buffer.from('{}'),
      path: null,
      accepted_at: at,
      origin: origin.registryId,
      auth: { carrier: 'body', signer: 'self', signature: 'unused', form: 'spec' }
    })
  const registration = op('entity.register', '2026-11-22T00:00:00.000Z')
  const update = op('entity.update', '2026-11-22T00:00:01.000Z')

  let held = false
  const updates: string[] = []
  const registered = gate()
  const updateLooked = gate()
  const updateChecked = gate()
  let attempts = 0
  const entities = {
    register: async () => {
      held = true
      registered.open()
    },
    // The first attempt looks for the entity before the registration lands and reports it missing after.
    update: async () => {
      attempts++
      const found = held
      updateLooked.open()
      await updateChecked.opened
      if (!found) throw new MissingDependency(entityId)
      updates.push('applied')
    }
  } as unknown as EntityService
  const verifier = new VerifyPool({ workers: 0 })
  t.teardown(() => verifier.close())
  const replication = new ReplicationService({
    identity: nodeIdentity('b.test'),
    verifier,
    store: { holds: () => false, getEntity: () => undefined } as unknown as RegistryStore,
    entities,
    developers: {} as DeveloperService,
    attestations: {} as AttestationService,
    directory: {} as NameDirectory,
    quota: new OriginQuota({ opsPerSecondPerOrigin: 0, opsPerSecondPerDeveloper: 0, maxEntitiesPerOrigin: 0 })
  })

  const updating = replication.apply(update)
  await updateLooked.opened // the update is inside its check, entity not found
  t.false(held)
  t.is(await replication.apply(registration), 'applied')
  await registered.opened
  updateChecked.open() // now the update reports the entity missing
  t.is(await updating, 'applied', 'retried at once, since its entity arrived while it was checked')
  t.deepEqual(updates, ['applied'])
  t.is(attempts, 2, 'the first attempt failed for want of the entity, the retry applied it')
  t.like(replication.counts, { applied: 2, deferred: 0 })
})
