import test from 'ava'
import { parsePublicKey, parseSignature } from '../../src/identity/encoding.js'
import { verifyRaw } from '../../src/identity/keys.js'
import { verifyDeletion, verifyEntityRegistration, verifyRawBody } from '../../src/identity/verifiers.js'
import { inlineVerifier } from '../../src/identity/verify-pool.js'
import { operationSigningBytes } from '../../src/services/registry/operations.js'
import { agent, bearer, deployedRegistration, developer, specRegistration } from '../helpers/identities.js'
import { sign } from '../../src/identity/keys.js'
import { http, startTestNode } from '../helpers/node.js'

const dev = developer(4)

test('every write is kept as a signed operation that can be verified again from its stored bytes', async t => {
  const n = await startTestNode()
  try {
    const a = agent(dev, 1)
    t.is((await http(n.url, 'POST', '/v1/entities', { body: deployedRegistration(dev, a) })).status, 201)
    const raw = JSON.stringify({ summary: 'updated' })
    t.is((await http(n.url, 'PUT', `/v1/entities/${a.agentId}`, { raw, headers: bearer(a, raw) })).status, 200)

    const ops = n.node.store.operationsOf(a.agentId)
    t.deepEqual(
      ops.map(o => o.kind),
      ['entity.register', 'entity.update']
    )
    const nodeKey = parsePublicKey(n.node.identity.publicKey)!
    for (const op of ops) {
      const { node_signature, ...unsealed } = op
      t.true(
        verifyRaw(nodeKey, operationSigningBytes(unsealed), parseSignature(node_signature)!),
        `${op.kind} is sealed by the node`
      )
      t.is(op.origin, n.node.identity.registryId)
    }
    const [register, update] = ops as [(typeof ops)[0], (typeof ops)[0]]
    // The owner's signature verifies again from the stored bytes alone (what a peer will do).
    const body = JSON.parse(Buffer.from(register.body!).toString('utf8')) as Record<string, unknown>
    t.is(
      await verifyEntityRegistration(
        body,
        a.keyPair.publicKey,
        parseSignature(register.auth.signature)!,
        inlineVerifier
      ),
      'deployed'
    )
    t.is(register.auth.form, 'deployed')
    t.is(
      await verifyRawBody(update.body!, a.keyPair.publicKey, parseSignature(update.auth.signature)!, inlineVerifier),
      'raw-body'
    )
    t.like(update.auth, { carrier: 'authorization', signer: 'self', form: 'raw-body' })
    t.deepEqual(
      n.node.store.operationsOf(dev.id).map(o => o.kind),
      ['developer.implicit']
    )

    const b = agent(dev, 2)
    t.is((await http(n.url, 'POST', '/v1/entities', { body: specRegistration(dev, b) })).status, 201)
    t.is(
      (
        await http(n.url, 'DELETE', `/v1/entities/${b.agentId}`, {
          headers: { authorization: `Bearer-Dev ${sign(dev.keyPair, b.agentId)}` }
        })
      ).status,
      200
    )
    const afterDelete = n.node.store.operationsOf(b.agentId)
    t.deepEqual(
      afterDelete.map(o => o.kind),
      ['entity.register', 'entity.deregister'],
      'the tombstone supersedes the history but the registration, which holds the keys to verify it'
    )
    t.is(
      await verifyDeletion(
        b.agentId,
        afterDelete[1]!.path!,
        dev.keyPair.publicKey,
        parseSignature(afterDelete[1]!.auth.signature)!,
        inlineVerifier
      ),
      'id'
    )
    t.truthy(n.node.store.getTombstone(b.agentId))
  } finally {
    await n.stop()
  }
})
