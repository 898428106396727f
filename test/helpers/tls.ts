/**
 * Certificates made for a test, and HTTPS/WSS requests that trust them: what the node's own TLS
 * (tls.cert_file, tls.key_file) and the reverse-proxy recipe are tested with.
 */
import { X509Certificate } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { request } from 'node:https'
import { join } from 'node:path'
import { connect } from 'node:tls'
import { generate } from 'selfsigned'
import WebSocket from 'ws'

export interface TestCertificate {
  certPem: string
  keyPem: string
  /** SHA-256 fingerprint as node:crypto writes it (AA:BB:…). */
  fingerprint: string
}

/** A self-signed certificate for 127.0.0.1 and localhost, trusted by passing it as the CA. */
export async function makeCertificate(commonName: string): Promise<TestCertificate> {
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    keySize: 2048,
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' }
        ]
      }
    ]
  })
  return { certPem: pems.cert, keyPem: pems.private, fingerprint: new X509Certificate(pems.cert).fingerprint256 }
}

/** Writes the certificate and key as `<name>.crt` and `<name>.key` in `dir`; their paths. */
export async function writeCertificate(
  dir: string,
  name: string,
  cert: TestCertificate
): Promise<{ certFile: string; keyFile: string }> {
  const certFile = join(dir, `${name}.crt`)
  const keyFile = join(dir, `${name}.key`)
  await writeFile(certFile, cert.certPem)
  await writeFile(keyFile, cert.keyPem, { mode: 0o600 })
  return { certFile, keyFile }
}

/** The fingerprint of the certificate an HTTPS server presents now (a fresh connection, trusting `ca`). */
export function servedFingerprint(url: string, ca: string): Promise<string> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), ca }, () => {
      resolve(socket.getPeerX509Certificate()?.fingerprint256 ?? '')
      socket.end()
    })
    socket.once('error', reject)
  })
}

export interface HttpsAnswer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: unknown
}

/** One HTTPS request trusting `ca` (a new connection each time), the body parsed as JSON. */
export function httpsGet(
  url: string,
  ca: string,
  options: { localAddress?: string; headers?: Record<string, string> } = {}
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, agent: false, ...options }, res => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', chunk => {
        text += chunk
      })
      res.on('end', () => {
        let body: unknown = text
        try {
          body = JSON.parse(text)
        } catch {}
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body })
      })
    })
    req.once('error', reject)
    req.end()
  })
}

/** Opens a WSS connection trusting `ca` and resolves with it and its first message. */
export function wssFirstMessage(
  url: string,
  ca: string,
  options: { localAddress?: string } = {}
): Promise<{ ws: WebSocket; first: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { ca, ...options })
    ws.once('message', data => resolve({ ws, first: JSON.parse(String(data)) as Record<string, unknown> }))
    ws.once('error', reject)
  })
}
