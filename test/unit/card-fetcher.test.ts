import { sign as cryptoSign } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TLSSocket } from 'node:tls'
import test, { type ExecutionContext } from 'ava'
import { cardRoutes } from '../../src/api/routes/cards.js'
import type { RequestContext } from '../../src/http/http.js'
import { isForbiddenAddress } from '../../src/cards/address-guard.js'
import { CardFetcher, type CardEntity, type CardFetchSettings, type HostLookup } from '../../src/cards/card-fetcher.js'
import { RegistryError, type ErrorCode } from '../../src/errors.js'
import { canonicalJson, goEscapedJson } from '../../src/identity/canonical-json.js'
import { formatKey } from '../../src/identity/encoding.js'
import { keyPairFromSeed, sign, type KeyPair } from '../../src/identity/keys.js'
import { startHttpsServer, type TestHttpsServer } from '../helpers/https-server.js'

const ENTITY_KEY = keyPairFromSeed(Buffer.alloc(32, 7))
const OTHER_KEY = keyPairFromSeed(Buffer.alloc(32, 8))
const PUBLIC_KEY = formatKey(ENTITY_KEY.publicKey)

let server: TestHttpsServer
let port: number
let tmp: string
let caFile: string

/** Requests seen per path (path → count), and the Host/SNI of each. */
const hits = new Map<string, number>()
const seen: { path: string; host: string | undefined; servername: string | false | undefined }[] = []
/** Per-path handlers; unknown paths answer 404. */
const routes = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>()

function handler(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0] as string
  hits.set(path, (hits.get(path) ?? 0) + 1)
  seen.push({
    path,
    host: req.headers.host,
    servername: (req.socket as TLSSocket & { servername?: string | false }).servername
  })
  const route = routes.get(path)
  if (route) return route(req, res)
  res.writeHead(404, { 'content-type': 'application/json' })
  res.end('{"error":"not found"}')
}

const sendJson =
  (body: unknown, status = 200) =>
  (_req: IncomingMessage, res: ServerResponse): void => {
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(typeof body === 'string' ? body : JSON.stringify(body))
  }
const redirect =
  (location: string, status = 302) =>
  (_req: IncomingMessage, res: ServerResponse): void => {
    res.writeHead(status, { location })
    res.end()
  }
/** `sendJson`, answered `ms` later. */
const sendJsonAfter =
  (ms: number, body: unknown) =>
  (req: IncomingMessage, res: ServerResponse): void => {
    setTimeout(() => sendJson(body)(req, res), ms)
  }
const hitCount = (path: string): number => hits.get(path) ?? 0

test.before(async () => {
  server = await startHttpsServer(handler)
  port = Number(new URL(server.url).port)
  tmp = await mkdtemp(join(tmpdir(), 'card-fetcher-test-'))
  caFile = join(tmp, 'ca.pem')
  await writeFile(caFile, server.certPem)
})

test.after.always(async () => {
  await server?.close()
  if (tmp) await rm(tmp, { recursive: true, force: true })
})

function settings(overrides: Partial<CardFetchSettings> = {}): CardFetchSettings {
  return { timeoutMs: 20_000, maxBytes: 4096, cacheTtlMs: 60_000, allowPrivateAddresses: true, caFile, ...overrides }
}

function fetcher(
  overrides: Partial<CardFetchSettings> = {},
  options: { lookup?: HostLookup; now?: () => number } = {}
): CardFetcher {
  return new CardFetcher(settings(overrides), options)
}

let counter = 0
/** An entity whose entity_url is a fresh prefix on the test server (tests run concurrently). */
function entity(prefix: string, publicKey = PUBLIC_KEY): CardEntity & { entity_url: string } {
  counter++
  return {
    entity_id: `zns:${counter.toString(16).padStart(32, '0')}`,
    entity_url: `${server.url}/${prefix}`,
    public_key: publicKey
  }
}

async function rejectsWith(
  t: ExecutionContext,
  promise: Promise<unknown>,
  code: ErrorCode,
  message?: RegExp
): Promise<RegistryError> {
  const err = await t.throwsAsync(promise, { instanceOf: RegistryError })
  t.is(err?.code, code, err?.message)
  if (message) t.regex(err?.message ?? '', message)
  return err as RegistryError
}

function specSigned(card: Record<string, unknown>, key: KeyPair = ENTITY_KEY): Record<string, unknown> {
  return { ...card, signature: sign(key, canonicalJson(card)) }
}

function jwsSigned(card: Record<string, unknown>, keys: KeyPair[] = [ENTITY_KEY]): Record<string, unknown> {
  const payload = Buffer.from(canonicalJson(card), 'utf8').toString('base64url')
  const signatures = keys.map((key, i) => {
    const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', typ: 'JOSE', kid: `key-${i}` }), 'utf8').toString(
      'base64url'
    )
    const signature = cryptoSign(null, Buffer.from(`${header}.${payload}`, 'utf8'), key.privateKeyObject).toString(
      'base64url'
    )
    return { protected: header, signature }
  })
  return { ...card, signatures }
}

const A2A_CARD = {
  name: 'Weather agent',
  description: 'Forecasts <daily> & hourly',
  url: 'https://weather.example/a2a',
  version: '1.0.0',
  capabilities: { streaming: true },
  skills: [{ id: 'forecast', name: 'Forecast', tags: ['weather'] }]
}

// ---- paths -------------------------------------------------------------------------------

test('the A2A path is tried first and its bytes are passed through unchanged', async t => {
  const e = entity('a2a')
  const body = '{ "name" : "first",\n  "zeta": 1, "alpha": [1, 2] }\n'
  routes.set('/a2a/.well-known/agent-card.json', sendJson(body))
  routes.set('/a2a/.well-known/agent.json', sendJson({ name: 'old' }))
  const got = await fetcher().get(e)
  t.is(got.body.toString('utf8'), body)
  t.deepEqual(got.card, JSON.parse(body))
  t.is(got.source_url, `${e.entity_url}/.well-known/agent-card.json`)
  t.is(got.verification, 'unsigned')
  t.is(hitCount('/a2a/.well-known/agent.json'), 0)
  t.is(hitCount('/a2a/.well-known/zynd-agent.json'), 0)
})

test('a trailing slash on entity_url is dropped', async t => {
  const e = entity('slash')
  routes.set('/slash/.well-known/agent-card.json', sendJson({ name: 'slash' }))
  const got = await fetcher().get({ ...e, entity_url: `${e.entity_url}/` })
  t.is(got.source_url, `${e.entity_url}/.well-known/agent-card.json`)
})

test('on 404 the older paths follow: zynd-agent.json, then agent.json', async t => {
  const zynd = entity('fb-zynd')
  routes.set('/fb-zynd/.well-known/zynd-agent.json', sendJson({ name: 'zynd' }))
  routes.set('/fb-zynd/.well-known/agent.json', sendJson({ name: 'older' }))
  const got = await fetcher().get(zynd)
  t.deepEqual(got.card, { name: 'zynd' })
  t.is(got.source_url, `${zynd.entity_url}/.well-known/zynd-agent.json`)
  t.is(hitCount('/fb-zynd/.well-known/agent-card.json'), 1)
  t.is(hitCount('/fb-zynd/.well-known/agent.json'), 0)

  const oldest = entity('fb-old')
  routes.set('/fb-old/.well-known/agent-card.json', (_req, res) => {
    // A large 404 body is not read.
    res.writeHead(404, { 'content-type': 'text/html' })
    const chunk = 'x'.repeat(64 * 1024)
    let left = 16
    const pump = (): void => {
      while (left > 0) {
        left--
        if (!res.write(chunk)) {
          res.once('drain', pump)
          return
        }
      }
      res.end()
    }
    res.on('error', () => {})
    pump()
  })
  routes.set('/fb-old/.well-known/agent.json', sendJson({ name: 'oldest' }))
  const got2 = await fetcher().get(oldest)
  t.deepEqual(got2.card, { name: 'oldest' })
  t.is(got2.source_url, `${oldest.entity_url}/.well-known/agent.json`)
  t.is(hitCount('/fb-old/.well-known/agent-card.json'), 1)
  t.is(hitCount('/fb-old/.well-known/zynd-agent.json'), 1)
})

test('404 on every path is card_unavailable', async t => {
  await rejectsWith(t, fetcher().get(entity('none')), 'card_unavailable', /404/)
})

test('a failure other than 404 stops: no fallback', async t => {
  const e = entity('err500')
  routes.set('/err500/.well-known/agent-card.json', sendJson({ error: 'boom' }, 500))
  routes.set('/err500/.well-known/agent.json', sendJson({ name: 'older' }))
  await rejectsWith(t, fetcher().get(e), 'card_unavailable', /HTTP 500/)
  t.is(hitCount('/err500/.well-known/zynd-agent.json'), 0)
  t.is(hitCount('/err500/.well-known/agent.json'), 0)
})

// ---- redirects -----------------------------------------------------------------------------

test('redirects are followed (up to 3, relative and absolute)', async t => {
  const e = entity('redir')
  routes.set('/redir/.well-known/agent-card.json', redirect('/redir/step1', 301))
  routes.set('/redir/step1', redirect('step2', 302))
  routes.set('/redir/step2', redirect(`${server.url}/redir/final`, 307))
  routes.set('/redir/final', sendJson({ name: 'final' }))
  const got = await fetcher().get(e)
  t.deepEqual(got.card, { name: 'final' })
  t.is(got.source_url, `${server.url}/redir/final`)
})

test('more than 3 redirects is card_unavailable', async t => {
  const e = entity('loop')
  routes.set('/loop/.well-known/agent-card.json', redirect('/loop/1'))
  routes.set('/loop/1', redirect('/loop/2'))
  routes.set('/loop/2', redirect('/loop/3'))
  routes.set('/loop/3', redirect('/loop/4'))
  routes.set('/loop/4', sendJson({ name: 'too far' }))
  await rejectsWith(t, fetcher().get(e), 'card_unavailable', /more than 3/)
  t.is(hitCount('/loop/4'), 0)
})

test('a redirect to http is refused', async t => {
  const e = entity('tohttp')
  routes.set('/tohttp/.well-known/agent-card.json', redirect(`http://127.0.0.1:${port}/tohttp/card`))
  routes.set('/tohttp/card', sendJson({ name: 'plain' }))
  await rejectsWith(t, fetcher().get(e), 'card_unavailable', /non-HTTPS/)
  t.is(hitCount('/tohttp/card'), 0)
})

test('a redirect is vetted again: a host resolving to a metadata address is refused, without naming host or address', async t => {
  const e = entity('tometa')
  routes.set('/tometa/.well-known/agent-card.json', redirect(`https://metadata.internal:${port}/latest`))
  routes.set('/latest', sendJson({ secret: true }))
  const looked: string[] = []
  const lookup: HostLookup = async host => {
    looked.push(host)
    return [{ address: '169.254.169.254', family: 4 }]
  }
  // The guard is on, except for the test server's own address.
  const isForbidden = (ip: string): boolean => ip !== '127.0.0.1' && isForbiddenAddress(ip)
  const f = new CardFetcher(settings({ allowPrivateAddresses: false }), { lookup, isForbidden })
  const err = await rejectsWith(t, f.get(e), 'card_address_refused', /redirect/)
  t.deepEqual(looked, ['metadata.internal'])
  t.false(err.message.includes('169.254'))
  t.false(err.message.includes('metadata.internal'))
  t.is(hitCount('/latest'), 0)
})

test('a redirect to a host name is resolved and pinned like the first hop', async t => {
  const e = entity('toname')
  routes.set('/toname/.well-known/agent-card.json', redirect(`https://localhost:${port}/toname/card`))
  routes.set('/toname/card', sendJson({ name: 'by name' }))
  const looked: string[] = []
  const lookup: HostLookup = async host => {
    looked.push(host)
    return [{ address: '127.0.0.1', family: 4 }]
  }
  const got = await fetcher({}, { lookup }).get(e)
  t.deepEqual(got.card, { name: 'by name' })
  t.is(got.source_url, `https://localhost:${port}/toname/card`)
  t.deepEqual(looked, ['localhost'])
})

// ---- address checks ----------------------------------------------------------------------

test('with allowPrivateAddresses false, 127.0.0.1 is refused and never contacted', async t => {
  const e = entity('private')
  routes.set('/private/.well-known/agent-card.json', sendJson({ name: 'secret' }))
  await rejectsWith(t, fetcher({ allowPrivateAddresses: false }).get(e), 'card_address_refused')
  t.is(hitCount('/private/.well-known/agent-card.json'), 0)
})

test('a host name resolving to 169.254.169.254 is refused (injected lookup)', async t => {
  const looked: string[] = []
  const lookup: HostLookup = async host => {
    looked.push(host)
    return [{ address: '169.254.169.254', family: 4 }]
  }
  const e = { entity_id: `zns:${'a'.repeat(32)}`, entity_url: 'https://agent.example.com', public_key: PUBLIC_KEY }
  const err = await rejectsWith(
    t,
    fetcher({ allowPrivateAddresses: false }, { lookup }).get(e),
    'card_address_refused',
    /agent\.example\.com/
  )
  t.false(err.message.includes('169.254'))
  t.deepEqual(looked, ['agent.example.com'])
})

test('refused when ANY resolved address is forbidden', async t => {
  const lookup: HostLookup = async () => [
    { address: '93.184.216.34', family: 4 },
    { address: '::ffff:10.0.0.1', family: 6 }
  ]
  const e = {
    entity_id: `zns:${'b'.repeat(32)}`,
    entity_url: 'https://mixed.example.com/agent',
    public_key: PUBLIC_KEY
  }
  await rejectsWith(t, fetcher({ allowPrivateAddresses: false }, { lookup }).get(e), 'card_address_refused')
})

test('the connection goes to the looked-up address, with Host and SNI kept as the registered host name', async t => {
  let lookups = 0
  const lookup: HostLookup = async host => {
    lookups++
    t.is(host, 'localhost')
    return [{ address: '127.0.0.1', family: 4 }]
  }
  routes.set('/pinned/.well-known/agent-card.json', sendJson({ name: 'pinned' }))
  const e = {
    entity_id: `zns:${'c'.repeat(32)}`,
    entity_url: `https://localhost:${port}/pinned`,
    public_key: PUBLIC_KEY
  }
  const got = await fetcher({}, { lookup }).get(e)
  t.deepEqual(got.card, { name: 'pinned' })
  t.is(lookups, 1)
  const request = seen.find(s => s.path === '/pinned/.well-known/agent-card.json')
  t.is(request?.host, `localhost:${port}`)
  t.is(request?.servername, 'localhost')
})

test('connection and TLS errors do not echo the address the host resolved to', async t => {
  const lookup: HostLookup = async () => [{ address: '127.0.0.1', family: 4 }]
  // The certificate does not cover this name: a TLS error.
  const tls = {
    entity_id: `zns:${'d'.repeat(32)}`,
    entity_url: `https://wrong-name.example:${port}/x`,
    public_key: PUBLIC_KEY
  }
  const err = await rejectsWith(t, fetcher({}, { lookup }).get(tls), 'card_unavailable', /ERR_TLS_CERT_ALTNAME_INVALID/)
  t.false(err.message.includes('127.0.0.1'))
  // Nothing listens on port 1: connection refused.
  const closed = {
    entity_id: `zns:${'e'.repeat(32)}`,
    entity_url: 'https://closed.example:1/x',
    public_key: PUBLIC_KEY
  }
  const err2 = await rejectsWith(t, fetcher({}, { lookup }).get(closed), 'card_unavailable', /ECONNREFUSED/)
  t.false(err2.message.includes('127.0.0.1'))
})

test('a certificate not trusted (no caFile) is card_unavailable', async t => {
  const e = entity('untrusted')
  routes.set('/untrusted/.well-known/agent-card.json', sendJson({ name: 'x' }))
  await rejectsWith(t, fetcher({ caFile: '' }).get(e), 'card_unavailable')
})

test('an http entity_url is refused without a request', async t => {
  const e = { entity_id: `zns:${'f'.repeat(32)}`, entity_url: `http://127.0.0.1:${port}/plain`, public_key: PUBLIC_KEY }
  await rejectsWith(t, fetcher().get(e), 'card_unavailable', /HTTPS only/)
  await rejectsWith(t, fetcher().get({ ...e, entity_url: null }), 'card_unavailable', /no entity_url/)
  await rejectsWith(t, fetcher().get({ ...e, entity_url: 'not a url' }), 'card_unavailable', /not a URL/)
})

// ---- body --------------------------------------------------------------------------------

test('a body larger than maxBytes is refused (declared length and streamed)', async t => {
  const declared = entity('big-declared')
  routes.set('/big-declared/.well-known/agent-card.json', sendJson(JSON.stringify({ pad: 'x'.repeat(5000) })))
  await rejectsWith(t, fetcher().get(declared), 'card_unavailable', /larger than 4096 bytes/)

  const streamed = entity('big-streamed')
  routes.set('/big-streamed/.well-known/agent-card.json', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }) // chunked: no Content-Length
    res.write('{"pad":"')
    for (let i = 0; i < 10; i++) res.write('y'.repeat(1000))
    res.end('"}')
  })
  await rejectsWith(t, fetcher().get(streamed), 'card_unavailable', /larger than 4096 bytes/)

  const exact = entity('exact')
  const body = JSON.stringify({ pad: 'z'.repeat(4096 - 10) })
  t.is(Buffer.byteLength(body), 4096)
  routes.set('/exact/.well-known/agent-card.json', sendJson(body))
  t.is((await fetcher().get(exact)).body.length, 4096)
})

test('the whole fetch is bounded by timeoutMs', async t => {
  const e = entity('slow')
  routes.set('/slow/.well-known/agent-card.json', (_req, res) => {
    const timer = setTimeout(() => sendJson({ name: 'late' })(_req, res), 30_000)
    res.on('close', () => clearTimeout(timer))
  })
  // The server would answer (with a card) after 30 s: failing with the time limit's message is the
  // fetch giving up at its limit, however long a busy machine takes to get there.
  await rejectsWith(t, fetcher({ timeoutMs: 300 }).get(e), 'card_unavailable', /within 300 ms/)

  // A lookup that never answers is inside the limit too.
  const hang: HostLookup = () => new Promise(() => {})
  const named = { entity_id: `zns:${'9'.repeat(32)}`, entity_url: 'https://hang.example', public_key: PUBLIC_KEY }
  await rejectsWith(t, fetcher({ timeoutMs: 200 }, { lookup: hang }).get(named), 'card_unavailable', /within 200 ms/)
})

test('a body that is not JSON (or not an object, or not UTF-8) is card_unavailable', async t => {
  const html = entity('html')
  routes.set('/html/.well-known/agent-card.json', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end('<html>hi</html>')
  })
  await rejectsWith(t, fetcher().get(html), 'card_unavailable', /not valid JSON/)
  const list = entity('list')
  routes.set('/list/.well-known/agent-card.json', sendJson('[1,2]'))
  await rejectsWith(t, fetcher().get(list), 'card_unavailable', /not a JSON object/)
  const latin1 = entity('latin1')
  routes.set('/latin1/.well-known/agent-card.json', (_req, res) => {
    res.writeHead(200)
    res.end(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]))
  })
  await rejectsWith(t, fetcher().get(latin1), 'card_unavailable', /UTF-8/)
})

// ---- signatures --------------------------------------------------------------------------

test('spec form: a card signed over its canonical JSON (signed_at included) verifies', async t => {
  const e = entity('spec-signed')
  const card = specSigned({
    entity_id: e.entity_id,
    version: '1.0.0',
    status: 'online',
    capabilities: [{ name: 'x' }],
    signed_at: '2026-05-21T10:00:00Z'
  })
  const body = JSON.stringify(card, null, 2)
  routes.set('/spec-signed/.well-known/agent-card.json', sendJson(body))
  const got = await fetcher().get(e)
  t.is(got.verification, 'verified')
  t.is(got.body.toString('utf8'), body)
})

test('spec form: the Go-escaped canonical form verifies too', async t => {
  const e = entity('spec-go')
  const unsigned = { entity_id: e.entity_id, summary: 'Docs <T&T>' }
  const escaped = goEscapedJson(canonicalJson(unsigned)) as string
  const card = { ...unsigned, signature: sign(ENTITY_KEY, escaped) }
  routes.set('/spec-go/.well-known/agent-card.json', sendJson(card))
  t.is((await fetcher().get(e)).verification, 'verified')
})

test('spec form: a tampered card is returned, marked invalid', async t => {
  const e = entity('spec-tampered')
  const card = {
    ...specSigned({ entity_id: e.entity_id, version: '1.0.0', signed_at: '2026-05-21T10:00:00Z' }),
    version: '6.6.6'
  }
  routes.set('/spec-tampered/.well-known/agent-card.json', sendJson(card))
  const got = await fetcher().get(e)
  t.is(got.verification, 'invalid')
  t.deepEqual(got.card, card)
  t.truthy(got.verification_note)
})

test('spec form: signed by another key is invalid; a malformed signature is invalid', async t => {
  const other = entity('spec-other')
  routes.set('/spec-other/.well-known/agent-card.json', sendJson(specSigned({ name: 'x' }, OTHER_KEY)))
  t.is((await fetcher().get(other)).verification, 'invalid')
  const junk = entity('spec-junk')
  routes.set('/spec-junk/.well-known/agent-card.json', sendJson({ name: 'x', signature: 'not a signature' }))
  t.is((await fetcher().get(junk)).verification, 'invalid')
})

test('A2A JWS form: a card with signatures[] (EdDSA, detached canonical payload) verifies', async t => {
  const e = entity('jws')
  const card = jwsSigned(A2A_CARD)
  routes.set('/jws/.well-known/agent-card.json', sendJson(card))
  const got = await fetcher().get(e)
  t.is(got.verification, 'verified')
  t.deepEqual(got.card, card)
})

test('A2A JWS form: one verifying signature among several is enough; none is invalid; tampering is invalid', async t => {
  const several = entity('jws-several')
  routes.set('/jws-several/.well-known/agent-card.json', sendJson(jwsSigned(A2A_CARD, [OTHER_KEY, ENTITY_KEY])))
  t.is((await fetcher().get(several)).verification, 'verified')

  const foreign = entity('jws-foreign')
  routes.set('/jws-foreign/.well-known/agent-card.json', sendJson(jwsSigned(A2A_CARD, [OTHER_KEY])))
  const got = await fetcher().get(foreign)
  t.is(got.verification, 'invalid')
  t.regex(got.verification_note ?? '', /signatures\[0\]/)

  const tampered = entity('jws-tampered')
  routes.set('/jws-tampered/.well-known/agent-card.json', sendJson({ ...jwsSigned(A2A_CARD), name: 'Evil agent' }))
  t.is((await fetcher().get(tampered)).verification, 'invalid')

  const wrongAlg = entity('jws-alg')
  const signed = jwsSigned(A2A_CARD) as { signatures: { protected: string; signature: string }[] }
  const rs256 = Buffer.from(JSON.stringify({ alg: 'RS256' })).toString('base64url')
  routes.set(
    '/jws-alg/.well-known/agent-card.json',
    sendJson({ ...signed, signatures: [{ protected: rs256, signature: signed.signatures[0]?.signature }] })
  )
  const got2 = await fetcher().get(wrongAlg)
  t.is(got2.verification, 'invalid')
  t.regex(got2.verification_note ?? '', /RS256/)
})

test('a card without any signature is unsigned', async t => {
  const e = entity('unsigned')
  routes.set('/unsigned/.well-known/agent-card.json', sendJson(A2A_CARD))
  t.is((await fetcher().get(e)).verification, 'unsigned')
})

// ---- cache -------------------------------------------------------------------------------

test('the cache serves within the TTL, expires after it, and forget() drops it', async t => {
  let clock = 1_000_000
  const f = fetcher({ cacheTtlMs: 10_000 }, { now: () => clock })
  const e = entity('cache')
  const path = '/cache/.well-known/agent-card.json'
  routes.set(path, sendJson({ name: 'cached' }))
  t.is(f.cached(e.entity_id), undefined)

  const first = await f.get(e)
  t.is(hitCount(path), 1)
  t.is(first.fetched_at, new Date(1_000_000).toISOString())
  t.is(f.remainingSeconds(first), 10)

  clock += 9_000
  t.is(await f.get(e), first)
  t.is(f.cached(e.entity_id), first)
  t.is(f.remainingSeconds(first), 1)
  t.is(hitCount(path), 1)

  clock += 1_000 // exactly the TTL: expired
  t.is(f.cached(e.entity_id), undefined)
  const second = await f.get(e)
  t.not(second, first)
  t.is(hitCount(path), 2)

  f.forget(e.entity_id)
  t.is(f.cached(e.entity_id), undefined)
  await f.get(e)
  t.is(hitCount(path), 3)
})

test('a changed entity_url or key is a cache miss', async t => {
  const f = fetcher()
  const e = entity('cache-change')
  routes.set('/cache-change/.well-known/agent-card.json', sendJson({ name: 'a' }))
  routes.set('/cache-change2/.well-known/agent-card.json', sendJson({ name: 'b' }))
  t.deepEqual((await f.get(e)).card, { name: 'a' })
  t.deepEqual((await f.get({ ...e, entity_url: `${server.url}/cache-change2` })).card, { name: 'b' })
  t.is(hitCount('/cache-change2/.well-known/agent-card.json'), 1)
})

test('failures are not cached', async t => {
  const f = fetcher()
  const e = entity('flaky')
  const path = '/flaky/.well-known/agent-card.json'
  routes.set(path, sendJson({ error: 'down' }, 503))
  await rejectsWith(t, f.get(e), 'card_unavailable', /503/)
  t.is(f.cached(e.entity_id), undefined)
  routes.set(path, sendJson({ name: 'up' }))
  t.deepEqual((await f.get(e)).card, { name: 'up' })
  t.is(hitCount(path), 2)
})

test('a TTL of 0 caches nothing', async t => {
  const f = fetcher({ cacheTtlMs: 0 })
  const e = entity('nocache')
  const path = '/nocache/.well-known/agent-card.json'
  routes.set(path, sendJson({ name: 'fresh' }))
  const got = await f.get(e)
  await f.get(e)
  t.is(hitCount(path), 2)
  t.is(f.cached(e.entity_id), undefined)
  t.is(f.remainingSeconds(got), 0)
})

test('concurrent gets for one entity share one fetch', async t => {
  const f = fetcher()
  const e = entity('shared')
  const path = '/shared/.well-known/agent-card.json'
  routes.set(path, sendJsonAfter(150, { name: 'shared' }))
  const results = await Promise.all(Array.from({ length: 5 }, () => f.get(e)))
  t.is(hitCount(path), 1)
  for (const r of results) t.is(r, results[0]!)

  // A failure is shared too, and not cached.
  const bad = entity('shared-bad')
  const badPath = '/shared-bad/.well-known/agent-card.json'
  routes.set(badPath, sendJsonAfter(100, 'nope'))
  const settled = await Promise.allSettled(Array.from({ length: 3 }, () => f.get(bad)))
  t.true(settled.every(s => s.status === 'rejected'))
  t.is(hitCount(badPath), 1)
})

test('forget() during a fetch keeps its result out of the cache', async t => {
  const f = fetcher()
  const e = entity('forget-inflight')
  const path = '/forget-inflight/.well-known/agent-card.json'
  routes.set(path, sendJsonAfter(100, { name: 'stale' }))
  const running = f.get(e)
  f.forget(e.entity_id)
  await running
  t.is(f.cached(e.entity_id), undefined)
})

test('the cache is bounded in bytes (oldest first)', async t => {
  const f = new CardFetcher(settings(), { maxCacheBytes: 100 })
  const a = entity('bound-a')
  const b = entity('bound-b')
  routes.set('/bound-a/.well-known/agent-card.json', sendJson({ pad: 'a'.repeat(60) }))
  routes.set('/bound-b/.well-known/agent-card.json', sendJson({ pad: 'b'.repeat(60) }))
  await f.get(a)
  t.truthy(f.cached(a.entity_id))
  await f.get(b)
  t.is(f.cached(a.entity_id), undefined)
  t.truthy(f.cached(b.entity_id))
})

test('an unreadable caFile is a configuration error', t => {
  t.throws(() => new CardFetcher(settings({ caFile: join(tmp, 'missing.pem') })), { message: /cards\.ca_file/ })
})

// ---- route -------------------------------------------------------------------------------

function context(entityId: string): RequestContext {
  return {
    method: 'GET',
    path: `/v1/entities/${encodeURIComponent(entityId)}/card`,
    params: { entity_id: entityId },
    query: new URLSearchParams(),
    rawQuery: '',
    headers: {},
    ip: '127.0.0.1',
    raw: Buffer.alloc(0),
    json: () => undefined
  }
}

test('GET /v1/entities/{entity_id}/card replies with the card bytes and verification headers', async t => {
  let clock = Date.parse('2026-05-21T10:00:00Z')
  const f = fetcher({ cacheTtlMs: 3_600_000 }, { now: () => clock })
  const e = entity('route')
  const card = jwsSigned(A2A_CARD)
  const body = JSON.stringify(card, null, 1)
  routes.set('/route/.well-known/agent-card.json', sendJson(body))
  const records = new Map([[e.entity_id, e]])
  const fake = {
    require(id: string) {
      const r = records.get(id)
      if (!r) throw new RegistryError('entity_not_found')
      return r
    }
  }
  const [route] = cardRoutes(fake, f)
  t.is(route?.method, 'GET')
  t.is(route?.path, '/v1/entities/{entity_id}/card')
  t.is(route?.tag, 'entities')
  t.is(route?.limit, 'read')
  t.deepEqual([...(route?.errors ?? [])].sort(), [
    'card_address_refused',
    'card_unavailable',
    'entity_not_found',
    'invalid_id'
  ])

  const reply = await route!.handler(context(e.entity_id))
  t.is(reply.status, 200)
  t.is(reply.contentType, 'application/json; charset=utf-8')
  t.true(Buffer.isBuffer(reply.body))
  t.is((reply.body as Buffer).toString('utf8'), body)
  t.deepEqual(reply.headers, {
    'X-Card-Verification': 'verified',
    'X-Card-Source': `${e.entity_url}/.well-known/agent-card.json`,
    'Cache-Control': 'public, max-age=3600'
  })

  clock += 600_500
  const again = await route!.handler(context(e.entity_id))
  t.is(again.headers?.['Cache-Control'], 'public, max-age=3000')
  t.is(hitCount('/route/.well-known/agent-card.json'), 1)

  await rejectsWith(
    t,
    Promise.resolve().then(() => route!.handler(context('not-an-id'))),
    'invalid_id'
  )
  await rejectsWith(
    t,
    Promise.resolve().then(() => route!.handler(context(`zns:${'0'.repeat(32)}`))),
    'entity_not_found'
  )
  records.set(`zns:svc:${'1'.repeat(32)}`, {
    entity_id: `zns:svc:${'1'.repeat(32)}`,
    entity_url: null as unknown as string,
    public_key: PUBLIC_KEY
  })
  await rejectsWith(
    t,
    Promise.resolve().then(() => route!.handler(context(`zns:svc:${'1'.repeat(32)}`))),
    'card_unavailable',
    /no entity_url/
  )
})

test('the route marks an invalid card and passes refusals through', async t => {
  const f = fetcher()
  const tampered = entity('route-bad')
  routes.set('/route-bad/.well-known/agent-card.json', sendJson({ ...jwsSigned(A2A_CARD), name: 'Evil' }))
  const refused = { entity_id: `zns:${'2'.repeat(32)}`, entity_url: 'https://127.0.0.1/x', public_key: PUBLIC_KEY }
  const records = new Map<string, CardEntity>([
    [tampered.entity_id, tampered],
    [refused.entity_id, refused]
  ])
  const [route] = cardRoutes({ require: id => records.get(id) as CardEntity }, f)
  const reply = await route!.handler(context(tampered.entity_id))
  t.is(reply.status, 200)
  t.is(reply.headers?.['X-Card-Verification'], 'invalid')

  const strict = cardRoutes(
    { require: id => records.get(id) as CardEntity },
    fetcher({ allowPrivateAddresses: false })
  )[0]!
  await rejectsWith(
    t,
    Promise.resolve().then(() => strict.handler(context(refused.entity_id))),
    'card_address_refused'
  )
})
