import test from 'ava'
import { parsePublicKey, parseSignature } from '../../src/identity/encoding.js'
import { verifyRaw } from '../../src/identity/keys.js'
import {
  operationSigningBytes,
  sealOperation,
  statusBatchOperation,
  statusOperation
} from '../../src/services/registry/operations.js'
import type { Operation } from '../../src/store/records.js'
import { encodeOperation, fromWire, toWire } from '../../src/wire/operations.js'
import { nodeIdentity } from '../helpers/identities.js'

const withHost = nodeIdentity('a.test')
const withoutHost = { ...nodeIdentity(), host: undefined }

function sealed(): Operation[] {
  const at = '2026-11-28T10:00:00.000Z'
  return [withHost, withoutHost].flatMap(identity => [
    sealOperation(identity, {
      kind: 'entity.register',
      subject: 'zns:e1',
      body: new TextEncoder().encode('{"name":"A & <B> \u2028 é \u{1F600}"}'),
      path: '/v1/entities',
      auth: { carrier: 'body', signer: 'self', signature: 'ed25519:x', form: 'spec' },
      accepted_at: at,
      origin: identity.registryId
    }),
    sealOperation(identity, {
      kind: 'entity.deregister',
      subject: 'zns:e1',
      body: null,
      path: '/v1/entities/zns:e1',
      auth: { carrier: 'x-signature', signer: 'self', signature: 'ed25519:y', form: 'id' },
      accepted_at: at,
      origin: identity.registryId
    }),
    statusOperation(identity, 'zns:e2', 'inactive', null, at),
    statusBatchOperation(
      identity,
      [
        { entity_id: 'zns:e3', status: 'inactive', last_heartbeat: null },
        { entity_id: 'zns:e4', status: 'inactive', last_heartbeat: at }
      ],
      at
    )
  ])
}

test('an operation this node sealed is gossiped as the same wire operation, its seal intact', t => {
  for (const op of sealed()) {
    const text = Buffer.from(encodeOperation(op)).toString('utf8')
    t.true(text.startsWith('{"node_signature":'), 'built from the sealed bytes')
    const wire = JSON.parse(text)
    t.deepEqual(wire, JSON.parse(JSON.stringify(toWire(op))), op.kind)
    const received = fromWire(wire)
    t.deepEqual(received, { ...op, body: op.body === null ? null : new Uint8Array(op.body) })
    const { node_signature, ...unsealed } = received
    t.true(
      verifyRaw(parsePublicKey(op.origin_key!)!, operationSigningBytes(unsealed), parseSignature(node_signature)!),
      op.kind
    )
  }
})

test('an operation read back (not sealed here) is encoded from its fields', t => {
  for (const op of sealed()) {
    const copy: Operation = { ...op }
    t.deepEqual(JSON.parse(Buffer.from(encodeOperation(copy)).toString('utf8')), JSON.parse(JSON.stringify(toWire(op))))
  }
})
