/**
 * The search index's snapshot: written next to the store when the node stops, and read at the next
 * start instead of indexing every record again (at a million entities the build took about 90 s of
 * the search thread; reading the snapshot takes a few).
 *
 * A snapshot names the store's state it holds: the sequence number of the operation log's last
 * operation and that operation's seal digest. At start it is used only when the log still holds
 * that operation; the operations appended after it (a node killed after a clean stop, writes made
 * by another tool) are read back and their entities indexed again from the store, except those a
 * batch of status changes names, whose status alone is applied again. Liveness, the
 * developers' trust parts and transitive trust are never taken from it: they are applied again as
 * after a build.
 */
import { readdirSync, rmSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import type { RegistryStore } from '../../store/registry-store.js'
import { sealDigest } from '../../store/operation-log.js'
import type { Operation } from '../../store/records.js'
import { isShared } from '../../wire/operations.js'
import { SnapshotReader } from '../../util/snapshot-file.js'
import type { SnapshotMeta } from './search-index.js'

/** The file's format, part of its meta: a snapshot of another format is built over. */
const FORMAT = 2
/** More operations than this after the snapshot's, and the index is built again instead. */
export const MAX_REPLAYED_OPERATIONS = 100_000

export const SNAPSHOT_FILE = 'search-index.snapshot'

type StoreLog = Pick<RegistryStore, 'lastSeq' | 'operationAt' | 'operationsAfter'>

/** The store's state at `seq`, as a snapshot's meta names it (with the embedder whose vectors it holds). */
export function snapshotMeta(store: StoreLog, embedder: string, seq: number): SnapshotMeta {
  return { format: FORMAT, seq, seal: sealAt(store, seq), embedder }
}

/** The seal digest (hex) of the operation stored under `seq`; '' when there is none. */
function sealAt(store: StoreLog, seq: number): string {
  const op = seq > 0 ? store.operationAt(seq) : undefined
  return op ? sealDigest(op.node_signature).toString('hex') : ''
}

/** A snapshot the store still holds the state of, and what the store changed since. */
export interface UsableSnapshot {
  meta: SnapshotMeta
  /** Entities changed since (to index again from the store). */
  changed: Set<string>
  /** Entities whose status alone changed since (a batch of status changes): their status is applied again. */
  statusChanged: Set<string>
}

/**
 * The meta of the snapshot at `path` when the store still holds the state it names, with the
 * entities changed since; otherwise why not.
 */
export function usableSnapshot(path: string, store: StoreLog, embedder: string): UsableSnapshot | { unusable: string } {
  let written: SnapshotMeta
  try {
    const reader = new SnapshotReader(path)
    written = reader.meta as SnapshotMeta
    reader.close()
  } catch (err) {
    return { unusable: (err as Error).message }
  }
  const seq = typeof written.seq === 'number' ? written.seq : -1
  if (written.format !== FORMAT || seq < 0) return { unusable: 'written in another format' }
  if (written.embedder !== embedder) return { unusable: `holds the vectors of ${String(written.embedder)}` }
  const seal = sealAt(store, seq)
  if (seal !== written.seal || store.lastSeq() < seq) return { unusable: 'written for another state of the store' }
  const since = store.operationsAfter(seq, MAX_REPLAYED_OPERATIONS + 1)
  if (since.length > MAX_REPLAYED_OPERATIONS)
    return { unusable: `more than ${MAX_REPLAYED_OPERATIONS} operations were stored since` }
  const changed = new Set<string>()
  const statusChanged = new Set<string>()
  for (const [, op] of since) {
    // A batch's own subject names the batch, not an entity.
    if (isShared(op)) for (const id of statusChangesOf(op)) statusChanged.add(id)
    else changed.add(op.subject)
  }
  for (const id of changed) statusChanged.delete(id)
  return { meta: { format: FORMAT, seq, seal, embedder }, changed, statusChanged }
}

/** The entities a batch of status changes names. */
function statusChangesOf(op: Operation): string[] {
  if (!op.body) return []
  try {
    const body = JSON.parse(Buffer.from(op.body).toString()) as { changes?: { entity_id?: unknown }[] }
    return (body.changes ?? []).flatMap(c => (typeof c.entity_id === 'string' ? [c.entity_id] : []))
  } catch {
    return []
  }
}

/** Removes the snapshot and what a write cut short left of one (`<file>.<pid>.tmp`). */
export function removeSnapshot(path: string, { keepFile = false } = {}): void {
  if (!keepFile) rmSync(path, { force: true })
  const prefix = `${basename(path)}.`
  let names: string[]
  try {
    names = readdirSync(dirname(path))
  } catch {
    return
  }
  for (const name of names)
    if (name.startsWith(prefix) && name.endsWith('.tmp')) rmSync(join(dirname(path), name), { force: true })
}
