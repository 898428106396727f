/**
 * Client side of the registry identity proof: fetch /.well-known/node-registry.json from a node,
 * verify the proof, and check that it pins the TLS certificate the server actually presented.
 */
import type { X509Certificate } from 'node:crypto'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP } from 'node:net'
import type { TLSSocket } from 'node:tls'
import {
  REGISTRY_PROOF_PATH,
  spkiFingerprint,
  verifyRegistryProof,
  type ProofCheck,
  type RegistryProof
} from './identity/registry-proof.js'

const DEFAULT_TIMEOUT_MS = 10_000
const MAX_PROOF_BYTES = 64 * 1024

export type TlsBinding = 'matched' | 'mismatched' | 'not-checked (http)' | 'no-fingerprint'

export interface RegistryVerification {
  /** The proof URL fetched. */
  url: string
  /** The proof as served (null when none could be read). */
  proof: RegistryProof | null
  check: ProofCheck
  /** https: whether the proof's tls_spki_fingerprint names the certificate the server presented. */
  tls: TlsBinding
}

export interface VerifyRegistryOptions {
  /** PEM certificate(s) to trust instead of the default CAs (self-signed or private CA nodes). */
  ca?: string
  now?: Date
  timeoutMs?: number
}

/**
 * Fetches and verifies a node's registry identity proof. Transport failures (DNS, refused
 * connection, untrusted certificate, timeout) reject; everything after a response arrives is
 * reported in the result. `baseUrl` without a scheme is taken as https.
 */
export async function verifyRegistry(
  baseUrl: string,
  options: VerifyRegistryOptions = {}
): Promise<RegistryVerification> {
  const base = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(baseUrl) ? baseUrl : `https://${baseUrl}`)
  if (base.protocol !== 'https:' && base.protocol !== 'http:')
    throw new Error(`${baseUrl}: only http and https URLs can be verified`)
  base.search = ''
  base.hash = ''
  base.pathname = base.pathname.replace(/\/+$/, '') + REGISTRY_PROOF_PATH
  const url = base.toString()
  const https = base.protocol === 'https:'

  const { status, body, presented } = await fetchProof(base, options)

  const hostname = base.hostname.replace(/^\[(.*)\]$/, '$1')
  const checkDomain = isIP(hostname) === 0 && hostname.toLowerCase() !== 'localhost'
  const noProof = (problem: string): RegistryVerification => ({
    url,
    proof: null,
    check: { ok: false, problems: [problem] },
    tls: https ? 'no-fingerprint' : 'not-checked (http)'
  })

  if (status !== 200) return noProof(`${url} answered HTTP ${status}`)
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return noProof(`${url} did not answer JSON`)
  }
  const check = verifyRegistryProof(parsed, {
    ...(options.now ? { now: options.now } : {}),
    ...(checkDomain ? { expectedDomain: hostname } : {})
  })
  const proof =
    parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as RegistryProof) : null

  let tls: TlsBinding = 'not-checked (http)'
  if (https) {
    const pinned = proof && typeof proof.tls_spki_fingerprint === 'string' ? proof.tls_spki_fingerprint : undefined
    if (pinned === undefined) {
      tls = 'no-fingerprint'
    } else if (presented !== undefined && pinned.toLowerCase() === presented) {
      tls = 'matched'
    } else {
      tls = 'mismatched'
      check.problems.push(
        `the server presented a certificate with SPKI ${presented ?? '(none)'}, but the proof pins ${pinned}`
      )
      check.ok = false
    }
  }
  return { url, proof, check, tls }
}

interface FetchedProof {
  status: number
  body: string
  /** SPKI fingerprint of the certificate the server presented (https only). */
  presented: string | undefined
}

function fetchProof(url: URL, options: VerifyRegistryOptions): Promise<FetchedProof> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  return new Promise((resolve, reject) => {
    const onResponse = (res: IncomingMessage): void => {
      // Read the certificate before the body: the socket may be gone once the response ends.
      let presented: string | undefined
      if (url.protocol === 'https:') {
        const cert: X509Certificate | undefined = (res.socket as TLSSocket).getPeerX509Certificate?.()
        presented = cert ? spkiFingerprint(cert) : undefined
      }
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > MAX_PROOF_BYTES) {
          res.destroy(new Error(`${url}: the response exceeds ${MAX_PROOF_BYTES} bytes`))
          return
        }
        chunks.push(chunk)
      })
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), presented })
      )
      res.on('error', reject)
    }
    const requestOptions = {
      method: 'GET',
      headers: { accept: 'application/json' },
      // A fresh connection, so the certificate read is the one this request was served under.
      agent: false as const,
      ...(options.ca !== undefined ? { ca: options.ca } : {})
    }
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, requestOptions, onResponse)
        : httpRequest(url, requestOptions, onResponse)
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${url}: no answer within ${timeoutMs} ms`)))
    req.on('error', err =>
      reject(err.message.startsWith(url.toString()) ? err : new Error(`${url}: ${err.message}`, { cause: err }))
    )
    req.end()
  })
}

/** A few human-readable lines; the last is OK or FAILED. */
export function formatReport(result: RegistryVerification): string {
  const lines = [`Registry identity proof: ${result.url}`]
  const { proof, check } = result
  if (proof) {
    lines.push(`  registry:   ${check.registry_id ?? String(proof.registry_id)}`)
    lines.push(`  domain:     ${String(proof.domain)}`)
    lines.push(`  valid:      ${String(proof.issued_at)} to ${String(proof.expires_at)}`)
  }
  const tlsNote: Record<TlsBinding, string> = {
    matched: `matched (${proof?.tls_spki_fingerprint ?? ''})`,
    mismatched: 'MISMATCHED: the proof pins a different certificate',
    'not-checked (http)': 'not checked (plain http)',
    'no-fingerprint': 'no fingerprint (the proof does not pin a certificate)'
  }
  lines.push(`  tls:        ${tlsNote[result.tls]}`)
  for (const problem of check.problems) lines.push(`  problem:    ${problem}`)
  lines.push(check.ok ? 'OK' : 'FAILED')
  return lines.join('\n')
}
