/**
 * A sweep's status operations are signed in a worker thread holding the node's key: they must be
 * byte for byte those the main thread makes, and a worker that goes away loses no batch.
 */
import test from 'ava'
import { parseSignature } from '../../src/identity/encoding.js'
import { verifyRaw } from '../../src/identity/keys.js'
import { operationSigningBytes, type StatusStatement, statusOperation } from '../../src/services/operations.js'
import { StatusSigner } from '../../src/services/status-signer.js'
import { nodeIdentity } from '../helpers/identities.js'

const statements: StatusStatement[] = Array.from({ length: 40 }, (_, n) => ({
  entityId: `zns:${n.toString(16).padStart(32, '0')}`,
  status: n % 3 === 0 ? 'active' : 'inactive',
  lastHeartbeat: n % 2 === 0 ? null : '2026-11-27T10:00:00.000Z',
  changedAt: '2026-11-27T10:05:00.000Z'
}))

test('the worker signs the operations the main thread would, and they verify', async t => {
  const identity = nodeIdentity('status.test')
  const signer = new StatusSigner(identity, { worker: true })
  t.teardown(() => signer.close())
  await signer.start()
  const signed = await signer.sign(statements)
  t.deepEqual(
    signed,
    statements.map(s => statusOperation(identity, s))
  )
  const key = identity.keyPair.publicKey
  for (const op of signed) {
    t.true(Buffer.isBuffer(op.body), 'bodies come back as Buffers')
    t.is(op.origin_host, 'status.test')
    t.true(verifyRaw(key, op.body as Buffer, parseSignature(op.auth.signature) as Buffer))
    const { node_signature, ...unsealed } = op
    t.true(verifyRaw(key, operationSigningBytes(unsealed), parseSignature(node_signature) as Buffer))
  }
})

test('a batch the worker held when it stopped is signed inline; later ones too', async t => {
  const identity = nodeIdentity()
  const signer = new StatusSigner(identity, { worker: true })
  await signer.start()
  const held = signer.sign(statements)
  await signer.close()
  t.deepEqual(
    await held,
    statements.map(s => statusOperation(identity, s))
  )
  t.is((await signer.sign(statements.slice(0, 1))).length, 1)
})

test('without the worker every batch is signed inline', async t => {
  const identity = nodeIdentity()
  const signer = new StatusSigner(identity, { worker: false })
  await signer.start()
  t.deepEqual(
    await signer.sign(statements.slice(0, 3)),
    statements.slice(0, 3).map(s => statusOperation(identity, s))
  )
})
