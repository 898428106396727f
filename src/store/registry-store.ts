/**
 * The node's store: records, the operation log, tombstones and the signatures already used, in
 * one LMDB environment. Reads go straight to the databases; every write goes through `commit`,
 * which resolves only once its transaction is committed and flushed to disk. The parts live in
 * their own modules (store-databases, operation-log, signature-ledger, name-tables,
 * write-transaction, commit-queue); this class composes them behind one surface.
 */
import type { Database } from 'lmdb'
import { CommitQueue, type StoreCommitStats } from './commit-queue.js'
import { AttestationTable, type AttestationPage } from './attestation-table.js'
import { NameTables } from './name-tables.js'
import { type CommittedOperations, OperationLog, sealDigest } from './operation-log.js'
import type {
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
import { type AppliedMigration, migrate } from './migrations.js'
import { STRUCTURES_KEY } from './shared-structures.js'
import { SignatureLedger } from './signature-ledger.js'
import {
  keyFits,
  type OpenedStore,
  openStoreDatabases,
  type PeerBan,
  PURGE_CHUNK,
  scanInTurns,
  type StoreDatabases,
  type SubjectOperationKey
} from './store-databases.js'
import { FORMAT_VERSION_KEY } from './store-format.js'
import { type WriteTransaction, writeTransaction } from './write-transaction.js'

export type { StoreCommitStats } from './commit-queue.js'
export {
  type CommittedOperations,
  DuplicateOperation,
  SEAL_DIGEST_BYTES,
  type SubjectSeal,
  sealDigest
} from './operation-log.js'
export {
  SignatureReplayed,
  type SignatureReuse,
  signatureFingerprint,
  type UsedSignature
} from './signature-ledger.js'
export type { WriteTransaction } from './write-transaction.js'
export type { AppliedMigration } from './migrations.js'
export type { PeerBan } from './store-databases.js'
export { CURRENT_FORMAT, StoreFormatError } from './store-format.js'

export class RegistryStore {
  private readonly db: StoreDatabases
  private readonly sharingStructures: readonly object[]
  private readonly log: OperationLog
  private readonly signatures: SignatureLedger
  private readonly names: NameTables
  private readonly attestationTable: AttestationTable
  private readonly commits: CommitQueue

  private constructor(opened: OpenedStore, commitDelayMs: number, synchronous: boolean) {
    const { databases: db } = opened
    this.db = db
    this.sharingStructures = opened.sharingStructures
    // Entries without a seal digest exist only until the migration (run before any other use) fills them.
    const index = db.subjectOperations as Database<Uint8Array, SubjectOperationKey>
    this.log = new OperationLog(db.operations, index, db.sharedOperations, opened.lastSeq)
    this.signatures = new SignatureLedger(db.usedSignatures)
    this.names = new NameTables(db.names, db.nameVersions, db.entityNames)
    this.attestationTable = new AttestationTable(db.attestations, db.attestationIndex, db.attestationEdges)
    this.commits = new CommitQueue({
      root: db.root,
      guard: opened.guard,
      log: this.log,
      tx: writeTransaction(this, {
        databases: db,
        log: this.log,
        signatures: this.signatures,
        names: this.names,
        attestations: this.attestationTable
      }),
      sharingStructures: opened.sharingStructures,
      delayMs: commitDelayMs,
      synchronous
    })
  }

  /**
   * `commitDelayMs` lets concurrent writes share one transaction (`gatheringFor`); lmdb-js's own
   * `commitDelay` is ignored while it batches by event turn, as it does by default, and child
   * transactions never start without that batching.
   */
  static async open(
    dataDir: string,
    options: {
      commitDelayMs?: number
      minFreeBytes?: number
      /** Each commit written before `commit` returns, without a sync to disk (a simulation's nodes). */
      synchronous?: boolean
      migrated?: (m: AppliedMigration) => void
    } = {}
  ): Promise<RegistryStore> {
    const synchronous = options.synchronous === true
    const opened = await openStoreDatabases(dataDir, options.minFreeBytes ?? 0, synchronous)
    const store = new RegistryStore(opened, options.commitDelayMs ?? 0, synchronous)
    try {
      await migrate(
        { databases: store.db, log: store.log, signatures: store.signatures },
        opened.formatVersion,
        options.migrated ?? (() => {})
      )
    } catch (err) {
      await store.db.root.close()
      throw err
    }
    return store
  }

  /** The store's format version (store-format.ts); always the current one once open. */
  get formatVersion(): number {
    return Number(this.db.meta.get(FORMAT_VERSION_KEY))
  }

  // Reads by a key no record can have (too long to be one) find nothing, rather than fail in LMDB.
  getEntity(id: string): EntityRecord | undefined {
    return keyFits(id) ? this.db.entities.get(id) : undefined
  }
  getDeveloper(id: string): DeveloperRecord | undefined {
    return keyFits(id) ? this.db.developers.get(id) : undefined
  }
  getTombstone(subject: string): Tombstone | undefined {
    return keyFits(subject) ? this.db.tombstones.get(subject) : undefined
  }

  getHandle(handle: string): HandleRecord | undefined {
    return keyFits(handle) ? this.db.handles.get(handle) : undefined
  }
  getName(handle: string, name: string): NameBinding | undefined {
    return this.names.get(handle, name)
  }
  namesOfHandle(handle: string): NameBinding[] {
    return this.names.ofHandle(handle)
  }
  namesOfEntity(entityId: string): NameBinding[] {
    return this.names.ofEntity(entityId)
  }
  /** A binding's history, newest first. */
  nameHistory(handle: string, name: string): NameVersion[] {
    return this.names.history(handle, name)
  }

  getAttestation(id: string): AttestationRecord | undefined {
    return this.attestationTable.get(id)
  }
  /** Attestations of an entity, in ID order. */
  attestationsOf(subject: string, page: AttestationPage): AttestationRecord[] {
    return this.attestationTable.of('s', subject, page)
  }
  /** Attestations an entity or developer made, in ID order. */
  attestationsBy(issuer: string, page: AttestationPage): AttestationRecord[] {
    return this.attestationTable.of('i', issuer, page)
  }
  attestationCountBy(issuer: string): number {
    return this.attestationTable.countBy(issuer)
  }
  hasAttestations(): boolean {
    return this.attestationTable.any()
  }
  allAttestations(): Iterable<AttestationRecord> {
    return this.attestationTable.all()
  }

  /** The peers an operator banned, by PeerId. */
  peerBans(): PeerBan[] {
    return [...this.db.peerBans.getRange()].map(({ value }) => value)
  }

  /** Records a ban (replacing one of the same peer); resolves once durable. */
  async putPeerBan(ban: PeerBan): Promise<void> {
    await this.commit(() => {
      void this.db.peerBans.put(ban.peer_id, ban)
    })
  }

  /** Forgets a ban; whether there was one. */
  removePeerBan(peerId: string): Promise<boolean> {
    return this.commit(() => {
      if (!keyFits(peerId) || !this.db.peerBans.doesExist(peerId)) return false
      void this.db.peerBans.remove(peerId)
      return true
    })
  }

  /** What the store's commits have cost since it opened (LMDB's own counters). */
  commitStats(): StoreCommitStats {
    return this.commits.stats()
  }

  /** How many entity records the store holds (LMDB's count of the tree's entries: no scan). */
  entityCount(): number {
    const entities = this.db.entities
    const entries = (entities.getStats() as { entryCount: number }).entryCount
    return this.sharingStructures.length > 0 && entities.doesExist(STRUCTURES_KEY as never) ? entries - 1 : entries
  }

  *allEntities(): Iterable<EntityRecord> {
    for (const { value } of this.db.entities.getRange()) yield value
  }

  /** Up to `limit` entity records in ID order after `after` (null: from the first), for a copy made a part at a time. */
  entitiesAfter(after: string | null, limit: number): EntityRecord[] {
    const out: EntityRecord[] = []
    for (const { key, value } of this.db.entities.getRange(
      after === null ? { limit } : { start: after, limit: limit + 1 }
    )) {
      if (key === after) continue
      out.push(value)
      if (out.length === limit) break
    }
    return out
  }
  *allDevelopers(): Iterable<DeveloperRecord> {
    for (const { value } of this.db.developers.getRange()) yield value
  }
  *allTombstones(): Iterable<Tombstone> {
    for (const { value } of this.db.tombstones.getRange()) yield value
  }
  /** Last-seen state of the entities whose home is this node, as last flushed. */
  *allLiveness(): Iterable<[string, LivenessRecord]> {
    for (const { key, value } of this.db.liveness.getRange()) yield [key, value]
  }

  /** The sequence number of the log's last operation (0: none); it grows with every appended operation. */
  lastSeq(): number {
    return this.log.last
  }

  /** Up to `limit` operations after sequence number `after`, in log order, each with its sequence number. */
  operationsAfter(after: number, limit: number): [seq: number, op: Operation][] {
    return this.log.operationsAfter(after, limit)
  }

  /** The operation stored under `seq`, if the log still holds it. */
  operationAt(seq: number): Operation | undefined {
    return this.log.operationAt(seq)
  }

  /** A subject's operations, oldest first; those whose seal digest (hex) is in `skip` are left out undecoded. */
  operationsOf(subject: string, skip?: ReadonlySet<string>): Operation[] {
    return this.log.operationsOf(subject, skip)
  }

  /**
   * The operations on every subject that begins with `prefix` (`handle:`, `name:`), subject by
   * subject, each subject's oldest first: read through the subject index, so a start does not
   * decode the whole log to find a few kinds of operation.
   */
  *operationsOnSubjectsStartingWith(prefix: string): Iterable<Operation> {
    yield* this.log.operationsOnSubjectsStartingWith(prefix)
  }

  /** Whether the log holds this operation (the same subject and seal). */
  holds(op: Operation, digest = sealDigest(op.node_signature)): boolean {
    return this.log.holds(op, digest)
  }

  /**
   * Whether the log holds this operation under its subject or, a shared one (a batch of status
   * changes, indexed under each of its entities), under any subject: an import's "already here".
   */
  holdsAnywhere(op: Operation): boolean {
    const digest = sealDigest(op.node_signature)
    return this.log.holds(op, digest) || this.log.holdsShared(digest)
  }

  /**
   * Every subject with the seal digests of its operations, in subject order, from the subject
   * index alone (an operation written before digests were kept there is decoded). A digest is
   * valid only until the iteration moves on.
   */
  *sealDigests(): Iterable<[subject: string, digest: Uint8Array]> {
    yield* this.log.sealDigests()
  }

  /** Every operation in the log, oldest first. */
  *allOperations(): Iterable<Operation> {
    yield* this.log.allOperations()
  }

  /**
   * Runs `fn` in its own child transaction (batched into one commit with concurrent ones by
   * lmdb-js) and resolves after the commit is durable. If `fn` throws, the child transaction is
   * aborted: nothing it wrote is kept. (A plain lmdb-js `transaction` would keep earlier writes.)
   */
  commit<T>(fn: (tx: WriteTransaction) => T): Promise<T> {
    return this.commits.commit(fn)
  }

  /**
   * Calls `listener` once each transaction that appended or dropped operations is durable: gossip
   * publishes what was appended, the sync digests follow the subjects whose history changed.
   */
  onCommitted(listener: (changes: CommittedOperations) => void): () => void {
    return this.commits.onCommitted(listener)
  }

  /**
   * Deletes tombstones past their retention, with their operations, and forgets signatures used
   * before `signaturesBefore` (the same retention). Returns how many tombstones went.
   */
  async purgeExpiredTombstones(now: Date, signaturesBefore: Date): Promise<number> {
    const expired: Tombstone[] = []
    for await (const { value } of scanInTurns(this.db.tombstones))
      if (Date.parse(value.expires_at) <= now.getTime()) expired.push(value)
    const forgotten = await this.signatures.usedBefore(signaturesBefore.toISOString())
    await this.commitInChunks(expired, (tx, t) => {
      tx.deleteTombstone(t.subject)
      tx.dropOperations(t.subject)
    })
    await this.commitInChunks(forgotten, (_, fingerprint) => this.signatures.forget(fingerprint))
    return expired.length
  }

  /** Calls `write` for each of `items`, PURGE_CHUNK of them per commit. */
  private async commitInChunks<T>(items: readonly T[], write: (tx: WriteTransaction, item: T) => void): Promise<void> {
    for (let i = 0; i < items.length; i += PURGE_CHUNK)
      await this.commit(tx => {
        for (const item of items.slice(i, i + PURGE_CHUNK)) write(tx, item)
      })
  }

  async close(): Promise<void> {
    const root = this.db.root
    // Commits still gathering resume first (they awaited the period before this did).
    const gathering = this.commits.gatheringCommits
    if (gathering) await gathering
    // An empty transaction commits even on a full disk, and renews `flushed` when the last write failed.
    await root.transaction(() => {})
    await root.flushed
    await root.close()
  }
}
