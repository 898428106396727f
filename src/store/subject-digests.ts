/**
 * A summary of the operation log for set reconciliation (`/zns/sync/1.0.0`). Each subject's digest
 * is the XOR of a hash of each of its operations' node signatures, so it depends only on which
 * operations the node holds, not on the order they came in. Subjects fall into 256 buckets by
 * the first byte of a hash of their name; a bucket's digest is the XOR of a hash of each of its
 * subjects with its digest. Two nodes holding the same operations have equal buckets; comparing
 * 256 bucket digests, then the subject digests of the buckets that differ, finds what differs
 * without listing everything.
 *
 * Kept in memory: built at start from the seal digests the log's subject index holds (no
 * operation is decoded), then updated after every commit from what it appended and dropped (XOR
 * in, XOR out: no read of the log on the write path).
 *
 * Declined subjects (operations refused for good, e.g. over an origin's quota) count as held with
 * the digest of what was offered, so that a peer holding them finds nothing to send; their
 * operations are not here to give. Kept until the subject is held, in memory, at most MAX_DECLINED.
 *
 * Attestations are new in the protocol: a peer that does not apply them (it lacks the `attestations`
 * capability) would find every bucket holding one different forever, list it every session and refuse
 * what it is sent. For such a peer the digests are taken without attestation subjects
 * (`scope` 'without-attestations'): each bucket also keeps the XOR of its attestation subjects' shares,
 * taken out again on request.
 *
 * For observers (a node's status, testnets deciding convergence) the 256 buckets fold into one
 * digest, hashed only when asked; the write path records just the time of the last change, so a
 * testnet can time convergence from when each node applied the change rather than from when it
 * was polled.
 */
import { hash as oneShotHash } from 'node:crypto'
import { widened } from '../util/typed-arrays.js'
import {
  BUCKETS,
  bucketOf,
  buildDigestTables,
  DIGEST_BYTES,
  type DigestTables,
  hash,
  isAttestation,
  widenedBuffer,
  xorInto
} from './digest-tables.js'
import { readInChild } from './reader-process.js'
import type { Operation } from './records.js'
import { type RegistryStore, sealDigest } from './registry-store.js'

export { BUCKETS, bucketOf, DIGEST_BYTES }

const EMPTY = Buffer.alloc(DIGEST_BYTES)

const MAX_DECLINED = 200_000

/**
 * From this many operations in the log, `prepare` builds the tables in a child process: at a
 * million entities the build costs 8–13 s, which the child spends while the node loads its other
 * views, and the pages of the log it reads stay mapped in the child, not the node
 * (reader-process.ts).
 */
export const CHILD_FROM_OPERATIONS = 50_000

/** The tables as the child sends them: the subjects in one NUL-separated string. */
type PostedTables = Omit<DigestTables, 'subjects'> & { subjects: string }

interface Prepared {
  ending: AbortController
  hold: () => void
  tables: Promise<PostedTables | null>
  /** Whether a commit changed the subject index since the child began (its tables may miss it). */
  changed: () => boolean
  detach: () => void
}

/** Which subjects a peer is shown: all, or all but attestations (a peer that does not apply them). */
export type DigestScope = 'all' | 'without-attestations'

export class SubjectDigests {
  /**
   * Subject → its row in `digests`. A digest per subject as a Buffer, or as a hex string, was one
   * more heap object per entity for every full collection to mark (a million at 1M entities).
   */
  private readonly subjects = new Map<string, number>()
  private digests = Buffer.alloc(1024 * DIGEST_BYTES)
  /**
   * Each row's share of its bucket digest, hash(subject + digest), and its bucket: an update then
   * hashes once (the new share) instead of three times (bucket, old share, new share), which was
   * a tenth of a sweep's cost per status change at 1M entities.
   */
  private shares = Buffer.alloc(1024 * DIGEST_BYTES)
  private bucketOfRow = new Uint8Array(1024)
  private rows = 0
  private readonly freeRows: number[] = []
  private readonly buckets = Array.from({ length: BUCKETS }, () => Buffer.alloc(DIGEST_BYTES))
  /** The part of each bucket's digest that comes from attestation subjects. */
  private readonly attestationParts = Array.from({ length: BUCKETS }, () => Buffer.alloc(DIGEST_BYTES))
  private readonly members = Array.from({ length: BUCKETS }, () => new Set<string>())
  private readonly declined = new Map<string, string>()
  private detach: (() => void) | null = null
  /** Subject-index entries held: one per operation and subject it is indexed under. */
  private entries = 0
  /** Date.now() of the last change to a bucket digest (or of the build at start). */
  private changedAt = 0
  private prepared: Prepared | null = null

  constructor(private readonly store: RegistryStore) {}

  /**
   * Begins building the digests in a child process reading the store in `dataDir`, when the log is large
   * enough to be worth one; `start` takes its tables, unless a commit changed the log meanwhile.
   */
  prepare(dataDir: string, fromOperations = CHILD_FROM_OPERATIONS): void {
    if (this.prepared || this.detach || this.store.lastSeq() < fromOperations) return
    let changed = false
    const detach = this.store.onCommitted(changes => {
      if (changes.indexed.length + changes.unindexed.length > 0) changed = true
    })
    const ending = new AbortController()
    let posted: PostedTables | null = null
    // A node that fails to start before `start` is not held open by it.
    const read = readInChild<PostedTables>(
      import.meta.url,
      'digest-tables-process',
      dataDir,
      part => {
        posted = part
      },
      // The views the node loads meanwhile come first: the node listens once they are loaded.
      { signal: ending.signal, unref: true, niceness: 10 }
    )
    const tables = read.done.then(
      () => posted,
      () => null
    )
    this.prepared = { ending, hold: read.hold, tables, changed: () => changed, detach }
  }

  /**
   * Builds the digests from the log (or takes those `prepare` built) and follows later commits;
   * says which it did.
   */
  async start(): Promise<'child' | 'log'> {
    const prepared = this.prepared
    this.prepared = null
    prepared?.hold()
    const posted = prepared ? await prepared.tables : null
    prepared?.detach()
    const byChild = posted !== null && prepared?.changed() === false
    this.adopt(
      byChild
        ? { ...posted, subjects: posted.subjects === '' ? [] : posted.subjects.split('\0') }
        : buildDigestTables(this.store.sealDigests())
    )
    this.changedAt = Date.now()
    this.detach = this.store.onCommitted(changes => {
      // Each subject's row is looked up once: at a million subjects a lookup is a cache miss or two.
      const next = new Map<string, { row: number | undefined; digest: Buffer }>()
      const toggle = (subject: string, seal: Uint8Array) => {
        let held = next.get(subject)
        if (!held) {
          const row = this.subjects.get(subject)
          const digest = row === undefined ? Buffer.alloc(DIGEST_BYTES) : Buffer.from(this.rowOf(this.digests, row))
          next.set(subject, (held = { row, digest }))
        }
        xorInto(held.digest, seal)
      }
      for (const [subject, seal] of changes.indexed) toggle(subject, seal)
      for (const [subject, seal] of changes.unindexed) toggle(subject, seal)
      // A subject whose every operation went XORs back to zero: it is no longer held.
      for (const [subject, { row, digest }] of next) this.set(subject, digest.equals(EMPTY) ? null : digest, row)
      this.entries += changes.indexed.length - changes.unindexed.length
      if (next.size > 0) this.changedAt = Date.now()
    })
    return byChild ? 'child' : 'log'
  }

  stop(): void {
    this.detach?.()
    this.detach = null
    if (this.prepared) {
      this.prepared.detach()
      this.prepared.ending.abort()
      this.prepared = null
    }
  }

  /** Takes built tables as the digests: each subject in its row, each row in its bucket. */
  private adopt(tables: DigestTables): void {
    const { subjects } = tables
    this.digests = Buffer.from(tables.digests.buffer, tables.digests.byteOffset, tables.digests.length)
    this.shares = Buffer.from(tables.shares.buffer, tables.shares.byteOffset, tables.shares.length)
    this.bucketOfRow = tables.bucketOfRow
    for (let row = 0; row < subjects.length; row++) {
      const subject = subjects[row] as string
      this.subjects.set(subject, row)
      this.members[this.bucketOfRow[row] as number]?.add(subject)
    }
    this.rows = subjects.length
    for (let b = 0; b < BUCKETS; b++) {
      Buffer.from(tables.buckets.buffer, tables.buckets.byteOffset + b * DIGEST_BYTES, DIGEST_BYTES).copy(
        this.buckets[b] as Buffer
      )
      Buffer.from(
        tables.attestationParts.buffer,
        tables.attestationParts.byteOffset + b * DIGEST_BYTES,
        DIGEST_BYTES
      ).copy(this.attestationParts[b] as Buffer)
    }
    this.entries = tables.entries
  }

  get size(): number {
    return this.subjects.size
  }

  /**
   * One digest over the 256 bucket digests (hex): two nodes report the same one when their buckets
   * are equal, i.e. when they hold the same operations. Hashed here, on request, not per commit.
   */
  combinedDigest(scope: DigestScope = 'all'): string {
    return oneShotHash('sha256', Buffer.concat(this.bucketDigests(scope)), 'hex')
  }

  /** What the combined digest covers and when it last changed, for a node's status. */
  summary(): { digest: string; operations: number; subjects: number; changedAt: number } {
    return {
      digest: this.combinedDigest(),
      operations: this.entries,
      subjects: this.subjects.size,
      changedAt: this.changedAt
    }
  }

  /** The 256 bucket digests. */
  bucketDigests(scope: DigestScope = 'all'): Buffer[] {
    return this.buckets.map((b, i) => {
      const digest = Buffer.from(b)
      if (scope === 'without-attestations') xorInto(digest, this.attestationParts[i] as Buffer)
      return digest
    })
  }

  /** Subject → digest (hex) for every subject in the given buckets. */
  subjectsIn(buckets: Iterable<number>, scope: DigestScope = 'all'): Map<string, string> {
    const out = new Map<string, string>()
    for (const b of buckets)
      for (const subject of this.members[b] ?? [])
        if (scope === 'all' || !isAttestation(subject)) out.set(subject, this.digestOf(subject) as string)
    return out
  }

  digestOf(subject: string): string | undefined {
    const row = this.subjects.get(subject)
    if (row === undefined) return this.declined.get(subject)
    return this.digests.toString('hex', row * DIGEST_BYTES, (row + 1) * DIGEST_BYTES)
  }

  /**
   * Counts `offered` (a peer's operations of a subject not held here) as held for reconciliation,
   * without their operations: what this node refused for good is not offered to it again.
   */
  decline(subject: string, offered: readonly Operation[]): void {
    if (
      this.subjects.has(subject) ||
      offered.length === 0 ||
      (this.declined.size >= MAX_DECLINED && !this.declined.has(subject))
    )
      return
    const digest = Buffer.alloc(DIGEST_BYTES)
    for (const op of offered) xorInto(digest, sealDigest(op.node_signature))
    const bucket = bucketOf(subject)
    const old = this.declined.get(subject)
    if (old) this.toggleShare(bucket, subject, hash(subject + old))
    const hex = digest.toString('hex')
    this.toggleShare(bucket, subject, hash(subject + hex))
    this.declined.set(subject, hex)
    this.members[bucket]?.add(subject)
    if (old !== hex) this.changedAt = Date.now()
  }

  operationsOf(subject: string, skip?: ReadonlySet<string>): Operation[] {
    return this.store.operationsOf(subject, skip)
  }

  /**
   * Recomputes a subject's digest from the log and keeps the result; true when the kept digest
   * was stale. Sync calls it for every subject that differs from a peer's before sending, so a
   * digest that ever fell behind its log (which should not happen) cannot keep two nodes apart.
   */
  recheck(subject: string): boolean {
    const before = this.digestOf(subject)
    this.refresh(subject)
    if (this.digestOf(subject) === before) return false
    this.changedAt = Date.now()
    return true
  }

  private refresh(subject: string): void {
    const digest = Buffer.alloc(DIGEST_BYTES)
    const ops = this.store.operationsOf(subject)
    for (const op of ops) xorInto(digest, sealDigest(op.node_signature))
    this.set(subject, ops.length > 0 ? digest : null, this.subjects.get(subject))
  }

  /** Makes `digest` (null: none) the subject's, in its `row` (undefined: none yet). */
  private set(subject: string, digest: Buffer | null, row: number | undefined): void {
    const bucket = row === undefined ? bucketOf(subject) : (this.bucketOfRow[row] as number)
    const declined = this.declined.get(subject)
    if (declined && digest) {
      // Held now: what was declined no longer stands in for it.
      this.toggleShare(bucket, subject, hash(subject + declined))
      this.declined.delete(subject)
    }
    if (row !== undefined) this.toggleShare(bucket, subject, this.rowOf(this.shares, row))
    if (digest) {
      const share = hash(subject + digest.toString('hex'))
      this.toggleShare(bucket, subject, share)
      if (row === undefined) {
        this.subjects.set(subject, (row = this.newRow()))
        this.bucketOfRow[row] = bucket
        this.members[bucket]?.add(subject)
      }
      digest.copy(this.digests, row * DIGEST_BYTES, 0, DIGEST_BYTES)
      share.copy(this.shares, row * DIGEST_BYTES)
    } else if (row !== undefined) {
      this.subjects.delete(subject)
      this.freeRows.push(row)
      if (!this.declined.has(subject)) this.members[bucket]?.delete(subject)
    }
  }

  /** XORs a subject's share in or out of its bucket's digest (and of the bucket's attestation part). */
  private toggleShare(bucket: number, subject: string, share: Uint8Array): void {
    xorInto(this.buckets[bucket] as Buffer, share)
    if (isAttestation(subject)) xorInto(this.attestationParts[bucket] as Buffer, share)
  }

  private rowOf(table: Buffer, row: number): Buffer {
    return table.subarray(row * DIGEST_BYTES, (row + 1) * DIGEST_BYTES)
  }

  private newRow(): number {
    const row = this.freeRows.pop()
    if (row !== undefined) return row
    if ((this.rows + 1) * DIGEST_BYTES > this.digests.length) {
      this.digests = widenedBuffer(this.digests, this.digests.length * 2)
      this.shares = widenedBuffer(this.shares, this.shares.length * 2)
      this.bucketOfRow = widened(this.bucketOfRow, this.bucketOfRow.length * 2)
    }
    return this.rows++
  }
}
