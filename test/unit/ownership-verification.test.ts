import { createSocket, type Socket } from 'node:dgram'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test, { type ExecutionContext } from 'ava'
import { RegistryError, type ErrorCode } from '../../src/errors.js'
import { formatKey } from '../../src/identity/encoding.js'
import { keyPairFromSeed } from '../../src/identity/keys.js'
import {
  OwnershipVerifier,
  txtRecordHoldsKey,
  type TxtResolver,
  type VerificationSettings
} from '../../src/services/registry/ownership-verification.js'
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js'
import { json, startHttpsServer, type TestHttpsServer } from '../helpers/https-server.js'

// The test-vector developer key of docs/compatibility.md (all-ones seed) and another key that must not verify.
const KEY = formatKey(keyPairFromSeed(Buffer.alloc(32, 1)).publicKey)
const B64 = KEY.slice('ed25519:'.length)
const OTHER_B64 = formatKey(keyPairFromSeed(Buffer.alloc(32, 2)).publicKey).slice('ed25519:'.length)

let dns: TestDnsServer
let github: TestHttpsServer
let tmp: string
let caFile: string
const seen: { url: string; userAgent: string | undefined; accept: string | undefined }[] = []

/** A stand-in for the GitHub API: users' gist lists, single gists and raw files. */
function githubApi(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', github.url)
  url.pathname = url.pathname.replace(/^\/api\/v3\//, '/') // GitHub Enterprise's base path
  seen.push({ url: url.pathname + url.search, userAgent: req.headers['user-agent'], accept: req.headers.accept })
  const raw = `${github.url}/raw/big.txt`
  switch (url.pathname) {
    case '/users/listed/gists':
      return json(res, 200, [
        { id: 'aaa1', files: { 'notes.md': { filename: 'notes.md', content: 'nothing here' } } },
        { id: 'aaa2', files: { 'zns.txt': { filename: 'zns.txt', content: `my zns key: ${KEY}\n` } } }
      ])
    case '/users/detail/gists':
      return json(res, 200, [
        { id: 'bbb1', files: { 'other.txt': { filename: 'other.txt', raw_url: `${github.url}/raw/other.txt` } } },
        { id: 'bbb2', files: { 'zns.txt': { filename: 'zns.txt', raw_url: `${github.url}/raw/zns.txt` } } }
      ])
    case '/gists/bbb1':
      return json(res, 200, { id: 'bbb1', files: { 'other.txt': { filename: 'other.txt', content: OTHER_B64 } } })
    case '/gists/bbb2':
      return json(res, 200, { id: 'bbb2', files: { 'zns.txt': { filename: 'zns.txt', content: B64 } } })
    case '/users/truncated/gists':
      return json(res, 200, [{ id: 'ccc1', files: { 'big.txt': { filename: 'big.txt' } } }])
    case '/gists/ccc1':
      return json(res, 200, {
        id: 'ccc1',
        files: { 'big.txt': { filename: 'big.txt', truncated: true, content: 'x'.repeat(100), raw_url: raw } }
      })
    case '/raw/big.txt':
      res.writeHead(200, { 'content-type': 'text/plain' })
      return void res.end(`${'x'.repeat(5000)}\n${KEY}\n`)
    case '/users/offsite/gists':
      return json(res, 200, [
        {
          id: 'ddd1',
          files: {
            'big.txt': { filename: 'big.txt', truncated: true, content: '', raw_url: `https://evil.example/raw/${B64}` }
          }
        }
      ])
    case '/users/nomatch/gists':
      return json(res, 200, [
        { id: 'eee1', files: { 'a.txt': { filename: 'a.txt', content: OTHER_B64 } } },
        { id: 'eee2', files: { 'b.txt': { filename: 'b.txt', content: 'hello' } } }
      ])
    case '/users/empty/gists':
      return json(res, 200, [])
    case '/users/broken/gists':
      return json(res, 500, { message: 'Server Error' })
    case '/users/slow/gists': {
      const timer = setTimeout(() => json(res, 200, []), 3000)
      res.on('close', () => clearTimeout(timer))
      return
    }
    case '/users/huge/gists':
      res.writeHead(200, { 'content-type': 'application/json' })
      return void res.end(`[${' '.repeat(2 * 1024 * 1024)}]`)
    default:
      return json(res, 404, { message: 'Not Found' })
  }
}

function settings(over: Partial<VerificationSettings> = {}): VerificationSettings {
  // Generous: the local servers answer at once, a busy machine may still take a while to get there.
  return { dnsServers: [dns.address], githubApiUrl: github.url, githubCaFile: caFile, timeoutMs: 20_000, ...over }
}

async function expectError(
  t: ExecutionContext,
  promise: Promise<unknown>,
  code: ErrorCode,
  message?: RegExp,
  field?: string
): Promise<void> {
  const err = await t.throwsAsync(promise, { instanceOf: RegistryError })
  if (!err) return
  t.is(err.code, code, err.message)
  if (message) t.regex(err.message, message)
  if (field !== undefined) t.is(err.field, field)
}

test.before(async () => {
  dns = await startDnsServer({
    '_zns-verify.bare.example': [['some-other-record'], [B64]],
    '_zns-verify.prefixed.example': [[`  ${KEY}  `]],
    '_zns-verify.v1.example': [[`V = zns1 ;p=${B64};  K=ED25519 ;`]],
    '_zns-verify.chunked.example': [['v=zns1; k=ed25519; p=', B64.slice(0, 20), B64.slice(20)]],
    '_zns-verify.wrong.example': [
      [B64.slice(0, 20)],
      [`v=zns1; k=ed25519; p=${OTHER_B64}`],
      [`v=zns2; k=ed25519; p=${B64}`]
    ],
    '_zns-verify.mixed.example': [[KEY]],
    // The name exists but has no TXT records: NOERROR, no answers.
    'notxt.example': [],
    '_zns-verify.notxt.example': []
  })
  github = await startHttpsServer(githubApi)
  tmp = await mkdtemp(join(tmpdir(), 'ownership-'))
  caFile = join(tmp, 'github-ca.pem')
  await writeFile(caFile, github.certPem)
})

test.after.always(async () => {
  await dns?.close()
  await github?.close()
  if (tmp) await rm(tmp, { recursive: true, force: true })
})

test('txt record forms', t => {
  t.true(txtRecordHoldsKey(B64, B64))
  t.true(txtRecordHoldsKey(` ${KEY}\t`, B64))
  t.true(txtRecordHoldsKey(`v=zns1;k=ed25519;p=${B64}`, B64))
  t.true(txtRecordHoldsKey(`p = ${KEY} ; v = ZNS1 ; k = Ed25519 ; x=ignored`, B64))
  t.false(
    txtRecordHoldsKey(`v=zns1; k=ed25519; p=${B64}; p=${OTHER_B64}`, B64),
    'a repeated key invalidates the record'
  )
  t.false(txtRecordHoldsKey(`v=zns1; p=${B64}`, B64), 'k is required')
  t.false(txtRecordHoldsKey(`k=ed25519; p=${B64}`, B64), 'v is required')
  t.false(txtRecordHoldsKey(`v=zns1; k=ed25519; p=${B64.toLowerCase()}`, B64), 'base64 is case-sensitive')
  t.false(txtRecordHoldsKey(`prefix ${B64}`, B64), 'a bare key must be the whole record')
})

// Record forms that verify: [title, method and domain as the client sends them, key, the proof kept].
for (const [title, method, domain, key, proof] of [
  ['dns: a bare base64 key among other records', 'dns', 'bare.example', KEY, 'bare.example'],
  [
    'dns: the prefixed key, with the domain and method normalised',
    ' DNS ',
    'Prefixed.EXAMPLE.',
    B64,
    'prefixed.example'
  ],
  ['dns: the v=zns1 form with loose spacing, any key order and case', 'dns', 'v1.example', KEY, 'v1.example'],
  ['dns: a TXT record split into several character-strings', 'dns', 'chunked.example', KEY, 'chunked.example']
] as const) {
  test(title, async t => {
    const verifier = new OwnershipVerifier(settings())
    t.deepEqual(await verifier.verify(method, domain, key), { method: 'dns', proof })
  })
}

test('dns: a long key record over 255 bytes arrives as several strings and is joined', async t => {
  dns.set('_zns-verify.long.example', [[`v=zns1; k=ed25519; ${'x='.padEnd(250, 'y')}; p=${B64}`]])
  const verifier = new OwnershipVerifier(settings())
  t.deepEqual(await verifier.verify('dns', 'long.example', KEY), { method: 'dns', proof: 'long.example' })
})

test('dns: records holding another key fail, naming the name looked up', async t => {
  const verifier = new OwnershipVerifier(settings())
  await expectError(
    t,
    verifier.verify('dns', 'wrong.example', KEY),
    'verification_failed',
    /^no TXT record at _zns-verify\.wrong\.example holds this developer key \(found 3 TXT records\)$/
  )
})

test('dns: a missing name (NXDOMAIN) fails', async t => {
  const verifier = new OwnershipVerifier(settings())
  await expectError(
    t,
    verifier.verify('dns', 'missing.example', KEY),
    'verification_failed',
    /^no TXT record at _zns-verify\.missing\.example: the name does not exist$/
  )
})

test('dns: a name without TXT records (NODATA) fails', async t => {
  const verifier = new OwnershipVerifier(settings())
  await expectError(
    t,
    verifier.verify('dns', 'notxt.example', KEY),
    'verification_failed',
    /_zns-verify\.notxt\.example: the name has no TXT records/
  )
})

test('dns: malformed domains are rejected before any lookup', async t => {
  const verifier = new OwnershipVerifier(settings())
  for (const bad of [
    '',
    'localhost',
    'exa mple.com',
    '-bad.example',
    'bad-.example',
    'a..example',
    '1.2.3.4',
    'under_score.example',
    `${'a'.repeat(64)}.example`,
    `${'a.'.repeat(120)}example`
  ]) {
    await expectError(t, verifier.verify('dns', bad, KEY), 'validation_failed', /^proof: /, 'proof')
  }
})

test('dns: internationalised domains are looked up in their ASCII form', async t => {
  dns.set('_zns-verify.xn--bcher-kva.example', [[KEY]])
  const verifier = new OwnershipVerifier(settings())
  t.deepEqual(await verifier.verify('dns', 'Bücher.example', KEY), { method: 'dns', proof: 'xn--bcher-kva.example' })
})

test('dns: a server that never answers is unavailable after the time limit', async t => {
  const silent: Socket = createSocket('udp4')
  await new Promise<void>(resolve => silent.bind(0, '127.0.0.1', resolve))
  try {
    const { port } = silent.address() as AddressInfo
    const verifier = new OwnershipVerifier(settings({ dnsServers: [`127.0.0.1:${port}`], timeoutMs: 300 }))
    // Whichever gives up first, the resolver (one try of 300 ms) or the verifier's own 300 ms limit,
    // the failure is a timeout: the server never answers, so nothing else could end the lookup.
    await expectError(
      t,
      verifier.verify('dns', 'bare.example', KEY),
      'verification_unavailable',
      /^DNS lookup of TXT _zns-verify\.bare\.example failed: .*(ETIMEOUT|timed out after 300 ms)/
    )
  } finally {
    await new Promise<void>(resolve => silent.close(() => resolve()))
  }
})

test('dns: an injected resolver is used, and its error codes are mapped', async t => {
  const asked: string[] = []
  const fail = (code: string) => Object.assign(new Error(`query failed: ${code}`), { code })
  const resolver: TxtResolver = {
    async resolveTxt(hostname) {
      asked.push(hostname)
      if (hostname === '_zns-verify.ok.example') return [['v=zns1; k=ed25519; ', `p=${B64}`]]
      if (hostname === '_zns-verify.gone.example') throw fail('ENODATA')
      if (hostname === '_zns-verify.hang.example') return new Promise<never>(() => {})
      throw fail('ESERVFAIL')
    }
  }
  const verifier = new OwnershipVerifier(settings({ dnsServers: ['192.0.2.1'], timeoutMs: 200 }), resolver)
  t.deepEqual(await verifier.verify('dns', 'ok.example', KEY), { method: 'dns', proof: 'ok.example' })
  await expectError(t, verifier.verify('dns', 'gone.example', KEY), 'verification_failed')
  await expectError(t, verifier.verify('dns', 'broken.example', KEY), 'verification_unavailable', /ESERVFAIL/)
  await expectError(
    t,
    verifier.verify('dns', 'hang.example', KEY),
    'verification_unavailable',
    /timed out after 200 ms/
  )
  t.deepEqual(asked, [
    '_zns-verify.ok.example',
    '_zns-verify.gone.example',
    '_zns-verify.broken.example',
    '_zns-verify.hang.example'
  ])
})

test('github: the key in a gist listed with its content', async t => {
  const verifier = new OwnershipVerifier(settings())
  t.deepEqual(await verifier.verify('github', 'Listed', KEY), { method: 'github', proof: 'listed' })
  const requests = seen.filter(r => r.url.startsWith('/users/listed/'))
  t.deepEqual(
    requests.map(r => r.url),
    ['/users/listed/gists?per_page=30']
  )
  t.is(requests[0]?.userAgent, 'registry-node')
  t.is(requests[0]?.accept, 'application/vnd.github+json')
})

test('github: the key only in the single-gist endpoint', async t => {
  const verifier = new OwnershipVerifier(settings())
  t.deepEqual(await verifier.verify('github', '@detail', B64), { method: 'github', proof: 'detail' })
  t.true(seen.some(r => r.url === '/gists/bbb1'))
  t.true(seen.some(r => r.url === '/gists/bbb2'))
  t.false(
    seen.some(r => r.url.startsWith('/raw/zns') || r.url.startsWith('/raw/other')),
    'raw_url is only for truncated files'
  )
})

test('github: an API base URL with a path (GitHub Enterprise) and a trailing slash', async t => {
  const verifier = new OwnershipVerifier(settings({ githubApiUrl: `${github.url}/api/v3/` }))
  t.deepEqual(await verifier.verify('github', 'listed', KEY), { method: 'github', proof: 'listed' })
})

test('github: a truncated file is read through its raw_url on the API origin', async t => {
  const verifier = new OwnershipVerifier(settings())
  t.deepEqual(await verifier.verify('github', 'truncated', KEY), { method: 'github', proof: 'truncated' })
  t.true(seen.some(r => r.url === '/raw/big.txt'))
})

test('github: a raw_url on another origin is not fetched', async t => {
  const verifier = new OwnershipVerifier(settings())
  await expectError(t, verifier.verify('github', 'offsite', KEY), 'verification_failed', /offsite/)
})

test('github: no gist holds the key', async t => {
  const verifier = new OwnershipVerifier(settings())
  await expectError(
    t,
    verifier.verify('github', 'nomatch', KEY),
    'verification_failed',
    /^no public gist of GitHub user nomatch holds this developer key \(checked the 2 most recent\)$/
  )
  await expectError(
    t,
    verifier.verify('github', 'empty', KEY),
    'verification_failed',
    /GitHub user empty has no public gists/
  )
})

test('github: an unknown user (404) fails', async t => {
  const verifier = new OwnershipVerifier(settings())
  await expectError(
    t,
    verifier.verify('github', 'nobody', KEY),
    'verification_failed',
    /^GitHub user nobody not found$/
  )
})

test('github: a server error is unavailable', async t => {
  const verifier = new OwnershipVerifier(settings())
  await expectError(t, verifier.verify('github', 'broken', KEY), 'verification_unavailable', /answered HTTP 500/)
})

test('github: a response over 1 MiB is unavailable', async t => {
  const verifier = new OwnershipVerifier(settings())
  await expectError(t, verifier.verify('github', 'huge', KEY), 'verification_unavailable', /exceeds 1048576 bytes/)
})

test('github: a server slower than the time limit is unavailable', async t => {
  const verifier = new OwnershipVerifier(settings({ timeoutMs: 300 }))
  // The stand-in would answer (no gists: verification_failed) after 3 s; the time limit's error is
  // the request giving up at its limit.
  await expectError(t, verifier.verify('github', 'slow', KEY), 'verification_unavailable', /timed out after 300 ms/)
})

test('github: a server whose certificate is not trusted is unavailable', async t => {
  const verifier = new OwnershipVerifier(settings({ githubCaFile: '' }))
  await expectError(t, verifier.verify('github', 'listed', KEY), 'verification_unavailable', /certificate/)
})

test('github: malformed user names are rejected before any request', async t => {
  const verifier = new OwnershipVerifier(settings())
  for (const bad of ['', '-alice', 'alice-', 'al--ice', 'al_ice', 'a'.repeat(40), 'alice/../x']) {
    await expectError(t, verifier.verify('github', bad, KEY), 'validation_failed', /^proof: /, 'proof')
  }
  t.deepEqual(
    await verifier.verify('github', 'listed', KEY),
    { method: 'github', proof: 'listed' },
    'sanity: the valid name verifies'
  )
})

test('a bad method or public key is a validation error', async t => {
  const verifier = new OwnershipVerifier(settings())
  await expectError(t, verifier.verify('email', 'a@example.com', KEY), 'validation_failed', /^method: /, 'method')
  await expectError(
    t,
    verifier.verify('dns', 'bare.example', 'ed25519:short'),
    'validation_failed',
    /^public_key: /,
    'public_key'
  )
})

test('configuration errors surface when the verifier is built', t => {
  t.throws(() => new OwnershipVerifier(settings({ dnsServers: ['not an address'] })), {
    message: /verification\.dns_servers is invalid/
  })
  t.throws(() => new OwnershipVerifier(settings({ githubApiUrl: 'http://api.github.com' })), {
    message: /must be an https URL/
  })
  t.throws(() => new OwnershipVerifier(settings({ githubCaFile: join(tmp, 'missing.pem') })), {
    message: /cannot read verification\.github_ca_file/
  })
})
