import test from 'ava'
import { ClientIpResolver } from '../../src/http/client-ip.js'
import { Cors } from '../../src/http/cors.js'
import { json, type HttpMethod, type RouteDefinition } from '../../src/http/http.js'
import { FixedWindowLimiter, rateLimitHeaders } from '../../src/http/rate-limit.js'
import { Router } from '../../src/http/router.js'
import { RegistryError } from '../../src/errors.js'

function route(method: HttpMethod, path: string, tag = path): RouteDefinition {
  return {
    method,
    path,
    summary: tag,
    tag,
    limit: 'none',
    responses: { 200: { description: 'ok' } },
    handler: () => json(200, { tag })
  }
}

function buildRouter(): Router {
  const router = new Router()
  for (const r of [
    route('GET', '/v1/entities'),
    route('POST', '/v1/entities'),
    route('GET', '/v1/entities/{entity_id}'),
    route('PUT', '/v1/entities/{entity_id}'),
    route('DELETE', '/v1/entities/{entity_id}'),
    route('GET', '/v1/entities/search', 'literal-search'),
    route('GET', '/v1/developers/{developer_id}/entities'),
    route('GET', '/health')
  ])
    router.add(r)
  return router
}

const matched = (m: ReturnType<Router['match']>) => {
  if (!m.route) throw new Error(`no route; allowed ${m.allowed.join(',')}`)
  return m
}

test('router: literal segments beat parameters', t => {
  const router = buildRouter()
  const m = matched(router.match('GET', '/v1/entities/search'))
  t.is(m.route.summary, 'literal-search')
  t.deepEqual(m.params, {})
  const p = matched(router.match('GET', '/v1/entities/zns:abc'))
  t.is(p.route.path, '/v1/entities/{entity_id}')
  t.deepEqual(p.params, { entity_id: 'zns:abc' })
})

test('router: a literal that leads nowhere falls back to the parameter', t => {
  const router = new Router()
  router.add(route('GET', '/a/b/c'))
  router.add(route('GET', '/a/{x}/d'))
  const m = matched(router.match('GET', '/a/b/d'))
  t.is(m.route.path, '/a/{x}/d')
  t.deepEqual(m.params, { x: 'b' })
  t.is(matched(router.match('GET', '/a/b/c')).route.path, '/a/b/c')
})

test('router: parameters are percent-decoded', t => {
  const router = buildRouter()
  const m = matched(router.match('GET', '/v1/developers/zns%3Adev%3A34750f98bd59fcfc946da45aaabe933b/entities'))
  t.deepEqual(m.params, { developer_id: 'zns:dev:34750f98bd59fcfc946da45aaabe933b' })
  const spaced = matched(router.match('GET', '/v1/entities/a%20b%2Fc'))
  t.is(spaced.params.entity_id, 'a b/c')
})

test('router: unknown paths give an empty allowed list; known paths list their methods (405)', t => {
  const router = buildRouter()
  t.deepEqual(router.match('GET', '/nope'), { route: null, allowed: [] })
  t.deepEqual(router.match('GET', '/v1/entities/x/y'), { route: null, allowed: [] })
  const empty = router.match('GET', '/v1/entities/')
  t.truthy(empty.route, 'an empty segment matches a parameter, so the route can answer 400 for a missing ID')
  if (empty.route) t.is(empty.params.entity_id, '')
  const m = router.match('PATCH', '/v1/entities')
  t.is(m.route, null)
  if (m.route === null) t.deepEqual([...m.allowed].sort(), ['GET', 'POST'])
  const byId = router.match('POST', '/v1/entities/zns:abc')
  if (byId.route === null) t.deepEqual([...byId.allowed].sort(), ['DELETE', 'GET', 'PUT'])
  else t.fail('POST on an entity ID must not match')
})

test('router: HEAD falls back to GET', t => {
  const router = buildRouter()
  const m = matched(router.match('HEAD', '/health'))
  t.is(m.route.method, 'GET')
  t.is(m.route.path, '/health')
  const post = router.match('HEAD', '/nope')
  t.deepEqual(post, { route: null, allowed: [] })
})

test('router: bad percent-encoding in a parameter throws invalid_id naming the parameter', t => {
  const router = buildRouter()
  const err = t.throws(() => router.match('GET', '/v1/entities/zns%3'), { instanceOf: RegistryError })
  t.is(err?.code, 'invalid_id')
  t.is(err?.status, 400)
  t.is(err?.field, 'entity_id')
})

test('router: duplicate routes and conflicting parameter names are rejected', t => {
  const router = new Router()
  router.add(route('GET', '/x/{a}'))
  t.throws(() => router.add(route('GET', '/x/{a}')), { message: /duplicate route/ })
  t.throws(() => router.add(route('PUT', '/x/{b}')), { message: /conflicting parameter/ })
})

function clock(start = 1_000_000) {
  let now = start
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms
    }
  }
}

/** A limiter of `limit` per `windowMs` on a test clock `c` that moves only when advanced. */
function limiterOnClock(limit: number, windowMs: number) {
  const c = clock()
  return { c, limiter: new FixedWindowLimiter(limit, windowMs, c.now) }
}

test('limiter: counts up to the limit per key, then refuses', t => {
  const { limiter } = limiterOnClock(3, 60_000)
  t.deepEqual(limiter.take('a'), { allowed: true, limit: 3, remaining: 2, resetSeconds: 60 })
  t.deepEqual(limiter.take('a'), { allowed: true, limit: 3, remaining: 1, resetSeconds: 60 })
  t.deepEqual(limiter.take('a'), { allowed: true, limit: 3, remaining: 0, resetSeconds: 60 })
  t.deepEqual(limiter.take('a'), { allowed: false, limit: 3, remaining: 0, resetSeconds: 60 })
  t.true(limiter.take('b').allowed, 'keys are independent')
  t.is(limiter.size, 2)
})

test('limiter: reset counts down within the window and never reaches zero', t => {
  const { c, limiter } = limiterOnClock(2, 60_000)
  limiter.take('a')
  c.advance(15_500)
  t.is(limiter.take('a').resetSeconds, 45)
  c.advance(44_000)
  const d = limiter.take('a')
  t.false(d.allowed)
  t.is(d.resetSeconds, 1)
  c.advance(499)
  t.is(limiter.take('a').resetSeconds, 1, 'at least one second')
})

test('limiter: a new window starts once the old one has elapsed', t => {
  const { c, limiter } = limiterOnClock(1, 60_000)
  t.true(limiter.take('a').allowed)
  c.advance(59_999)
  t.false(limiter.take('a').allowed)
  c.advance(1)
  const d = limiter.take('a')
  t.true(d.allowed)
  t.is(d.remaining, 0)
  t.is(d.resetSeconds, 60)
})

test('limiter: sweep drops only expired windows', t => {
  const { c, limiter } = limiterOnClock(5, 1_000)
  limiter.take('old')
  c.advance(600)
  limiter.take('young')
  t.is(limiter.size, 2)
  c.advance(400)
  limiter.sweep()
  t.is(limiter.size, 1)
  c.advance(599)
  limiter.sweep()
  t.is(limiter.size, 1)
  c.advance(1)
  limiter.sweep()
  t.is(limiter.size, 0)
})

test('rate limit headers: Retry-After only when refused', t => {
  t.deepEqual(rateLimitHeaders({ allowed: true, limit: 3, remaining: 1, resetSeconds: 12 }), {
    'X-RateLimit-Limit': '3',
    'X-RateLimit-Remaining': '1',
    'X-RateLimit-Reset': '12'
  })
  t.is(rateLimitHeaders({ allowed: false, limit: 3, remaining: 0, resetSeconds: 12 })['Retry-After'], '12')
})

test('client IP: IPv4-mapped IPv6 addresses are unmapped', t => {
  const r = new ClientIpResolver([])
  t.is(r.resolve('::ffff:203.0.113.9', undefined), '203.0.113.9')
  t.is(r.resolve('::FFFF:203.0.113.9', undefined), '203.0.113.9')
  t.is(r.resolve('2001:db8::1', undefined), '2001:db8::1')
  t.is(r.resolve('::ffff:abcd', undefined), '::ffff:abcd', 'only an embedded IPv4 is unmapped')
})

test('client IP: X-Forwarded-For is ignored without trusted proxies or from an untrusted peer', t => {
  t.is(new ClientIpResolver([]).resolve('127.0.0.1', '1.2.3.4'), '127.0.0.1')
  const r = new ClientIpResolver(['10.0.0.1'])
  t.is(r.resolve('198.51.100.7', '1.2.3.4'), '198.51.100.7')
  t.is(r.resolve('10.0.0.1', undefined), '10.0.0.1')
})

test('client IP: a trusted CIDR peer yields the right-most untrusted hop', t => {
  const r = new ClientIpResolver(['10.0.0.0/8', '2001:db8::/32'])
  t.is(r.resolve('10.1.2.3', '203.0.113.5'), '203.0.113.5')
  t.is(
    r.resolve('10.1.2.3', '198.51.100.1, 203.0.113.5, 10.9.9.9'),
    '203.0.113.5',
    'trusted hops are skipped from the right'
  )
  t.is(r.resolve('::ffff:10.1.2.3', ' ::ffff:203.0.113.5 '), '203.0.113.5', 'mapped addresses on both sides')
  t.is(r.resolve('2001:db8::5', '203.0.113.6'), '203.0.113.6')
  t.is(r.resolve('10.1.2.3', '10.2.2.2, 10.3.3.3'), '10.2.2.2', 'all hops trusted: the left-most')
  t.is(r.resolve('10.1.2.3', 'garbage, unknown'), '10.1.2.3', 'no usable hop: the peer')
})

test('client IP: a malformed trusted proxy entry is rejected', t => {
  t.throws(() => new ClientIpResolver(['proxy.example']))
})

test('cors: "*" allows any origin; no Origin, no headers', t => {
  const cors = new Cors(['*'])
  t.deepEqual(cors.headers(undefined), {})
  const h = cors.headers('https://x.example')
  t.is(h['Access-Control-Allow-Origin'], '*')
  t.regex(h['Access-Control-Expose-Headers'] ?? '', /X-RateLimit-Remaining/)
  t.regex(h['Access-Control-Expose-Headers'] ?? '', /Retry-After/)
  const p = cors.preflight('https://x.example')
  t.is(p['Access-Control-Allow-Origin'], undefined, 'the origin header comes from headers(), once')
  t.regex(p['Access-Control-Allow-Methods'] ?? '', /PUT/)
  t.regex(p['Access-Control-Allow-Headers'] ?? '', /Authorization/)
  t.is(p['Access-Control-Max-Age'], '86400')
})

test('cors: a configured list echoes listed origins with Vary and refuses others', t => {
  const cors = new Cors(['https://ok.example'])
  const h = cors.headers('https://ok.example')
  t.is(h['Access-Control-Allow-Origin'], 'https://ok.example')
  t.is(h.Vary, 'Origin')
  t.deepEqual(cors.headers('https://bad.example'), {})
  t.deepEqual(cors.preflight('https://bad.example'), {})
  t.is(cors.preflight('https://ok.example')['Access-Control-Allow-Methods'], 'GET, POST, PUT, DELETE, OPTIONS')
})
