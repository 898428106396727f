/**
 * A Map with a cap on its entries, for the caches and bookkeeping that outside input can grow
 * (keys, peers, subjects): adding a key when the map is full first drops the entry inserted
 * longest ago. Updating a key that is already there keeps its place; a caller that wants a
 * touched key to count as new deletes it before setting it.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(readonly limit: number) {
    super()
  }

  override set(key: K, value: V): this {
    if (this.size >= this.limit && !this.has(key)) {
      const oldest = this.keys().next()
      if (!oldest.done) this.delete(oldest.value)
    }
    return super.set(key, value)
  }
}
