/**
 * The node's LMDB environment: one file, a named database per kind of record, opened with the
 * stored format the file was created with (value compression, shared record structures), and the
 * key limits and chunked reads every part of the store shares.
 */
import './unsliced-strings.js'
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { open, type Database, type Key, type RootDatabase } from 'lmdb'
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
import { structureOptions, VALUE_STRUCTURES } from './shared-structures.js'
import { StorageGuard } from './storage-guard.js'
import { CURRENT_FORMAT, checkFormatVersion, FORMAT_VERSION_KEY, storedFormatVersion } from './store-format.js'
import { compressionOptions, VALUE_COMPRESSION } from './value-compression.js'

/** Index entry: a subject's operation, by sequence number. */
/** Where a client signature was first used. Writes of one request (a registration and the name it binds) share it. */
export interface UsedSignature {
  kind: Operation['kind']
  subject: string
  origin: string
  accepted_at: string
}

export type SubjectOperationKey = [subject: string, seq: number]

/** The log's subject index: [subject, seq] → the operation's seal digest. */
export const SUBJECT_INDEX_DB = 'oplog_by_subject'
export type NameKey = [handle: string, name: string]
export type NameVersionKey = [handle: string, name: string, seq: number]
export type EntityNameKey = [entityId: string, handle: string, name: string]
/** An attestation by its subject (`s`) or its issuer (`i`). */
export type AttestationIndexKey = [side: 's' | 'i', party: string, id: string]

/** The trust edges' database: binary keys (the issuer's raw ID), values of 45 bytes as sorted duplicates. */
export const ATTESTATION_EDGES_DB = {
  name: 'attestation_edges',
  dupSort: true,
  encoding: 'binary',
  keyEncoding: 'binary'
} as const

/** The bound of the sequence-number part of a composite key: a range over one subject's entries ends there. */
export const MAX_SEQ = Number.MAX_SAFE_INTEGER

/**
 * LMDB refuses keys over 1,978 bytes. Every key here is an ID, a handle or a name, far shorter;
 * 600 UTF-16 units is at most 1,800 bytes of UTF-8 for all parts of a composite key together.
 */
const MAX_KEY_UNITS = 600
export const keyFits = (...parts: string[]): boolean => parts.reduce((n, p) => n + p.length, 0) <= MAX_KEY_UNITS

/** Rows a purge reads per turn of the event loop, and deletes per commit: a few milliseconds of the HTTP thread. */
export const PURGE_CHUNK = 2_000

export interface StoreDatabases {
  root: RootDatabase
  meta: Database<unknown, string>
  entities: Database<EntityRecord, string>
  developers: Database<DeveloperRecord, string>
  tombstones: Database<Tombstone, string>
  operations: Database<Operation, number>
  subjectOperations: Database<Uint8Array | null, SubjectOperationKey>
  handles: Database<HandleRecord, string>
  names: Database<NameBinding, NameKey>
  nameVersions: Database<NameVersion, NameVersionKey>
  entityNames: Database<null, EntityNameKey>
  approvals: Database<Approval, string>
  liveness: Database<LivenessRecord, string>
  usedSignatures: Database<UsedSignature, string>
  /** Shared operations (on several subjects), by seal digest: their sequence number and how many subjects hold them. */
  sharedOperations: Database<[seq: number, holders: number], Buffer>
  /** Peers an operator banned, by PeerId. */
  peerBans: Database<PeerBan, string>
  attestations: Database<AttestationRecord, string>
  attestationIndex: Database<null, AttestationIndexKey>
  /** Each attestation as a trust edge under its issuer (attestation-edges.ts). */
  attestationEdges: Database<Buffer, Buffer>
}

/** A banned peer (the mesh refuses it both ways). */
export interface PeerBan {
  peer_id: string
  banned_at: string
  reason: string | null
}

/** An opened environment and what its files say about it. */
export interface OpenedStore {
  databases: StoreDatabases
  guard: StorageGuard
  /** The record databases whose structures are shared (none in a store made before they were). */
  sharingStructures: readonly object[]
  /** The sequence number of the log's last operation (0: an empty log). */
  lastSeq: number
  /** The store's format version as found (CURRENT_FORMAT for a store created now); migrations.ts brings it up. */
  formatVersion: number
}

/**
 * Opens (creating if need be) the store in `dataDir`. A store whose stored format this version
 * cannot read (a newer format version, unknown compression or structures) is closed again and
 * refused before anything is written to it.
 */
export async function openStoreDatabases(dataDir: string, minFreeBytes: number, noSync = false): Promise<OpenedStore> {
  await mkdir(dataDir, { recursive: true })
  const guard = new StorageGuard(dataDir, { minFreeBytes })
  // Creating the LMDB file on a full disk kills the process (SIGBUS); an existing one opens fine.
  if (!existsSync(join(dataDir, 'registry.lmdb'))) guard.check()
  const root = open({
    path: join(dataDir, 'registry.lmdb'),
    maxDbs: 32,
    mapSize: 2 ** 34,
    compression: false,
    ...(noSync ? { noSync: true } : {}),
    // Times each commit's phases (a clock read each, nothing more): `commitStats`.
    ...({ trackMetrics: true } as object)
  })
  const meta = root.openDB<unknown, string>({ name: 'meta' })
  const created = meta.get('created_at') === undefined
  const formatVersion = created ? CURRENT_FORMAT : storedFormatVersion(meta)
  try {
    checkFormatVersion(dataDir, formatVersion)
  } catch (err) {
    await root.close()
    throw err
  }
  const { compression, records } = await storedFormat(dataDir, root, meta)
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
  const databases: StoreDatabases = {
    root,
    entities: recordDb<EntityRecord, string>('entities', true),
    developers: recordDb<DeveloperRecord, string>('developers'),
    tombstones: recordDb<Tombstone, string>('tombstones'),
    operations,
    subjectOperations: root.openDB<Uint8Array | null, SubjectOperationKey>({ name: SUBJECT_INDEX_DB }),
    meta,
    handles: recordDb<HandleRecord, string>('handles'),
    names: recordDb<NameBinding, NameKey>('names'),
    nameVersions: recordDb<NameVersion, NameVersionKey>('name_versions'),
    entityNames: root.openDB<null, EntityNameKey>({ name: 'names_by_entity' }),
    approvals: recordDb<Approval, string>('approvals'),
    liveness: recordDb<LivenessRecord, string>('liveness'),
    usedSignatures: recordDb<UsedSignature, string>('used_signatures'),
    sharedOperations: root.openDB<[number, number], Buffer>({ name: 'oplog_shared', keyEncoding: 'binary' }),
    peerBans: root.openDB<PeerBan, string>({ name: 'peer_bans' }),
    attestations: recordDb<AttestationRecord, string>('attestations'),
    attestationIndex: root.openDB<null, AttestationIndexKey>({ name: 'attestation_index' }),
    attestationEdges: root.openDB<Buffer, Buffer>(ATTESTATION_EDGES_DB)
  }
  if (created)
    await root.transaction(() => {
      void meta.put('created_at', new Date().toISOString())
      void meta.put(FORMAT_VERSION_KEY, CURRENT_FORMAT)
    })
  return { databases, guard, sharingStructures, lastSeq: lastSeq ?? 0, formatVersion }
}

/**
 * How the store's large values are compressed, and whether its record structures are shared:
 * recorded when it is created, since lmdb-js reads a database only with the settings it was
 * written with, so stores made before either stay as they are.
 */
async function storedFormat(
  dataDir: string,
  root: RootDatabase,
  meta: Database<unknown, string>
): Promise<{
  compression: Exclude<ReturnType<typeof compressionOptions>, null> | false
  records: Exclude<ReturnType<typeof structureOptions>, null>
}> {
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
  return { compression, records }
}

/**
 * Every row of `db`, read PURGE_CHUNK at a time with a turn of the event loop between: a purge read
 * every used signature in one go, which held the HTTP thread for seconds at a million entities.
 */
export async function* scanInTurns<V>(db: Database<V, string>): AsyncIterable<{ key: string; value: V }> {
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
