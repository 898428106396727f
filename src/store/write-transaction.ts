/**
 * What the services may do inside one store commit (WriteTransaction), and its implementation
 * over the store's databases. Every write here is one of the commit's LMDB transaction: reads see
 * it at once, and it is kept only if the whole commit is.
 */
import type { AttestationTable } from './attestation-table.js'
import type { NameTables } from './name-tables.js'
import { DuplicateOperation, type OperationLog, sealDigest } from './operation-log.js'
import type {
  Approval,
  AttestationRecord,
  DeveloperRecord,
  EntityRecord,
  HandleRecord,
  LivenessRecord,
  NameBinding,
  NameVersion,
  Operation,
  Tombstone
} from './records.js'
import type { SignatureLedger, SignatureReuse } from './signature-ledger.js'
import { keyFits, type StoreDatabases } from './store-databases.js'

/** Writes made inside one LMDB transaction; reads inside it see its own writes. */
export interface WriteTransaction {
  getEntity(id: string): EntityRecord | undefined
  getDeveloper(id: string): DeveloperRecord | undefined
  /** Whether the developer is stored, without reading its record (every registration with a proof asks). */
  hasDeveloper(id: string): boolean
  getTombstone(subject: string): Tombstone | undefined
  putEntity(record: EntityRecord): void
  deleteEntity(id: string): void
  putDeveloper(record: DeveloperRecord): void
  deleteDeveloper(id: string): void
  putTombstone(tombstone: Tombstone): void
  deleteTombstone(subject: string): void
  /**
   * Appends an operation to the history of its subject, or of each of `subjects` (an operation
   * shared by several, a batch of status changes: stored once). Returns how many histories it was
   * added to: an operation already held throws DuplicateOperation, but a shared one is added to
   * the histories of those of `subjects` it is not in yet (none: 0). A client signature already
   * used by another operation throws SignatureReplayed, unless `reuse` allows it (SignatureReuse).
   */
  appendOperation(op: Operation, subjects?: readonly string[], reuse?: SignatureReuse): number
  /** Drops a subject's operation history (a tombstone supersedes it), but the operations `keep` accepts. */
  dropOperations(subject: string, keep?: (op: Operation) => boolean): void
  getHandle(handle: string): HandleRecord | undefined
  putHandle(record: HandleRecord): void
  deleteHandle(handle: string): void
  getName(handle: string, name: string): NameBinding | undefined
  /** Stores a binding and adds `version` to its history. */
  putName(binding: NameBinding, version: NameVersion): void
  /** Removes a binding with its history. */
  deleteName(handle: string, name: string): void
  namesOfHandle(handle: string): NameBinding[]
  namesOfEntity(entityId: string): NameBinding[]
  getApproval(stateHash: string): Approval | undefined
  putApproval(stateHash: string, approval: Approval): void
  putLiveness(entityId: string, record: LivenessRecord): void
  deleteLiveness(entityId: string): void
  hasAttestation(id: string): boolean
  putAttestation(record: AttestationRecord): void
}

/** The reads a transaction shares with the store outside one (the same key checks). */
export type StoreReads = Pick<
  WriteTransaction,
  'getEntity' | 'getDeveloper' | 'getTombstone' | 'getHandle' | 'getName' | 'namesOfHandle' | 'namesOfEntity'
>

/** The parts of the store a transaction writes to. */
export interface TransactionParts {
  databases: StoreDatabases
  log: OperationLog
  signatures: SignatureLedger
  names: NameTables
  attestations: AttestationTable
}

/**
 * The store's one WriteTransaction: its methods write to the databases directly, so they must be
 * called only inside a commit (whose LMDB transaction then holds every write).
 */
export function writeTransaction(
  reads: StoreReads,
  { databases: db, log, signatures, names, attestations }: TransactionParts
): WriteTransaction {
  return {
    getEntity: id => reads.getEntity(id),
    getDeveloper: id => reads.getDeveloper(id),
    hasDeveloper: id => keyFits(id) && db.developers.doesExist(id),
    getTombstone: subject => reads.getTombstone(subject),
    putEntity: record => {
      void db.entities.put(record.entity_id, record)
    },
    deleteEntity: id => {
      void db.entities.remove(id)
    },
    putDeveloper: record => {
      void db.developers.put(record.developer_id, record)
    },
    deleteDeveloper: id => {
      void db.developers.remove(id)
    },
    putTombstone: t => {
      void db.tombstones.put(t.subject, t)
    },
    deleteTombstone: subject => {
      void db.tombstones.remove(subject)
    },
    appendOperation: (op, subjects, reuse) => {
      const digest = sealDigest(op.node_signature)
      if (subjects !== undefined) return log.appendShared(op, subjects, digest)
      if (log.holds(op, digest)) throw new DuplicateOperation(op)
      signatures.admit(op, reuse)
      log.append(op, digest)
      return 1
    },
    getHandle: handle => reads.getHandle(handle),
    putHandle: record => {
      void db.handles.put(record.handle, record)
    },
    deleteHandle: handle => {
      void db.handles.remove(handle)
    },
    getName: (handle, name) => reads.getName(handle, name),
    putName: (binding, version) => names.put(binding, version),
    deleteName: (handle, name) => names.delete(handle, name),
    namesOfHandle: handle => reads.namesOfHandle(handle),
    namesOfEntity: entityId => reads.namesOfEntity(entityId),
    getApproval: stateHash => db.approvals.get(stateHash),
    putApproval: (stateHash, approval) => {
      void db.approvals.put(stateHash, approval)
    },
    putLiveness: (entityId, record) => {
      void db.liveness.put(entityId, record)
    },
    deleteLiveness: entityId => {
      void db.liveness.remove(entityId)
    },
    dropOperations: (subject, keep) => log.drop(subject, keep),
    hasAttestation: id => attestations.has(id),
    putAttestation: record => attestations.put(record)
  }
}
