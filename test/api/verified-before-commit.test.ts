/**
 * Gossip forwards an operation once it is verified, while its commit goes on (src/mesh/gossip.ts):
 * replication calls `verified` after every check and before the write, and never for an operation
 * that fails a check. Two real nodes without a mesh: X accepts the writes, Y replays X's operations.
 */
import test from 'ava'
import type { Operation } from '../../src/store/records.js'
import { agent, developer, sign, specRegistration } from '../helpers/identities.js'
import { http, testNodes, type TestNode } from '../helpers/node.js'

const nodes = testNodes()
test.after.always(nodes.stopAll)

const dev = developer(61)

/** The operations `subject` has on `n`, by kind. */
const opOf = (n: TestNode, subject: string, kind: Operation['kind']): Operation => {
  const op = n.node.store.operationsOf(subject).find(o => o.kind === kind)
  if (!op) throw new Error(`no ${kind} of ${subject}`)
  return op
}

test('a replayed write is verified before its commit; a forged one never is', async t => {
  const [x, y] = await Promise.all([
    nodes.start({ name: 'node-x', host: 'x.registry.test' }),
    nodes.start({ name: 'node-y', host: 'y.registry.test' })
  ])
  const one = agent(dev, 0)
  t.is((await http(x.url, 'POST', '/v1/entities', { body: specRegistration(dev, one) })).status, 201)

  const replay = async (op: Operation): Promise<{ outcome: string; heldWhenVerified: boolean | null }> => {
    let heldWhenVerified: boolean | null = null
    const outcome = await y.node.replication.apply(op, () => {
      heldWhenVerified = y.node.store.operationsOf(op.subject).some(o => o.node_signature === op.node_signature)
    })
    return { outcome, heldWhenVerified }
  }

  // The developer the registration made, then the registration: each verified while not yet stored.
  for (const op of [opOf(x, dev.id, 'developer.implicit'), opOf(x, one.agentId, 'entity.register')]) {
    const { outcome, heldWhenVerified } = await replay(op)
    t.is(outcome, 'applied', op.kind)
    t.is(heldWhenVerified, false, `${op.kind}: verified before its commit`)
  }
  t.truthy(y.node.store.getEntity(one.agentId))

  // The same registration again: stale, found before any check of the owner's signature.
  t.deepEqual(await replay(opOf(x, one.agentId, 'entity.register')), { outcome: 'stale', heldWhenVerified: null })

  // The body altered in transit: the seal fails, nothing is verified or stored.
  const two = agent(dev, 1)
  t.is((await http(x.url, 'POST', '/v1/entities', { body: specRegistration(dev, two) })).status, 201)
  const original = opOf(x, two.agentId, 'entity.register')
  const altered: Operation = {
    ...original,
    body: Buffer.from(
      Buffer.from(original.body as Uint8Array)
        .toString('utf8')
        .replace('Agent 1', 'Agent X')
    )
  }
  let verifiedForged = false
  await t.throwsAsync(
    y.node.replication.apply(altered, () => {
      verifiedForged = true
    })
  )
  t.false(verifiedForged)
  t.is(y.node.store.getEntity(two.agentId), undefined)

  // A deregistration replayed: verified, then the tombstone.
  const del = await http(x.url, 'DELETE', `/v1/entities/${one.agentId}`, {
    headers: { authorization: `Bearer ${sign(one.keyPair, one.agentId)}` }
  })
  t.is(del.status, 200)
  const { outcome, heldWhenVerified } = await replay(opOf(x, one.agentId, 'entity.deregister'))
  t.is(outcome, 'applied')
  t.is(heldWhenVerified, false)
  t.is(y.node.store.getEntity(one.agentId), undefined)
})
