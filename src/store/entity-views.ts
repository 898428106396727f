/**
 * What the node's in-memory views (the catalog, liveness and the origins' quotas) read of each
 * stored entity at start, and the read itself: in the node's process for a small store, in a
 * child process for a large one (reader-process.ts says why).
 */
import type { EntityRecord, LivenessRecord } from './records.js'
import { readInChild } from './reader-process.js'
import type { RegistryStore } from './registry-store.js'

/** The fields of an entity record the views are built from. */
export type EntityViewFields = Pick<
  EntityRecord,
  | 'entity_id'
  | 'type'
  | 'category'
  | 'developer_id'
  | 'tags'
  | 'registered_at'
  | 'home_registry'
  | 'home_registry_id'
  | 'public_key'
  | 'status'
  | 'last_heartbeat'
>

/** One stored entity as the views read it: its fields and, for a home entity, its liveness as last flushed. */
export interface StoredEntityView {
  fields: EntityViewFields
  liveness?: LivenessRecord
}

/**
 * From this many entities the start's read runs in a child process: below it the file is small, and the
 * child's start and the parts' copying would cost more than the mapped pages.
 */
export const READ_IN_CHILD_FROM = 200_000

/** Entities per part a child sends. */
const PART = 4096

export function viewFields(record: EntityRecord): EntityViewFields {
  const { entity_id, type, category, developer_id, tags, registered_at, home_registry, public_key } = record
  const { status, last_heartbeat, home_registry_id } = record
  return {
    entity_id,
    type,
    category,
    developer_id,
    tags,
    registered_at,
    home_registry,
    ...(home_registry_id === undefined ? {} : { home_registry_id }),
    public_key,
    status,
    last_heartbeat
  }
}

/**
 * Every stored entity's view, in parts, from one consistent read: `entities` and `flushed` (the
 * liveness table) both in key order, joined as they are read. Keys are compared as JS strings,
 * which is LMDB's byte order for the ASCII IDs entities have.
 */
export function* entityViews(
  entities: Iterable<EntityRecord>,
  flushed: Iterable<[string, LivenessRecord]>,
  part = PART
): Iterable<StoredEntityView[]> {
  const states = flushed[Symbol.iterator]()
  let next = states.next()
  let views: StoredEntityView[] = []
  for (const record of entities) {
    const id = record.entity_id
    while (!next.done && next.value[0] < id) next = states.next()
    const fields = viewFields(record)
    if (!next.done && next.value[0] === id) views.push({ fields, liveness: next.value[1] })
    else views.push({ fields })
    if (views.length === part) {
      yield views
      views = []
    }
  }
  if (views.length > 0) yield views
}

/** Where readEntityViews read the store, and why not in a child when one was due. */
export interface ViewsRead {
  in: 'child' | 'node'
  childFailed?: string
}

/**
 * Passes every stored entity's view to `load`, a part at a time; in a child process when the store
 * holds `childFrom` entities or more (in this process when the child failed before its first part).
 */
export async function readEntityViews(
  store: RegistryStore,
  dataDir: string,
  load: (part: StoredEntityView[]) => void,
  childFrom = READ_IN_CHILD_FROM
): Promise<ViewsRead> {
  let childFailed: string | undefined
  if (store.entityCount() >= childFrom) {
    let parts = 0
    try {
      await readInChild<StoredEntityView[]>(import.meta.url, 'entity-views-process', dataDir, part => {
        parts++
        load(part)
      }).done
      return { in: 'child' }
    } catch (err) {
      // Read again here only when nothing was loaded: a part loaded twice would count twice.
      if (parts > 0) throw err
      childFailed = err instanceof Error ? err.message : String(err)
    }
  }
  for (const part of entityViews(store.allEntities(), store.allLiveness())) load(part)
  return childFailed === undefined ? { in: 'node' } : { in: 'node', childFailed }
}
