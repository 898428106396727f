import { readFileSync } from 'node:fs'
import type { NodeIdentity } from '../../identity/node-identity.js'
import {
  createRegistryProof,
  DEFAULT_PROOF_VALIDITY_MS,
  spkiFingerprint,
  type RegistryProof
} from '../../identity/registry-proof.js'

export const DEFAULT_PROOF_RENEW_BEFORE_MS = 24 * 60 * 60 * 1000

export interface RegistryProofProviderOptions {
  /** The domain the proof names (the node's public host). */
  domain: string
  /** PEM certificate whose SPKI fingerprint the proof carries; '' or absent: none. */
  certFile?: string
  /** Default 7 days. */
  validityMs?: number
  /** The proof is reissued once it is this close to expiry. Default 1 day. */
  renewBeforeMs?: number
  now?: () => Date
}

/**
 * Keeps the node's signed registry identity proof. The certificate is read at construction and again
 * when the node reloads its configuration; the proof is cached, and reissued near expiry or when the
 * certificate changed.
 */
export class RegistryProofProvider {
  readonly domain: string
  /** The certificate's SPKI fingerprint, when a certificate was configured. */
  tlsSpkiFingerprint: string | undefined
  private certPem: string | undefined
  private readonly validityMs: number
  private readonly renewBeforeMs: number
  private readonly now: () => Date
  private cached: { proof: RegistryProof; renewAt: number } | null = null

  constructor(
    private readonly identity: NodeIdentity,
    options: RegistryProofProviderOptions
  ) {
    this.domain = options.domain
    this.validityMs = options.validityMs ?? DEFAULT_PROOF_VALIDITY_MS
    this.renewBeforeMs = options.renewBeforeMs ?? DEFAULT_PROOF_RENEW_BEFORE_MS
    this.now = options.now ?? (() => new Date())
    if (!Number.isFinite(this.validityMs) || this.validityMs <= 0)
      throw new RangeError('registry proof validity must be positive')
    if (!Number.isFinite(this.renewBeforeMs) || this.renewBeforeMs < 0 || this.renewBeforeMs >= this.validityMs) {
      throw new RangeError('registry proof renewBeforeMs must be at least 0 and less than the validity')
    }
    if (options.certFile) this.readCertificate(options.certFile)
    this.current() // fail at startup rather than on the first request (e.g. an empty domain)
  }

  /** Takes the certificate in `certFile` ('' for none); the next proof carries its fingerprint. Throws, changing nothing, when it cannot be read. */
  useCertificate(certFile: string): void {
    if (certFile) this.readCertificate(certFile)
    else {
      this.certPem = undefined
      this.tlsSpkiFingerprint = undefined
    }
    this.cached = null
  }

  private readCertificate(file: string): void {
    let pem: string
    try {
      pem = readFileSync(file, 'utf8')
    } catch (err) {
      throw new Error(`TLS certificate file ${file} cannot be read: ${(err as Error).message}`, { cause: err })
    }
    let fingerprint: string
    try {
      fingerprint = spkiFingerprint(pem)
    } catch (err) {
      throw new Error(`TLS certificate file ${file} does not hold a PEM certificate: ${(err as Error).message}`, {
        cause: err
      })
    }
    this.certPem = pem
    this.tlsSpkiFingerprint = fingerprint
  }

  /** The proof to serve now: the cached one, or a fresh one once the cached one is near expiry. */
  current(): RegistryProof {
    const now = this.now()
    if (this.cached && now.getTime() < this.cached.renewAt) return this.cached.proof
    const proof = createRegistryProof(this.identity, {
      domain: this.domain,
      now,
      validityMs: this.validityMs,
      ...(this.certPem !== undefined ? { certPem: this.certPem } : {})
    })
    this.cached = { proof, renewAt: Date.parse(proof.expires_at) - this.renewBeforeMs }
    return proof
  }

  /** Whole seconds until current() would return a different proof (0 when due now). */
  secondsUntilRenewal(): number {
    this.current()
    const renewAt = (this.cached as { renewAt: number }).renewAt
    return Math.max(0, Math.floor((renewAt - this.now().getTime()) / 1000))
  }
}
