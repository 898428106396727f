/**
 * Record structures (the key lists of msgpack records) kept once per database, not in every value.
 * Without lmdb-js's `sharedStructuresKey` each value carried its own key list: an entity record's
 * 28 keys were about 300 of its 900 bytes, a liveness record's 55 of 84; every write encoded the
 * list again and every read decoded it into new strings (about 5 KB of garbage a registration).
 * With it, the lists live under one key of each database and a value names its structure by number.
 *
 * The structures are part of the stored format: values written with them read back only where the
 * database is opened with the same key. So a store records whether it uses them when it is created
 * (its meta database, like its value compression); stores made before stay as they are.
 */
/** How a new store keeps its record structures (RegistryStore keeps it in its meta database). */
export const VALUE_STRUCTURES = 'shared-1'

/** Where each database keeps its structures: a symbol key, outside every range our reads cover. */
export const STRUCTURES_KEY = Symbol.for('structures')

/** lmdb-js `openDB` options for a store's record databases, from its meta `value_structures` (null: a value this version does not know). */
export function structureOptions(stored: unknown): { sharedStructuresKey?: symbol } | null {
  if (stored === undefined) return {}
  return stored === VALUE_STRUCTURES ? { sharedStructuresKey: STRUCTURES_KEY } : null
}

/** The part of msgpackr's Packr (lmdb-js's `encoder`) that holds a database's structures. */
interface StructureList {
  sharedLength?: number
  uninitialized?: boolean
}

/** `db`: an lmdb-js database (typed loosely: each has its own value and key types). */
const structuresOf = (db: object): StructureList | undefined =>
  (db as unknown as { encoder?: { structures?: StructureList } }).encoder?.structures

/** How many structures each database has saved, to compare with after a transaction that aborted. */
export function savedStructureCounts(dbs: readonly object[]): number[] {
  return dbs.map(db => structuresOf(db)?.sharedLength ?? 0)
}

/**
 * A structure is saved inside the transaction that first writes a value of its shape; when that
 * transaction aborts, the structure is gone from the store but msgpackr still counts it as saved,
 * and later values would name a structure no reader can find. So after an abort each database whose
 * structures grew meanwhile (all of them when `before` is not known) reloads them from the store
 * before its next write (msgpackr's own way back after a declined save).
 */
export function reloadStructuresAfterAbort(dbs: readonly object[], before?: readonly number[]): void {
  dbs.forEach((db, i) => {
    const structures = structuresOf(db)
    if (structures && (before === undefined || (structures.sharedLength ?? 0) !== before[i]))
      structures.uninitialized = true
  })
}
