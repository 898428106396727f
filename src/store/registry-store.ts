import './unsliced-strings.js'
import { hash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { open, type Database, type Key, type RootDatabase } from 'lmdb'
import { RegistryError } from '../errors.js'
import { lmdbCause, StorageGuard } from './storage-guard.js'
import {
  reloadStructuresAfterAbort,
  STRUCTURES_KEY,
  savedStructureCounts,
  structureOptions,
  VALUE_STRUCTURES
} from './shared-structures.js'
import { compressionOptions, VALUE_COMPRESSION } from './value-compression.js'
import type {
  Approval,
  DeveloperRecord,
  EntityRecord,
  HandleRecord,
  LivenessRecord,
  NameBinding,
  NameVersion,
  Operation,
  Tombstone
} from './records.js'

/** Index entry: a subject's operation, by sequence number. */
type SubjectOperationKey = [subject: string, seq: number]
type NameKey = [handle: string, name: string]
type NameVersionKey = [handle: string, name: string, seq: number]
type EntityNameKey = [entityId: string, handle: string, name: string]

const MAX = Number.MAX_SAFE_INTEGER

/** `put` with MDB_APPEND, which lmdb-js takes as an option its type declarations leave out. */
function appendPut<V, K extends number>(db: Database<V, K>, key: K, value: V): Promise<boolean> {
  const put = db.put as unknown as (
    this: Database<V, K>,
    key: K,
    value: V,
    options: { append: true }
  ) => Promise<boolean>
  return put.call(db, key, value, { append: true })
}

/** What one committed transaction did to the operation log. */
/**
 * An operation the log already holds (same subject and node signature): appending it again would
 * count it twice in the sync digests, so the transaction is aborted instead. Two paths (gossip and
 * sync, or two sync sessions) may deliver one operation at the same time; only one append wins.
 */
export class DuplicateOperation extends Error {
  override name = 'DuplicateOperation'
  constructor(readonly op: Operation) {
    super(`the log already holds ${op.kind} ${op.subject} (${op.node_signature.slice(0, 16)}…)`)
  }
}

/**
 * A client signature that already authorized another write (a captured request sent again): the
 * deployed signing forms carry no timestamp, so a signature is good for one write only.
 */
export class SignatureReplayed extends RegistryError {
  constructor(
    readonly op: Operation,
    first: UsedSignature
  ) {
    super(
      'signature_replayed',
      `This signature already authorized a write (${first.kind} of ${first.subject} at ${first.accepted_at}); a signature is good for one write to each registration of its subject. Sign again (a timestamped deletion never repeats).`,
      'signature'
    )
  }
}

/**
 * A deletion or release signed in a form whose bytes are the same every time it is made (the
 * deployed clients sign only the ID): its signature, which verified for this very action, may
 * remove again a later incarnation of its subject, one that began (was registered, claimed or
 * bound) after the signature's first use.
 */
export interface SignatureReuse {
  /** When the subject's current incarnation began. */
  since: string
}

/** Where a client signature was first used. Writes of one request (a registration and the name it binds) share it. */
export interface UsedSignature {
  kind: Operation['kind']
  subject: string
  origin: string
  accepted_at: string
}

/** The key a signature is remembered under (also the registration fingerprint of tombstones). */
export function signatureFingerprint(signature: string): string {
  return hash('sha256', signature).slice(0, 32)
}

/** An entry of the subject index: a subject and the seal digest (`sealDigest`) of one of its operations. */
export type SubjectSeal = [subject: string, seal: Uint8Array]

export interface CommittedOperations {
  /** Operations stored for the first time. */
  appended: Operation[]
  /** Entries added to the subject index (one per appended operation, one per subject of a shared one). */
  indexed: SubjectSeal[]
  /** Entries removed from it (superseded registrations, tombstoned histories). */
  unindexed: SubjectSeal[]
  /** Subjects whose history changed (appended to or dropped). */
  subjects: Set<string>
}

/**
 * What commits cost, summed since the store opened. A transaction is open (`open`) from its start
 * to its commit; of that, `waitingForCallbacks` is LMDB's writer thread waiting for this thread to
 * run the transaction's functions (the event loop's other work delays them). Then its pages are
 * written (`pageWrites`) and, overlapping the next transaction, synced to disk (`sync`).
 */
export interface StoreCommitStats {
  commits: number
  pagesWritten: number
  seconds: { open: number; waitingForCallbacks: number; pageWrites: number; sync: number }
}

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
}

/**
 * The node's LMDB environment: one file, a named database per kind. Writes go through
 * `commit`, which resolves only once the transaction is committed and flushed to disk.
 */
/**
 * LMDB refuses keys over 1,978 bytes. Every key here is an ID, a handle or a name, far shorter;
 * 600 UTF-16 units is at most 1,800 bytes of UTF-8 for all parts of a composite key together.
 */
const MAX_KEY_UNITS = 600
const keyFits = (...parts: string[]): boolean => parts.reduce((n, p) => n + p.length, 0) <= MAX_KEY_UNITS

/**
 * Child transactions queued while a commit is being flushed all join the next batch transaction,
 * whose dirty pages LMDB caps at 131,071 (MDB_TXN_FULL); past it the child's commit fails and
 * lmdb-js throws an uncaught "Can not abort this transaction". Loading 1M entities at about 1,500/s
 * reached it past 520k entities, when a slow flush let a batch grow. Beyond this many queued
 * commits a write waits for one to finish (a registration dirties about 10 pages).
 */
const MAX_PENDING_COMMITS = 2048

/** Rows a purge reads per turn of the event loop, and deletes per commit: a few milliseconds of the HTTP thread. */
const PURGE_CHUNK = 2_000

/**
 * An operation's seal digest: the first 16 bytes of the SHA-256 of its node signature. The subject
 * index keeps it beside each operation, so an append checks for a duplicate (the registration
 * under each status change was decoded for it) and the sync digests are built at start (the whole
 * log was decoded: 18 s at 1M) without decoding operations.
 */
export const SEAL_DIGEST_BYTES = 16
export const sealDigest = (nodeSignature: string): Buffer =>
  hash('sha256', nodeSignature, 'buffer').subarray(0, SEAL_DIGEST_BYTES)

const STATUS_TIMES_KEY = 'status_changed_at'

export class RegistryStore {
  private constructor(
    private readonly root: RootDatabase,
    private readonly entities: Database<EntityRecord, string>,
    private readonly developers: Database<DeveloperRecord, string>,
    private readonly tombstones: Database<Tombstone, string>,
    private readonly operations: Database<Operation, number>,
    private readonly subjectOperations: Database<Uint8Array | null, SubjectOperationKey>,
    private readonly meta: Database<unknown, string>,
    private readonly handles: Database<HandleRecord, string>,
    private readonly names: Database<NameBinding, NameKey>,
    private readonly nameVersions: Database<NameVersion, NameVersionKey>,
    private readonly entityNames: Database<null, EntityNameKey>,
    private readonly approvals: Database<Approval, string>,
    private readonly liveness: Database<LivenessRecord, string>,
    private readonly usedSignatures: Database<UsedSignature, string>,
    /** Shared operations (on several subjects), by seal digest: their sequence number and how many subjects hold them. */
    private readonly sharedOperations: Database<[seq: number, holders: number], Buffer>,
    private opSeq: number,
    private readonly guard: StorageGuard
  ) {}

  /**
   * `commitDelayMs` lets concurrent writes share one transaction (`gatheringFor`); lmdb-js's own
   * `commitDelay` is ignored while it batches by event turn, as it does by default, and child
   * transactions never start without that batching.
   */
  static async open(
    dataDir: string,
    options: { commitDelayMs?: number; minFreeBytes?: number } = {}
  ): Promise<RegistryStore> {
    await mkdir(dataDir, { recursive: true })
    const guard = new StorageGuard(dataDir, { minFreeBytes: options.minFreeBytes ?? 0 })
    // Creating the LMDB file on a full disk kills the process (SIGBUS); an existing one opens fine.
    if (!existsSync(join(dataDir, 'registry.lmdb'))) guard.check()
    const root = open({
      path: join(dataDir, 'registry.lmdb'),
      maxDbs: 16,
      mapSize: 2 ** 34,
      compression: false,
      // Times each commit's phases (a clock read each, nothing more): `commitStats`.
      ...({ trackMetrics: true } as object)
    })
    const meta = root.openDB<unknown, string>({ name: 'meta' })
    // A store records how its large values are compressed, and whether its record structures are
    // shared, when it is created: lmdb-js reads a database only with the settings it was written
    // with, so stores made before either stay as they are.
    if (meta.get('created_at') === undefined && meta.get('value_compression') === undefined) {
      await meta.put('value_compression', VALUE_COMPRESSION)
      await meta.put('value_structures', VALUE_STRUCTURES)
    }
    const stored = meta.get('value_compression')
    const compression = stored === undefined ? false : compressionOptions(String(stored))
    const storedStructures = meta.get('value_structures')
    const records = structureOptions(storedStructures)
    if (compression === null || records === null) {
      await root.close()
      throw new Error(
        compression === null
          ? `${dataDir}: values compressed as ${String(stored)}, which this version of registry-node cannot read`
          : `${dataDir}: record structures kept as ${String(storedStructures)}, which this version of registry-node cannot read`
      )
    }
    // A database of records (objects): its structures are shared where the store says so.
    const sharingStructures: object[] = []
    const recordDb = <V, K extends Key>(name: string, compressed = false): Database<V, K> => {
      const db = root.openDB<V, K>({ name, ...records, ...(compressed ? { compression } : {}) })
      if (records.sharedStructuresKey) sharingStructures.push(db)
      return db
    }
    // Operations are appended under a node-wide sequence number (cheap appends at the end of the
    // B-tree, and a change log in order); a small index finds one subject's history.
    const operations = recordDb<Operation, number>('oplog', true)
    const [lastSeq] = [...operations.getKeys({ reverse: true, limit: 1 })] as number[]
    const store = new RegistryStore(
      root,
      recordDb<EntityRecord, string>('entities', true),
      recordDb<DeveloperRecord, string>('developers'),
      recordDb<Tombstone, string>('tombstones'),
      operations,
      root.openDB<Uint8Array | null, SubjectOperationKey>({ name: 'oplog_by_subject' }),
      meta,
      recordDb<HandleRecord, string>('handles'),
      recordDb<NameBinding, NameKey>('names'),
      recordDb<NameVersion, NameVersionKey>('name_versions'),
      root.openDB<null, EntityNameKey>({ name: 'names_by_entity' }),
      recordDb<Approval, string>('approvals'),
      recordDb<LivenessRecord, string>('liveness'),
      recordDb<UsedSignature, string>('used_signatures'),
      root.openDB<[number, number], Buffer>({ name: 'oplog_shared', keyEncoding: 'binary' }),
      lastSeq ?? 0,
      guard
    )
    if (store.meta.get('created_at') === undefined) {
      await store.meta.put('created_at', new Date().toISOString())
      await store.meta.put(STATUS_TIMES_KEY, 1)
    }
    store.statusTimes = store.meta.get(STATUS_TIMES_KEY) !== undefined
    store.sharingStructures = sharingStructures
    store.commitDelayMs = options.commitDelayMs ?? 0
    if (store.meta.get('used_signatures') === undefined) await store.indexUsedSignatures()
    return store
  }

  private statusTimes = false
  /**
   * Whether every entity record here carries `status_changed_at` once a status operation changed
   * it: true for stores created since it was kept. In an older store a record without it may
   * still have a status history, which only the subject's operations tell.
   */
  get keepsStatusTimes(): boolean {
    return this.statusTimes
  }

  // Reads by a key no record can have (too long to be one) find nothing, rather than fail in LMDB.
  getEntity(id: string): EntityRecord | undefined {
    return keyFits(id) ? this.entities.get(id) : undefined
  }
  getDeveloper(id: string): DeveloperRecord | undefined {
    return keyFits(id) ? this.developers.get(id) : undefined
  }
  getTombstone(subject: string): Tombstone | undefined {
    return keyFits(subject) ? this.tombstones.get(subject) : undefined
  }

  getHandle(handle: string): HandleRecord | undefined {
    return keyFits(handle) ? this.handles.get(handle) : undefined
  }
  getName(handle: string, name: string): NameBinding | undefined {
    return keyFits(handle, name) ? this.names.get([handle, name]) : undefined
  }
  namesOfHandle(handle: string): NameBinding[] {
    return keyFits(handle)
      ? [...this.names.getRange({ start: [handle, ''], end: [handle, '\uffff'] }).map(e => e.value)]
      : []
  }
  namesOfEntity(entityId: string): NameBinding[] {
    const out: NameBinding[] = []
    for (const [, handle, name] of this.entityNames.getKeys({
      start: [entityId, '', ''],
      end: [entityId, '\uffff', '']
    }) as Iterable<EntityNameKey>) {
      const binding = this.names.get([handle, name])
      if (binding) out.push(binding)
    }
    return out
  }
  /** A binding's history, newest first. */
  nameHistory(handle: string, name: string): NameVersion[] {
    if (!keyFits(handle, name)) return []
    return [
      ...this.nameVersions
        .getRange({ start: [handle, name, MAX], end: [handle, name, 0], reverse: true })
        .map(e => e.value)
    ]
  }

  /** What the store's commits have cost since it opened (LMDB's own counters). */
  commitStats(): StoreCommitStats {
    const s = this.root.getStats() as Partial<Record<string, number>>
    return {
      commits: s.txns ?? 0,
      pagesWritten: s.pagesWritten ?? 0,
      seconds: {
        open: s.timeDuringTxns ?? 0,
        waitingForCallbacks: s.timeTxnWaiting ?? 0,
        pageWrites: s.timePageFlushes ?? 0,
        sync: s.timeSync ?? 0
      }
    }
  }

  /** How many entity records the store holds (LMDB's count of the tree's entries: no scan). */
  entityCount(): number {
    const entries = (this.entities.getStats() as { entryCount: number }).entryCount
    return this.sharingStructures.length > 0 && this.entities.doesExist(STRUCTURES_KEY as never) ? entries - 1 : entries
  }

  *allEntities(): Iterable<EntityRecord> {
    for (const { value } of this.entities.getRange()) yield value
  }

  /** Up to `limit` entity records in ID order after `after` (null: from the first), for a copy made a part at a time. */
  entitiesAfter(after: string | null, limit: number): EntityRecord[] {
    const out: EntityRecord[] = []
    for (const { key, value } of this.entities.getRange(
      after === null ? { limit } : { start: after, limit: limit + 1 }
    )) {
      if (key === after) continue
      out.push(value)
      if (out.length === limit) break
    }
    return out
  }
  *allDevelopers(): Iterable<DeveloperRecord> {
    for (const { value } of this.developers.getRange()) yield value
  }
  *allTombstones(): Iterable<Tombstone> {
    for (const { value } of this.tombstones.getRange()) yield value
  }
  /** Last-seen state of the entities whose home is this node, as last flushed. */
  *allLiveness(): Iterable<[string, LivenessRecord]> {
    for (const { key, value } of this.liveness.getRange()) yield [key, value]
  }

  /** A subject's operations, oldest first; those whose seal digest (hex) is in `skip` are left out undecoded. */
  operationsOf(subject: string, skip?: ReadonlySet<string>): Operation[] {
    const ops: Operation[] = []
    for (const { key, value } of this.subjectEntries(subject)) {
      if (skip?.size && value !== null && skip.has(Buffer.from(value).toString('hex'))) continue
      const op = this.operations.get(key[1])
      if (op) ops.push(op)
    }
    return ops
  }

  /**
   * The operations on every subject that begins with `prefix` (`handle:`, `name:`), subject by
   * subject, each subject's oldest first: read through the subject index, so a start does not
   * decode the whole log to find a few kinds of operation.
   */
  *operationsOnSubjectsStartingWith(prefix: string): Iterable<Operation> {
    for (const [, seq] of this.subjectOperations.getKeys({ start: [prefix, 0], end: [`${prefix}\uffff`, 0] })) {
      const op = this.operations.get(seq)
      if (op) yield op
    }
  }

  /** Whether the log holds this operation (the same subject and seal). */
  holds(op: Operation, digest = sealDigest(op.node_signature)): boolean {
    for (const { key, value } of this.subjectOperations.getRange({ start: [op.subject, 0], end: [op.subject, MAX] })) {
      // Only a matching digest (or none: written before they were kept) is worth decoding.
      if (value !== null && Buffer.compare(value, digest) !== 0) continue
      if (this.operations.get(key[1])?.node_signature === op.node_signature) return true
    }
    return false
  }

  /**
   * Every subject with the seal digests of its operations, in subject order, from the subject
   * index alone (an operation written before digests were kept there is decoded). A digest is
   * valid only until the iteration moves on.
   */
  *sealDigests(): Iterable<[subject: string, digest: Uint8Array]> {
    for (const { key, value } of this.subjectOperations.getRange()) {
      const [subject, seq] = key as SubjectOperationKey
      if (value !== null) yield [subject, value]
      else {
        const op = this.operations.get(seq)
        if (op) yield [subject, sealDigest(op.node_signature)]
      }
    }
  }

  /** A subject's index entries (its operations' keys and seal digests), read in full before any is removed. */
  private subjectEntries(subject: string): { key: SubjectOperationKey; value: Uint8Array | null }[] {
    return [...this.subjectOperations.getRange({ start: [subject, 0], end: [subject, MAX] })]
  }

  /**
   * Runs `fn` in its own child transaction (batched into one commit with concurrent ones by
   * lmdb-js) and resolves after the commit is durable. If `fn` throws, the child transaction is
   * aborted: nothing it wrote is kept. (A plain lmdb-js `transaction` would keep earlier writes.)
   */
  async commit<T>(fn: (tx: WriteTransaction) => T): Promise<T> {
    this.guard.check()
    if (this.pendingCommits >= MAX_PENDING_COMMITS) await new Promise<void>(resolve => this.commitSlots.push(resolve))
    this.pendingCommits++
    try {
      const gathering = this.gatheringFor()
      if (gathering) await gathering
      return await this.commitNow(fn)
    } finally {
      this.pendingCommits--
      this.commitSlots.shift()?.()
    }
  }

  /**
   * What a commit waits for before it begins: nothing (null) when none began in the last
   * `commitDelayMs`, so a lone write begins at once; else the end of that period, when every commit
   * that came meanwhile resumes, in order and in one turn of the event loop, so lmdb-js writes them
   * in one transaction.
   */
  private gatheringFor(): Promise<void> | null {
    if (this.commitDelayMs <= 0) return null
    if (this.gathering) return this.gathering
    const now = performance.now()
    const wait = this.lastCommitStart + this.commitDelayMs - now
    if (wait <= 0) {
      this.lastCommitStart = now
      return null
    }
    this.gathering = new Promise<void>(resolve =>
      setTimeout(() => {
        this.gathering = null
        this.lastCommitStart = performance.now()
        resolve()
      }, wait)
    )
    return this.gathering
  }

  private async commitNow<T>(fn: (tx: WriteTransaction) => T): Promise<T> {
    const changes: CommittedOperations = { appended: [], indexed: [], unindexed: [], subjects: new Set() }
    let refused = false
    const done = this.root.childTransaction(() => {
      this.changes = changes
      const structures = savedStructureCounts(this.sharingStructures)
      try {
        return fn(this.tx)
      } catch (err) {
        refused = true
        reloadStructuresAfterAbort(this.sharingStructures, structures)
        throw err
      } finally {
        this.changes = null
      }
    }) as Promise<T>
    // This transaction's flush, taken now: read later, `flushed` follows the newest transaction,
    // and never settles when that one failed.
    const flushed = this.root.flushed
    let result: T
    try {
      result = await done
    } catch (err) {
      // The transaction failed as a whole (not `fn`): with it any structure saved in it.
      if (!refused) reloadStructuresAfterAbort(this.sharingStructures)
      const cause = await lmdbCause(err)
      // lmdb-js leaves a rejected promise of its own behind a failed commit.
      this.root.committed.then(undefined, () => {})
      throw this.guard.classify(cause) ?? err
    }
    await flushed
    if (changes.subjects.size > 0) for (const listener of this.committedListeners) listener(changes)
    return result
  }

  /**
   * Calls `listener` once each transaction that appended or dropped operations is durable: gossip
   * publishes what was appended, the sync digests follow the subjects whose history changed.
   */
  onCommitted(listener: (changes: CommittedOperations) => void): () => void {
    this.committedListeners.add(listener)
    return () => {
      this.committedListeners.delete(listener)
    }
  }

  /** Every operation in the log, oldest first. */
  *allOperations(): Iterable<Operation> {
    for (const { value } of this.operations.getRange()) yield value
  }

  private changes: CommittedOperations | null = null
  /** The record databases whose structures are shared (none in a store made before they were). */
  private sharingStructures: readonly object[] = []
  private commitDelayMs = 0
  private gathering: Promise<void> | null = null
  private lastCommitStart = Number.NEGATIVE_INFINITY
  /** Commits queued with lmdb-js and not yet durable, and the ones waiting for room (MAX_PENDING_COMMITS). */
  private pendingCommits = 0
  private readonly commitSlots: (() => void)[] = []
  private readonly committedListeners = new Set<(changes: CommittedOperations) => void>()

  private readonly tx: WriteTransaction = {
    getEntity: id => this.getEntity(id),
    getDeveloper: id => this.getDeveloper(id),
    hasDeveloper: id => keyFits(id) && this.developers.doesExist(id),
    getTombstone: subject => this.getTombstone(subject),
    putEntity: record => {
      void this.entities.put(record.entity_id, record)
    },
    deleteEntity: id => {
      void this.entities.remove(id)
    },
    putDeveloper: record => {
      void this.developers.put(record.developer_id, record)
    },
    deleteDeveloper: id => {
      void this.developers.remove(id)
    },
    putTombstone: t => {
      void this.tombstones.put(t.subject, t)
    },
    deleteTombstone: subject => {
      void this.tombstones.remove(subject)
    },
    appendOperation: (op, subjects, reuse) => {
      const digest = sealDigest(op.node_signature)
      if (subjects !== undefined) return this.appendShared(op, subjects, digest)
      if (this.holds(op, digest)) throw new DuplicateOperation(op)
      if (op.auth.carrier !== 'node') {
        const key = signatureFingerprint(op.auth.signature)
        const first = this.usedSignatures.get(key)
        if (
          first &&
          (first.origin !== op.origin || first.accepted_at !== op.accepted_at) &&
          !(reuse && first.accepted_at < reuse.since)
        )
          throw new SignatureReplayed(op, first)
        if (!first)
          void this.usedSignatures.put(key, {
            kind: op.kind,
            subject: op.subject,
            origin: op.origin,
            accepted_at: op.accepted_at
          })
      }
      this.indexOperation(op.subject, this.storeOperation(op), digest)
      return 1
    },
    getHandle: handle => this.getHandle(handle),
    putHandle: record => {
      void this.handles.put(record.handle, record)
    },
    deleteHandle: handle => {
      void this.handles.remove(handle)
    },
    getName: (handle, name) => this.getName(handle, name),
    putName: (binding, version) => {
      const previous = this.names.get([binding.handle, binding.entity_name])
      if (previous && previous.entity_id !== binding.entity_id)
        void this.entityNames.remove([previous.entity_id, binding.handle, binding.entity_name])
      void this.names.put([binding.handle, binding.entity_name], binding)
      void this.entityNames.put([binding.entity_id, binding.handle, binding.entity_name], null)
      const [last] = [
        ...this.nameVersions.getKeys({
          start: [binding.handle, binding.entity_name, MAX],
          end: [binding.handle, binding.entity_name, 0],
          reverse: true,
          limit: 1
        })
      ] as NameVersionKey[]
      void this.nameVersions.put([binding.handle, binding.entity_name, (last?.[2] ?? 0) + 1], version)
    },
    deleteName: (handle, name) => {
      const binding = this.names.get([handle, name])
      if (!binding) return
      void this.names.remove([handle, name])
      void this.entityNames.remove([binding.entity_id, handle, name])
      for (const key of this.nameVersions.getKeys({ start: [handle, name, 0], end: [handle, name, MAX] }))
        void this.nameVersions.remove(key)
    },
    namesOfHandle: handle => this.namesOfHandle(handle),
    namesOfEntity: entityId => this.namesOfEntity(entityId),
    getApproval: stateHash => this.approvals.get(stateHash),
    putApproval: (stateHash, approval) => {
      void this.approvals.put(stateHash, approval)
    },
    putLiveness: (entityId, record) => {
      void this.liveness.put(entityId, record)
    },
    deleteLiveness: entityId => {
      void this.liveness.remove(entityId)
    },
    dropOperations: (subject, keep) => {
      this.changes?.subjects.add(subject)
      for (const { key, value } of this.subjectEntries(subject)) {
        // The index holds each operation's seal digest: an operation is decoded only for `keep`.
        const op = keep || !value ? this.operations.get(key[1]) : undefined
        if (op && keep?.(op)) continue
        const stored = value ?? (op ? sealDigest(op.node_signature) : undefined)
        void this.subjectOperations.remove(key)
        if (stored) {
          const digest = Buffer.from(stored)
          this.changes?.unindexed.push([subject, digest])
          // A shared operation stays while another subject's history holds it.
          const shared = this.sharedOperations.get(digest)
          if (shared && shared[1] > 1) {
            void this.sharedOperations.put(digest, [shared[0], shared[1] - 1])
            continue
          }
          if (shared) void this.sharedOperations.remove(digest)
        }
        void this.operations.remove(key[1])
      }
    }
  }

  /** Stores an operation at the end of the log; its sequence number. */
  private storeOperation(op: Operation): number {
    const seq = ++this.opSeq
    this.changes?.appended.push(op)
    // Appended (MDB_APPEND): a full page is left full and the next one started, where an ordinary
    // insert splits it in half; the log's pages were half empty (230 instead of 144 MiB at 100k).
    void appendPut(this.operations, seq, op)
    return seq
  }

  private indexOperation(subject: string, seq: number, digest: Buffer): void {
    this.changes?.indexed.push([subject, digest])
    this.changes?.subjects.add(subject)
    void this.subjectOperations.put([subject, seq], digest)
  }

  private appendShared(op: Operation, subjects: readonly string[], digest: Buffer): number {
    const shared = this.sharedOperations.get(digest)
    const fresh = shared ? subjects.filter(s => !this.subjectOperations.doesExist([s, shared[0]])) : subjects
    if (fresh.length === 0) return 0
    const seq = shared?.[0] ?? this.storeOperation(op)
    for (const subject of fresh) this.indexOperation(subject, seq, digest)
    void this.sharedOperations.put(digest, [seq, (shared?.[1] ?? 0) + fresh.length])
    return fresh.length
  }

  /**
   * Deletes tombstones past their retention, with their operations, and forgets signatures used
   * before `signaturesBefore` (the same retention). Returns how many tombstones went.
   */
  async purgeExpiredTombstones(now: Date, signaturesBefore: Date): Promise<number> {
    const expired: Tombstone[] = []
    for await (const { value } of this.scanInTurns(this.tombstones))
      if (Date.parse(value.expires_at) <= now.getTime()) expired.push(value)
    const cutoff = signaturesBefore.toISOString()
    const forgotten: string[] = []
    for await (const { key, value } of this.scanInTurns(this.usedSignatures))
      if (value.accepted_at < cutoff) forgotten.push(key)
    await this.commitInChunks(expired, (tx, t) => {
      tx.deleteTombstone(t.subject)
      tx.dropOperations(t.subject)
    })
    await this.commitInChunks(forgotten, (_, key) => void this.usedSignatures.remove(key))
    return expired.length
  }

  /** Calls `write` for each of `items`, PURGE_CHUNK of them per commit. */
  private async commitInChunks<T>(items: readonly T[], write: (tx: WriteTransaction, item: T) => void): Promise<void> {
    for (let i = 0; i < items.length; i += PURGE_CHUNK)
      await this.commit(tx => {
        for (const item of items.slice(i, i + PURGE_CHUNK)) write(tx, item)
      })
  }

  /**
   * Every row of `db`, read PURGE_CHUNK at a time with a turn of the event loop between: a purge read
   * every used signature in one go, which held the HTTP thread for seconds at a million entities.
   */
  private async *scanInTurns<V>(db: Database<V, string>): AsyncIterable<{ key: string; value: V }> {
    let after: string | undefined
    for (;;) {
      const rows = [
        ...db.getRange(after === undefined ? { limit: PURGE_CHUNK } : { start: after, limit: PURGE_CHUNK + 1 })
      ].filter(({ key }) => key !== after)
      yield* rows
      if (rows.length < PURGE_CHUNK) return
      after = rows[rows.length - 1]?.key
      await nextTurn()
    }
  }

  /** Remembers the client signatures of a log written before signatures were single-use (once per store). */
  private async indexUsedSignatures(): Promise<void> {
    await this.root.transaction(() => {
      for (const op of this.allOperations()) {
        if (op.auth.carrier === 'node') continue
        const key = signatureFingerprint(op.auth.signature)
        if (!this.usedSignatures.doesExist(key))
          void this.usedSignatures.put(key, {
            kind: op.kind,
            subject: op.subject,
            origin: op.origin,
            accepted_at: op.accepted_at
          })
      }
      void this.meta.put('used_signatures', 1)
    })
  }

  async close(): Promise<void> {
    // Commits still gathering resume first (they awaited the period before this did).
    if (this.gathering) await this.gathering
    // An empty transaction commits even on a full disk, and renews `flushed` when the last write failed.
    await this.root.transaction(() => {})
    await this.root.flushed
    await this.root.close()
  }
}
