/**
 * The first fuzz run's findings (issue 17), each pinned: path parameters of a few KiB, bodies
 * nested thousands of levels deep, and URLs far over the limit, on both HTTP fronts.
 */
import test from 'ava'
import { sendRaw, seedFuzzTarget } from '../helpers/fuzz.js'
import { http, startTestNode, type TestNode } from '../helpers/node.js'
import WebSocket from 'ws'

const long = 'a'.repeat(4096)

async function withNode(t: { teardown(fn: () => Promise<void>): void }, server?: 'node'): Promise<TestNode> {
  const node = await startTestNode(server ? { http: { server } } : {})
  t.teardown(() => node.stop())
  return node
}

test('IDs, handles and names longer than their formats are refused before any store access', async t => {
  const { url } = await withNode(t)
  const cases: Array<[string, string, number, string]> = [
    ['GET', `/v1/entities/zns:${long}`, 400, 'invalid_id'],
    ['DELETE', `/v1/entities/zns:${long}`, 400, 'invalid_id'],
    ['GET', `/v1/developers/zns:dev:${long}`, 400, 'invalid_id'],
    ['GET', `/v1/handles/${long}`, 400, 'handle_invalid'],
    ['DELETE', `/v1/handles/${long}`, 400, 'handle_invalid'],
    ['GET', `/v1/handles/${long}/entities`, 400, 'handle_invalid'],
    ['GET', `/v1/names/${long}/agent`, 400, 'handle_invalid'],
    ['GET', `/v1/names/good-handle/${long}`, 400, 'name_invalid'],
    ['DELETE', `/v1/names/good-handle/${long}`, 400, 'name_invalid'],
    ['GET', `/v1/names/good-handle/${long}/versions`, 400, 'name_invalid']
  ]
  for (const [method, path, status, error] of cases) {
    const res = await http(url, method, path)
    t.is(res.status, status, `${method} ${path.slice(0, 40)}`)
    t.is(res.body.error, error)
  }
  const available = await http(url, 'GET', `/v1/handles/${long}/available`)
  t.like(available.body, { available: false, reason: 'invalid' })
  // A long ID on the per-entity heartbeat socket is refused at the upgrade.
  const status = await new Promise<number>(resolve => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/entities/zns:${long}/ws`)
    ws.on('unexpected-response', (req, res) => {
      resolve(res.statusCode ?? 0)
      req.destroy()
    })
    ws.on('error', () => {})
    ws.on('open', () => {
      resolve(101)
      ws.terminate()
    })
  })
  t.is(status, 400)
})

test('JSON nested deeper than 64 levels is 400 invalid_json on every write; shallower bodies still parse', async t => {
  const { url } = await withNode(t)
  const seeds = await seedFuzzTarget(url)
  const deep = (depth: number) =>
    JSON.stringify({ ...seeds.registration, metadata: JSON.parse('['.repeat(depth) + ']'.repeat(depth)) })
  for (const path of ['/v1/entities', '/v1/developers', '/v1/handles', '/v1/names', '/v1/search']) {
    const res = await http(url, 'POST', path, {
      raw: '['.repeat(5000) + ']'.repeat(5000),
      headers: { 'content-type': 'application/json' }
    })
    t.is(res.status, 400, path)
    t.is(res.body.error, 'invalid_json')
    t.regex(res.body.message, /nested deeper than 64 levels/)
  }
  const tooDeep = await http(url, 'POST', '/v1/entities', {
    raw: deep(70),
    headers: { 'content-type': 'application/json' }
  })
  t.is(tooDeep.body.error, 'invalid_json')
  // Within the limit the body parses and goes on to the usual checks (here: an unknown field's fate, not a parse error).
  const within = await http(url, 'POST', '/v1/entities', {
    raw: deep(10),
    headers: { 'content-type': 'application/json' }
  })
  t.not(within.body.error, 'invalid_json')
  t.true(within.status < 500)
})

for (const server of [undefined, 'node'] as const) {
  test(`URLs over 8 KiB are 414 url_too_long, heads over 64 KiB 431 (${server ?? 'default'} front)`, async t => {
    const { url } = await withNode(t, server)
    for (const size of [9 * 1024, 40 * 1024]) {
      const res = await sendRaw(url, {
        method: 'GET',
        target: `/v1/entities/${'a'.repeat(size)}`,
        headers: [],
        body: null
      })
      t.is(res.status, 414, `${size} bytes`)
      t.is(JSON.parse(res.body.toString()).error, 'url_too_long')
    }
    const query = await sendRaw(url, {
      method: 'GET',
      target: `/v1/entities?q=${'a'.repeat(9000)}`,
      headers: [],
      body: null
    })
    t.is(query.status, 414)
    if (server === 'node') {
      // Past the head limit, node's parser stops reading; the answer still names the cause.
      const huge = await sendRaw(url, {
        method: 'GET',
        target: `/v1/entities/${'a'.repeat(200 * 1024)}`,
        headers: [],
        body: null
      })
      t.is(huge.status, 414)
      const headers = await sendRaw(url, {
        method: 'GET',
        target: '/health',
        headers: Array.from({ length: 20 }, (_, i): [string, string] => [`x-big-${i}`, 'h'.repeat(4000)]),
        body: null
      })
      t.is(headers.status, 431)
      t.is(JSON.parse(headers.body.toString()).error, 'headers_too_large')
    }
    t.is((await fetch(`${url}/health`)).status, 200)
  })
}
