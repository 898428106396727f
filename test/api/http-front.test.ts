import test from 'ava'
import { request as httpRequest } from 'node:http'
import { NODE_VERSION } from '../../src/version.js'
import { http, startTestNode, testNodes, type TestNode } from '../helpers/node.js'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { collectRefs } from '../helpers/shared.js'

const { start, stopAll } = testNodes()

let plain: TestNode

test.before(async () => {
  plain = await start()
})

test.after.always(stopAll)

/** A raw request with a chunked body (no Content-Length), answered as status and parsed JSON. */
function chunkedPost(base: string, path: string, chunks: string[]): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      base + path,
      { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
      res => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', c => {
          text += c
        })
        res.on('end', () => {
          let body: unknown = text
          try {
            body = JSON.parse(text)
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode ?? 0, body })
        })
        res.on('error', reject)
      }
    )
    req.on('error', reject)
    for (const c of chunks) req.write(c)
    req.end()
  })
}

test('GET /health answers ok', async t => {
  const res = await http(plain.url, 'GET', '/health')
  t.is(res.status, 200)
  t.deepEqual(res.body, { status: 'ok' })
  t.regex(res.headers.get('content-type') ?? '', /^application\/json/)
})

test('HEAD /health answers 200 without a body', async t => {
  const res = await fetch(`${plain.url}/health`, { method: 'HEAD' })
  t.is(res.status, 200)
  t.is(await res.text(), '')
})

test('GET /v1/info describes the node', async t => {
  const res = await http(plain.url, 'GET', '/v1/info')
  t.is(res.status, 200)
  const info = res.body
  t.regex(info.node_id, /^zns:registry:[0-9a-f]{32}$/)
  t.is(info.registry_id, info.node_id)
  t.is(info.version, NODE_VERSION)
  t.is(info.host, 'registry.test')
  t.is(info.onboarding_mode, 'open')
  t.is(info.auth_url, null)
  t.deepEqual(info.developer_onboarding, { mode: 'open', auth_url: null })
  for (const key of ['agent_count', 'service_count', 'entity_count', 'developer_count', 'peer_count'])
    t.is(typeof info[key], 'number', key)
  t.regex(info.public_key, /^ed25519:/)
})

test('unknown path → 404 route_not_found', async t => {
  const res = await http(plain.url, 'GET', '/v1/nothing-here')
  t.like(res, { status: 404, body: { error: 'route_not_found' } })
  t.is(typeof res.body.message, 'string')
  t.true(res.body.message.length > 0)
})

test('wrong method on a known path → 405 method_not_allowed with Allow', async t => {
  const res = await http(plain.url, 'DELETE', '/v1/info')
  t.like(res, { status: 405, body: { error: 'method_not_allowed' } })
  t.is(res.headers.get('allow'), 'GET')
  const entities = await http(plain.url, 'PATCH', '/v1/entities')
  t.is(entities.status, 405)
  t.deepEqual(entities.headers.get('allow')?.split(', ').sort(), ['GET', 'POST'])
})

test('invalid JSON body → 400 invalid_json', async t => {
  const res = await http(plain.url, 'POST', '/v1/entities', { raw: '{"name": ' })
  t.like(res, { status: 400, body: { error: 'invalid_json' } })
})

test('empty body → 400 invalid_json', async t => {
  const none = await http(plain.url, 'POST', '/v1/entities')
  t.like(none, { status: 400, body: { error: 'invalid_json' } })
  const empty = await http(plain.url, 'POST', '/v1/entities', { raw: '' })
  t.like(empty, { status: 400, body: { error: 'invalid_json' } })
})

test('bad percent-encoding in a path parameter → 400 invalid_id', async t => {
  const res = await http(plain.url, 'GET', '/v1/entities/zns%3')
  t.like(res, { status: 400, body: { error: 'invalid_id' } })
})

test('Content-Type application/x-www-form-urlencoded → 415 unsupported_media_type', async t => {
  const res = await http(plain.url, 'POST', '/v1/entities', {
    raw: 'a=1&b=2',
    headers: { 'content-type': 'application/x-www-form-urlencoded' }
  })
  t.like(res, { status: 415, body: { error: 'unsupported_media_type' } })
})

test('a body over the limit → 413 body_too_large (declared and streamed)', async t => {
  const small = await start({ http: { body_limit_bytes: 2048 } })
  const big = JSON.stringify({ name: 'x'.repeat(4096) })
  const res = await http(small.url, 'POST', '/v1/entities', { raw: big })
  t.like(res, { status: 413, body: { error: 'body_too_large' } })
  const streamed = await chunkedPost(small.url, '/v1/entities', ['{"name":"', 'y'.repeat(1500), 'y'.repeat(1500), '"}'])
  t.like(streamed, { status: 413, body: { error: 'body_too_large' } })
  const fits = await http(small.url, 'POST', '/v1/entities', { raw: JSON.stringify({ name: 'x'.repeat(1000) }) })
  t.is(fits.status, 400, 'a body under the limit is read and validated')
  t.is(fits.body.error, 'validation_failed')
})

test('a chunked body under the limit is assembled from its chunks', async t => {
  const res = await chunkedPost(plain.url, '/v1/entities', ['{"na', 'me": 1', '}'])
  t.is(res.status, 400)
  t.is(res.body.error, 'validation_failed', 'parsed as JSON, then validated')
})

test('read rate limit: X-RateLimit-* headers, then 429 with Retry-After; /health is not limited', async t => {
  const limited = await start({ rate_limit: { enabled: true, reads_per_minute: 3, writes_per_minute: 2 } })
  const remaining: string[] = []
  for (let i = 0; i < 3; i++) {
    const res = await http(limited.url, 'GET', '/v1/info')
    t.is(res.status, 200)
    t.is(res.headers.get('x-ratelimit-limit'), '3')
    remaining.push(res.headers.get('x-ratelimit-remaining') ?? '')
    const reset = Number(res.headers.get('x-ratelimit-reset'))
    t.true(Number.isInteger(reset) && reset >= 1 && reset <= 60)
  }
  t.deepEqual(remaining, ['2', '1', '0'])
  const fourth = await http(limited.url, 'GET', '/v1/info')
  t.like(fourth, { status: 429, body: { error: 'rate_limited' } })
  const retry = Number(fourth.headers.get('retry-after'))
  t.true(Number.isInteger(retry) && retry >= 1 && retry <= 60)
  t.is(fourth.headers.get('x-ratelimit-remaining'), '0')
  for (let i = 0; i < 5; i++) t.is((await http(limited.url, 'GET', '/health')).status, 200)
})

test("the dashboard's reads have their own budget: with it open, a reader's 60 reads a minute stay theirs", async t => {
  const node = await start({ rate_limit: { enabled: true, reads_per_minute: 60, dashboard_reads_per_minute: 120 } })
  const dashboard = { 'x-registry-dashboard': '1' }
  // A minute of the open dashboard (a poll of four reads every 5 s), then the reader's 60 reads.
  for (let i = 0; i < 48; i++)
    t.is((await http(node.url, 'GET', '/v1/network/status', { headers: dashboard })).status, 200)
  for (let i = 0; i < 60; i++) t.is((await http(node.url, 'GET', '/v1/info')).status, 200)
  t.is((await http(node.url, 'GET', '/v1/info')).status, 429, "the reader's 61st read")
  const polled = await http(node.url, 'GET', '/v1/entities', { headers: dashboard })
  t.is(polled.status, 200, 'the dashboard still reads')
  t.is(polled.headers.get('x-ratelimit-limit'), '120')
})

test('write rate limit counts by the body public key, before verification', async t => {
  const limited = await start({ rate_limit: { enabled: true, reads_per_minute: 3, writes_per_minute: 2 } })
  const dev = developer(40)
  const a = agent(dev, 1)
  const other = agent(dev, 2)
  const body = { ...specRegistration(dev, a), signature: `ed25519:${'A'.repeat(86)}==` }
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) {
    const res = await http(limited.url, 'POST', '/v1/entities', { body })
    statuses.push(res.status)
    if (i === 0) {
      t.is(res.headers.get('x-ratelimit-limit'), '2')
      t.is(res.headers.get('x-ratelimit-remaining'), '1')
    }
  }
  t.not(statuses[0], 429)
  t.not(statuses[1], 429)
  t.is(statuses[2], 429)
  const third = await http(limited.url, 'POST', '/v1/entities', { body })
  t.is(third.body.error, 'rate_limited')
  t.truthy(third.headers.get('retry-after'))
  const unprefixed = await http(limited.url, 'POST', '/v1/entities', {
    body: { ...body, public_key: a.publicKey.slice('ed25519:'.length) }
  })
  t.is(unprefixed.status, 429, 'the key counts the same with or without its prefix')
  const fresh = await http(limited.url, 'POST', '/v1/entities', { body: specRegistration(dev, other) })
  t.is(fresh.status, 201, 'a different key is still allowed')
})

test('trusted proxy: X-Forwarded-For clients are counted separately', async t => {
  const proxied = await start({
    rate_limit: { enabled: true, reads_per_minute: 1 },
    http: { trusted_proxies: ['127.0.0.1'] }
  })
  const a = await http(proxied.url, 'GET', '/v1/info', { headers: { 'x-forwarded-for': '203.0.113.1' } })
  const b = await http(proxied.url, 'GET', '/v1/info', { headers: { 'x-forwarded-for': '203.0.113.2' } })
  t.is(a.status, 200)
  t.is(b.status, 200)
  const again = await http(proxied.url, 'GET', '/v1/info', {
    headers: { 'x-forwarded-for': '198.51.100.9, 203.0.113.1' }
  })
  t.is(again.status, 429, 'the right-most untrusted hop is the client')
})

test('without trusted proxies X-Forwarded-For is ignored', async t => {
  const direct = await start({ rate_limit: { enabled: true, reads_per_minute: 1 } })
  const a = await http(direct.url, 'GET', '/v1/info', { headers: { 'x-forwarded-for': '203.0.113.1' } })
  const b = await http(direct.url, 'GET', '/v1/info', { headers: { 'x-forwarded-for': '203.0.113.2' } })
  t.is(a.status, 200)
  t.is(b.status, 429)
})

test('CORS: any origin by default; preflight answers 204 with the allowed methods', async t => {
  const res = await http(plain.url, 'GET', '/health', { headers: { origin: 'https://x.example' } })
  t.is(res.headers.get('access-control-allow-origin'), '*')
  t.regex(res.headers.get('access-control-expose-headers') ?? '', /X-RateLimit-Limit/)
  const noOrigin = await http(plain.url, 'GET', '/health')
  t.is(noOrigin.headers.get('access-control-allow-origin'), null)
  const pre = await fetch(`${plain.url}/v1/entities`, {
    method: 'OPTIONS',
    headers: {
      origin: 'https://x.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type, authorization'
    }
  })
  t.is(pre.status, 204)
  t.is(pre.headers.get('access-control-allow-origin'), '*')
  t.regex(pre.headers.get('access-control-allow-methods') ?? '', /POST/)
  t.regex(pre.headers.get('access-control-allow-headers') ?? '', /Authorization/)
})

test('CORS: a configured origin list echoes allowed origins only', async t => {
  const strict = await start({ http: { cors_origins: ['https://ok.example'] } })
  const ok = await http(strict.url, 'GET', '/v1/info', { headers: { origin: 'https://ok.example' } })
  t.is(ok.headers.get('access-control-allow-origin'), 'https://ok.example')
  t.regex(ok.headers.get('vary') ?? '', /Origin/)
  const bad = await http(strict.url, 'GET', '/v1/info', { headers: { origin: 'https://bad.example' } })
  t.is(bad.status, 200)
  t.is(bad.headers.get('access-control-allow-origin'), null)
  const pre = await fetch(`${strict.url}/v1/info`, { method: 'OPTIONS', headers: { origin: 'https://bad.example' } })
  t.is(pre.status, 204)
  t.is(pre.headers.get('access-control-allow-origin'), null)
  t.is(pre.headers.get('access-control-allow-methods'), null)
})

test('GET /swagger/doc.json is a Swagger 2.0 document of the API', async t => {
  const res = await http(plain.url, 'GET', '/swagger/doc.json')
  t.is(res.status, 200)
  const doc = res.body
  t.is(doc.swagger, '2.0')
  t.is(doc.info.version, '0.2.0')
  for (const path of [
    '/v1/entities',
    '/v1/entities/{entity_id}',
    '/v1/services',
    '/v1/developers/{developer_id}/agents',
    '/health',
    '/v1/info'
  ]) {
    t.truthy(doc.paths[path], `paths has ${path}`)
  }
  t.falsy(doc.paths['/swagger/index.html'], 'explorer assets are hidden')
  t.truthy(doc.definitions.RegistrationRequest)
  t.truthy(doc.definitions.Error)
  const post = doc.paths['/v1/entities'].post
  t.truthy(post)
  const bodyParam = post.parameters.find((p: { in: string }) => p.in === 'body')
  t.truthy(bodyParam)
  t.is(bodyParam.schema.$ref, '#/definitions/RegistrationRequest')
  t.truthy(post.responses['401'])
  t.truthy(post.responses['201'])
  t.truthy(post.responses['429'], 'rate-limited routes document 429')
  const byId = doc.paths['/v1/entities/{entity_id}'].get
  t.true(byId.parameters.some((p: { name: string; in: string }) => p.name === 'entity_id' && p.in === 'path'))
  const text = JSON.stringify(doc)
  t.false(text.includes('anyOf'), 'no anyOf anywhere')
  t.false(text.includes('$id'), 'no $id anywhere')
  const refs = collectRefs(doc)
  t.true(refs.length > 0)
  t.true(refs.every(ref => ref.startsWith('#/definitions/')))
  const dangling = [...new Set(refs.filter(ref => !doc.definitions[ref.slice('#/definitions/'.length)]))]
  t.deepEqual(dangling, [], 'every $ref resolves to a definition')
})

test('the API explorer is served from local assets', async t => {
  const page = await http(plain.url, 'GET', '/swagger/index.html')
  t.is(page.status, 200)
  t.regex(page.headers.get('content-type') ?? '', /^text\/html/)
  t.true(String(page.body).includes('swagger-ui-bundle.js'))
  const bundle = await fetch(`${plain.url}/swagger/swagger-ui-bundle.js`)
  t.is(bundle.status, 200)
  t.regex(bundle.headers.get('content-type') ?? '', /javascript/)
  t.true((await bundle.arrayBuffer()).byteLength > 10_000)
  const redirect = await fetch(`${plain.url}/swagger`, { redirect: 'manual' })
  t.is(redirect.status, 302)
  t.is(redirect.headers.get('location'), '/swagger/index.html')
})

test("the dashboard is one self-contained page on the node's own API (no CDN)", async t => {
  const page = await http(plain.url, 'GET', '/dashboard')
  t.is(page.status, 200)
  t.regex(page.headers.get('content-type') ?? '', /^text\/html/)
  const html = String(page.body)
  for (const used of ['/v1/network/status', '/v1/network/peers', '/v1/entities?limit=', '/v1/ws/activity'])
    t.true(html.includes(used), used)
  t.false(/(src|href)="https?:/.test(html), 'nothing is loaded from elsewhere')
})

test('metrics: served as Prometheus text when enabled, 404 metrics_disabled by default', async t => {
  const metered = await start({ metrics: { enabled: true } })
  await http(metered.url, 'GET', '/health')
  const res = await fetch(`${metered.url}/metrics`)
  t.is(res.status, 200)
  t.regex(res.headers.get('content-type') ?? '', /^text\/plain/)
  const text = await res.text()
  t.true(text.includes('registry_http_requests_total'))
  t.true(text.includes('registry_entities'))
  t.regex(text, /registry_http_requests_total\{[^}]*route="\/health"[^}]*\} 1/)
  // The store's commits: the node wrote at least its creation time and identity when it started.
  t.regex(text, /^registry_store_commits_total [1-9]/m)
  t.regex(text, /^registry_store_pages_written_total [1-9]/m)
  t.regex(text, /^registry_store_commit_seconds_total\{phase="sync"\} [0-9.e-]+$/m)
  const off = await http(plain.url, 'GET', '/metrics')
  t.like(off, { status: 404, body: { error: 'metrics_disabled' } })
  t.regex(off.body.message, /metrics\.enabled/)
})

test('after stop, requests on connections still open get 503 shutting_down', async t => {
  const n = await startTestNode()
  t.is((await http(n.url, 'GET', '/health')).status, 200) // opens a keep-alive connection
  await n.stop()
  const late = await http(n.url, 'GET', '/v1/info').catch(() => null)
  if (late) {
    t.like(late, { status: 503, body: { error: 'shutting_down' } })
  } else {
    t.pass('the connection was closed, which is also fine')
  }
})

for (const server of ['uws', 'node'] as const) {
  test(`keep-alive: the ${server} front announces an idle timeout shorter than the one it closes at`, async t => {
    const node = await start({ http: { server } }).catch(() => null)
    if (!node || node.node.httpServer !== server) {
      t.pass(`no ${server} front on this runtime`)
      return
    }
    const header = await new Promise<string | undefined>((resolve, reject) => {
      const req = httpRequest(`${node.url}/health`, { headers: { connection: 'keep-alive' } }, res => {
        res.resume()
        resolve(res.headers['keep-alive'] as string | undefined)
      })
      req.on('error', reject)
      req.end()
    })
    const seconds = Number(/timeout=(\d+)/.exec(header ?? '')?.[1])
    // uWS closes idle connections after 8–12 s, node:http after 10–11 s: a client that honours the
    // hint drops an idle connection before the server does, so it never reuses one being closed.
    t.true(seconds > 0 && seconds < (server === 'uws' ? 8 : 11), `Keep-Alive: ${header}`)
  })
}
