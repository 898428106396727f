import test from 'ava'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { RequestContext } from '../../src/http/http.js'
import { wellKnownRoutes } from '../../src/api/routes/well-known.js'
import { generateKeyPair } from '../../src/identity/keys.js'
import { identityFromKeyPair } from '../../src/identity/node-identity.js'
import {
  createRegistryProof,
  spkiFingerprint,
  verifyRegistryProof,
  type RegistryProof
} from '../../src/identity/registry-proof.js'
import { RegistryProofProvider } from '../../src/services/registry/registry-proof-provider.js'
import { formatReport, verifyRegistry } from '../../src/verify-registry.js'
import { startHttpsServer } from '../helpers/https-server.js'
import { startTestNode } from '../helpers/node.js'

const PATH = '/.well-known/node-registry.json'
const identity = identityFromKeyPair(generateKeyPair())

/** A handler serving whatever proof `get` returns at the well-known path, 404 elsewhere. */
function serveProof(get: () => RegistryProof) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    if (req.method === 'GET' && req.url === PATH) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(get()))
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"route_not_found"}')
    }
  }
}

test('https: the proof pins the certificate the server presents', async t => {
  let proof: RegistryProof | undefined
  const server = await startHttpsServer(serveProof(() => proof!))
  t.teardown(() => server.close())
  proof = createRegistryProof(identity, { domain: 'registry.example.com', certPem: server.certPem })

  const result = await verifyRegistry(`${server.url}/`, { ca: server.certPem })
  t.is(result.url, `${server.url}${PATH}`)
  t.is(result.tls, 'matched')
  t.deepEqual(
    result.check,
    { ok: true, registry_id: identity.registryId, problems: [] },
    'no domain check against an IP address'
  )
  t.deepEqual(result.proof, proof)
  const report = formatReport(result)
  t.true(report.includes(identity.registryId))
  t.true(report.includes(spkiFingerprint(server.certPem)))
  t.true(report.endsWith('\nOK'))

  // The certificate is for localhost too: the host name is then not compared with the proof's domain.
  const byName = await verifyRegistry(server.url.replace('127.0.0.1', 'localhost'), { ca: server.certPem })
  t.true(byName.check.ok)
})

test('https: a proof served under a different certificate is a mismatch', async t => {
  const first = await startHttpsServer(serveProof(() => proof))
  t.teardown(() => first.close())
  const proof = createRegistryProof(identity, { domain: 'registry.example.com', certPem: first.certPem })
  const second = await startHttpsServer(serveProof(() => proof))
  t.teardown(() => second.close())

  const result = await verifyRegistry(second.url, { ca: second.certPem })
  t.is(result.tls, 'mismatched')
  t.false(result.check.ok)
  t.is(result.check.problems.length, 1)
  t.regex(
    result.check.problems[0]!,
    /presented a certificate with SPKI sha256:[0-9a-f]{64}, but the proof pins sha256:/
  )
  t.true(verifyRegistryProof(result.proof).ok, 'the proof itself is sound; only the binding fails')
  t.true(formatReport(result).endsWith('\nFAILED'))
})

test('https: a proof without a fingerprint is reported as such', async t => {
  const proof = createRegistryProof(identity, { domain: 'registry.example.com' })
  const server = await startHttpsServer(serveProof(() => proof))
  t.teardown(() => server.close())
  const result = await verifyRegistry(server.url, { ca: server.certPem })
  t.is(result.tls, 'no-fingerprint')
  t.true(result.check.ok)
})

test('https: an untrusted certificate rejects; a missing proof fails', async t => {
  const server = await startHttpsServer((_req, res) => {
    res.writeHead(404).end('not here')
  })
  t.teardown(() => server.close())
  await t.throwsAsync(verifyRegistry(server.url), { message: new RegExp(`^${server.url.replaceAll('.', '\\.')}.*: `) })
  const result = await verifyRegistry(server.url, { ca: server.certPem })
  t.is(result.proof, null)
  t.false(result.check.ok)
  t.deepEqual(result.check.problems, [`${server.url}${PATH} answered HTTP 404`])
  t.true(formatReport(result).endsWith('FAILED'))
})

test("http: a real node's identity over plain http is verified without the TLS binding", async t => {
  const node = await startTestNode()
  t.teardown(() => node.stop())
  const provider = new RegistryProofProvider(node.node.identity, { domain: node.config.host })
  const server = createServer(serveProof(() => provider.current()))
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => server.close(() => resolve())))
  const { port } = server.address() as AddressInfo

  const result = await verifyRegistry(`http://127.0.0.1:${port}`)
  t.is(result.tls, 'not-checked (http)')
  t.true(result.check.ok, result.check.problems.join('; '))
  t.is(result.check.registry_id, node.node.identity.registryId)
  t.is(result.proof?.domain, 'registry.test')

  // Expired by the verifier's clock.
  const later = await verifyRegistry(`http://127.0.0.1:${port}`, { now: new Date(Date.now() + 8 * 24 * 3600 * 1000) })
  t.false(later.check.ok)
  t.regex(later.check.problems.join('\n'), /expired/)
})

test('the route definition serves the current proof with a bounded Cache-Control', async t => {
  let now = new Date('2030-01-01T00:00:00.000Z')
  const provider = new RegistryProofProvider(identity, { domain: 'registry.example.com', now: () => now })
  const [route, ...rest] = wellKnownRoutes(provider)
  t.is(rest.length, 0)
  t.like(route, { method: 'GET', path: PATH, tag: 'node', limit: 'none' })
  t.is(route!.responses[200]?.schema?.$id, 'RegistryIdentityProof')

  const ctx = {} as RequestContext // the handler reads nothing from the request
  const reply = await route!.handler(ctx)
  t.is(reply.status, 200)
  t.deepEqual(reply.headers, { 'Cache-Control': 'public, max-age=3600' })
  const check = verifyRegistryProof(JSON.parse(JSON.stringify(reply.body)), {
    now,
    expectedDomain: 'registry.example.com'
  })
  t.deepEqual(check, { ok: true, registry_id: identity.registryId, problems: [] })

  // Half an hour before renewal (6 days after issue with the defaults) the max-age shrinks.
  now = new Date(now.getTime() + 6 * 24 * 3600 * 1000 - 1800 * 1000)
  const later = await route!.handler(ctx)
  t.is(later.body, reply.body, 'still the cached proof')
  t.deepEqual(later.headers, { 'Cache-Control': 'public, max-age=1800' })
})
