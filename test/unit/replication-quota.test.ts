/**
 * The rate per developer limits what a developer writes through another registry, not the home
 * node's status changes of that developer's entities: a fleet that goes silent together is
 * announced whole. Real seals; the services behind the quota count what reaches them.
 */
import test from 'ava'
import { VerifyPool } from '../../src/identity/verify-pool.js'
import type { AttestationService } from '../../src/services/registry/attestations.js'
import type { DeveloperService } from '../../src/services/registry/developers.js'
import type { EntityService } from '../../src/services/registry/entities.js'
import type { NameDirectory } from '../../src/services/replication/name-directory.js'
import { sealOperation } from '../../src/services/registry/operations.js'
import { OriginQuota } from '../../src/services/replication/origin-quota.js'
import { ReplicationService } from '../../src/services/replication/replication.js'
import type { EntityRecord, Operation } from '../../src/store/records.js'
import type { RegistryStore } from '../../src/store/registry-store.js'
import { nodeIdentity } from '../helpers/identities.js'

test("status changes of one developer's entities do not spend the developer's rate; its updates do", async t => {
  const home = nodeIdentity('home.test')
  const fleet = 30
  const op = (kind: Operation['kind'], i: number): Operation =>
    sealOperation(home, {
      kind,
      subject: `zns:${i.toString(16).padStart(32, '0')}`,
      body: Buffer.from('{}'),
      path: null,
      accepted_at: new Date(Date.UTC(2026, 10, 27, 0, 0, i)).toISOString(),
      origin: home.registryId,
      auth: { carrier: 'node', signer: 'node', signature: 'unused', form: 'agent_status' }
    })
  const reached = { status: 0, update: 0 }
  const entities = {
    applyStatus: async () => {
      reached.status++
    },
    update: async () => {
      reached.update++
    }
  } as unknown as EntityService
  const verifier = new VerifyPool({ workers: 0 })
  t.teardown(() => verifier.close())
  const replication = new ReplicationService({
    identity: nodeIdentity('peer.test'),
    verifier,
    store: {
      holds: () => false,
      getEntity: (id: string) =>
        ({ entity_id: id, developer_id: 'zns:dev:fleet', home_registry_id: home.registryId }) as EntityRecord
    } as unknown as RegistryStore,
    entities,
    developers: {} as DeveloperService,
    attestations: {} as AttestationService,
    directory: {} as NameDirectory,
    // One operation a second per developer, bursts of 10; origins unlimited.
    quota: new OriginQuota({ opsPerSecondPerOrigin: 0, opsPerSecondPerDeveloper: 1, maxEntitiesPerOrigin: 0 })
  })
  const statuses = await Promise.all(Array.from({ length: fleet }, (_, i) => replication.apply(op('entity.status', i))))
  t.deepEqual(new Set(statuses), new Set(['applied']))
  t.is(reached.status, fleet)
  const updates = await Promise.all(
    Array.from({ length: fleet }, (_, i) => replication.apply(op('entity.update', fleet + i)))
  )
  t.true(updates.filter(o => o === 'throttled').length >= fleet - 11, 'the developer rate still holds its own writes')
  t.true(reached.update <= 11)
})
