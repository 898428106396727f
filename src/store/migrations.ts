/**
 * The migrations between store formats (store-format.ts). At open, each migration from the store's
 * version up to this code's runs in its own write transaction, which also records the version it
 * reaches: one interrupted by a crash is rolled back whole and runs again at the next open.
 */
import { type OperationLog, sealDigest } from './operation-log.js'
import type { EntityRecord } from './records.js'
import type { SignatureLedger } from './signature-ledger.js'
import type { StoreDatabases } from './store-databases.js'
import { CURRENT_FORMAT, FORMAT_VERSION_KEY } from './store-format.js'

/** What a migration works on: the raw databases and the log's and signatures' own writers. */
export interface MigrationContext {
  databases: StoreDatabases
  log: OperationLog
  signatures: SignatureLedger
}

export interface Migration {
  /** The version it migrates from; it leaves the store at `from + 1`. */
  from: number
  /** One line for the log. */
  description: string
  /** Runs inside the migration's write transaction; returns counts worth logging. */
  run(c: MigrationContext): Record<string, number>
}

/** What 0.2.0 recorded in meta instead of a version: each marks a backfill its stores had done. */
const STATUS_TIMES_MARKER = 'status_changed_at'
const USED_SIGNATURES_MARKER = 'used_signatures'

export const MIGRATIONS: readonly Migration[] = [
  {
    from: 1,
    description:
      'complete what older stores lack (seal digests in the subject index, status times on entities, the used-signature index) and replace their marker keys with format_version',
    run: ({ databases: db, log, signatures }) => {
      const counts = { seal_digests: 0, status_times: 0, used_signatures: 0 }
      // Subject index entries written before it kept seal digests: each operation is decoded once
      // here, rather than at every start (sync digests) and every duplicate check (holds).
      // (Rows are collected before any is rewritten: no write while a cursor of the database is open.)
      const undigested = [...db.subjectOperations.getRange()].filter(r => r.value === null).map(r => r.key)
      for (const key of undigested) {
        const op = db.operations.get(key[1])
        if (!op) continue
        void db.subjectOperations.put(key, sealDigest(op.node_signature))
        counts.seal_digests++
      }
      // Entity records of stores made before they carried the time of their last status change:
      // without it each status change from a peer read the entity's whole history. Home entities
      // get it too, unread (their status comes from liveness): the migration need not know whose
      // node this is.
      if (db.meta.get(STATUS_TIMES_MARKER) === undefined) {
        const timed: EntityRecord[] = []
        for (const { value: record } of db.entities.getRange()) {
          if (!record?.entity_id || record.status_changed_at !== undefined) continue
          let changedAt: string | undefined
          for (const o of log.operationsOf(record.entity_id))
            if (
              (o.kind === 'entity.status' || o.kind === 'entity.status.batch') &&
              !(changedAt && changedAt >= o.accepted_at)
            )
              changedAt = o.accepted_at
          if (changedAt !== undefined) timed.push({ ...record, status_changed_at: changedAt })
        }
        for (const record of timed) void db.entities.put(record.entity_id, record)
        counts.status_times = timed.length
      }
      // Logs written before client signatures were single-use: remember every signature they hold.
      if (db.meta.get(USED_SIGNATURES_MARKER) === undefined) {
        const before = db.usedSignatures.getCount()
        for (const op of log.allOperations()) signatures.rememberLogged(op)
        counts.used_signatures = db.usedSignatures.getCount() - before
      }
      void db.meta.remove(STATUS_TIMES_MARKER)
      void db.meta.remove(USED_SIGNATURES_MARKER)
      return counts
    }
  }
]

export interface AppliedMigration {
  from: number
  to: number
  description: string
  counts: Record<string, number>
  ms: number
}

/**
 * Brings a store from `version` up to CURRENT_FORMAT, one transaction per migration; `applied` is
 * told of each once it is committed.
 */
export async function migrate(
  c: MigrationContext,
  version: number,
  applied: (m: AppliedMigration) => void
): Promise<void> {
  for (const migration of MIGRATIONS) {
    if (migration.from < version) continue
    const started = performance.now()
    const counts = await c.databases.root.transaction(() => {
      const counts = migration.run(c)
      void c.databases.meta.put(FORMAT_VERSION_KEY, migration.from + 1)
      return counts
    })
    applied({
      from: migration.from,
      to: migration.from + 1,
      description: migration.description,
      counts,
      ms: Math.round(performance.now() - started)
    })
  }
}

// The list and the version new stores are written with must agree.
if (MIGRATIONS.at(-1)!.from + 1 !== CURRENT_FORMAT || MIGRATIONS.some((m, i) => m.from !== i + 1))
  throw new Error('store migrations must lead from format 1 up to CURRENT_FORMAT, one version at a time')
