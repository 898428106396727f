import { SCHEMA_VERSION, type EntityRecord } from '../../src/store/records.js'

/**
 * An entity record as the store holds it, with placeholder keys and signatures: for tests and
 * benchmarks that write to a store directly (records that never replicate, a store filled before a
 * node starts, the eval's index).
 */
export function storedEntity(
  fields: Pick<EntityRecord, 'entity_id' | 'name' | 'summary' | 'home_registry'> & Partial<EntityRecord>
): EntityRecord {
  const now = new Date().toISOString()
  return {
    type: 'agent',
    category: 'tools',
    version: '1.0.0',
    tags: [],
    public_key: `ed25519:${'A'.repeat(43)}=`,
    signature: `ed25519:${'A'.repeat(86)}==`,
    entity_url: 'https://planted.example',
    service_endpoint: null,
    openapi_url: null,
    codebase_hash: null,
    developer_id: null,
    entity_index: null,
    developer_proof: null,
    capability_summary: null,
    pricing_model: null,
    entity_name: null,
    ttl: 86_400,
    status: 'active',
    last_heartbeat: null,
    registered_at: now,
    updated_at: now,
    schema_version: SCHEMA_VERSION,
    registration_signatures: [],
    ...fields
  }
}
