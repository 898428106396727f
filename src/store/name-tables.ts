/**
 * Name bindings as the store keeps them: the bindings by handle and name, an index of each
 * entity's names, and each binding's version history. The three are written together so that
 * the index and the history never disagree with the bindings.
 */
import type { Database } from 'lmdb'
import type { NameBinding, NameVersion } from './records.js'
import { type EntityNameKey, keyFits, MAX_SEQ, type NameKey, type NameVersionKey } from './store-databases.js'

export class NameTables {
  constructor(
    private readonly names: Database<NameBinding, NameKey>,
    private readonly nameVersions: Database<NameVersion, NameVersionKey>,
    private readonly entityNames: Database<null, EntityNameKey>
  ) {}

  get(handle: string, name: string): NameBinding | undefined {
    return keyFits(handle, name) ? this.names.get([handle, name]) : undefined
  }

  ofHandle(handle: string): NameBinding[] {
    return keyFits(handle)
      ? [...this.names.getRange({ start: [handle, ''], end: [handle, '\uffff'] }).map(e => e.value)]
      : []
  }

  ofEntity(entityId: string): NameBinding[] {
    const out: NameBinding[] = []
    for (const [, handle, name] of this.entityNames.getKeys({
      start: [entityId, '', ''],
      end: [entityId, '\uffff', '']
    }) as Iterable<EntityNameKey>) {
      const binding = this.names.get([handle, name])
      if (binding) out.push(binding)
    }
    return out
  }

  /** A binding's history, newest first. */
  history(handle: string, name: string): NameVersion[] {
    if (!keyFits(handle, name)) return []
    return [
      ...this.nameVersions
        .getRange({ start: [handle, name, MAX_SEQ], end: [handle, name, 0], reverse: true })
        .map(e => e.value)
    ]
  }

  /** Inside a transaction: stores a binding and adds `version` to its history. */
  put(binding: NameBinding, version: NameVersion): void {
    const previous = this.names.get([binding.handle, binding.entity_name])
    if (previous && previous.entity_id !== binding.entity_id)
      void this.entityNames.remove([previous.entity_id, binding.handle, binding.entity_name])
    void this.names.put([binding.handle, binding.entity_name], binding)
    void this.entityNames.put([binding.entity_id, binding.handle, binding.entity_name], null)
    const [last] = [
      ...this.nameVersions.getKeys({
        start: [binding.handle, binding.entity_name, MAX_SEQ],
        end: [binding.handle, binding.entity_name, 0],
        reverse: true,
        limit: 1
      })
    ] as NameVersionKey[]
    void this.nameVersions.put([binding.handle, binding.entity_name, (last?.[2] ?? 0) + 1], version)
  }

  /** Inside a transaction: removes a binding with its history. */
  delete(handle: string, name: string): void {
    const binding = this.names.get([handle, name])
    if (!binding) return
    void this.names.remove([handle, name])
    void this.entityNames.remove([binding.entity_id, handle, name])
    for (const key of this.nameVersions.getKeys({ start: [handle, name, 0], end: [handle, name, MAX_SEQ] }))
      void this.nameVersions.remove(key)
  }
}
