/**
 * The store's format version. A store records `format_version` in its meta database; one without it
 * was written by registry-node 0.2.0 (format 1), whose format was told by marker keys instead
 * (migrations.ts). A store of a version newer than this code knows is refused before anything is
 * written to it: its records may mean what this code cannot tell.
 */
import type { Database } from 'lmdb'
import { NODE_VERSION } from '../version.js'

export const FORMAT_VERSION_KEY = 'format_version'
/** The version of a store that has no `format_version`: registry-node 0.2.0's. */
export const UNVERSIONED_FORMAT = 1
/** The format this code writes; migrations.ts leads every older one up to it. */
export const CURRENT_FORMAT = 2

/** A store this code must not open (its format is newer than this code knows). */
export class StoreFormatError extends Error {
  override name = 'StoreFormatError'
}

/** The stored format version (UNVERSIONED_FORMAT when the store records none). */
export function storedFormatVersion(meta: Database<unknown, string>): number {
  const stored = meta.get(FORMAT_VERSION_KEY)
  return stored === undefined ? UNVERSIONED_FORMAT : Number(stored)
}

/** Throws StoreFormatError for a store of a format this code cannot read. */
export function checkFormatVersion(dataDir: string, version: number): void {
  if (Number.isInteger(version) && version >= 1 && version <= CURRENT_FORMAT) return
  if (!(version > CURRENT_FORMAT))
    throw new StoreFormatError(`${dataDir}: the store's format_version is ${version}, which is not a format version`)
  throw new StoreFormatError(
    `${dataDir}: the store has format version ${version}, written by a newer registry-node; this is registry-node ${NODE_VERSION}, which reads format versions up to ${CURRENT_FORMAT}. Downgrade is not supported: run the newer registry-node on this data directory, or restore a backup taken before the upgrade`
  )
}
