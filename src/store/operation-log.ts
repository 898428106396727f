/**
 * The operation log: every operation under a node-wide sequence number, an index of each
 * subject's history that keeps each operation's seal digest beside it, and the shared operations
 * (held in several subjects' histories, stored once). Writes happen inside a store transaction
 * and are recorded in that transaction's CommittedOperations.
 */
import { hash } from 'node:crypto'
import type { Database } from 'lmdb'
import type { Operation } from './records.js'
import { MAX_SEQ, type SubjectOperationKey } from './store-databases.js'

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
 * An operation's seal digest: the first 16 bytes of the SHA-256 of its node signature. The subject
 * index keeps it beside each operation, so an append checks for a duplicate (the registration
 * under each status change was decoded for it) and the sync digests are built at start (the whole
 * log was decoded: 18 s at 1M) without decoding operations.
 */
export const SEAL_DIGEST_BYTES = 16
export const sealDigest = (nodeSignature: string): Buffer =>
  hash('sha256', nodeSignature, 'buffer').subarray(0, SEAL_DIGEST_BYTES)

/** An entry of the subject index: a subject and the seal digest (`sealDigest`) of one of its operations. */
export type SubjectSeal = [subject: string, seal: Uint8Array]

/** What one committed transaction did to the operation log. */
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

export class OperationLog {
  /** What the transaction running now did to the log (null outside a store commit). */
  private changes: CommittedOperations | null = null

  constructor(
    private readonly operations: Database<Operation, number>,
    /** Every entry holds its seal digest (a store indexed before they were kept is migrated). */
    private readonly subjectOperations: Database<Uint8Array, SubjectOperationKey>,
    private readonly sharedOperations: Database<[seq: number, holders: number], Buffer>,
    private lastSeq: number
  ) {}

  /** Records the log's changes into `changes` until `stopRecording`: the span of one store transaction. */
  recordInto(changes: CommittedOperations): void {
    this.changes = changes
  }

  stopRecording(): void {
    this.changes = null
  }

  /** The sequence number of the last operation appended (0: none). */
  get last(): number {
    return this.lastSeq
  }

  /** Up to `limit` operations after sequence number `after`, in log order, each with its sequence number. */
  operationsAfter(after: number, limit: number): [seq: number, op: Operation][] {
    const out: [number, Operation][] = []
    for (const { key, value } of this.operations.getRange({ start: after + 1, limit })) out.push([key, value])
    return out
  }

  /** The operation stored under `seq`, if the log still holds it. */
  operationAt(seq: number): Operation | undefined {
    return this.operations.get(seq)
  }

  /** A subject's operations, oldest first; those whose seal digest (hex) is in `skip` are left out undecoded. */
  operationsOf(subject: string, skip?: ReadonlySet<string>): Operation[] {
    const ops: Operation[] = []
    for (const { key, value } of this.subjectEntries(subject)) {
      if (skip?.size && skip.has(Buffer.from(value).toString('hex'))) continue
      const op = this.operations.get(key[1])
      if (op) ops.push(op)
    }
    return ops
  }

  /** See RegistryStore.operationsOnSubjectsStartingWith. */
  *operationsOnSubjectsStartingWith(prefix: string): Iterable<Operation> {
    for (const [, seq] of this.subjectOperations.getKeys({ start: [prefix, 0], end: [`${prefix}\uffff`, 0] })) {
      const op = this.operations.get(seq)
      if (op) yield op
    }
  }

  /** Whether the log holds this operation (the same subject and seal). */
  holds(op: Operation, digest = sealDigest(op.node_signature)): boolean {
    for (const { key, value } of this.subjectOperations.getRange({
      start: [op.subject, 0],
      end: [op.subject, MAX_SEQ]
    })) {
      // Only a matching digest is worth decoding.
      if (Buffer.compare(value, digest) !== 0) continue
      if (this.operations.get(key[1])?.node_signature === op.node_signature) return true
    }
    return false
  }

  /** Whether the log holds an operation with this seal digest as a shared one, under any subject. */
  holdsShared(digest: Buffer): boolean {
    return this.sharedOperations.doesExist(digest)
  }

  /** See RegistryStore.sealDigests. */
  *sealDigests(): Iterable<[subject: string, digest: Uint8Array]> {
    for (const { key, value } of this.subjectOperations.getRange()) yield [(key as SubjectOperationKey)[0], value]
  }

  /** Every operation in the log, oldest first. */
  *allOperations(): Iterable<Operation> {
    for (const { value } of this.operations.getRange()) yield value
  }

  /** Inside a transaction: appends an operation to its subject's history (the caller checked it is new). */
  append(op: Operation, digest: Buffer): void {
    this.indexOperation(op.subject, this.storeOperation(op), digest)
  }

  /**
   * Inside a transaction: adds an operation shared by several subjects to the histories of those
   * not holding it yet, storing it on its first append. Returns how many histories it was added to.
   */
  appendShared(op: Operation, subjects: readonly string[], digest: Buffer): number {
    const shared = this.sharedOperations.get(digest)
    const fresh = shared ? subjects.filter(s => !this.subjectOperations.doesExist([s, shared[0]])) : subjects
    if (fresh.length === 0) return 0
    const seq = shared?.[0] ?? this.storeOperation(op)
    for (const subject of fresh) this.indexOperation(subject, seq, digest)
    void this.sharedOperations.put(digest, [seq, (shared?.[1] ?? 0) + fresh.length])
    return fresh.length
  }

  /** Inside a transaction: drops a subject's history, but the operations `keep` accepts. */
  drop(subject: string, keep?: (op: Operation) => boolean): void {
    this.changes?.subjects.add(subject)
    for (const { key, value } of this.subjectEntries(subject)) {
      // The index holds each operation's seal digest: an operation is decoded only for `keep`.
      const op = keep ? this.operations.get(key[1]) : undefined
      if (op && keep?.(op)) continue
      void this.subjectOperations.remove(key)
      const digest = Buffer.from(value)
      this.changes?.unindexed.push([subject, digest])
      // A shared operation stays while another subject's history holds it.
      const shared = this.sharedOperations.get(digest)
      if (shared && shared[1] > 1) {
        void this.sharedOperations.put(digest, [shared[0], shared[1] - 1])
        continue
      }
      if (shared) void this.sharedOperations.remove(digest)
      void this.operations.remove(key[1])
    }
  }

  /** A subject's index entries (its operations' keys and seal digests), read in full before any is removed. */
  private subjectEntries(subject: string): { key: SubjectOperationKey; value: Uint8Array }[] {
    return [...this.subjectOperations.getRange({ start: [subject, 0], end: [subject, MAX_SEQ] })]
  }

  /** Stores an operation at the end of the log; its sequence number. */
  private storeOperation(op: Operation): number {
    const seq = ++this.lastSeq
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
}
