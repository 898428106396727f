import { formatKey } from '../../identity/encoding.js'
import { SCHEMA_VERSION, type DeveloperRecord } from '../../store/records.js'
import { signatureFingerprint } from '../../store/registry-store.js'

/** The profile a developer registered with, signed with its key. */
export interface DeveloperRegistration {
  name: string
  signature: string
}

/**
 * A developer as first written: no profile links, no handle, nothing verified yet. Without a
 * registration it is implicit (known only through a verified signature of its key).
 */
export function newDeveloper(
  developerId: string,
  publicKey: Buffer,
  home: string,
  now: string,
  registration: DeveloperRegistration | null
): DeveloperRecord {
  return {
    developer_id: developerId,
    name: registration?.name ?? null,
    public_key: formatKey(publicKey),
    signature: registration?.signature ?? null,
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
    implicit: registration === null,
    registration_signatures: registration ? [signatureFingerprint(registration.signature)] : []
  }
}

/**
 * A developer known only through a verified signature of its key (a developer proof or a handle
 * claim) in open mode: no profile yet, completed later by POST /v1/developers.
 */
export function implicitDeveloper(developerId: string, publicKey: Buffer, home: string, now: string): DeveloperRecord {
  return newDeveloper(developerId, publicKey, home, now, null)
}
