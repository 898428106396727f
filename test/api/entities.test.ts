import test from 'ava'
import { canonicalJson } from '../../src/identity/canonical-json.js'
import { sign } from '../../src/identity/keys.js'
import { agent, deployedRegistration, developer, signSpec, specRegistration } from '../helpers/identities.js'
import { enc, http, startTestNode, testNodes } from '../helpers/node.js'

const dev = developer(1)
const { start, stopAll } = testNodes()
let base: string

test.before(async () => {
  base = (await start()).url
})
test.after.always(stopAll)

test('spec-form registration: 201, readable with both spellings, implicit developer created', async t => {
  const a = agent(dev, 1)
  const res = await http(base, 'POST', '/v1/entities', {
    body: specRegistration(dev, a, { pricing_model: { model: 'per_token', rates: { input: 0.000001 } } })
  })
  t.is(res.status, 201, JSON.stringify(res.body))
  t.like(res.body, { entity_id: a.agentId, status: 'active', fqan: null })
  t.is(typeof res.body.message, 'string')

  const got = await http(base, 'GET', `/v1/entities/${enc(a.agentId)}`)
  t.is(got.status, 200)
  t.like(got.body, {
    entity_id: a.agentId,
    type: 'agent',
    entity_type: 'agent',
    name: 'Agent 1',
    category: 'tools',
    version: '0.1.0',
    public_key: a.publicKey,
    developer_id: dev.id,
    owner: dev.id,
    entity_index: 1,
    status: 'active',
    home_registry: 'registry.test',
    entity_url: 'https://agent1.example.com',
    schema_version: '1.0'
  })
  t.deepEqual(got.body.pricing_model, { model: 'per_token', rates: { input: 0.000001 } })
  t.deepEqual(got.body.entity_pricing, got.body.pricing_model)
  t.is(got.body.registration_signatures, undefined, 'internal fields stay internal')

  const devRecord = await http(base, 'GET', `/v1/developers/${dev.id}`)
  t.is(devRecord.status, 200)
  t.like(devRecord.body, { developer_id: dev.id, implicit: true, name: null, public_key: dev.publicKey })
})

test('deployed-client registration (entity_type, entity_pricing, entity_index, developer_signature)', async t => {
  const a = agent(dev, 2)
  const res = await http(base, 'POST', '/v1/entities', {
    body: deployedRegistration(dev, a, { name: 'Doc <T&T>', summary: 'x & y' })
  })
  t.is(res.status, 201, JSON.stringify(res.body))
  const got = await http(base, 'GET', `/v1/entities/${a.agentId}`)
  t.like(got.body, { type: 'agent', entity_type: 'agent', name: 'Doc <T&T>', entity_index: 2 })
  t.like(got.body.entity_pricing, { model: 'per_request', currency: 'USDC', base_price_usd: 0.01 })
  t.deepEqual(got.body.pricing_model, got.body.entity_pricing)
})

test('Go-escaped signatures (< > & as \\u003c …) verify as a fallback', async t => {
  const a = agent(dev, 3)
  const body = deployedRegistration(dev, a, { name: 'A <b> & c' })
  const signable = canonicalJson({
    category: body.category,
    entity_type: 'agent',
    entity_url: body.entity_url,
    name: body.name,
    public_key: body.public_key,
    summary: '',
    tags: body.tags
  })
  body.signature = sign(a.keyPair, signable.replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026'))
  const res = await http(base, 'POST', '/v1/entities', { body })
  t.is(res.status, 201, JSON.stringify(res.body))
})

test('services: zns:svc: ID, service_endpoint instead of entity_url, /v1/services alias', async t => {
  const a = agent(dev, 4)
  // A deployed client sends an empty entity_url for a service; its signature then covers service_endpoint.
  const res = await http(base, 'POST', '/v1/services', {
    body: deployedRegistration(dev, a, {
      entity_type: 'service',
      entity_url: '',
      service_endpoint: 'http://svc.example.com/api'
    })
  })
  t.is(res.status, 201, JSON.stringify(res.body))
  t.is(res.body.entity_id, a.serviceId)
  const got = await http(base, 'GET', `/v1/entities/${enc(a.serviceId)}`)
  t.like(got.body, {
    type: 'service',
    entity_type: 'service',
    entity_url: null,
    service_endpoint: 'http://svc.example.com/api'
  })
  // The same key may also hold an agent ID.
  const asAgent = await http(base, 'POST', '/v1/entities', { body: specRegistration(dev, a) })
  t.is(asAgent.status, 201)
  t.is(asAgent.body.entity_id, a.agentId)
})

test('duplicate registration: 409 entity_exists', async t => {
  const a = agent(dev, 5)
  const body = specRegistration(dev, a)
  t.is((await http(base, 'POST', '/v1/entities', { body })).status, 201)
  const dup = await http(base, 'POST', '/v1/entities', { body })
  t.like(dup, { status: 409, body: { error: 'entity_exists' } })
})

test('signature and proof failures', async t => {
  const a = agent(dev, 6)
  const good = specRegistration(dev, a)
  const tampered = { ...good, summary: 'changed after signing' }
  const r1 = await http(base, 'POST', '/v1/entities', { body: tampered })
  t.is(r1.status, 401)
  t.like(r1.body, { error: 'signature_invalid', field: 'signature' })

  const r2 = await http(base, 'POST', '/v1/entities', {
    body: { ...good, signature: (good.signature as string).slice('ed25519:'.length) }
  })
  t.is(r2.status, 400)
  t.like(r2.body, { error: 'validation_failed', field: 'signature' })

  const wrongProof = specRegistration(dev, a, { developer_proof: { ...a.proof, index: 99 } })
  const r3 = await http(base, 'POST', '/v1/entities', { body: wrongProof })
  t.like(r3, { status: 401, body: { error: 'developer_proof_invalid' } })

  const noIndex = specRegistration(dev, a, {
    developer_proof: { developer_public_key: dev.publicKey, signature: a.proof.signature }
  })
  const r4 = await http(base, 'POST', '/v1/entities', { body: noIndex })
  t.is(r4.status, 400)
  t.like(r4.body, { error: 'validation_failed', field: 'developer_proof.index' })

  const otherDev = developer(9)
  const mismatch = specRegistration(dev, a, { developer_id: otherDev.id })
  const r5 = await http(base, 'POST', '/v1/entities', { body: mismatch })
  t.is(r5.status, 401)
  t.like(r5.body, { error: 'developer_proof_invalid', field: 'developer_id' })

  const idWithoutProof = signSpec(a.keyPair, { ...good, developer_proof: undefined })
  const r6 = await http(base, 'POST', '/v1/entities', { body: idWithoutProof })
  t.is(r6.status, 400)
  t.like(r6.body, { field: 'developer_proof' })

  const unknown = await http(base, 'GET', `/v1/entities/${a.agentId}`)
  t.is(unknown.status, 404, 'nothing was stored by failed writes')
})

test('field rules: HTTPS entity_url, semver, tags, pricing, lengths, type', async t => {
  const a = agent(dev, 7)
  const cases: [Record<string, unknown>, string][] = [
    [{ entity_url: 'http://insecure.example.com' }, 'entity_url'],
    [{ entity_url: 'not a url' }, 'entity_url'],
    [{ entity_url: undefined }, 'entity_url'],
    [{ version: '1.2' }, 'version'],
    [{ tags: ['ok', 7] }, 'tags.1'],
    [{ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
    [{ pricing_model: { model: 'barter' } }, 'pricing_model.model'],
    [{ name: 'x'.repeat(101) }, 'name'],
    [{ type: 'robot' }, 'type'],
    [{ type: 'agent', entity_type: 'service' }, 'entity_type'],
    [{ category: undefined }, 'category'],
    [{ capability_summary: { blob: 'x'.repeat(9000) } }, 'capability_summary']
  ]
  for (const [fields, field] of cases) {
    const body = specRegistration(dev, a, fields)
    const res = await http(base, 'POST', '/v1/entities', { body })
    t.is(res.status, 400, `${JSON.stringify(fields).slice(0, 60)} → ${JSON.stringify(res.body)}`)
    t.is(res.body.field, field, JSON.stringify(res.body))
    t.is(res.body.error, 'validation_failed')
  }
  const svc = deployedRegistration(dev, a, { entity_type: 'service', entity_url: '' })
  const res = await http(base, 'POST', '/v1/entities', { body: svc })
  t.like(res.body, { error: 'validation_failed', field: 'service_endpoint' })
})

test('reads: unknown ID 404, malformed ID 400, encoded and raw IDs', async t => {
  const missing = await http(base, 'GET', '/v1/entities/zns:00000000000000000000000000000000')
  t.like(missing, { status: 404, body: { error: 'entity_not_found' } })
  const bad = await http(base, 'GET', '/v1/entities/not-an-id')
  t.like(bad, { status: 400, body: { error: 'invalid_id' } })
  const badEncoding = await http(base, 'GET', '/v1/entities/zns%ZZ')
  t.is(badEncoding.status, 400)
})

test('update: spec body signature, deployed Bearer over raw bytes, Bearer-Dev, failures', async t => {
  const a = agent(dev, 8)
  t.is((await http(base, 'POST', '/v1/entities', { body: specRegistration(dev, a) })).status, 201)
  const path = `/v1/entities/${enc(a.agentId)}`

  const spec = await http(base, 'PUT', path, {
    body: signSpec(a.keyPair, { summary: 'Now summarises too', tags: ['summary'] })
  })
  t.is(spec.status, 200, JSON.stringify(spec.body))
  t.like(spec.body, { summary: 'Now summarises too', name: 'Agent 8' })
  t.deepEqual(spec.body.tags, ['summary'])

  const raw = JSON.stringify({ name: 'Renamed', signature: sign(a.keyPair, 'inner, unchecked') })
  const bearer = await http(base, 'PUT', path, { raw, headers: { authorization: `Bearer ${sign(a.keyPair, raw)}` } })
  t.is(bearer.status, 200, JSON.stringify(bearer.body))
  t.is(bearer.body.name, 'Renamed')

  const rawDev = JSON.stringify({ version: '2.0.0' })
  const bearerDev = await http(base, 'PUT', path, {
    raw: rawDev,
    headers: { authorization: `Bearer-Dev ${sign(dev.keyPair, rawDev)}` }
  })
  t.is(bearerDev.status, 200, JSON.stringify(bearerDev.body))
  t.is(bearerDev.body.version, '2.0.0')

  const wrong = await http(base, 'PUT', path, {
    raw: rawDev,
    headers: { authorization: `Bearer ${sign(dev.keyPair, rawDev)}` }
  })
  t.like(wrong, { status: 401, body: { error: 'signature_invalid' } })

  const none = await http(base, 'PUT', path, { body: { name: 'nobody' } })
  t.like(none, { status: 401, body: { error: 'authorization_required' } })

  const immutable = await http(base, 'PUT', path, { body: signSpec(a.keyPair, { type: 'service' }) })
  t.is(immutable.status, 400)
  t.like(immutable.body, { error: 'field_immutable', field: 'type' })

  const insecure = await http(base, 'PUT', path, { body: signSpec(a.keyPair, { entity_url: 'http://x.example' }) })
  t.like(insecure.body, { error: 'validation_failed', field: 'entity_url' })

  const missing = await http(base, 'PUT', '/v1/entities/zns:00000000000000000000000000000000', {
    body: signSpec(a.keyPair, { name: 'x' })
  })
  t.is(missing.status, 404)

  const after = await http(base, 'GET', path)
  t.like(after.body, { name: 'Renamed', version: '2.0.0', summary: 'Now summarises too' })
})

test('update answers the fields it changed; the same update again is a no-op; a body of only its signature is refused', async t => {
  const a = agent(dev, 9)
  t.is((await http(base, 'POST', '/v1/entities', { body: specRegistration(dev, a) })).status, 201)
  const path = `/v1/entities/${enc(a.agentId)}`
  const raw = JSON.stringify({ summary: 'Counts words', tags: ['words'] })
  const headers = { authorization: `Bearer ${sign(a.keyPair, raw)}` }
  const first = await http(base, 'PUT', path, { raw, headers })
  t.is(first.status, 200, JSON.stringify(first.body))
  t.deepEqual(first.body.changed.sort(), ['summary', 'tags'])
  // The deployed clients sign the same bytes every time: sent again while in effect, it changes nothing.
  const again = await http(base, 'PUT', path, { raw, headers })
  t.like(again, { status: 200, body: { summary: 'Counts words', changed: [] } })
  const other = JSON.stringify({ summary: 'Counts words and lines' })
  t.is(
    (await http(base, 'PUT', path, { raw: other, headers: { authorization: `Bearer ${sign(a.keyPair, other)}` } }))
      .status,
    200
  )
  t.like(
    await http(base, 'PUT', path, { raw, headers }),
    { status: 409, body: { error: 'signature_replayed' } },
    'it would undo a later update'
  )
  // The MCP server's update_persona lost its fields on the way (it sends `updates`, its SDK reads `fields`).
  t.like(await http(base, 'PUT', path, { body: signSpec(a.keyPair, {}) }), {
    status: 400,
    body: { error: 'nothing_to_update', field: 'body' }
  })
})

test('deregistration leaves a tombstone; replays cannot resurrect; a new signed registration can', async t => {
  const a = agent(dev, 10)
  const body = specRegistration(dev, a)
  t.is((await http(base, 'POST', '/v1/entities', { body })).status, 201)
  const path = `/v1/entities/${enc(a.agentId)}`

  t.is((await http(base, 'DELETE', path)).body.error, 'authorization_required')
  t.is(
    (await http(base, 'DELETE', path, { headers: { authorization: `Bearer ${sign(dev.keyPair, 'nope')}` } })).status,
    401
  )

  const del = await http(base, 'DELETE', path, { headers: { authorization: `Bearer ${sign(a.keyPair, a.agentId)}` } })
  t.is(del.status, 200, JSON.stringify(del.body))
  t.is(del.body.entity_id, a.agentId)
  t.truthy(del.body.tombstone.expires_at)
  t.is((await http(base, 'GET', path)).status, 404)

  const replay = await http(base, 'POST', '/v1/entities', { body })
  t.like(replay, { status: 409, body: { error: 'entity_deregistered' } })

  const fresh = await http(base, 'POST', '/v1/entities', {
    body: specRegistration(dev, a, { summary: 'Back, signed anew' })
  })
  t.is(fresh.status, 201)
  // The earlier registration is still a replay after the resurrection and a second deletion.
  const del2 = await http(base, 'DELETE', path, {
    headers: { 'x-signature': sign(a.keyPair, `/v1/entities/${a.agentId}`) }
  })
  t.is(del2.status, 200, JSON.stringify(del2.body))
  t.is((await http(base, 'POST', '/v1/entities', { body })).body.error, 'entity_deregistered')
})

test('deregistering a re-registered entity: the deployed form again by default, never under strict_replay; the timestamped form once and only while fresh', async t => {
  const strict = await startTestNode({ entities: { strict_replay: true } })
  t.teardown(() => strict.stop())
  for (const [url, mode] of [
    [base, 'default'],
    [strict.url, 'strict']
  ] as const) {
    const a = agent(dev, mode === 'default' ? 41 : 42)
    const path = `/v1/entities/${enc(a.agentId)}`
    const register = async (summary: string) =>
      t.is(
        (await http(url, 'POST', '/v1/entities', { body: specRegistration(dev, a, { summary }) })).status,
        201,
        `${mode}: register (${summary})`
      )
    // The deployed clients sign the bare ID: the same bytes every time.
    const deployed = { authorization: `Bearer ${sign(a.keyPair, a.agentId)}` }
    await register('first')
    t.is((await http(url, 'DELETE', path, { headers: deployed })).status, 200)
    await register('second')
    const again = await http(url, 'DELETE', path, { headers: deployed })
    if (mode === 'default') t.is(again.status, 200, 'the deployed form deregisters a later registration again')
    else t.like(again, { status: 409, body: { error: 'signature_replayed' } }, 'strict: never a repeat')

    // The replay-proof form: the path with its timestamp query, signed as sent.
    if (mode === 'strict') {
      const plain = `/v1/entities/${a.agentId}`
      const now = Math.floor(Date.now() / 1000)
      const stale = `${plain}?timestamp=${now - 3600}`
      t.like(
        await http(url, 'DELETE', stale, { headers: { authorization: `Bearer ${sign(a.keyPair, stale)}` } }),
        { status: 400, body: { error: 'clock_skew', field: 'timestamp' } },
        'an hour old'
      )
      const noTimestamp = `${plain}?nonce=1`
      t.like(
        await http(url, 'DELETE', noTimestamp, { headers: { 'x-signature': sign(a.keyPair, noTimestamp) } }),
        { status: 401, body: { error: 'signature_invalid' } },
        'a query other than timestamp is not signed over'
      )
      const stamped = `${plain}?timestamp=${new Date().toISOString()}`
      const once = { authorization: `Bearer ${sign(a.keyPair, stamped)}` }
      t.is((await http(url, 'DELETE', stamped, { headers: once })).status, 200, 'fresh and new')
      await register('third')
      t.like(await http(url, 'DELETE', stamped, { headers: once }), {
        status: 409,
        body: { error: 'signature_replayed' }
      })
      t.is((await http(url, 'GET', path)).body.summary, 'third')
    }
  }
})

test('listing: limit/offset/type/category and page/page_size/entity_type/developer_id', async t => {
  const node = await startTestNode()
  try {
    const d2 = developer(2)
    for (let i = 0; i < 5; i++) {
      const body =
        i < 3
          ? specRegistration(dev, agent(dev, 100 + i), { category: i % 2 ? 'Finance' : 'tools' })
          : deployedRegistration(d2, agent(d2, i), { entity_type: 'service', service_endpoint: 'https://s.example' })
      t.is((await http(node.url, 'POST', '/v1/entities', { body })).status, 201)
    }
    const all = await http(node.url, 'GET', '/v1/entities')
    t.like(all.body, { count: 5, total: 5, limit: 50, offset: 0, has_more: false })
    const page = await http(node.url, 'GET', '/v1/entities?limit=2&offset=1')
    t.like(page.body, { count: 2, total: 5, has_more: true, offset: 1 })
    t.deepEqual(
      page.body.entities.map((e: { name: string }) => e.name),
      ['Agent 101', 'Agent 102']
    )
    t.like((await http(node.url, 'GET', '/v1/entities?type=service')).body, { total: 2 })
    t.like((await http(node.url, 'GET', '/v1/entities?type=agent&category=finance')).body, { total: 1 })
    const paged = await http(
      node.url,
      'GET',
      `/v1/entities?page=2&page_size=1&entity_type=service&developer_id=${d2.id}`
    )
    t.like(paged.body, { count: 1, total: 2, page: 2, page_size: 1, offset: 1, has_more: false })
    // Out-of-range numbers are clamped, as the origin registry does (deployed clients send ?limit=500); the reply says what applied.
    for (const [q, applied] of [
      ['limit=500', { limit: 200, count: 5 }],
      ['limit=100000', { limit: 200 }],
      ['limit=0', { limit: 1, count: 1 }],
      ['offset=-1', { offset: 0 }],
      ['page=0&page_size=1000', { page: 1, page_size: 200, offset: 0 }]
    ] as const) {
      const res = await http(node.url, 'GET', `/v1/entities?${q}`)
      t.is(res.status, 200, q)
      t.like(res.body, applied, q)
    }
    for (const q of ['limit=ten', 'offset=1.5', 'type=robot']) {
      const res = await http(node.url, 'GET', `/v1/entities?${q}`)
      t.is(res.status, 400, q)
      t.is(res.body.error, 'invalid_query')
    }
  } finally {
    await node.stop()
  }
})

test('entity_name that cannot be bound does not fail the registration, and the reply says why', async t => {
  const a = agent(dev, 11)
  const res = await http(base, 'POST', '/v1/entities', {
    body: specRegistration(dev, a, { entity_name: 'translator' })
  })
  t.is(res.status, 201)
  t.like(res.body, { fqan: null, name_binding: { requested: 'translator', bound: false, reason: 'no_handle' } })
})

test('an entity without a developer is accepted (the proof is only needed for HD-derived keys)', async t => {
  const a = agent(developer(3), 1)
  const body = signSpec(a.keyPair, {
    name: 'Loner',
    category: 'misc',
    entity_url: 'https://loner.example',
    public_key: a.publicKey
  })
  const res = await http(base, 'POST', '/v1/entities', { body })
  t.is(res.status, 201, JSON.stringify(res.body))
  const got = await http(base, 'GET', `/v1/entities/${a.agentId}`)
  t.like(got.body, { developer_id: null, owner: null, developer_proof: null })
})

test('concurrent updates of different fields both take effect', async t => {
  const a = agent(dev, 12)
  t.is((await http(base, 'POST', '/v1/entities', { body: specRegistration(dev, a) })).status, 201)
  const path = `/v1/entities/${a.agentId}`
  const results = await Promise.all([
    http(base, 'PUT', path, { body: signSpec(a.keyPair, { summary: 'first' }) }),
    http(base, 'PUT', path, { body: signSpec(a.keyPair, { version: '3.0.0' }) }),
    http(base, 'PUT', path, { body: signSpec(a.keyPair, { tags: ['third'] }) })
  ])
  t.deepEqual(
    results.map(r => r.status),
    [200, 200, 200]
  )
  const got = await http(base, 'GET', path)
  t.like(got.body, { summary: 'first', version: '3.0.0', tags: ['third'] })
})

test('a missing ID is a 400, as the spec says', async t => {
  const res = await http(base, 'GET', '/v1/entities/')
  t.is(res.status, 400)
  t.like(res.body, { error: 'invalid_id', field: 'entity_id' })
  const dev = await http(base, 'GET', '/v1/developers//entities')
  t.like(dev, { status: 400, body: { error: 'invalid_id' } })
})
