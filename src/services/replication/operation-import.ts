/**
 * An operator's import of signed operations (an export of this or another node): each goes through
 * `ReplicationService.apply`, the path gossip and sync take, so its origin's seal, its owner's
 * signature, ownership, tombstones and replayed signatures are checked as for an operation from a
 * peer. Only the rates that pace peers are left out. What the store holds already is reported as
 * present, so importing a file twice changes nothing.
 */
import { RegistryError } from '../../errors.js'
import type { RegistryStore } from '../../store/registry-store.js'
import type { Operation } from '../../store/records.js'
import type { ImportResult, OperationImportAnswer } from '../../wire/operation-import.js'
import { fromWire } from '../../wire/operations.js'
import type { ReplicationService } from './replication.js'

export interface OperationImportComponents {
  replication: ReplicationService
  store: RegistryStore
  /** This node's registry ID: the operations it sealed come back only with a backup. */
  registryId: string
}

export class OperationImport {
  constructor(private readonly c: OperationImportComponents) {}

  /**
   * Applies a batch of wire operations in order. One that builds on a record not here yet is
   * deferred; those the batch itself supplied are retried at its end, and what is still missing
   * is left `deferred` for the caller to send again after the rest of its file. A full disk stops
   * the batch (RegistryError storage_full): nothing after it is tried.
   */
  async applyBatch(values: readonly unknown[]): Promise<OperationImportAnswer> {
    const results: ImportResult[] = []
    const deferred: [index: number, op: Operation][] = []
    for (const value of values) {
      const index = results.length
      const result = await this.applyValue(value, op => deferred.push([index, op]))
      results.push(result)
    }
    // ReplicationService.apply retries what waited on a subject once that subject is applied.
    for (const [index, op] of deferred) {
      if (this.c.store.holdsAnywhere(op)) results[index] = { outcome: 'applied' }
      else results[index] = await this.applyOne(op)
    }
    return summarize(results)
  }

  private async applyValue(value: unknown, defer: (op: Operation) => void): Promise<ImportResult> {
    let op: Operation
    try {
      op = fromWire(withoutCursor(value))
    } catch (err) {
      return refusal(err)
    }
    const result = await this.applyOne(op)
    if (result.outcome === 'deferred') defer(op)
    return result
  }

  private async applyOne(op: Operation): Promise<ImportResult> {
    if (op.origin === this.c.registryId) {
      return this.c.store.holdsAnywhere(op)
        ? { outcome: 'present' }
        : {
            outcome: 'refused',
            reason: 'own_origin',
            message: 'this node sealed the operation and no longer holds it; its own operations come back with restore'
          }
    }
    try {
      switch (await this.c.replication.apply(op, { rates: false })) {
        case 'applied':
          return { outcome: 'applied' }
        case 'deferred':
          return { outcome: 'deferred' }
        case 'stale':
          return this.c.store.holdsAnywhere(op)
            ? { outcome: 'present' }
            : {
                outcome: 'refused',
                reason: 'stale',
                message: 'a later write or a tombstone here supersedes it, or its signature was used before'
              }
        case 'unsupported':
          return { outcome: 'refused', reason: 'unsupported', message: `${op.kind} is not known to this version` }
        case 'refused':
          return {
            outcome: 'refused',
            reason: 'origin_entities',
            message: `${op.origin} is over p2p.max_entities_per_origin here`
          }
        case 'throttled':
          return { outcome: 'deferred' }
      }
    } catch (err) {
      if (err instanceof RegistryError && err.code === 'storage_full') throw err
      return refusal(err)
    }
  }
}

/** An export line carries its log position (`seq`) for resuming; the operation is the rest. */
function withoutCursor(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || !('seq' in value)) return value
  const { seq: _seq, ...op } = value as Record<string, unknown>
  return op
}

function refusal(err: unknown): ImportResult {
  if (err instanceof RegistryError) return { outcome: 'refused', reason: err.code, message: err.message }
  throw err
}

function summarize(results: ImportResult[]): OperationImportAnswer {
  const answer: OperationImportAnswer = { results, applied: 0, present: 0, deferred: 0, refused: {} }
  for (const r of results) {
    if (r.outcome === 'refused') {
      const reason = r.reason ?? 'refused'
      answer.refused[reason] = (answer.refused[reason] ?? 0) + 1
    } else answer[r.outcome]++
  }
  return answer
}
