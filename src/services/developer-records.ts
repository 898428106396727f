import { formatKey } from '../identity/encoding.js'
import { SCHEMA_VERSION, type DeveloperRecord } from '../store/records.js'

/**
 * A developer known only through a verified signature of its key (a developer proof or a handle
 * claim) in open mode: no profile yet, completed later by POST /v1/developers.
 */
export function implicitDeveloper(developerId: string, publicKey: Buffer, home: string, now: string): DeveloperRecord {
  return {
    developer_id: developerId,
    name: null,
    public_key: formatKey(publicKey),
    signature: null,
    github: null,
    profile_url: null,
    dev_handle: null,
    dev_handle_verified: false,
    verification_method: null,
    verification_proof: null,
    home_registry: home,
    registered_at: now,
    updated_at: now,
    schema_version: SCHEMA_VERSION,
    implicit: true,
    registration_signatures: []
  }
}
