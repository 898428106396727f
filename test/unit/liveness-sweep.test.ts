/**
 * A sweep that finds many silent entities (a load of registrations without heartbeats) writes
 * their inactive transitions in batches, one transaction each, one batch at a time: as one commit
 * per entity, a mass sweep filled the store's commit queue and registrations waited behind it.
 * Past SWEEP_UNPACED transitions it spreads the rest over half the sweep interval.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { nodeIdentity } from '../helpers/identities.js'
import test, { type ExecutionContext } from 'ava'
import { EventBus } from '../../src/events/bus.js'
import { formatKey } from '../../src/identity/encoding.js'
import type { ServiceSettings } from '../../src/services/registry/components.js'
import { LivenessService, SWEEP_BATCH, SWEEP_UNPACED } from '../../src/services/liveness/liveness.js'
import type { EntityRecord } from '../../src/store/records.js'
import { RegistryStore } from '../../src/store/registry-store.js'

/** `count` home entities registered now, on a real store; `silence()` moves the clock past the threshold. */
async function homeEntities(t: ExecutionContext, count: number) {
  const dir = await mkdtemp(join(tmpdir(), 'sweep-'))
  const store = await RegistryStore.open(dir)
  t.teardown(async () => {
    await store.close()
    await rm(dir, { recursive: true, force: true })
  })
  const identity = nodeIdentity()
  const { keyPair } = identity
  let clock = Date.parse('2026-11-26T10:00:00.000Z')
  const records = Array.from(
    { length: count },
    (_, n) =>
      ({
        entity_id: `zns:${n.toString(16).padStart(32, '0')}`,
        public_key: formatKey(keyPair.publicKey),
        status: 'active',
        last_heartbeat: null,
        registered_at: new Date(clock).toISOString(),
        home_registry: 'a.test',
        home_registry_id: identity.registryId
      }) as unknown as EntityRecord
  )
  await store.commit(tx => {
    for (const record of records) tx.putEntity(record)
  })

  const bus = new EventBus()
  const inactive: string[] = []
  bus.subscribe(event => {
    if (event.type === 'agent_became_inactive') inactive.push(event.data.entity_id as string)
  })
  const liveness = new LivenessService({
    store,
    bus,
    identity,
    settings: { host: 'a.test' } as ServiceSettings,
    now: () => new Date(clock),
    verifyHeartbeat: async () => 'deployed',
    liveness: { inactiveAfterMs: 300_000, sweepIntervalMs: 60_000, maxClockSkewMs: 60_000, flushIntervalMs: 3_600_000 }
  })
  for (const record of records) liveness.loadRecord(record)
  const silence = () => {
    clock += 301_000
  }
  const beat = (id: string) =>
    liveness.heartbeat(
      { timestamp: new Date(clock).toISOString(), signature: `ed25519:${Buffer.alloc(64).toString('base64')}` },
      id
    )
  return { store, liveness, records, inactive, silence, beat }
}

test('a mass sweep commits in batches; a heartbeat during it leaves its entity active', async t => {
  // Two full batches and a part of one.
  const count = 2 * SWEEP_BATCH + 50
  const { store, liveness, records, inactive, silence, beat } = await homeEntities(t, count)

  let commits = 0
  const commit = store.commit.bind(store)
  store.commit = fn => {
    commits++
    return commit(fn)
  }
  silence()
  const sweep = liveness.sweep()
  t.is(liveness.sweep(), sweep, 'a sweep asked for while one runs shares it')
  // One entity of the batch being written, and one of a batch not begun.
  const beating = [records[0]!.entity_id, records[count - 1]!.entity_id]
  const acks = await Promise.all(beating.map(beat))
  for (const ack of acks) t.is(ack.status, 'active')
  const changed = await sweep
  t.is(changed, count - 1, 'the first was written inactive, then active again; the last stayed active')
  t.is(commits, 4, 'three batches, and the first entity back to active')

  for (const id of beating) t.is(liveness.current(id)?.status, 'active')
  t.is(store.operationsOf(beating[0]!).length, 2)
  const stored = new Map(store.allLiveness())
  for (const record of records.slice(1, -1)) {
    t.is(liveness.current(record.entity_id)?.status, 'inactive')
    t.false(stored.get(record.entity_id)?.active, 'the stored state, which a restart loads')
  }
  t.true(stored.get(beating[0]!)?.active, 'written back to active')
  t.deepEqual(
    store.operationsOf(records[1]!.entity_id).map(op => op.kind),
    ['entity.status.batch'],
    'each batch is one signed operation, in the history of every entity it names'
  )
  const batches = [...store.allOperations()].filter(op => op.kind === 'entity.status.batch')
  t.is(batches.length, 3)
  t.deepEqual(
    store.operationsOf(records[count - 2]!.entity_id).map(op => op.node_signature),
    [batches[2]!.node_signature],
    'the last batch'
  )
  t.is(new Set(inactive).size, changed)
  t.is(await liveness.sweep(), 0, 'nothing silent is left')
  await liveness.stop()
})

test('a stop during a mass sweep ends it after the batch being written', async t => {
  const { liveness, records, silence } = await homeEntities(t, 3 * SWEEP_BATCH)
  silence()
  const sweep = liveness.sweep()
  await liveness.stop()
  t.is(await sweep, SWEEP_BATCH)
  const statuses = records.map(r => liveness.current(r.entity_id)?.status)
  t.is(statuses.filter(s => s === 'inactive').length, SWEEP_BATCH)
  t.is(statuses.filter(s => s === 'active').length, 2 * SWEEP_BATCH, 'left for the next start')
})

test('a mass sweep signs the next batch while one commits, and keeps two in flight at most', async t => {
  const { store, liveness, silence } = await homeEntities(t, 4 * SWEEP_BATCH)
  let inFlight = 0
  let mostInFlight = 0
  const commit = store.commit.bind(store)
  store.commit = fn => {
    mostInFlight = Math.max(mostInFlight, ++inFlight)
    return commit(fn).finally(() => inFlight--)
  }
  silence()
  t.is(await liveness.sweep(), 4 * SWEEP_BATCH)
  t.is(mostInFlight, 2)
  await liveness.stop()
})

test('past SWEEP_UNPACED a mass sweep spreads its batches, and a stop ends the pause', async t => {
  const rest = 5 * SWEEP_BATCH
  const { liveness, records, inactive, silence } = await homeEntities(t, SWEEP_UNPACED + rest)
  silence()
  const sweep = liveness.sweep()
  while (inactive.length < SWEEP_UNPACED) await new Promise(resolve => setTimeout(resolve, 10))
  await new Promise(resolve => setTimeout(resolve, 300))
  // The interval is 60 s: the five batches left share 30 s, one every 5 s or so.
  t.is(inactive.length, SWEEP_UNPACED, 'the first transitions at once, then a pause')
  const stopping = performance.now()
  await liveness.stop()
  t.true(performance.now() - stopping < 2_000, 'a stop does not wait out the pause')
  t.is(await sweep, SWEEP_UNPACED)
  t.is(records.filter(r => liveness.current(r.entity_id)?.status === 'active').length, rest, 'left for the next start')
})
