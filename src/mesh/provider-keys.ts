/**
 * The DHT provider keys of mesh/locator.ts, apart so the node can name them without loading
 * libp2p: `home:<x>` (a bucket of home entity IDs, by the first hex digit of their ID) and `host:<host>`.
 */

/** The provider record that leads to a key's home: its ID's bucket, or its FQAN's host. */
export function providerKeyOf(key: string): string | null {
  const entity = /^entity:zns:(?:svc:)?([0-9a-f])[0-9a-f]{31}$/.exec(key)
  if (entity) return `home:${entity[1] as string}`
  const fqan = /^fqan:([^/]+)\//.exec(key)
  return fqan ? hostKey(fqan[1] as string) : null
}

/** The provider key of a host's namespace of names. */
export function hostKey(host: string): string {
  return `host:${host.toLowerCase()}`
}

/** The provider key of a home entity's bucket. */
export function homeBucketKey(entityId: string): string | null {
  return providerKeyOf(`entity:${entityId}`)
}
