/**
 * How writes reach the disk: each commit runs in its own child transaction, gathered with
 * concurrent ones into one LMDB transaction, held back when too many wait for a flush, and
 * resolved only once durable; then the log's listeners learn what it changed. Also what the
 * commits have cost (LMDB's own counters).
 */
import type { RootDatabase } from 'lmdb'
import type { CommittedOperations, OperationLog } from './operation-log.js'
import { reloadStructuresAfterAbort, savedStructureCounts } from './shared-structures.js'
import { lmdbCause, type StorageGuard } from './storage-guard.js'
import type { WriteTransaction } from './write-transaction.js'

/**
 * Child transactions queued while a commit is being flushed all join the next batch transaction,
 * whose dirty pages LMDB caps at 131,071 (MDB_TXN_FULL); past it the child's commit fails and
 * lmdb-js throws an uncaught "Can not abort this transaction". Loading 1M entities at about 1,500/s
 * reached it past 520k entities, when a slow flush let a batch grow. Beyond this many queued
 * commits a write waits for one to finish (a registration dirties about 10 pages).
 */
const MAX_PENDING_COMMITS = 2048

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

export interface CommitQueueParts {
  root: RootDatabase
  guard: StorageGuard
  log: OperationLog
  tx: WriteTransaction
  /** The record databases whose structures are shared (none in a store made before they were). */
  sharingStructures: readonly object[]
  /** How long a commit waits for concurrent ones to share its transaction (0: not at all). */
  delayMs: number
  /** Each commit its own transaction, written before `commit` returns (a simulation's nodes). */
  synchronous?: boolean
}

export class CommitQueue {
  private readonly root: RootDatabase
  private readonly guard: StorageGuard
  private readonly log: OperationLog
  private readonly tx: WriteTransaction
  private readonly sharingStructures: readonly object[]
  private readonly delayMs: number
  private readonly synchronous: boolean
  private gathering: Promise<void> | null = null
  private lastCommitStart = Number.NEGATIVE_INFINITY
  /** Commits queued with lmdb-js and not yet durable, and the ones waiting for room (MAX_PENDING_COMMITS). */
  private pendingCommits = 0
  private readonly commitSlots: (() => void)[] = []
  private readonly committedListeners = new Set<(changes: CommittedOperations) => void>()

  constructor(parts: CommitQueueParts) {
    this.root = parts.root
    this.guard = parts.guard
    this.log = parts.log
    this.tx = parts.tx
    this.sharingStructures = parts.sharingStructures
    this.delayMs = parts.delayMs
    this.synchronous = parts.synchronous === true
  }

  /** The commits gathering now, which resume when it settles (null: none). */
  get gatheringCommits(): Promise<void> | null {
    return this.gathering
  }

  /** See RegistryStore.commit. */
  async commit<T>(fn: (tx: WriteTransaction) => T): Promise<T> {
    this.guard.check()
    if (this.synchronous) return this.commitSynchronously(fn)
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

  /** See RegistryStore.onCommitted. */
  onCommitted(listener: (changes: CommittedOperations) => void): () => void {
    this.committedListeners.add(listener)
    return () => {
      this.committedListeners.delete(listener)
    }
  }

  /** What the store's commits have cost since it opened (LMDB's own counters). */
  stats(): StoreCommitStats {
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

  /**
   * What a commit waits for before it begins: nothing (null) when none began in the last
   * `delayMs`, so a lone write begins at once; else the end of that period, when every commit
   * that came meanwhile resumes, in order and in one turn of the event loop, so lmdb-js writes them
   * in one transaction.
   */
  private gatheringFor(): Promise<void> | null {
    if (this.delayMs <= 0) return null
    if (this.gathering) return this.gathering
    const now = performance.now()
    const wait = this.lastCommitStart + this.delayMs - now
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

  /** Tells the log's listeners what a durable commit changed (nothing when it changed nothing). */
  private announce(changes: CommittedOperations): void {
    if (changes.subjects.size > 0) for (const listener of this.committedListeners) listener(changes)
  }

  /** One transaction written now; nothing is waited for, so virtual time does not move under it. */
  private commitSynchronously<T>(fn: (tx: WriteTransaction) => T): T {
    const changes = noChanges()
    const structures = savedStructureCounts(this.sharingStructures)
    let result: T
    try {
      result = this.root.transactionSync(() => {
        this.log.recordInto(changes)
        try {
          return fn(this.tx)
        } finally {
          this.log.stopRecording()
        }
      })
    } catch (err) {
      reloadStructuresAfterAbort(this.sharingStructures, structures)
      throw this.guard.classify(err) ?? err
    }
    this.announce(changes)
    return result
  }

  private async commitNow<T>(fn: (tx: WriteTransaction) => T): Promise<T> {
    const changes = noChanges()
    let refused = false
    const done = this.root.childTransaction(() => {
      this.log.recordInto(changes)
      const structures = savedStructureCounts(this.sharingStructures)
      try {
        return fn(this.tx)
      } catch (err) {
        refused = true
        reloadStructuresAfterAbort(this.sharingStructures, structures)
        throw err
      } finally {
        this.log.stopRecording()
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
    this.announce(changes)
    return result
  }
}

function noChanges(): CommittedOperations {
  return { appended: [], indexed: [], unindexed: [], subjects: new Set() }
}
