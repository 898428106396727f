/**
 * Operations as nodes exchange them (gossip and `/zns/sync/1.0.0`, protocols/README.md): the stored
 * operation with its body bytes as standard base64. Nothing in it is changed in transit; the
 * receiver checks the origin's seal over exactly these fields and the owner's signature over the body.
 */
import { Type, type Static } from '@sinclair/typebox'
import type { Operation } from '../store/records.js'
import { validate } from './validate.js'

export const OPERATION_LIMITS = {
  /** Bytes of one encoded operation: the largest request body (64 KiB) as base64, with room for the rest. */
  encodedBytes: 96 * 1024
} as const

const Signature = Type.String({ maxLength: 200 })

export const WireOperation = Type.Object(
  {
    v: Type.Literal(1, { description: 'format version' }),
    kind: Type.Union([
      'entity.register', 'entity.update', 'entity.deregister', 'entity.status',
      'developer.register', 'developer.implicit', 'developer.update', 'developer.deregister',
      'handle.claim', 'handle.verify', 'handle.release', 'name.bind', 'name.update', 'name.release'
    ].map(k => Type.Literal(k))),
    subject: Type.String({ minLength: 1, maxLength: 300 }),
    body: Type.Union([Type.String({ maxLength: 90 * 1024, description: 'the request body as the client sent it, standard base64' }), Type.Null()]),
    path: Type.Union([Type.String({ maxLength: 2048 }), Type.Null()]),
    auth: Type.Object({
      carrier: Type.Union(['body', 'authorization', 'x-signature', 'proof', 'node'].map(k => Type.Literal(k))),
      signer: Type.Union(['self', 'developer', 'node'].map(k => Type.Literal(k))),
      signature: Signature,
      form: Type.String({ maxLength: 32 })
    }),
    accepted_at: Type.String({ maxLength: 40 }),
    origin: Type.String({ pattern: '^zns:registry:[0-9a-f]{32}$' }),
    origin_key: Type.String({ maxLength: 100 }),
    origin_host: Type.Optional(Type.String({ maxLength: 253 })),
    node_signature: Signature
  },
  { $id: 'WireOperation' }
)
export type WireOperation = Static<typeof WireOperation>

export function toWire(op: Operation): WireOperation {
  return {
    v: 1,
    kind: op.kind,
    subject: op.subject,
    body: op.body === null ? null : Buffer.from(op.body).toString('base64'),
    path: op.path,
    auth: op.auth,
    accepted_at: op.accepted_at,
    origin: op.origin,
    origin_key: op.origin_key ?? '',
    ...(op.origin_host !== undefined ? { origin_host: op.origin_host } : {}),
    node_signature: op.node_signature
  } as WireOperation
}

/** Validates a decoded wire operation (throws `operation_invalid`) and returns it as stored. */
export function fromWire(value: unknown): Operation {
  const wire = validate(WireOperation, value, 'operation_invalid')
  const { v: _version, body, ...rest } = wire
  return { ...rest, body: body === null ? null : new Uint8Array(Buffer.from(body, 'base64')) } as Operation
}

export function encodeOperation(op: Operation): Uint8Array {
  return Buffer.from(JSON.stringify(toWire(op)))
}

export function decodeOperation(bytes: Uint8Array): Operation {
  if (bytes.byteLength > OPERATION_LIMITS.encodedBytes) throw new Error(`an operation of ${bytes.byteLength} bytes is over the ${OPERATION_LIMITS.encodedBytes}-byte limit`)
  return fromWire(JSON.parse(Buffer.from(bytes).toString('utf8')))
}
