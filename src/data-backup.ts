/**
 * Backup and restore of a data directory. A backup is LMDB's own copy of the store, taken by a
 * reader beside the node (store-reader.ts: one read transaction's snapshot, so the node keeps
 * writing), with the rest of the directory's state (the node key and any other file a part of
 * the node keeps there) and a manifest written last: a directory without it is not a complete
 * backup. Restore fills an empty data directory (or, forced, replaces what it holds) while holding
 * the directory's lock, so it never writes under a running node.
 */
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { NODE_KEY_FILE } from './identity/node-identity.js'
import { NODE_VERSION } from './version.js'
import { DataDirLock, LOCK_FILE } from './store/data-lock.js'
import { STORE_FILE, StoreReader } from './store/store-reader.js'

export const MANIFEST_FILE = 'backup.json'
const FORMAT = 'registry-node-backup/1'

/** A backup or restore that cannot be done as asked (one line for the operator). */
export class BackupError extends Error {
  override name = 'BackupError'
}

export interface BackupManifest {
  format: typeof FORMAT
  created_at: string
  node_version: string
  registry_id: string | null
  /** The sequence number of the last operation in the copied log. */
  last_seq: number
  compact: boolean
  source: string
  files: string[]
}

/**
 * LMDB's lock file and the node's PID lock describe processes, not state; a temporary file is a
 * search snapshot being written (the finished one is copied: a start checks it against the store).
 */
const isTransient = (name: string): boolean => name === LOCK_FILE || name.endsWith('-lock') || name.endsWith('.tmp')

export async function backupDataDir(
  dataDir: string,
  to: string,
  options: { compact?: boolean } = {}
): Promise<BackupManifest> {
  const compact = options.compact ?? false
  if ((await entries(to)).length > 0) throw new BackupError(`${to} is not empty; back up into a new directory`)
  const reader = StoreReader.open(dataDir)
  await mkdir(to, { recursive: true })
  try {
    await reader.backup(join(to, STORE_FILE), compact)
  } finally {
    await reader.close()
  }
  const files = [STORE_FILE]
  for (const name of await entries(dataDir)) {
    if (name === STORE_FILE || isTransient(name)) continue
    await cp(join(dataDir, name), join(to, name), { recursive: true, preserveTimestamps: true })
    files.push(name)
  }
  // The copy is read back before the manifest marks it complete.
  const copy = StoreReader.open(to)
  let lastSeq: number
  try {
    lastSeq = copy.lastSeq()
  } finally {
    await copy.close()
    await rm(join(to, `${STORE_FILE}-lock`), { force: true })
  }
  const manifest: BackupManifest = {
    format: FORMAT,
    created_at: new Date().toISOString(),
    node_version: NODE_VERSION,
    registry_id: await registryIdIn(dataDir),
    last_seq: lastSeq,
    compact,
    source: resolve(dataDir),
    files
  }
  await writeFile(join(to, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`)
  return manifest
}

export async function restoreDataDir(
  from: string,
  dataDir: string,
  options: { force?: boolean } = {}
): Promise<BackupManifest> {
  const manifest = await readManifest(from)
  // Taken first: a running node's directory is refused (DataDirInUse) before anything is looked at.
  const lock = await DataDirLock.acquire(dataDir)
  try {
    const present = (await entries(dataDir)).filter(name => name !== LOCK_FILE)
    if (present.length > 0 && !options.force)
      throw new BackupError(`${dataDir} is not empty (${present.join(', ')}); --force replaces what it holds`)
    for (const name of present) await rm(join(dataDir, name), { recursive: true, force: true })
    for (const name of manifest.files) {
      await cp(join(from, name), join(dataDir, name), { recursive: true, preserveTimestamps: true })
    }
  } finally {
    await lock.release()
  }
  return manifest
}

async function readManifest(dir: string): Promise<BackupManifest> {
  let manifest: Partial<BackupManifest>
  try {
    manifest = JSON.parse(await readFile(join(dir, MANIFEST_FILE), 'utf8')) as Partial<BackupManifest>
  } catch {
    throw new BackupError(`${dir} is not a complete registry-node backup (no readable ${MANIFEST_FILE})`)
  }
  if (manifest.format !== FORMAT || !Array.isArray(manifest.files))
    throw new BackupError(`${dir}/${MANIFEST_FILE} is not a backup manifest this version reads (${FORMAT})`)
  const held = new Set(await entries(dir))
  const missing = manifest.files.filter(name => !held.has(name))
  if (missing.length > 0) throw new BackupError(`${dir} lacks ${missing.join(', ')}, which its manifest lists`)
  return manifest as BackupManifest
}

async function registryIdIn(dataDir: string): Promise<string | null> {
  try {
    const file = JSON.parse(await readFile(join(dataDir, NODE_KEY_FILE), 'utf8')) as { registry_id?: unknown }
    return typeof file.registry_id === 'string' ? file.registry_id : null
  } catch {
    return null
  }
}

/** The names in a directory; none when it does not exist. */
async function entries(dir: string): Promise<string[]> {
  try {
    return await readdir(dir)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
}
