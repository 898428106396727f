/**
 * Last-seen times are written in batches; a stop writes what is left. A batch already being written
 * when the stop comes holds only what was dirty when it began: the heartbeats since must still be
 * written. The race is forced with a store whose commits wait on a gate the test opens (under load,
 * a timed flush still committing at the stop lost the last heartbeat of heartbeats.test.ts).
 */
import test from 'ava'
import { EventBus } from '../../src/events/bus.js'
import type { ServiceSettings } from '../../src/services/registry/components.js'
import { LivenessService } from '../../src/services/liveness/liveness.js'
import type { EntityRecord, LivenessRecord } from '../../src/store/records.js'
import type { RegistryStore } from '../../src/store/registry-store.js'
import { agent, developer, nodeIdentity } from '../helpers/identities.js'

test('a stop during a batch write also writes the heartbeats that came after the batch began', async t => {
  const identity = nodeIdentity()
  const a = agent(developer(81), 1)
  let clock = Date.parse('2026-11-22T10:00:00.000Z')
  const record = {
    entity_id: a.agentId,
    public_key: a.publicKey,
    status: 'active',
    last_heartbeat: null,
    registered_at: new Date(clock).toISOString(),
    home_registry: 'a.test',
    home_registry_id: identity.registryId
  } as unknown as EntityRecord

  // Commits wait while `held` is set; what each one wrote is kept in order.
  const written: LivenessRecord[] = []
  let held: Promise<void> | null = null
  let release = (): void => {}
  const store = {
    getEntity: (id: string) => (id === record.entity_id ? record : undefined),
    commit: async (fn: (tx: unknown) => void) => {
      if (held) await held
      fn({
        putLiveness: (_id: string, r: LivenessRecord) => {
          written.push({ ...r })
        },
        deleteLiveness: () => {}
      })
    }
  } as unknown as RegistryStore
  const liveness = new LivenessService({
    store,
    bus: new EventBus(),
    identity,
    settings: { host: 'a.test' } as ServiceSettings,
    now: () => new Date(clock),
    verifyHeartbeat: async () => 'deployed',
    liveness: {
      inactiveAfterMs: 3_600_000,
      sweepIntervalMs: 3_600_000,
      maxClockSkewMs: 60_000,
      flushIntervalMs: 3_600_000
    }
  })
  liveness.loadRecord(record)
  t.deepEqual([...liveness.homeEntityIds()], [a.agentId])
  const beat = () =>
    liveness.heartbeat(
      { timestamp: new Date(clock).toISOString(), signature: `ed25519:${Buffer.alloc(64).toString('base64')}` },
      a.agentId
    )

  clock += 1000
  t.like(await beat(), { type: 'ack' })
  held = new Promise(resolve => {
    release = resolve
  })
  const batch = liveness.flush() // the timed flush: takes the first heartbeat, then waits in its commit
  clock += 1000
  const last = clock
  t.like(await beat(), { type: 'ack' })
  const stopped = liveness.stop()
  held = null
  release()
  await Promise.all([batch, stopped])
  t.is(written.at(-1)?.last_seen, last, `written: ${JSON.stringify(written.map(r => r.last_seen))}`)
})
