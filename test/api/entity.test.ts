/**
 * The entity runtime against a real node over real HTTP and WebSockets: registration and upsert,
 * heartbeats, search, the card (direct and through the node's card proxy), the message endpoints
 * with every auth_mode answer and bad input, async replies, A2A, and deregistration on stop.
 */
import test from 'ava'
import { pino } from 'pino'
import { readFileSync } from 'node:fs'
import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  callEntity,
  createEntity,
  signAgentMessage,
  signA2AMessage,
  type RunningEntity
} from '../../src/entity/index.js'
import { verifyCard } from '../../src/identity/card-signature.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed } from '../../src/identity/keys.js'
import { agent, developer } from '../helpers/identities.js'
import { http, startTestNode, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const dev = developer(71)
let node: TestNode
const running: RunningEntity[] = []

test.before(async () => {
  node = await startTestNode({ entities: { allow_http_url: true }, cards: { allow_private_addresses: true } })
})

test.after.always(async () => {
  await Promise.all(running.map(e => e.stop().catch(() => {})))
  await node.stop()
})

type Handler = Parameters<typeof createEntity>[0]['handler']

async function start(
  index: number,
  fields: {
    handler?: Handler
    authMode?: 'strict' | 'permissive'
    summary?: string
    handlerTimeoutMs?: number
    bodyLimitBytes?: number
    port?: number
  } = {}
): Promise<RunningEntity> {
  const entity = createEntity({
    developerKey: dev.keyPair,
    index,
    registry: node.url,
    card: {
      name: `Echo ${index}`,
      summary: fields.summary ?? 'Repeats what it is told, for tests',
      category: 'tools',
      tags: ['echo', 'test'],
      capabilities: ['echo']
    },
    handler: fields.handler ?? (input => input.content),
    heartbeat: { intervalMs: 500 },
    logger: pino({ level: 'silent' }),
    ...(fields.port ? { port: fields.port } : {}),
    ...(fields.authMode ? { authMode: fields.authMode } : {}),
    ...(fields.handlerTimeoutMs ? { handlerTimeoutMs: fields.handlerTimeoutMs } : {}),
    ...(fields.bodyLimitBytes ? { bodyLimitBytes: fields.bodyLimitBytes } : {})
  })
  const e = await entity.start()
  running.push(e)
  return e
}

const caller = keyPairFromSeed(Buffer.alloc(32, 72))
const callerId = deriveId('agent', caller.publicKey)
const signed = (content: string) => signAgentMessage(caller, callerId, { content })

test('an entity registers, heartbeats and is found by search; its card verifies directly and through the node', async t => {
  const e = await start(1)
  t.is(e.registration.action, 'registered')
  t.is(e.entityId, agent(dev, 1).agentId, 'the HD key at index 1 of the developer')
  const record = (await http(node.url, 'GET', `/v1/entities/${encodeURIComponent(e.entityId)}`)).body
  t.is(record.entity_url, e.url)
  t.is(record.developer_id, dev.id)
  await until('the node acknowledges a heartbeat', () => (e.heartbeats?.acks ?? 0) > 0)
  const found = await until('search finds the entity', async () => {
    const res = await http(node.url, 'POST', '/v1/search', { body: { query: 'Echo 1 repeats' } })
    return (res.body.results as Array<{ entity_id: string; status: string }>).find(r => r.entity_id === e.entityId)
  })
  t.is(found.status, 'active')
  const health = (await http(e.url, 'GET', '/health')).body
  t.like(health, { status: 'healthy', agent_id: e.entityId, entity_id: e.entityId })
  t.is(typeof health.uptime_seconds, 'number')
  t.not(health.last_heartbeat, null)
  for (const path of ['/.well-known/agent-card.json', '/.well-known/agent.json']) {
    const card = (await http(e.url, 'GET', path)).body
    t.is(card.entity_id, e.entityId)
    t.is(verifyCard(card, e.publicKey).verification, 'verified', path)
    t.is(card.endpoints.invoke, `${e.url}/webhook/sync`)
  }
  const proxied = await fetch(`${node.url}/v1/entities/${encodeURIComponent(e.entityId)}/card`)
  t.is(proxied.status, 200)
  t.is(proxied.headers.get('x-card-verification'), 'verified')
})

test('restarting with the same card changes nothing; a new URL or card is sent as a signed update', async t => {
  const first = await start(2)
  t.is(first.registration.action, 'registered')
  await first.stop()
  const same = await start(2, { port: first.port })
  t.is(same.registration.action, 'unchanged')
  await same.stop()
  const moved = await start(2)
  t.is(moved.registration.action, 'updated', 'a new port is a new entity_url')
  await moved.stop()
  const changed = await start(2, { summary: 'Now with a new summary' })
  t.is(changed.registration.action, 'updated')
  t.is(
    (await http(node.url, 'GET', `/v1/entities/${encodeURIComponent(changed.entityId)}`)).body.summary,
    'Now with a new summary'
  )
})

test('/webhook/sync: unsigned in permissive mode, signed, a handler object as JSON text, prompt alias', async t => {
  const seen: Array<{ signed: boolean; senderId: string | null }> = []
  const e = await start(3, {
    handler: input => {
      seen.push({ signed: input.signed, senderId: input.senderId })
      return input.content === 'object' ? { answer: 42 } : `echo: ${input.content}`
    }
  })
  const plain = await http(e.url, 'POST', '/webhook/sync', { body: { content: 'hello' } })
  t.is(plain.status, 200)
  t.like(plain.body, { status: 'success', response: 'echo: hello' })
  t.regex(plain.body.message_id, /^[0-9a-f-]{36}$/)
  t.like((await http(e.url, 'POST', '/webhook/sync', { body: { prompt: 'old client' } })).body, {
    response: 'echo: old client'
  })
  t.like((await http(e.url, 'POST', '/webhook/sync', { body: signed('with a signature') })).body, {
    status: 'success',
    response: 'echo: with a signature'
  })
  t.is((await http(e.url, 'POST', '/webhook/sync', { body: { content: 'object' } })).body.response, '{"answer":42}')
  t.deepEqual(seen.slice(0, 3), [
    { signed: false, senderId: null },
    { signed: false, senderId: null },
    { signed: true, senderId: callerId }
  ])
})

test('auth_mode strict, replays, skew and forged senders answer their codes', async t => {
  const e = await start(4, { authMode: 'strict' })
  const post = (body: unknown) => http(e.url, 'POST', '/webhook/sync', { body })
  const unsigned = await post({ content: 'hi' })
  t.like(unsigned, { status: 401, body: { error: 'signature_required' } })
  const good = signed('once')
  t.is((await post(good)).status, 200)
  const replay = await post(good)
  t.like(replay, { status: 409, body: { error: 'message_replayed' } })
  const tampered = await post({ ...signed('x'), content: 'y' })
  t.like(tampered, { status: 401, body: { error: 'signature_invalid' } })
  const stale = await post(signAgentMessage(caller, callerId, { content: 'old' }, new Date(Date.now() - 120_000)))
  t.like(stale, { status: 401, body: { error: 'timestamp_out_of_window' } })
  const impostor = await post({ ...signed('me'), sender_id: 'zns:00000000000000000000000000000000' })
  t.like(impostor, { status: 401, body: { error: 'sender_key_mismatch' } })
  for (const res of [unsigned, replay, tampered, stale, impostor])
    t.deepEqual(
      Object.keys(res.body).filter(k => k === 'error' || k === 'message'),
      ['error', 'message']
    )
})

function raw(url: string, body: string, contentType: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': contentType } }, res => {
      let text = ''
      res.on('data', c => {
        text += c
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

test('bad input: non-JSON, malformed JSON, too large, no content, a handler that throws or overruns', async t => {
  const e = await start(5, {
    bodyLimitBytes: 2048,
    handlerTimeoutMs: 300,
    handler: input => {
      if (input.content === 'throw') throw new Error('secret internal detail')
      if (input.content === 'slow') return new Promise(resolve => setTimeout(() => resolve('late'), 5_000))
      return input.content
    }
  })
  const sync = `${e.url}/webhook/sync`
  t.like(await raw(sync, '<html></html>', 'text/html'), { status: 415, body: { error: 'unsupported_media_type' } })
  t.like(await raw(sync, '{"content":', 'application/json'), { status: 400, body: { error: 'invalid_json' } })
  t.like(await raw(sync, JSON.stringify({ content: 'x'.repeat(4096) }), 'application/json'), {
    status: 413,
    body: { error: 'body_too_large' }
  })
  t.like(await raw(sync, '{"sender_id":"someone"}', 'application/json'), {
    status: 400,
    body: { error: 'validation_failed', field: 'content' }
  })
  const thrown = await raw(sync, '{"content":"throw"}', 'application/json')
  t.like(thrown, { status: 500, body: { error: 'handler_failed' } })
  t.false(JSON.stringify(thrown.body).includes('secret internal detail'), 'no stack or message of the handler leaks')
  const slow = await raw(sync, '{"content":"slow"}', 'application/json')
  t.like(slow, { status: 408, body: { error: 'handler_timeout' } })
  t.truthy(slow.body.message_id)
  t.like(await raw(sync, '{"content":"still alive"}', 'application/json'), {
    status: 200,
    body: { response: 'still alive' }
  })
})

test('/webhook answers 202 at once; the reply is read once at /webhook/response/{id}', async t => {
  let release: () => void = () => {}
  const gate = new Promise<void>(resolve => {
    release = resolve
  })
  const e = await start(6, {
    handler: async input => {
      await gate
      return `done: ${input.content}`
    }
  })
  const accepted = await http(e.url, 'POST', '/webhook', { body: { content: 'job' } })
  t.is(accepted.status, 202)
  t.is(accepted.body.status, 'accepted')
  const id = accepted.body.message_id as string
  const pending = await http(e.url, 'GET', `/webhook/response/${id}`)
  t.like(pending, { status: 404, body: { error: 'response_not_ready' } })
  release()
  const ready = await until('the reply is ready', async () => {
    const res = await http(e.url, 'GET', `/webhook/response/${id}`)
    return res.status === 200 ? res : null
  })
  t.like(ready.body, { status: 'success', message_id: id, response: 'done: job' })
  t.is((await http(e.url, 'GET', `/webhook/response/${id}`)).status, 404, 'read once')
})

test('A2A message/send signed per the SDK is answered with a completed task; a bad block gets the SDK error codes', async t => {
  const e = await start(7, { authMode: 'strict' })
  const message = () => ({
    kind: 'message',
    messageId: `m-${Math.random()}`,
    role: 'user',
    parts: [{ kind: 'text', text: 'over A2A' }]
  })
  const rpc = async (msg: unknown, id = 1) =>
    (
      await http(e.url, 'POST', '/a2a/v1', {
        body: { jsonrpc: '2.0', id, method: 'message/send', params: { message: msg } }
      })
    ).body
  const ok = await rpc(signA2AMessage(message(), { keyPair: caller, entityId: callerId }))
  t.is(ok.result.status.state, 'completed')
  t.is(ok.result.artifacts[0].parts[0].text, 'over A2A')
  const got = (
    await http(e.url, 'POST', '/a2a/v1', {
      body: { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: ok.result.id } }
    })
  ).body
  t.is(got.result.status.state, 'completed')
  const forged = signA2AMessage(message(), { keyPair: caller, entityId: callerId }) as any
  forged.parts[0].text = 'changed after signing'
  t.is((await rpc(forged)).error.code, -32100)
  const expired = signA2AMessage(message(), {
    keyPair: caller,
    entityId: callerId,
    now: new Date(Date.now() - 120_000)
  })
  t.is((await rpc(expired)).error.code, -32102)
  t.is((await rpc(message())).error.code, -32100, 'strict: unsigned refused')
  const vector = JSON.parse(readFileSync(new URL('../fixtures/a2a/x-zynd-auth-vector.json', import.meta.url), 'utf8'))
  t.is((await rpc(vector.message)).error.code, -32102, 'the SDK vector is long expired')
  t.is(
    (await http(e.url, 'POST', '/a2a/v1', { body: { jsonrpc: '2.0', id: 3, method: 'nope' } })).body.error.code,
    -32601
  )
})

test('call: over the webhook, over A2A when asked, and over A2A by itself for an entity without /webhook/sync', async t => {
  const e = await start(9, { authMode: 'strict' })
  const byWebhook = await callEntity(e.url, 'via webhook')
  t.like(byWebhook, { status: 200, response: 'via webhook', card_verification: 'verified', entity_id: e.entityId })
  t.is((await callEntity(e.entityId, 'by id', { registry: node.url })).response, 'by id')
  t.is((await callEntity(e.url, 'via a2a', { a2a: true })).response, 'via a2a')
  // An A2A-only entity (as the public SDKs now serve): no /webhook/sync, A2A passed on to ours.
  const a2aOnly = createServer((req, res) => {
    let body = ''
    req.on('data', c => {
      body += c
    })
    req.on('end', () => {
      if (req.url !== '/a2a/v1') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}')
        return
      }
      void fetch(`${e.url}/a2a/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(
        async r => res.writeHead(r.status, { 'content-type': 'application/json' }).end(await r.text())
      )
    })
  })
  await new Promise<void>(resolve => a2aOnly.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    a2aOnly.close()
  })
  const fallback = await callEntity(`http://127.0.0.1:${(a2aOnly.address() as AddressInfo).port}`, 'no webhook here')
  t.is(fallback.response, 'no webhook here')
  t.is(fallback.card_verification, 'unavailable')
})

test('stop with deregister removes the entity from the registry', async t => {
  const e = await start(8)
  await e.stop({ deregister: true })
  const res = await http(node.url, 'GET', `/v1/entities/${encodeURIComponent(e.entityId)}`)
  t.not(res.status, 200)
  await t.throwsAsync(fetch(`${e.url}/health`))
  // The same registration bytes again are a replay, which the tombstone refuses; the entity says why.
  await t.throwsAsync(start(8, { port: e.port }), { message: /identical to one made before/ })
  t.is((await start(8)).registration.action, 'registered', 'a new registration (here: a new URL) is accepted')
})
