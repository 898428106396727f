/**
 * The node serving HTTPS and WSS itself (tls.cert_file + tls.key_file) on each server kind this
 * runtime has, with certificates the test makes: the API and a WebSocket route over TLS, a
 * certificate replaced in place and reloaded while a WSS connection stays open, and the one-line
 * refusals of a pair that cannot be served.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { defaultConfig } from '../../src/config/load.js'
import { readTlsCredentials, tlsFiles } from '../../src/http/tls.js'
import { loadUws } from '../../src/http/uws-loader.js'
import { REGISTRY_PROOF_PATH, spkiFingerprint } from '../../src/identity/registry-proof.js'
import { verifyRegistry } from '../../src/verify-registry.js'
import { spawnNode } from '../../scripts/lib/node-process.js'
import { testNodes } from '../helpers/node.js'
import { httpsGet, makeCertificate, servedFingerprint, writeCertificate, wssFirstMessage } from '../helpers/tls.js'

const kinds = loadUws().module !== null ? (['uws', 'node'] as const) : (['node'] as const)
const nodes = testNodes()
test.after.always(nodes.stopAll)

async function tempDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'registry-tls-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

for (const kind of kinds) {
  test(`--http-server ${kind}: HTTPS and WSS from tls.cert_file and tls.key_file; a reload serves a replaced certificate while an open WSS connection stays`, async t => {
    const dir = await tempDir(t)
    const [first, second] = await Promise.all([makeCertificate('first'), makeCertificate('second')])
    const files = await writeCertificate(dir, 'node', first)
    const { node, url } = await nodes.start({
      http: { server: kind },
      tls: { cert_file: files.certFile, key_file: files.keyFile }
    })
    t.regex(url, /^https:\/\/127\.0\.0\.1:\d+$/)
    t.is(node.httpServer, kind)

    const health = await httpsGet(`${url}/health`, first.certPem)
    t.deepEqual([health.status, health.body], [200, { status: 'ok' }])
    t.is(await servedFingerprint(url, first.certPem), first.fingerprint)
    // Plain HTTP is not served on the TLS port.
    await t.throwsAsync(fetch(`${url.replace('https:', 'http:')}/health`, { signal: AbortSignal.timeout(3000) }))

    const { ws, first: hello } = await wssFirstMessage(`${url.replace('https:', 'wss:')}/v1/ws/activity`, first.certPem)
    t.is(hello.type, 'hello')

    // Replaced in place, as a certificate renewal does, then reloaded.
    await writeCertificate(dir, 'node', second)
    const report = await node.reload(structuredClone(node.config))
    t.like(report.certificate, { changed: true, fingerprint: second.fingerprint })
    t.deepEqual(report.restart, [])
    t.is(await servedFingerprint(url, second.certPem), second.fingerprint)
    t.deepEqual((await httpsGet(`${url}/health`, second.certPem)).body, { status: 'ok' })
    const again = await wssFirstMessage(`${url.replace('https:', 'wss:')}/v1/ws/activity`, second.certPem)
    t.is(again.first.type, 'hello')
    again.ws.close()
    // The connection made before the reload is still open and still served.
    t.is(ws.readyState, ws.OPEN)
    const pong = new Promise<void>(resolve => ws.once('pong', () => resolve()))
    ws.ping()
    await pong
    ws.close()
    // The registry proof pins the certificate served now, not the one the node started with.
    t.is((await verifyRegistry(url, { ca: second.certPem })).tls, 'matched')
  })
}

test('a certificate without a key: plain HTTP, the certificate pinned in the registry proof and read again on reload', async t => {
  const dir = await tempDir(t)
  const [first, second] = await Promise.all([makeCertificate('first'), makeCertificate('second')])
  const { certFile } = await writeCertificate(dir, 'proxy', first)
  const { node, url } = await nodes.start({ tls: { cert_file: certFile } })
  t.regex(url, /^http:\/\//)
  const pinned = async (): Promise<unknown> =>
    ((await (await fetch(`${url}${REGISTRY_PROOF_PATH}`)).json()) as { tls_spki_fingerprint?: string })
      .tls_spki_fingerprint
  t.is(await pinned(), spkiFingerprint(first.certPem))
  await writeCertificate(dir, 'proxy', second)
  const report = await node.reload(structuredClone(node.config))
  t.deepEqual([report.applied, report.restart, report.certificate], [[], [], undefined])
  t.is(await pinned(), spkiFingerprint(second.certPem))
  // Turning HTTPS on is not done in place.
  const keyed = structuredClone(node.config)
  keyed.tls.key_file = (await writeCertificate(dir, 'proxy', second)).keyFile
  t.deepEqual((await node.reload(keyed)).restart, ['tls.key_file'])
  t.regex(node.url, /^http:\/\//)
})

test('a pair that cannot be served is one line naming the setting and the file', async t => {
  const dir = await tempDir(t)
  const [a, b] = await Promise.all([makeCertificate('a'), makeCertificate('b')])
  const fa = await writeCertificate(dir, 'a', a)
  const fb = await writeCertificate(dir, 'b', b)
  const message = (certFile: string, keyFile: string): string =>
    t.throws(() => readTlsCredentials(tlsFiles(certFile, keyFile)!))?.message ?? ''
  t.is(
    message(join(dir, 'none.crt'), fa.keyFile),
    `tls.cert_file ${join(dir, 'none.crt')} cannot be read (no such file)`
  )
  t.is(
    message(fa.certFile, join(dir, 'none.key')),
    `tls.key_file ${join(dir, 'none.key')} cannot be read (no such file)`
  )
  t.is(message(fa.keyFile, fa.keyFile), `tls.cert_file ${fa.keyFile} does not hold a PEM certificate`)
  t.is(message(fa.certFile, fa.certFile), `tls.key_file ${fa.certFile} does not hold a PEM private key`)
  t.is(
    message(fa.certFile, fb.keyFile),
    `tls.key_file ${fb.keyFile} is not the private key of the certificate in tls.cert_file ${fa.certFile}`
  )
  t.is(
    t.throws(() => tlsFiles('', fa.keyFile))?.message,
    `tls.key_file ${fa.keyFile} is set without tls.cert_file; HTTPS needs both`
  )
  // A certificate alone names what a proxy in front serves: the node itself stays on plain HTTP.
  t.is(tlsFiles(fa.certFile, ''), null)
  t.is(defaultConfig().tls.key_file, '')

  // At start: one line on stderr, exit 2, nothing listening.
  const data = join(dir, 'data')
  const error = await t.throwsAsync(
    spawnNode([
      '--data',
      data,
      '--http-port',
      '0',
      '--no-p2p',
      '--tls-cert-file',
      fa.certFile,
      '--tls-key-file',
      fb.keyFile
    ])
  )
  const output = error?.message ?? ''
  t.regex(output, /node exited with 2/)
  const lines = output.split('\n').filter(line => line.startsWith('registry-node: '))
  t.deepEqual(lines, [
    `registry-node: tls.key_file ${fb.keyFile} is not the private key of the certificate in tls.cert_file ${fa.certFile}`
  ])
  t.notRegex(output, /listening on|\s+at /)
})
