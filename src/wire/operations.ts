/**
 * Operations as nodes exchange them (gossip and `/zns/sync/1.0.0`, protocols/README.md): the stored
 * operation with its body bytes as standard base64. Nothing in it is changed in transit; the
 * receiver checks the origin's seal over exactly these fields and the owner's signature over the body.
 */
import { Type, type Static } from '@sinclair/typebox'
import type { Operation } from '../store/records.js'
import { validate } from './validate.js'
import { parseJsonBytes } from './json.js'
import { bufferView } from '../util/buffer-view.js'

export const OPERATION_LIMITS = {
  /** Bytes of one encoded operation: the largest request body (64 KiB) as base64, with room for the rest. */
  encodedBytes: 96 * 1024,
  /** Bytes of one gossip message (a batch); a sender fills batches up to a quarter of this. */
  batchBytes: 1024 * 1024,
  /** Operations in one gossip message. */
  batchOperations: 1000,
  /** Status changes in one `entity.status.batch` (about 120 bytes each). */
  statusChanges: 500
} as const

const Signature = Type.String({ maxLength: 200 })

export const WireOperation = Type.Object(
  {
    v: Type.Literal(1, { description: 'format version' }),
    kind: Type.Union(
      [
        'entity.register',
        'entity.update',
        'entity.deregister',
        'entity.status',
        'entity.status.batch',
        'developer.register',
        'developer.implicit',
        'developer.update',
        'developer.deregister',
        'handle.claim',
        'handle.verify',
        'handle.release',
        'name.bind',
        'name.update',
        'name.release',
        'attestation.add'
      ].map(k => Type.Literal(k))
    ),
    subject: Type.String({ minLength: 1, maxLength: 300 }),
    body: Type.Union([
      Type.String({ maxLength: 90 * 1024, description: 'the request body as the client sent it, standard base64' }),
      Type.Null()
    ]),
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

/**
 * The body of `entity.status.batch`: the home node's statement of several of its entities'
 * statuses, all changed at `changed_at` (the operation's accepted_at), as canonical JSON.
 */
export const StatusBatchBody = Type.Object(
  {
    registry_id: Type.String({ pattern: '^zns:registry:[0-9a-f]{32}$' }),
    changed_at: Type.String({ maxLength: 40 }),
    changes: Type.Array(
      Type.Object(
        {
          entity_id: Type.String({ minLength: 1, maxLength: 300 }),
          status: Type.Union([Type.Literal('active'), Type.Literal('inactive')]),
          last_heartbeat: Type.Union([Type.String({ maxLength: 40 }), Type.Null()])
        },
        { additionalProperties: false }
      ),
      { minItems: 1, maxItems: OPERATION_LIMITS.statusChanges }
    )
  },
  { $id: 'StatusBatchBody', additionalProperties: false }
)
export type StatusBatchBody = Static<typeof StatusBatchBody>

/** Whether an operation is in the history of several subjects (a batch of status changes). */
export const isShared = (op: Pick<Operation, 'kind'>): boolean => op.kind === 'entity.status.batch'

/** The entities a batch of status changes names (for traces; the body is not validated here). */
export function batchSubjects(op: Operation): string[] {
  const changes = op.body ? (parseJsonBytes(op.body) as { changes?: { entity_id?: unknown }[] }).changes : undefined
  return Array.isArray(changes) ? changes.map(c => String(c?.entity_id)) : []
}

export function toWire(op: Operation): WireOperation {
  return {
    v: 1,
    kind: op.kind,
    subject: op.subject,
    body: op.body === null ? null : bufferView(op.body).toString('base64'),
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

/**
 * The signed bytes of operations this node sealed, until their gossip message is built: the wire
 * form is those bytes with `v` and the seal added, so the body's base64 and the JSON are not made
 * a second time (a few kilobytes of garbage and microseconds per write).
 */
const sealedBytes = new WeakMap<Operation, Uint8Array>()

/** Remembers the bytes `op`'s seal signs: `operationSigningBytes(op)`, the wire form less `v` and the seal. */
export function keepSealedBytes(op: Operation, signed: Uint8Array): void {
  sealedBytes.set(op, signed)
}

export function encodeOperation(op: Operation): Uint8Array {
  const signed = sealedBytes.get(op)
  if (!signed) return Buffer.from(JSON.stringify(toWire(op)))
  // Members in another order than toWire's: a receiver reads JSON, not its order.
  const head = Buffer.from(`{"node_signature":${JSON.stringify(op.node_signature)},"v":1,`)
  return Buffer.concat([head, signed.subarray(1)])
}

/**
 * A gossip message: `{"ops": [wire operations]}`, the operations one node accepted within one
 * pacing interval, encoded once each (`encodeOperation`'s bytes are reused as they are).
 */
export function encodeBatch(encoded: readonly Uint8Array[]): Uint8Array {
  const parts: Uint8Array[] = [BATCH_OPEN]
  encoded.forEach((op, i) => {
    if (i > 0) parts.push(COMMA)
    parts.push(op)
  })
  parts.push(BATCH_CLOSE)
  return Buffer.concat(parts)
}
const BATCH_OPEN = Buffer.from('{"ops":[')
const COMMA = Buffer.from(',')
const BATCH_CLOSE = Buffer.from(']}')

/** Decodes and validates a gossip message; throws on anything malformed (the whole message is refused). */
export function decodeBatch(bytes: Uint8Array): Operation[] {
  if (bytes.byteLength > OPERATION_LIMITS.batchBytes)
    throw new Error(
      `a gossip message of ${bytes.byteLength} bytes is over the ${OPERATION_LIMITS.batchBytes}-byte limit`
    )
  const value = parseJsonBytes(bytes) as { ops?: unknown }
  if (!Array.isArray(value.ops) || value.ops.length === 0 || value.ops.length > OPERATION_LIMITS.batchOperations) {
    throw new Error(`a gossip message carries "ops", 1 to ${OPERATION_LIMITS.batchOperations} operations`)
  }
  return value.ops.map(fromWire)
}
