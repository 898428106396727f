/**
 * The registry identity proof served at /.well-known/node-registry.json: the node key signs the
 * domain it serves, its registry ID and, when the node knows its certificate, the SHA-256 of the
 * certificate's SubjectPublicKeyInfo. A client that fetched the proof over TLS from the domain and
 * saw that certificate knows the domain, the TLS key and the registry key belong together.
 */
import { createHash, X509Certificate } from 'node:crypto'
import { canonicalJson, goEscapedJson, withoutSignature } from './canonical-json.js'
import { formatKey, KEY_PREFIX, parsePublicKey, parseSignature } from './encoding.js'
import { deriveId } from './ids.js'
import { sign, verifyRaw } from './keys.js'
import type { NodeIdentity } from './node-identity.js'

/** Where a node serves its proof (the API route) and where verifiers fetch it (verify-registry.ts). */
export const REGISTRY_PROOF_PATH = '/.well-known/node-registry.json'
export const REGISTRY_PROOF_TYPE = 'registry-identity-proof'
export const REGISTRY_PROOF_VERSION = '1'
export const DEFAULT_PROOF_VALIDITY_MS = 7 * 24 * 60 * 60 * 1000
/** How far in the future issued_at may lie (clock skew between node and verifier). */
export const PROOF_CLOCK_SKEW_MS = 60_000

export interface RegistryProof {
  type: 'registry-identity-proof'
  version: '1'
  domain: string
  registry_id: string
  /** 'ed25519:<base64>' */
  ed25519_public_key: string
  /** 'sha256:<lowercase hex>' of the DER SubjectPublicKeyInfo of the TLS certificate. */
  tls_spki_fingerprint?: string
  issued_at: string
  expires_at: string
  signature: string
}

export interface ProofCheck {
  ok: boolean
  /** The registry ID derived from the proof's key (set whenever the key parses, even when ok is false). */
  registry_id?: string
  problems: string[]
}

const CERT_PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/
const SPKI_FINGERPRINT = /^sha256:[0-9a-f]{64}$/

/**
 * `sha256:<hex>` over the DER SubjectPublicKeyInfo of a certificate. Given a PEM chain
 * (fullchain.pem) the first certificate, the leaf, is used. Throws on anything that is not a certificate.
 */
export function spkiFingerprint(certPem: string | X509Certificate): string {
  let cert: X509Certificate
  if (typeof certPem === 'string') {
    const block = CERT_PEM_BLOCK.exec(certPem)
    cert = new X509Certificate(block ? block[0] : certPem)
  } else {
    cert = certPem
  }
  const der = cert.publicKey.export({ type: 'spki', format: 'der' })
  return `sha256:${createHash('sha256').update(der).digest('hex')}`
}

export function createRegistryProof(
  identity: NodeIdentity,
  options: { domain: string; certPem?: string; now?: Date; validityMs?: number }
): RegistryProof {
  const domain = normalizeDomain(options.domain)
  if (domain === '') throw new TypeError('a registry proof needs a domain')
  const validityMs = options.validityMs ?? DEFAULT_PROOF_VALIDITY_MS
  if (!Number.isFinite(validityMs) || validityMs <= 0)
    throw new RangeError('validityMs must be a positive number of milliseconds')
  const now = options.now ?? new Date()
  const unsigned: Omit<RegistryProof, 'signature'> = {
    type: REGISTRY_PROOF_TYPE,
    version: REGISTRY_PROOF_VERSION,
    domain,
    registry_id: identity.registryId,
    ed25519_public_key: formatKey(identity.keyPair.publicKey),
    ...(options.certPem !== undefined ? { tls_spki_fingerprint: spkiFingerprint(options.certPem) } : {}),
    issued_at: now.toISOString(),
    expires_at: new Date(now.getTime() + validityMs).toISOString()
  }
  return { ...unsigned, signature: sign(identity.keyPair, canonicalJson(unsigned)) }
}

const STRING_FIELDS = [
  'type',
  'version',
  'domain',
  'registry_id',
  'ed25519_public_key',
  'issued_at',
  'expires_at',
  'signature'
] as const

/**
 * Checks a proof as received (any JSON value). Every failed check adds a problem; ok when none.
 * The signature covers every member except `signature` (unknown members included), in canonical
 * JSON, or its Go-escaped form.
 */
export function verifyRegistryProof(
  proof: unknown,
  options: { now?: Date; expectedDomain?: string; expectedSpki?: string } = {}
): ProofCheck {
  const problems: string[] = []
  if (proof === null || typeof proof !== 'object' || Array.isArray(proof)) {
    return { ok: false, problems: ['the proof is not a JSON object'] }
  }
  const p = proof as Record<string, unknown>
  for (const field of STRING_FIELDS) {
    if (typeof p[field] !== 'string') problems.push(`${field} is missing or not a string`)
  }
  if (p.tls_spki_fingerprint !== undefined && typeof p.tls_spki_fingerprint !== 'string')
    problems.push('tls_spki_fingerprint is not a string')
  if (problems.length > 0) return { ok: false, problems }
  const fields = p as unknown as RegistryProof

  if (fields.type !== REGISTRY_PROOF_TYPE)
    problems.push(`type is ${JSON.stringify(fields.type)}, expected "${REGISTRY_PROOF_TYPE}"`)
  if (fields.version !== REGISTRY_PROOF_VERSION)
    problems.push(`version ${JSON.stringify(fields.version)} is not supported (expected "${REGISTRY_PROOF_VERSION}")`)
  if (fields.tls_spki_fingerprint !== undefined && !SPKI_FINGERPRINT.test(fields.tls_spki_fingerprint)) {
    problems.push('tls_spki_fingerprint is not sha256:<64 lowercase hex>')
  }

  // Identity: the key, the ID derived from it, and the signature by it.
  let registryId: string | undefined
  const publicKey = fields.ed25519_public_key.startsWith(KEY_PREFIX) ? parsePublicKey(fields.ed25519_public_key) : null
  if (!publicKey) {
    problems.push('ed25519_public_key is not ed25519:<base64 of 32 bytes>')
  } else {
    registryId = deriveId('registry', publicKey)
    if (fields.registry_id !== registryId)
      problems.push(`registry_id ${fields.registry_id} does not match the key, which derives ${registryId}`)
    const signature = parseSignature(fields.signature)
    if (!signature) {
      problems.push('signature is not ed25519:<base64 of 64 bytes>')
    } else {
      const plain = canonicalJson(withoutSignature(p))
      const escaped = goEscapedJson(plain)
      const verifies =
        verifyRaw(publicKey, plain, signature) || (escaped !== null && verifyRaw(publicKey, escaped, signature))
      if (!verifies) problems.push('the signature does not verify against ed25519_public_key')
    }
  }

  // Validity window.
  const now = (options.now ?? new Date()).getTime()
  const issued = parseTimestamp(fields.issued_at)
  const expires = parseTimestamp(fields.expires_at)
  if (issued === null) problems.push('issued_at is not an ISO 8601 timestamp')
  if (expires === null) problems.push('expires_at is not an ISO 8601 timestamp')
  if (issued !== null && issued > now + PROOF_CLOCK_SKEW_MS)
    problems.push(`issued_at ${fields.issued_at} is in the future (more than ${PROOF_CLOCK_SKEW_MS / 1000} s ahead)`)
  if (expires !== null && now >= expires) problems.push(`the proof expired at ${fields.expires_at}`)
  if (issued !== null && expires !== null && expires <= issued) problems.push('expires_at is not after issued_at')

  // Bindings the caller asks for.
  if (
    options.expectedDomain !== undefined &&
    normalizeDomain(fields.domain) !== normalizeDomain(options.expectedDomain)
  ) {
    problems.push(`domain ${fields.domain} is not the expected ${options.expectedDomain}`)
  }
  if (options.expectedSpki !== undefined) {
    if (fields.tls_spki_fingerprint === undefined)
      problems.push(`the proof has no tls_spki_fingerprint (expected ${options.expectedSpki})`)
    else if (fields.tls_spki_fingerprint.toLowerCase() !== options.expectedSpki.toLowerCase()) {
      problems.push(`tls_spki_fingerprint ${fields.tls_spki_fingerprint} is not the expected ${options.expectedSpki}`)
    }
  }

  return registryId !== undefined
    ? { ok: problems.length === 0, registry_id: registryId, problems }
    : { ok: problems.length === 0, problems }
}

/** Host names compare case-insensitively and without a trailing root dot. */
function normalizeDomain(domain: string): string {
  return domain.trim().toLowerCase().replace(/\.$/, '')
}

function parseTimestamp(text: string): number | null {
  // Date.parse accepts many forms; require the ISO 8601 date-time shape first.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(text)) return null
  const ms = Date.parse(text)
  return Number.isNaN(ms) ? null : ms
}
