/**
 * Keeps writes off a full disk. LMDB under lmdb-js never reports a full map (it grows the map), so
 * what runs out is the filesystem, and lmdb-js is at its most fragile there: an ENOSPC commit
 * leaves stray rejections and a flush promise that never settles, a short write surfaces as EIO,
 * and creating a database on a full disk ends in SIGBUS. The guard therefore refuses writes while
 * the data directory's filesystem has less than `minFreeBytes` available (statfs, rechecked at
 * most once a second), so LMDB is not driven into ENOSPC at all; the error classification below
 * is the backstop for space that vanishes faster than that (another process filling the disk).
 */
import { statfsSync, type StatsFs } from 'node:fs'
import { RegistryError } from '../errors.js'

export class StorageFullError extends RegistryError {
  constructor(freeBytes: number, minFreeBytes: number, cause?: unknown) {
    super(
      'storage_full',
      `The node's disk is full (${formatMiB(freeBytes)} free, ${formatMiB(minFreeBytes)} kept in reserve): writes are refused until space returns; reads and heartbeats go on.`
    )
    if (cause !== undefined) this.cause = cause
  }
}

export interface StorageGuardOptions {
  /** Writes are refused while less than this is available to the node's user. 0 turns the check off. */
  minFreeBytes: number
  recheckMs?: number
  statfs?: (dir: string) => Pick<StatsFs, 'bavail' | 'bsize'>
  now?: () => number
}

const ERRNO_FULL = new Set<unknown>([28, 'ENOSPC', 122, 'EDQUOT', 27, 'EFBIG', -30792, 'MDB_MAP_FULL'])
const TEXT_FULL = /no space left on device|disk quota exceeded|file too large|MDB_MAP_FULL/i
const isIoError = (err: { code?: unknown; message?: unknown }) =>
  err.code === 5 || err.code === 'EIO' || /input\/output error/i.test(String(err.message))

export class StorageGuard {
  private free = Number.POSITIVE_INFINITY
  private checkedAt = Number.NEGATIVE_INFINITY
  /** Set when a commit failed for want of space though statfs did not look low (quotas, file size limits). */
  private trippedAt: number | null = null
  private readonly recheckMs: number
  private readonly statfs: NonNullable<StorageGuardOptions['statfs']>
  private readonly now: () => number

  constructor(
    private readonly dir: string,
    private readonly options: StorageGuardOptions
  ) {
    this.recheckMs = options.recheckMs ?? 1_000
    this.statfs = options.statfs ?? (path => statfsSync(path))
    this.now = options.now ?? Date.now
  }

  /** Bytes available to unprivileged writers (`bavail`: root's ext4 reserve does not count). */
  freeBytes(): number {
    const now = this.now()
    if (now - this.checkedAt >= this.recheckMs) {
      const stats = this.statfs(this.dir)
      this.free = Number(stats.bavail) * Number(stats.bsize)
      this.checkedAt = now
    }
    return this.free
  }

  /** Throws StorageFullError while writes must be refused. */
  check(): void {
    if (this.options.minFreeBytes <= 0 && this.trippedAt === null) return
    const free = this.freeBytes()
    if (this.trippedAt !== null) {
      // Cleared once the space is plainly back, or after a while, to let one write try again.
      if (free >= 2 * this.options.minFreeBytes || this.now() - this.trippedAt >= 10 * this.recheckMs)
        this.trippedAt = null
      else throw new StorageFullError(free, this.options.minFreeBytes)
    }
    if (free < this.options.minFreeBytes) throw new StorageFullError(free, this.options.minFreeBytes)
  }

  /**
   * The StorageFullError a failed commit amounts to, or null when it failed for another reason.
   * `cause` is the native error (see lmdbCause). EIO counts as full only when space is low: it is
   * how LMDB reports the short write that takes the last bytes of a disk.
   */
  classify(cause: unknown): StorageFullError | null {
    if (cause === null || typeof cause !== 'object') return null
    const err = cause as { code?: unknown; message?: unknown }
    const outOfSpace = ERRNO_FULL.has(err.code) || TEXT_FULL.test(String(err.message))
    if (!outOfSpace && !isIoError(err)) return null
    this.checkedAt = Number.NEGATIVE_INFINITY
    const free = this.freeBytes()
    if (!outOfSpace && free >= Math.max(2 * this.options.minFreeBytes, 16 * 2 ** 20)) return null
    this.trippedAt = this.now()
    return new StorageFullError(free, this.options.minFreeBytes, cause)
  }
}

/**
 * The native error behind an lmdb-js commit failure. Asynchronous commits reject with a generic
 * "Commit failed" whose `commitError` is a promise of the real error; awaiting it also keeps it
 * from becoming an unhandled rejection.
 */
export async function lmdbCause(err: unknown): Promise<unknown> {
  const commitError = (err as { commitError?: unknown } | null)?.commitError
  if (commitError instanceof Promise)
    return commitError.then(
      () => err,
      (cause: unknown) => cause
    )
  return err
}

function formatMiB(bytes: number): string {
  return Number.isFinite(bytes) ? `${(bytes / 2 ** 20).toFixed(1)} MiB` : 'unknown'
}
