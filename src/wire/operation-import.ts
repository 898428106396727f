/**
 * An operator's import of signed operations (`POST /v1/admin/operations`, `registry-node import`):
 * the lines of an export, a batch at a time, and what became of each.
 */
import { Type, type Static } from '@sinclair/typebox'

export const IMPORT_LIMITS = {
  /** Operations in one request. */
  batchOperations: 1000,
  /** Bytes of one request: a batch of the largest operations (about 90 KiB each) fits a few dozen. */
  bodyBytes: 4 * 1024 * 1024
} as const

export const OperationImportRequest = Type.Object(
  {
    operations: Type.Array(Type.Unknown({ description: 'an operation in its wire form (an export line)' }), {
      minItems: 1,
      maxItems: IMPORT_LIMITS.batchOperations,
      description: 'applied in this order; each is checked on its own, so one refused does not stop the others'
    })
  },
  { $id: 'OperationImportRequest' }
)
export type OperationImportRequest = Static<typeof OperationImportRequest>

export const ImportOutcome = Type.Union(
  [Type.Literal('applied'), Type.Literal('present'), Type.Literal('deferred'), Type.Literal('refused')],
  {
    description:
      'applied: stored now; present: held already; deferred: it builds on a record not here yet (send it again after the rest); refused: see reason'
  }
)
export type ImportOutcome = Static<typeof ImportOutcome>

export const ImportResult = Type.Object(
  {
    outcome: ImportOutcome,
    reason: Type.Optional(
      Type.String({
        description:
          'why it was refused: an error code (operation_invalid, signature_invalid, …), stale (a later write or a tombstone here supersedes it), own_origin (this node sealed it and does not hold it: restore a backup instead), unsupported, origin_entities (the origin is over p2p.max_entities_per_origin)'
      })
    ),
    message: Type.Optional(Type.String())
  },
  { $id: 'ImportResult' }
)
export type ImportResult = Static<typeof ImportResult>

export const OperationImportAnswer = Type.Object(
  {
    results: Type.Array(ImportResult, { description: 'one per operation sent, in order' }),
    applied: Type.Integer({ minimum: 0 }),
    present: Type.Integer({ minimum: 0 }),
    deferred: Type.Integer({ minimum: 0 }),
    refused: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description: 'refusals by reason' })
  },
  { $id: 'OperationImportAnswer' }
)
export type OperationImportAnswer = Static<typeof OperationImportAnswer>
