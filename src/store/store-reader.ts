/**
 * A second process's read-only view of a node's store: the operation log in sequence order and
 * LMDB's own copy of the environment. LMDB lets readers in other processes share an environment
 * with its one writer, so this opens the data directory without its PID lock, whether the node
 * runs or not; a reader's transaction sees one committed state and never blocks the node's writes.
 */
import './unsliced-strings.js'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { type Database, open, type RootDatabase } from 'lmdb'
import type { AttestationRecord, DeveloperRecord, EntityRecord, LivenessRecord, Operation } from './records.js'
import {
  ATTESTATION_EDGES_DB,
  type AttestationIndexKey,
  keyFits,
  SUBJECT_INDEX_DB,
  type SubjectOperationKey
} from './store-databases.js'
import { structureOptions } from './shared-structures.js'
import { compressionOptions } from './value-compression.js'
import { checkFormatVersion, storedFormatVersion } from './store-format.js'

export const STORE_FILE = 'registry.lmdb'

/** A data directory with no store in it (never started, or the wrong path). */
export class NoStore extends Error {
  override name = 'NoStore'
}

/** The record databases a reader opens besides the log, with the store's own options. */
interface RecordDatabases {
  entities: Database<EntityRecord, string>
  developers: Database<DeveloperRecord, string>
  attestations: Database<AttestationRecord, string>
  attestationIndex: Database<null, AttestationIndexKey>
  attestationEdges: Database<Buffer, Buffer>
  subjectIndex: Database<Uint8Array, SubjectOperationKey>
  /** Absent from a store this version never opened. */
  liveness: Database<LivenessRecord, string> | undefined
}

/** The records of one committed state (`StoreReader.snapshot`). */
export interface StoreSnapshot {
  lastSeq: number
  entities(): Iterable<EntityRecord>
  developers(): Iterable<DeveloperRecord>
  attestations(): Iterable<AttestationRecord>
  /** Every trust edge (attestation-edges.ts), in issuer order: the issuer's raw ID and the edge's 45 bytes. */
  attestationEdges(): Iterable<[issuer: Uint8Array, edge: Uint8Array]>
  /** The log's subject index in subject order: each operation's seal digest under each subject it concerns. */
  sealDigests(): Iterable<[subject: string, seal: Uint8Array]>
  /** The home entities' liveness as last flushed, by entity ID. */
  liveness(): Iterable<[entityId: string, state: LivenessRecord]>
}

export class StoreReader {
  private constructor(
    private readonly root: RootDatabase,
    private readonly operations: Database<Operation, number>,
    private readonly records: RecordDatabases
  ) {}

  static open(dataDir: string): StoreReader {
    const path = join(dataDir, STORE_FILE)
    if (!existsSync(path)) throw new NoStore(`${dataDir} holds no registry store (${STORE_FILE}); check --data`)
    const root = open({ path, readOnly: true, maxDbs: 32, mapSize: 2 ** 34, compression: false })
    try {
      const meta = root.openDB<unknown, string>({ name: 'meta' })
      // A newer format may keep the log otherwise; an older one's log reads as is (migrations add, never rewrite it).
      checkFormatVersion(dataDir, storedFormatVersion(meta))
      // The stored format decides how the log's values decode, as in openStoreDatabases.
      const stored = meta.get('value_compression')
      const compression = stored === undefined ? false : compressionOptions(String(stored))
      const records = structureOptions(meta.get('value_structures'))
      if (compression === null || records === null)
        throw new Error(`${dataDir}: a store format this version of registry-node cannot read`)
      const operations = root.openDB<Operation, number>({ name: 'oplog', ...records, compression })
      return new StoreReader(root, operations, {
        entities: root.openDB<EntityRecord, string>({ name: 'entities', ...records, compression }),
        developers: root.openDB<DeveloperRecord, string>({ name: 'developers', ...records }),
        attestations: root.openDB<AttestationRecord, string>({ name: 'attestations', ...records }),
        attestationIndex: root.openDB<null, AttestationIndexKey>({ name: 'attestation_index' }),
        attestationEdges: root.openDB<Buffer, Buffer>(ATTESTATION_EDGES_DB),
        subjectIndex: root.openDB<Uint8Array, SubjectOperationKey>({ name: SUBJECT_INDEX_DB }),
        // lmdb-js gives undefined for a database a read-only environment does not hold.
        liveness: root.openDB<LivenessRecord, string>({ name: 'liveness', ...records }) as
          | Database<LivenessRecord, string>
          | undefined
      })
    } catch (err) {
      void root.close()
      throw err
    }
  }

  /** The sequence number of the log's last operation (0: empty). */
  lastSeq(): number {
    const [last] = [...this.operations.getKeys({ reverse: true, limit: 1 })] as number[]
    return last ?? 0
  }

  /** Up to `limit` operations after sequence number `after`, in log order, each with its sequence number. */
  operationsAfter(after: number, limit: number): [seq: number, op: Operation][] {
    const out: [number, Operation][] = []
    for (const { key, value } of this.operations.getRange({ start: after + 1, limit })) out.push([key, value])
    return out
  }

  /**
   * `read` given the store as of one moment: the log's last sequence number and every record read
   * through the view belong to the same committed state, whatever the node commits meanwhile. A
   * `read` that returns a promise keeps that state until the promise settles.
   */
  snapshot<T>(read: (view: StoreSnapshot) => T): T {
    const transaction = this.root.useReadTransaction()
    let pending = false
    try {
      const { entities, developers, attestations, attestationEdges, subjectIndex, liveness } = this.records
      const [last] = [...this.operations.getKeys({ reverse: true, limit: 1, transaction })] as number[]
      const result = read({
        lastSeq: last ?? 0,
        *entities() {
          for (const { value } of entities.getRange({ transaction })) yield value
        },
        *developers() {
          for (const { value } of developers.getRange({ transaction })) yield value
        },
        *attestations() {
          for (const { value } of attestations.getRange({ transaction })) yield value
        },
        *attestationEdges() {
          for (const { key, value } of attestationEdges.getRange({ transaction })) yield [key, value]
        },
        *sealDigests() {
          for (const { key, value } of subjectIndex.getRange({ transaction })) yield [key[0], value]
        },
        *liveness() {
          for (const { key, value } of liveness?.getRange({ transaction }) ?? []) yield [key, value]
        }
      })
      if (!(result instanceof Promise)) return result
      pending = true
      return result.finally(() => transaction.done()) as T
    } finally {
      if (!pending) transaction.done()
    }
  }

  getAttestation(id: string): AttestationRecord | undefined {
    return keyFits(id) ? this.records.attestations.get(id) : undefined
  }

  /** The attestations whose subject is `subject`, in ID order. */
  *attestationsOf(subject: string): Iterable<AttestationRecord> {
    if (!keyFits(subject)) return
    for (const key of this.records.attestationIndex.getKeys({
      start: ['s', subject, ''],
      end: ['s', subject, '\uffff']
    }) as Iterable<AttestationIndexKey>) {
      const record = this.records.attestations.get(key[2])
      if (record) yield record
    }
  }

  /**
   * LMDB's copy of the environment (mdb_env_copy2) into the file `path`: one read transaction's
   * snapshot, so every commit made before it began is in the copy and none made during it.
   * `compact` leaves out free pages (slower, smaller).
   */
  backup(path: string, compact: boolean): Promise<void> {
    return this.root.backup(path, compact)
  }

  async close(): Promise<void> {
    await this.root.close()
  }
}
