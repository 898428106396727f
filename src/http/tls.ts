/**
 * The certificate and key the fronts serve HTTPS and WSS with. Both are read and checked here, with
 * node:crypto, before either server sees them: uWS only says "App construction failed" and
 * node:tls names OpenSSL's internals, while an operator needs the file and what is wrong with it.
 */
import { readFileSync } from 'node:fs'
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto'

/** The files, as configured. */
export interface TlsFiles {
  certFile: string
  keyFile: string
}

/** The files and what they held when they were read (the fronts serve this, not the files' later state). */
export interface TlsCredentials extends TlsFiles {
  cert: string
  key: string
  /** SHA-256 of the leaf certificate, to tell whether a reload changed anything. */
  fingerprint: string
  subject: string
  validTo: Date
}

/** A certificate or key the node cannot serve, as one line naming the setting and the file. */
export class TlsFileError extends Error {
  override name = 'TlsFileError'
}

/** The files to serve from the two settings: both set, neither (plain HTTP), or an error for a key alone. */
export function tlsFiles(certFile: string, keyFile: string): TlsFiles | null {
  if (!keyFile) return null
  if (!certFile) throw new TlsFileError(`tls.key_file ${keyFile} is set without tls.cert_file; HTTPS needs both`)
  return { certFile, keyFile }
}

/** Reads and checks the pair: each file readable, a PEM certificate, an unencrypted PEM key, and the key the certificate's. */
export function readTlsCredentials(files: TlsFiles): TlsCredentials {
  const cert = read('tls.cert_file', files.certFile)
  const key = read('tls.key_file', files.keyFile)
  let x509: X509Certificate
  try {
    x509 = new X509Certificate(cert)
  } catch {
    throw new TlsFileError(`tls.cert_file ${files.certFile} does not hold a PEM certificate`)
  }
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey(key)
  } catch (err) {
    const encrypted = /passphrase|encrypted/i.test((err as Error).message) || key.includes('ENCRYPTED')
    throw new TlsFileError(
      encrypted
        ? `tls.key_file ${files.keyFile} is encrypted; give the node an unencrypted key (readable by its user only)`
        : `tls.key_file ${files.keyFile} does not hold a PEM private key`
    )
  }
  if (!x509.checkPrivateKey(privateKey))
    throw new TlsFileError(
      `tls.key_file ${files.keyFile} is not the private key of the certificate in tls.cert_file ${files.certFile}`
    )
  return {
    ...files,
    cert,
    key,
    fingerprint: x509.fingerprint256,
    subject: x509.subject.replace(/\n/g, ', '),
    validTo: new Date(x509.validTo)
  }
}

function read(setting: string, file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : (e.code ?? e.message)
    throw new TlsFileError(`${setting} ${file} cannot be read (${why})`)
  }
}
