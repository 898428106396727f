/**
 * Replication on loopback with real nodes: writes made on one node (registration, update, a status
 * change found by the inactivity sweep, deregistration, a developer profile) reach the others by
 * gossip and show in their HTTP API; tampered and forged operations relayed by a peer are rejected
 * by every receiver; a node started after the writes converges by sync.
 */
import test from 'ava'
import type { RegistryEvent } from '../../src/events/bus.js'
import { GOSSIP_TOPICS, topicOf } from '../../src/mesh/gossip.js'
import { homeBucketKey } from '../../src/mesh/provider-keys.js'
import { BUCKETS, SubjectDigests, bucketOf } from '../../src/store/subject-digests.js'
import { sealOperation, statusBatchOperation, statusOperation } from '../../src/services/registry/operations.js'
import type { Operation } from '../../src/store/records.js'
import { encodeBatch, encodeOperation } from '../../src/wire/operations.js'
import {
  agent,
  developer,
  developerRegistration,
  sign,
  signSpec,
  specRegistration,
  type Developer
} from '../helpers/identities.js'
import { http, startTestNode, tcpAddress, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

// Sync every 5 s: what gossip drops on a loaded machine is repaired within the tests' waits (the default is 60 s).
// Scoring off: C publishes forged and malformed operations to test the validator, and scoring
// would graylist it for the tests after (test/mesh/hostile-scoring.test.ts tests scoring).
const MESH = { enabled: true, sync_interval_seconds: 5, dht_announce_interval_seconds: 0.05, gossip_scoring: false }
const dev = developer(31)
const first = agent(dev, 0)
const second = agent(dev, 1)
const third = agent(dev, 2)
const fourth = agent(dev, 3)
const fifth = agent(dev, 4)
let a: TestNode
let b: TestNode
let c: TestNode
const nodes = (): TestNode[] => [a, b, c]
const incomingOfB: RegistryEvent[] = []

const entityOn = async (n: TestNode, id: string) => http(n.url, 'GET', `/v1/entities/${id}`)

/** Waits until each of `nodes` serves entity `id`. */
async function untilServed(nodes: readonly TestNode[], id: string, what: string): Promise<void> {
  for (const n of nodes)
    await until(`${n.config.name} holds ${what}`, async () =>
      (await entityOn(n, id)).status === 200 ? true : undefined
    )
}

/** `owner` claims `handle` on node `n` (spec form); the answer's status. */
async function claimHandle(n: TestNode, owner: Developer, handle: string): Promise<number> {
  const body = signSpec(owner.keyPair, { developer_id: owner.id, handle, public_key: owner.publicKey })
  return (await http(n.url, 'POST', '/v1/handles', { body })).status
}

const digestsOf = (n: TestNode): string =>
  n.node.digests
    .bucketDigests()
    .map(x => x.toString('hex'))
    .join()

/** What `x` and `y` hold differently: operations one lacks, and digests that no longer match their log. */
function differences(x: TestNode, y: TestNode): string[] {
  const held = (n: TestNode) =>
    new Map(
      [...n.node.store.allOperations()].map(op => [
        op.node_signature,
        `${op.kind} ${op.subject} ${op.accepted_at} from ${op.origin_host ?? op.origin}`
      ])
    )
  const [onY, onX] = [held(y), held(x)]
  const missing = [...onY].filter(([k]) => !onX.has(k)).map(([, v]) => `${x.config.name} lacks ${v}`)
  const extra = [...onX].filter(([k]) => !onY.has(k)).map(([, v]) => `${y.config.name} lacks ${v}`)
  const stale = [x, y].flatMap(n => {
    const fresh = new SubjectDigests(n.node.store)
    fresh.start()
    fresh.stop()
    const all = Array.from({ length: BUCKETS }, (_, i) => i)
    const kept = n.node.digests.subjectsIn(all)
    const rebuilt = fresh.subjectsIn(all)
    const keptBuckets = n.node.digests.bucketDigests().map(b => b.toString('hex'))
    const staleBuckets = fresh
      .bucketDigests()
      .map((b, i) => (b.toString('hex') === keptBuckets[i] ? -1 : i))
      .filter(i => i >= 0)
    return [
      ...[...new Set([...kept.keys(), ...rebuilt.keys()])]
        .filter(s => kept.get(s) !== rebuilt.get(s))
        .map(s => `${n.config.name}'s digest of ${s} is stale`),
      ...staleBuckets.map(
        i =>
          `${n.config.name}'s bucket ${i} is ${keptBuckets[i]}, rebuilt ${fresh.bucketDigests()[i]?.toString('hex')}, members ${[...fresh.subjectsIn([i]).keys()].join(' ')} / kept members ${[...kept.keys()].filter(s => bucketOf(s) === i).join(' ')}`
      )
    ]
  })
  const all = Array.from({ length: BUCKETS }, (_, i) => i)
  const [subjectsX, subjectsY] = [x, y].map(n => n.node.digests.subjectsIn(all))
  const subjectDiffs = [...new Set([...subjectsX!.keys(), ...subjectsY!.keys()])]
    .filter(s => subjectsX!.get(s) !== subjectsY!.get(s))
    .map(s => `subject ${s}: ${x.config.name} ${subjectsX!.get(s)} / ${y.config.name} ${subjectsY!.get(s)}`)
  const [bx, by] = [x, y].map(n => n.node.digests.bucketDigests().map(b => b.toString('hex')))
  const bucketDiffs = bx!
    .map((d, i) => (d === by![i] ? null : `bucket ${i}: ${x.config.name} ${d} / ${y.config.name} ${by![i]}`))
    .filter(Boolean) as string[]
  const duplicates = [x, y].flatMap(n => {
    const seen = new Set<string>()
    return [...n.node.store.allOperations()]
      .filter(op => seen.has(op.node_signature) || !seen.add(op.node_signature))
      .map(op => `${n.config.name} holds ${op.kind} ${op.subject} twice`)
  })
  return [...missing, ...extra, ...stale, ...duplicates, ...subjectDiffs, ...bucketDiffs]
}

/** Waits until `x` and `y` hold the same operations; a failure names what differed, at the end and when last seen. */
async function sameOperations(x: TestNode, y: TestNode): Promise<void> {
  let lastSeen: { at: string; differences: string[] } | null = null
  let lastLook = 0
  await until(
    `${x.config.name} and ${y.config.name} hold the same operations`,
    () => {
      if (digestsOf(x) === digestsOf(y)) return true
      if (Date.now() - lastLook > 1000) {
        lastLook = Date.now()
        lastSeen = { at: new Date().toISOString(), differences: differences(x, y) }
      }
      return undefined
    },
    {
      timeoutMs: 60_000,
      detail: () => ({
        now: differences(x, y),
        lastSeen,
        syncs: [x, y].map(n => ({
          node: n.config.name,
          ...n.node.mesh!.sync.totals,
          peers: n.node.mesh!.libp2p.getPeers().length
        }))
      })
    }
  )
}

test.before(async () => {
  // A sweeps every 100 ms and calls an entity inactive after 1.5 s of silence: the status change comes quickly.
  a = await startTestNode({
    name: 'node-a',
    host: 'a.registry.test',
    p2p: MESH,
    liveness: { inactive_after_seconds: 1.5, sweep_interval_seconds: 0.1 }
  })
  ;[b, c] = await Promise.all([
    startTestNode({ name: 'node-b', host: 'b.registry.test', p2p: { ...MESH, bootstrap: [tcpAddress(a)] } }),
    startTestNode({ name: 'node-c', host: 'c.registry.test', p2p: { ...MESH, bootstrap: [tcpAddress(a)] } })
  ])
  b.node.bus.subscribe(e => {
    if (e.type === 'gossip_incoming') incomingOfB.push(e)
  })
  // Every node subscribed to every topic of its two peers: publications reach them directly.
  for (const n of nodes()) {
    await until(`${n.config.name} has two peers on every gossip topic`, () => {
      const pubsub = n.node.mesh!.libp2p.services.pubsub
      return Object.values(GOSSIP_TOPICS).every(topic => pubsub.getSubscribers(topic).length === 2) ? true : undefined
    })
  }
})

test.after.always(async () => {
  await Promise.all(
    nodes()
      .filter(Boolean)
      .map(n => n.stop())
  )
})

test.serial('a registration, an update, a status change and a deregistration on A reach B and C', async t => {
  const gossipOfA = a.node.mesh!.gossip.stats
  const before = { published: gossipOfA.published, messages: gossipOfA.messages_published }
  const reg = await http(a.url, 'POST', '/v1/entities', {
    body: specRegistration(dev, first, { summary: 'Replicated translation agent' })
  })
  t.is(reg.status, 201, JSON.stringify(reg.body))
  await until('A has published the registration', () => gossipOfA.published - before.published >= 2)
  t.is(gossipOfA.published - before.published, 2, 'the registration and the new developer it made')
  t.is(gossipOfA.messages_published - before.messages, 1, 'both in one message')
  const onA = (await entityOn(a, first.agentId)).body
  for (const n of [b, c]) {
    // Watched in the store: a GET of a record not held yet would fetch it from its home through the DHT, racing gossip.
    await until(`${n.config.name} holds the registration`, () =>
      n.node.store.getEntity(first.agentId) ? true : undefined
    )
    const copy = (await entityOn(n, first.agentId)).body
    t.is(copy.name, onA.name)
    t.is(copy.registered_at, onA.registered_at, "the origin's time, not the receiver's")
    t.is(copy.home_registry, 'a.registry.test')
    t.is(copy.signature, onA.signature)
    const devCopy = await until(`${n.config.name} holds the implicit developer`, async () => {
      const r = await http(n.url, 'GET', `/v1/developers/${dev.id}`)
      return r.status === 200 ? r.body : undefined
    })
    t.true(devCopy.implicit)
  }
  // The event follows the store write: waited for, not assumed to be there already.
  await until('B reports the registration applied from gossip', () =>
    incomingOfB.some(e => e.data.subject === first.agentId && e.data.outcome === 'applied')
  )

  const update = await http(a.url, 'PUT', `/v1/entities/${first.agentId}`, {
    body: signSpec(first.keyPair, { summary: 'Now also summarises', tags: ['summary'] })
  })
  t.is(update.status, 200, JSON.stringify(update.body))
  for (const n of [b, c]) {
    const copy = await until(`${n.config.name} holds the update`, async () => {
      const r = await entityOn(n, first.agentId)
      return r.body.summary === 'Now also summarises' ? r.body : undefined
    })
    t.deepEqual(copy.tags, ['summary'])
    t.is(copy.name, onA.name, 'fields the update left alone are kept')
  }

  // No heartbeats: A's sweep makes the entity inactive and signs the status change; B and C follow.
  for (const n of [a, b, c]) {
    await until(`${n.config.name} shows the entity inactive`, async () =>
      (await entityOn(n, first.agentId)).body.status === 'inactive' ? true : undefined
    )
  }
  // Search follows on every node: the peers patch their index from the status operation they applied.
  const found = async (n: TestNode, status: string): Promise<boolean> => {
    const r = await http(n.url, 'POST', '/v1/search', { body: { query: 'summarises', status } })
    return (r.body.results as { entity_id: string }[]).some(e => e.entity_id === first.agentId)
  }
  for (const n of [a, b, c]) {
    await until(`${n.config.name} finds the entity among the inactive`, async () =>
      (await found(n, 'inactive')) ? true : undefined
    )
    t.false(await found(n, 'active'), `${n.config.name} no longer finds it among the active`)
  }

  const del = await http(a.url, 'DELETE', `/v1/entities/${first.agentId}`, {
    headers: { authorization: `Bearer ${sign(first.keyPair, first.agentId)}` }
  })
  t.is(del.status, 200, JSON.stringify(del.body))
  for (const n of [b, c]) {
    const gone = await until(`${n.config.name} holds the tombstone`, async () => {
      const r = await entityOn(n, first.agentId)
      return r.status === 404 ? r.body : undefined
    })
    t.is(gone.error, 'entity_not_found')
    t.regex(gone.message, /deregistered/)
  }
})

test.serial('a developer registered on B reaches A and C with its home', async t => {
  const other = developer(32)
  const reg = await http(b.url, 'POST', '/v1/developers', { body: developerRegistration(other, { name: 'Bea' }) })
  t.is(reg.status, 201, JSON.stringify(reg.body))
  for (const n of [a, c]) {
    const copy = await until(`${n.config.name} holds the developer`, async () => {
      const r = await http(n.url, 'GET', `/v1/developers/${other.id}`)
      return r.status === 200 ? r.body : undefined
    })
    t.is(copy.name, 'Bea')
    t.is(copy.home_registry, 'b.registry.test')
  }
})

test.serial("another registry's names resolve on every node, kept apart from its own namespace", async t => {
  const owner = developer(33)
  const named = agent(owner, 0)
  t.is(await claimHandle(a, owner, 'acme'), 201)
  const reg = await http(a.url, 'POST', '/v1/entities', {
    body: specRegistration(owner, named, { entity_name: 'translator' })
  })
  t.is(reg.body.fqan, 'a.registry.test/acme/translator', JSON.stringify(reg.body))
  for (const n of [b, c]) {
    const resolved = await until(`${n.config.name} resolves A's name`, async () => {
      const r = await http(
        n.url,
        'GET',
        `/v1/resolve?fqan=${encodeURIComponent('zns://a.registry.test/acme/translator')}`
      )
      return r.status === 200 ? r.body : undefined
    })
    t.is(resolved.entity_id, named.agentId)
    t.is(resolved.registry_host, 'a.registry.test')
    t.is(resolved.source, 'network')
    // B's own namespace is untouched: the handle is still free there.
    t.is((await http(n.url, 'GET', `/v1/resolve/acme/translator`)).status, 404)
    // The replicated record shows the FQAN from its home's namespace.
    const record = await until(`${n.config.name} shows the FQAN on the record`, async () => {
      const r = await entityOn(n, named.agentId)
      return r.body.fqan ? r.body : undefined
    })
    t.is(record.fqan, 'a.registry.test/acme/translator')
    t.is(record.developer_handle, 'acme')
  }
  // Released on A: the name disappears everywhere.
  const release = await http(a.url, 'DELETE', '/v1/names/acme/translator', {
    headers: { authorization: `Bearer ${sign(owner.keyPair, 'release:a.registry.test/acme/translator')}` }
  })
  t.is(release.status, 200, JSON.stringify(release.body))
  for (const n of [b, c]) {
    await until(`${n.config.name} forgets the released name`, async () =>
      (await http(n.url, 'GET', `/v1/resolve?fqan=a.registry.test/acme/translator`)).status === 404 ? true : undefined
    )
    t.is((await entityOn(n, named.agentId)).body.fqan, null, 'the cached rendering was dropped with the name')
  }
  t.pass()
})

test.serial('tampered and forged operations relayed by a peer are rejected by every receiver', async t => {
  // A real registration on C, then C's libp2p node relays altered copies of its operation.
  const reg = await http(c.url, 'POST', '/v1/entities', {
    body: specRegistration(dev, second, { summary: 'Honest summary' })
  })
  t.is(reg.status, 201)
  await untilServed([a, b], second.agentId, 'the honest registration')
  const original = c.node.store.operationsOf(second.agentId).find(op => op.kind === 'entity.register') as Operation
  const body = JSON.parse(Buffer.from(original.body as Uint8Array).toString('utf8')) as Record<string, unknown>

  // 1. The body changed in transit (the node seal no longer matches).
  const tampered: Operation = {
    ...original,
    body: Buffer.from(JSON.stringify({ ...body, summary: 'Tampered summary' })),
    accepted_at: new Date().toISOString()
  }
  // 2. Re-sealed by C as a fresh operation of its own: the seal is good, the owner's signature is not.
  const forgeFor = (entity: { agentId: string; publicKey: string }): Operation =>
    sealOperation(c.node.identity, {
      ...original,
      subject: entity.agentId,
      body: Buffer.from(JSON.stringify({ ...body, public_key: entity.publicKey, summary: 'Forged' })),
      accepted_at: new Date().toISOString()
    })
  const forged = forgeFor(third)
  // 3. A status change for an entity C is not the home of, signed by C.
  const status = sealOperation(c.node.identity, {
    kind: 'entity.status',
    subject: first.agentId,
    path: null,
    accepted_at: new Date().toISOString(),
    origin: c.node.identity.registryId,
    body: Buffer.from('{}'),
    auth: { carrier: 'node', signer: 'node', signature: sign(c.node.identity.keyPair, '{}'), form: 'agent_status' }
  })
  const invalidBefore = [a, b].map(n => n.node.replication.counts.invalid)
  const pubsub = c.node.mesh!.libp2p.services.pubsub
  for (const op of [tampered, forged, status])
    await pubsub.publish(topicOf(op.kind), encodeBatch([encodeOperation(op)]))
  for (const [i, n] of [a, b].entries()) {
    await until(`${n.config.name} rejected both forgeries`, () =>
      n.node.replication.counts.invalid - (invalidBefore[i] as number) >= 2 ? true : undefined
    )
    t.is((await entityOn(n, second.agentId)).body.summary, 'Honest summary', 'the tampered body was not applied')
    t.is((await entityOn(n, third.agentId)).status, 404, 'the forged registration was not applied')
  }

  // 4. One message with a valid operation and a forged one: the message is rejected, the valid one stands.
  const validBody = specRegistration(dev, fourth, { summary: 'Valid, beside a forgery' })
  const valid = sealOperation(c.node.identity, {
    ...original,
    subject: fourth.agentId,
    body: Buffer.from(JSON.stringify(validBody)),
    auth: { ...original.auth, signature: String(validBody.signature) },
    accepted_at: new Date().toISOString()
  })
  const forgedToo = forgeFor(fifth)
  const invalidBeforeMixed = [a, b].map(n => n.node.replication.counts.invalid)
  await pubsub.publish(GOSSIP_TOPICS.entities, encodeBatch([valid, forgedToo].map(encodeOperation)))
  for (const [i, n] of [a, b].entries()) {
    await until(`${n.config.name} applied the valid operation of the mixed message`, async () =>
      (await entityOn(n, fourth.agentId)).status === 200 ? true : undefined
    )
    await until(`${n.config.name} rejected its forgery`, () =>
      n.node.replication.counts.invalid - (invalidBeforeMixed[i] as number) >= 1 ? true : undefined
    )
    t.is((await entityOn(n, fifth.agentId)).status, 404)
  }
  // Nodes of earlier versions publish developer.implicit on the identities topic: still applied.
  const earlierDev = developer(33)
  const earlierBody = specRegistration(earlierDev, agent(earlierDev, 0))
  const implicitOnIdentities = sealOperation(c.node.identity, {
    ...original,
    kind: 'developer.implicit',
    subject: earlierDev.id,
    body: Buffer.from(JSON.stringify(earlierBody)),
    auth: {
      carrier: 'proof',
      signer: 'developer',
      signature: (earlierBody.developer_proof as { signature: string }).signature,
      form: 'proof'
    },
    accepted_at: new Date().toISOString()
  })
  await pubsub.publish(GOSSIP_TOPICS.identities, encodeBatch([encodeOperation(implicitOnIdentities)]))
  for (const n of [a, b])
    await until(`${n.config.name} holds the developer from the identities topic`, () =>
      n.node.store.getDeveloper(earlierDev.id) ? true : undefined
    )

  // Malformed messages are rejected whole: not JSON, no ops, an operation of another topic.
  const malformedBefore = [a, b].map(n => n.node.mesh!.gossip.stats.received.invalid)
  await pubsub.publish(GOSSIP_TOPICS.entities, Buffer.from('not json'))
  await pubsub.publish(GOSSIP_TOPICS.entities, Buffer.from('{"ops":[]}'))
  await pubsub.publish(
    GOSSIP_TOPICS.tombstones,
    encodeBatch([encodeOperation({ ...original, accepted_at: new Date().toISOString() })])
  )
  for (const [i, n] of [a, b].entries()) {
    await until(`${n.config.name} rejected the malformed messages`, () =>
      n.node.mesh!.gossip.stats.received.invalid - (malformedBefore[i] as number) >= 3 ? true : undefined
    )
  }
})

test.serial(
  'a client signature replayed through the mesh (re-sealed by a node as a new write) is refused by every receiver',
  async t => {
    const x = agent(dev, 7)
    const path = `/v1/entities/${x.agentId}`
    t.is((await http(c.url, 'POST', '/v1/entities', { body: specRegistration(dev, x) })).status, 201)
    const edit = async (summary: string) => {
      const raw = JSON.stringify({ summary })
      t.is(
        (
          await http(c.url, 'PUT', path, {
            raw,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${sign(x.keyPair, raw)}` }
          })
        ).status,
        200
      )
      for (const n of [a, b])
        await until(`${n.config.name} shows "${summary}"`, async () =>
          (await entityOn(n, x.agentId)).body.summary === summary ? true : undefined
        )
    }
    await edit('one')
    const captured = c.node.store.operationsOf(x.agentId).find(op => op.kind === 'entity.update') as Operation
    await edit('two')
    const staleBefore = [a, b].map(n => n.node.replication.counts.stale)
    const invalidBefore = [a, b].map(n => n.node.replication.counts.invalid)
    const replayed = sealOperation(c.node.identity, { ...captured, accepted_at: new Date().toISOString() })
    await c.node.mesh!.libp2p.services.pubsub.publish(topicOf(replayed.kind), encodeBatch([encodeOperation(replayed)]))
    for (const [i, n] of [a, b].entries()) {
      await until(`${n.config.name} refused the replay`, () =>
        n.node.replication.counts.stale > (staleBefore[i] as number) ? true : undefined
      )
      t.is(n.node.replication.counts.invalid, invalidBefore[i] as number, 'not held against the relaying peer')
      t.is((await entityOn(n, x.agentId)).body.summary, 'two')
    }
    // Over HTTP the same bytes get the error.
    const raw = JSON.stringify({ summary: 'one' })
    const again = await http(a.url, 'PUT', path, {
      raw,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${sign(x.keyPair, raw)}` }
    })
    t.like(again, { status: 409, body: { error: 'signature_replayed' } })
  }
)

test.serial(
  "status changes from an entity's home apply in time order: an earlier one arriving later is kept, not shown",
  async t => {
    const x = agent(dev, 8)
    t.is((await http(c.url, 'POST', '/v1/entities', { body: specRegistration(dev, x) })).status, 201)
    await untilServed([a, b], x.agentId, 'the registration')
    // C (the home, with the default threshold) announces two changes; the later one travels first.
    const statusOf = (status: 'active' | 'inactive', at: Date): Operation =>
      statusOperation(c.node.identity, x.agentId, status, null, at.toISOString())
    const now = Date.now()
    const later = statusOf('inactive', new Date(now + 2_000))
    const earlier = statusOf('active', new Date(now + 1_000))
    const pubsub = c.node.mesh!.libp2p.services.pubsub
    for (const op of [later, earlier]) {
      await pubsub.publish(topicOf(op.kind), encodeBatch([encodeOperation(op)]))
      for (const n of [a, b])
        await until(`${n.config.name} holds the status of ${op.accepted_at}`, () =>
          n.node.store.operationsOf(x.agentId).some(o => o.node_signature === op.node_signature) ? true : undefined
        )
    }
    for (const n of [a, b]) {
      const shown = await entityOn(n, x.agentId)
      t.is(shown.body.status, 'inactive', `${n.config.name} shows the later change`)
      t.is(n.node.store.getEntity(x.agentId)?.status_changed_at, later.accepted_at)
    }
  }
)

test.serial(
  "a batch of status changes is applied to each entity it names, held once in each one's history, and waits for an entity not here yet",
  async t => {
    const [x, y, later] = [agent(dev, 9), agent(dev, 10), agent(dev, 11)]
    for (const e of [x, y])
      t.is((await http(c.url, 'POST', '/v1/entities', { body: specRegistration(dev, e) })).status, 201)
    await untilServed([a, b], y.agentId, 'the registrations')
    await untilServed([a, b], x.agentId, 'the registrations')
    // C (the home) states three statuses at once; the third entity is registered only afterwards,
    // though before the batch's time, so A and B apply its change once its registration arrives.
    const at = new Date(Date.now() + 3_000).toISOString()
    const batch = statusBatchOperation(
      c.node.identity,
      [x, y, later].map(e => ({ entity_id: e.agentId, status: 'inactive' as const, last_heartbeat: null })),
      at
    )
    await c.node.mesh!.libp2p.services.pubsub.publish(topicOf(batch.kind), encodeBatch([encodeOperation(batch)]))
    const holds = (n: TestNode, id: string) =>
      n.node.store.operationsOf(id).some(o => o.node_signature === batch.node_signature)
    for (const n of [a, b])
      await until(`${n.config.name} applies the batch`, () =>
        holds(n, x.agentId) && holds(n, y.agentId) ? true : undefined
      )
    t.is((await http(c.url, 'POST', '/v1/entities', { body: specRegistration(dev, later) })).status, 201)
    for (const n of [a, b]) {
      await until(`${n.config.name} applies the deferred change`, () => (holds(n, later.agentId) ? true : undefined))
      for (const e of [x, y, later]) {
        const shown = await entityOn(n, e.agentId)
        t.is(shown.body.status, 'inactive', `${n.config.name} shows ${e.agentId} inactive`)
        t.is(n.node.store.getEntity(e.agentId)?.status_changed_at, at)
      }
      const copies = [...n.node.store.allOperations()].filter(o => o.node_signature === batch.node_signature)
      t.is(copies.length, 1, `${n.config.name} stores the batch once`)
    }
    // A batch from a node that is not the entities' home changes nothing.
    const forged = statusBatchOperation(
      b.node.identity,
      [{ entity_id: x.agentId, status: 'active', last_heartbeat: null }],
      new Date(Date.now() + 4_000).toISOString()
    )
    const staleBefore = a.node.mesh!.gossip.stats.received.stale
    await b.node.mesh!.libp2p.services.pubsub.publish(topicOf(forged.kind), encodeBatch([encodeOperation(forged)]))
    await until('A has judged the batch from B (stale: nothing in it is for B to say)', () =>
      a.node.mesh!.gossip.stats.received.stale > staleBefore ? true : undefined
    )
    t.false(a.node.store.operationsOf(x.agentId).some(o => o.node_signature === forged.node_signature))
    t.is((await entityOn(a, x.agentId)).body.status, 'inactive')
  }
)

test.serial('a burst of writes travels in a few gossip messages, and every node holds it', async t => {
  const burst = Array.from({ length: 40 }, (_, i) => agent(dev, 100 + i))
  const before = { ...a.node.mesh!.gossip.stats }
  const started = performance.now()
  const replies = await Promise.all(
    burst.map(x => http(a.url, 'POST', '/v1/entities', { body: specRegistration(dev, x) }))
  )
  const elapsed = performance.now() - started
  t.deepEqual(
    replies.map(r => r.status),
    burst.map(() => 201)
  )
  for (const n of [b, c]) {
    await until(`${n.config.name} holds the burst`, async () => {
      for (const x of burst) if ((await entityOn(n, x.agentId)).status !== 200) return undefined
      return true
    })
  }
  const after = a.node.mesh!.gossip.stats
  const operations = after.published - before.published
  const messages = after.messages_published - before.messages_published
  t.log(`${operations} operations in ${messages} messages, written in ${elapsed.toFixed(0)} ms`)
  t.true(operations >= burst.length)
  // Batched: fewer messages than operations, and at most one flush (a message per topic) per 20 ms
  // pacing interval while the writes came in, plus the last one. How many intervals the burst
  // spans depends on the machine's speed, so that is the bound rather than a fixed count.
  t.true(messages < operations, `${operations} operations took ${messages} messages`)
  const intervals = Math.ceil(elapsed / 20) + 1
  t.true(messages <= 2 * intervals, `${messages} messages in ${intervals} pacing intervals`)
})

test.serial('a node started after the writes converges by sync', async t => {
  const kept = await http(a.url, 'POST', '/v1/entities', {
    body: specRegistration(dev, third, { summary: 'Registered before D existed' })
  })
  t.is(kept.status, 201)
  await untilServed([b, c], third.agentId, 'the late registration')
  const d = await startTestNode({
    name: 'node-d',
    host: 'd.registry.test',
    p2p: { ...MESH, bootstrap: [tcpAddress(b)] }
  })
  try {
    const copy = await until('D holds the registrations made before it started', async () => {
      const r = await entityOn(d, third.agentId)
      return r.status === 200 && (await entityOn(d, second.agentId)).status === 200 ? r.body : undefined
    })
    t.is(copy.home_registry, 'a.registry.test')
    const gone = await until('D holds the tombstone', async () => {
      const r = await entityOn(d, first.agentId)
      return r.status === 404 && /deregistered/.test(r.body.message) ? r.body : undefined
    })
    t.truthy(gone)
    // Same operations everywhere, eventually: A's sweep keeps sealing status changes, which reach D
    // through B by gossip or, when gossip drops them on a loaded machine, by the 5 s sync.
    await sameOperations(d, a)
    await sameOperations(b, a)
    t.pass()
  } finally {
    await d.stop()
  }
})

test.serial('an entity or a name a node lacks is found through the DHT and fetched from its home', async t => {
  // C stops taking gossip and sync, so what A registers now reaches C only if C goes looking.
  await c.node.mesh!.sync.stop()
  c.node.mesh!.gossip.stop()
  const owner = developer(34)
  const hidden = agent(owner, 0)
  t.is(await claimHandle(a, owner, 'hidden'), 201)
  t.is(
    (await http(a.url, 'POST', '/v1/entities', { body: specRegistration(owner, hidden, { entity_name: 'finder' }) }))
      .status,
    201
  )
  // A announces the bucket of its home entities the ID falls in, and its host for its names.
  const locator = a.node.mesh!.locator
  await until("A announced the entity's bucket and its host", () =>
    locator.hasAnnounced(homeBucketKey(hidden.agentId)!) && locator.hasAnnounced('host:a.registry.test')
      ? true
      : undefined
  )
  t.falsy(c.node.store.getEntity(hidden.agentId), 'C does not hold it yet')

  const found = await http(c.url, 'GET', `/v1/entities/${hidden.agentId}`)
  t.is(found.status, 200, JSON.stringify(found.body))
  t.is(found.body.source, 'network')
  t.is(found.body.home_registry, 'a.registry.test')
  t.truthy(c.node.store.getEntity(hidden.agentId), 'verified and kept')

  const other = agent(owner, 1)
  t.is(
    (await http(a.url, 'POST', '/v1/entities', { body: specRegistration(owner, other, { entity_name: 'second' }) }))
      .status,
    201
  )
  const resolved = await http(c.url, 'GET', `/v1/resolve?fqan=${encodeURIComponent('a.registry.test/hidden/second')}`)
  t.is(resolved.status, 200, JSON.stringify(resolved.body))
  t.is(resolved.body.entity_id, other.agentId)
  t.is(resolved.body.source, 'network')

  const nowhere = await http(c.url, 'GET', '/v1/entities/zns:0123456789abcdef0123456789abcdef')
  t.is(nowhere.status, 404)
})

test.serial("a node restarted on its data still resolves another registry's names, and not a released one", async t => {
  const owner = developer(34)
  const finder = agent(owner, 0)
  const resolve = (n: TestNode, fqan: string) => http(n.url, 'GET', `/v1/resolve?fqan=${encodeURIComponent(fqan)}`)
  await until("B resolves A's name from gossip", async () =>
    (await resolve(b, 'a.registry.test/hidden/finder')).status === 200 ? true : undefined
  )
  await b.stop(true)
  // Without its mesh, B can only answer from what it folded out of its own log at start.
  b = await startTestNode({ name: 'node-b', host: 'b.registry.test' }, b.dataDir)
  const resolved = await resolve(b, 'a.registry.test/hidden/finder')
  t.is(resolved.status, 200, JSON.stringify(resolved.body))
  t.is(resolved.body.entity_id, finder.agentId)
  t.is(resolved.body.source, 'network')
  t.is((await resolve(b, 'a.registry.test/acme/translator')).status, 404, 'released before the restart')
  t.is((await http(b.url, 'GET', '/v1/resolve/hidden/finder')).status, 404, "B's own namespace stays apart")
})
