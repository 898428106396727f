/**
 * The tables SubjectDigests keeps, built from the log's subject index in one pass: the same code
 * builds them on the calling thread and in a child process (digest-tables-process.ts), which reads the
 * index while the node loads its other views.
 */
import { hash as oneShotHash } from 'node:crypto'
import { SEAL_DIGEST_BYTES } from './operation-log.js'
import { widened } from '../util/typed-arrays.js'

export const DIGEST_BYTES = SEAL_DIGEST_BYTES
export const BUCKETS = 256

export const hash = (text: string): Buffer => oneShotHash('sha256', text, 'buffer').subarray(0, DIGEST_BYTES)

export function bucketOf(subject: string): number {
  return oneShotHash('sha256', subject, 'buffer')[0] as number
}

export function xorInto(target: Uint8Array, value: Uint8Array): void {
  for (let i = 0; i < DIGEST_BYTES; i++) target[i] = (target[i] as number) ^ (value[i] as number)
}

export const isAttestation = (subject: string): boolean => subject.startsWith('zns:att:')

export interface DigestTables {
  /** The held subjects, in row order. */
  subjects: string[]
  /** Row → the subject's digest (the XOR of its operations' seal digests); rows past the last are free room. */
  digests: Buffer<ArrayBuffer>
  /** Row → its share of its bucket's digest, hash(subject + hex digest). */
  shares: Buffer<ArrayBuffer>
  /** Row → its bucket (as long as `digests` has rows). */
  bucketOfRow: Uint8Array<ArrayBuffer>
  /** The 256 bucket digests, one after the other. */
  buckets: Buffer<ArrayBuffer>
  /** The part of each bucket's digest from attestation subjects, one after the other. */
  attestationParts: Buffer<ArrayBuffer>
  /** Subject-index entries read: one per operation and subject it is indexed under. */
  entries: number
}

/** The tables of a subject index read in subject order (each subject's entries together). */
export function buildDigestTables(index: Iterable<[subject: string, seal: Uint8Array]>): DigestTables {
  const subjects: string[] = []
  let rows = 1024
  let digests = Buffer.alloc(rows * DIGEST_BYTES)
  let shares = Buffer.alloc(rows * DIGEST_BYTES)
  let bucketOfRow = new Uint8Array(rows)
  const buckets = Buffer.alloc(BUCKETS * DIGEST_BYTES)
  const attestationParts = Buffer.alloc(BUCKETS * DIGEST_BYTES)
  let entries = 0
  let subject: string | null = null
  const digest = Buffer.alloc(DIGEST_BYTES)
  const close = (): void => {
    if (subject === null) return
    const row = subjects.length
    if (row === rows) {
      rows *= 2
      digests = widenedBuffer(digests, rows * DIGEST_BYTES)
      shares = widenedBuffer(shares, rows * DIGEST_BYTES)
      bucketOfRow = widened(bucketOfRow, rows)
    }
    const bucket = bucketOf(subject)
    const share = hash(subject + digest.toString('hex'))
    xorInto(buckets.subarray(bucket * DIGEST_BYTES), share)
    if (isAttestation(subject)) xorInto(attestationParts.subarray(bucket * DIGEST_BYTES), share)
    subjects.push(subject)
    bucketOfRow[row] = bucket
    digest.copy(digests, row * DIGEST_BYTES)
    share.copy(shares, row * DIGEST_BYTES)
  }
  for (const [next, seal] of index) {
    if (next !== subject) {
      close()
      subject = next
      digest.fill(0)
    }
    xorInto(digest, seal)
    entries++
  }
  close()
  return { subjects, digests, shares, bucketOfRow, buckets, attestationParts, entries }
}

/** A copy of `table` in a zeroed buffer of `length` bytes. */
export function widenedBuffer(table: Buffer<ArrayBuffer>, length: number): Buffer<ArrayBuffer> {
  const wider = Buffer.alloc(length)
  table.copy(wider)
  return wider
}
