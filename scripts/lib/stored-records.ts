import {
  type AttestationRecord,
  type DeveloperRecord,
  type EntityRecord,
  type Operation,
  SCHEMA_VERSION
} from '../../src/store/records.js'

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

/** A developer record as the store holds it, with placeholder key and signature. */
export function storedDeveloper(developerId: string, verified: boolean): DeveloperRecord {
  const at = new Date().toISOString()
  return {
    developer_id: developerId,
    name: `developer ${developerId.slice(-6)}`,
    public_key: `ed25519:${'A'.repeat(43)}=`,
    signature: `ed25519:${'A'.repeat(86)}==`,
    github: null,
    profile_url: null,
    dev_handle: verified ? `dev${developerId.slice(-6)}` : null,
    dev_handle_verified: verified,
    verification_method: null,
    verification_proof: null,
    home_registry: 'bench.test',
    registered_at: at,
    updated_at: at,
    schema_version: SCHEMA_VERSION,
    implicit: false,
    registration_signatures: []
  }
}

/** A successful interaction `issuer` → `subject` as the store holds it (a placeholder signature unique to `n`), numbered `n`. */
export function storedAttestation(
  n: number,
  issuer: string,
  subject: string,
  evidence: AttestationRecord['evidence'] = null,
  issuedAt = new Date().toISOString()
): AttestationRecord {
  return {
    attestation_id: `zns:att:${n.toString(16).padStart(32, '0')}`,
    issuer,
    subject,
    kind: 'interaction',
    outcome: 'success',
    issued_at: issuedAt,
    nonce: n.toString(16).padStart(16, '0'),
    evidence,
    comment: null,
    // Unique: the log refuses a signature that already authorized another write.
    signature: `ed25519:${n.toString(16).padStart(86, 'A')}==`,
    accepted_at: issuedAt,
    home_registry: 'bench.test',
    payment_check: evidence?.payment ? 'unchecked' : 'none'
  }
}

/** The log's operation of a stored attestation (placeholder signatures; a seal unique to it). */
export function attestationOperation(r: AttestationRecord): Operation {
  return {
    kind: 'attestation.add',
    subject: r.attestation_id,
    body: null,
    path: null,
    auth: { carrier: 'body', signer: 'self', signature: r.signature, form: 'spec' },
    accepted_at: r.accepted_at,
    origin: `zns:registry:${'0'.repeat(32)}`,
    node_signature: `ed25519:${r.nonce.padStart(86, 'A')}==`
  }
}
