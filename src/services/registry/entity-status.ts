/**
 * Status changes other nodes announce for the entities whose home they are (`entity.status`, and
 * `entity.status.batch` for many at once), each signed by that node: applied only from an
 * entity's home, the latest change winning, every such operation kept in the entity's history.
 */
import { RegistryError } from '../../errors.js'
import { parseSignature } from '../../identity/encoding.js'
import type { EntityRecord, Operation } from '../../store/records.js'
import { validate } from '../../wire/validate.js'
import { StatusBatchBody } from '../../wire/operations.js'
import type { ServiceComponents } from './components.js'
import { bodyOf, registrationOf } from './operations.js'
import { MissingDependency, StaleOperation } from './writes.js'

/** An `entity.status` body, checked against its operation. */
interface StatusChange {
  status: 'active' | 'inactive'
  lastHeartbeat: string | null
}

export class EntityStatusChanges {
  /** `changed`: told of each entity whose record a status change rewrote. */
  constructor(
    private readonly c: ServiceComponents,
    private readonly changed: (entityId: string) => void
  ) {}

  /** See EntityService.applyStatus. */
  async apply(op: Operation, record: EntityRecord | undefined): Promise<void> {
    const { status, lastHeartbeat } = checkedStatusChange(op)
    if (!record) throw new MissingDependency(op.subject)
    if (this.homeOf(record) !== op.origin)
      throw new RegistryError(
        'operation_invalid',
        "Status changes are accepted only from the entity's home node.",
        'origin'
      )
    if (op.accepted_at < record.registered_at) throw new StaleOperation()
    const next = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const current = tx.getEntity(op.subject)
        if (!current) throw new MissingDependency(op.subject)
        // Decided inside the transaction, so that of two concurrent ones the later always wins.
        const latest = this.isLatestStatus(current, op.accepted_at)
        tx.appendOperation(op)
        if (!latest) return null
        const updated: EntityRecord = {
          ...current,
          status,
          last_heartbeat: lastHeartbeat,
          status_changed_at: op.accepted_at
        }
        tx.putEntity(updated)
        return updated
      })
    )
    if (next) this.applied(next)
  }

  /** See EntityService.applyStatusBatch. */
  async applyBatch(op: Operation): Promise<{ added: number; missing: string[] }> {
    const body = validate(StatusBatchBody, bodyOf(op), 'operation_invalid')
    if (body.registry_id !== op.origin || body.changed_at !== op.accepted_at)
      throw new RegistryError(
        'operation_invalid',
        'An entity.status.batch body is {registry_id, changed_at, changes} for its origin and time.',
        'body'
      )
    if (new Set(body.changes.map(c => c.entity_id)).size !== body.changes.length)
      throw new RegistryError('operation_invalid', 'An entity.status.batch names each entity once.', 'body')
    if (!parseSignature(op.auth.signature))
      throw new RegistryError('signature_invalid', 'The status is not signed by its origin node.')
    const missing: string[] = []
    const { updated, added } = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const held: string[] = []
        const updated: EntityRecord[] = []
        for (const change of body.changes) {
          const current = tx.getEntity(change.entity_id)
          if (!current) missing.push(change.entity_id)
          if (!current || this.homeOf(current) !== op.origin || op.accepted_at < current.registered_at) continue
          held.push(change.entity_id)
          if (!this.isLatestStatus(current, op.accepted_at)) continue
          const next: EntityRecord = {
            ...current,
            status: change.status,
            last_heartbeat: change.last_heartbeat,
            status_changed_at: op.accepted_at
          }
          tx.putEntity(next)
          updated.push(next)
        }
        return { updated, added: held.length === 0 ? 0 : tx.appendOperation(op, held) }
      })
    )
    for (const next of updated) this.applied(next)
    return { added, missing }
  }

  /** What follows a status change applied to a record: the catalog, the search index and the event. */
  private applied(next: EntityRecord): void {
    this.changed(next.entity_id)
    this.c.catalog.upsert(next)
    this.c.bus.publish(
      'agent_status',
      {
        entity_id: next.entity_id,
        status: next.status,
        last_heartbeat: next.last_heartbeat,
        changed_at: next.status_changed_at,
        home_registry: next.home_registry
      },
      next
    )
  }

  /** The registry ID of the record's home node: the origin of its registration. */
  private homeOf(record: EntityRecord): string | undefined {
    if (record.home_registry_id !== undefined) return record.home_registry_id
    return registrationOf(this.c.store.operationsOf(record.entity_id), record)?.origin
  }

  /** Whether a status operation of this time is later than every one the record has seen. */
  private isLatestStatus(record: EntityRecord, at: string): boolean {
    // Every record a status change has touched carries its time (older stores are migrated).
    return record.status_changed_at === undefined || record.status_changed_at < at
  }
}

/**
 * An `entity.status` operation's body, checked against the operation: its subject, origin and a
 * signature in a valid form. The operation's seal (verified by the caller) covers the body and
 * that signature, made by the same key, so a second verification would prove nothing more.
 */
function checkedStatusChange(op: Operation): StatusChange {
  let body: { entity_id?: unknown; status?: unknown; last_heartbeat?: unknown; registry_id?: unknown } = {}
  if (op.body)
    try {
      body = bodyOf(op) as typeof body
    } catch {
      /* checked below */
    }
  const status = body.status
  if (
    body.entity_id !== op.subject ||
    (status !== 'active' && status !== 'inactive') ||
    body.registry_id !== op.origin ||
    (body.last_heartbeat !== null && typeof body.last_heartbeat !== 'string')
  ) {
    throw new RegistryError(
      'operation_invalid',
      'An entity.status body is {entity_id, status, last_heartbeat, changed_at, registry_id} for its subject and origin.',
      'body'
    )
  }
  if (!parseSignature(op.auth.signature))
    throw new RegistryError('signature_invalid', 'The status is not signed by its origin node.')
  return { status, lastHeartbeat: body.last_heartbeat as string | null }
}
