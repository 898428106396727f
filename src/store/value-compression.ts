/**
 * LZ4 compression of the store's large values: entity records and the operation log. At 100k
 * entities their pages took 428 MiB of the 467 MiB file, and the mapped file is most of a node's
 * resident memory at scale (issue 18).
 *
 * lmdb-js compresses with a shared dictionary, and its default one (32 KiB of JSON and English)
 * cost 14 µs a write here, on the HTTP thread inside a transaction; this short dictionary of the
 * strings our values repeat costs nothing measurable and compresses them better (a registration's
 * operation: 7,500 → 6,000 pages per 30,000).
 *
 * A dictionary is part of the stored format: values compressed with one read back only with the
 * same. So a store records the name of its dictionary when it is created, and a dictionary is never
 * changed; another would be added under a new name.
 */

/** The compression a new store is created with (RegistryStore keeps it in its meta database). */
export const VALUE_COMPRESSION = 'lz4-1'

// LZ4 finds matches anywhere in the dictionary; nearer its end is cheaper to refer to, so the most
// frequent strings come last.
const DICTIONARY_1 = [
  'travel finance health tools search image voice chat code scrape recommend security data ',
  '"openapi_url":null,"codebase_hash":null,"pricing_model":null,"entity_pricing":',
  '"agent_url":"https://","entity_type":"service","service_endpoint":"https://',
  '"capability_summary":{"skills":["","entity_name":"","entity_index":0,',
  'developer.register","developer.implicit","entity.update","entity.status","handle.claim","name.bind",',
  '"carrier":"proof","signer":"developer","form":"proof","carrier":"body","signer":"self","form":"spec",',
  '/v1/entities","localhost","zns:registry:","zns:svc:","zns:dev:",',
  '{"type":"agent","name":"","category":"","summary":"","tags":["",""],"version":"1.0.0",',
  '"entity_url":"https://","public_key":"ed25519:","developer_id":"zns:dev:",',
  '"developer_proof":{"developer_public_key":"ed25519:","agent_public_key":"ed25519:","index":0,',
  '"signature":"ed25519:"},"signature":"ed25519:","entity.register","active","agent","service"'
].join('')

/** lmdb-js `compression` options for a store created with `VALUE_COMPRESSION`. */
export function compressionOptions(name: string): { threshold: number; dictionary: Buffer } | null {
  if (name !== VALUE_COMPRESSION) return null
  return { threshold: 256, dictionary: Buffer.from(DICTIONARY_1) }
}
