import test from 'ava'
import { goEscapedJson } from '../../src/identity/canonical-json.js'
import { enc, http, testNodes, type TestNode } from '../helpers/node.js'
import {
  agent,
  bearer,
  canonicalJson,
  developer,
  developerRegistration,
  sign,
  signSpec,
  specRegistration,
  type Developer
} from '../helpers/identities.js'

const { start, stopAll } = testNodes()

/** Shared open-mode node; every test uses its own developer seed so tests stay independent. */
let shared: TestNode

test.before(async () => {
  shared = await start()
})

test.after.always(stopAll)

async function registerDeveloper(base: string, dev: Developer, fields: Record<string, unknown> = {}) {
  return http(base, 'POST', '/v1/developers', { body: developerRegistration(dev, fields) })
}

async function info(base: string) {
  return (await http(base, 'GET', '/v1/info')).body
}

test('POST /v1/developers (spec form) → 201, and GET returns the record', async t => {
  const dev = developer(2)
  const res = await registerDeveloper(shared.url, dev)
  t.is(res.status, 201)
  t.deepEqual(res.body, {
    developer_id: dev.id,
    message: res.body.message,
    name: 'Alice the Builder',
    public_key: dev.publicKey,
    handle: null
  })
  t.is(typeof res.body.message, 'string')

  const got = await http(shared.url, 'GET', `/v1/developers/${dev.id}`)
  t.is(got.status, 200)
  const r = got.body
  t.is(r.developer_id, dev.id)
  t.is(r.name, 'Alice the Builder')
  t.is(r.public_key, dev.publicKey)
  t.is(r.github, 'alice')
  t.is(r.profile_url, 'https://alice.example.com')
  t.is(r.dev_handle, null)
  t.is(r.handle, null)
  t.false(r.dev_handle_verified)
  t.is(r.home_registry, 'registry.test')
  t.false(r.implicit)
  t.is(r.entity_count, 0)
  t.regex(r.signature, /^ed25519:/)
  t.is(r.created_at, r.registered_at)
  t.false(Number.isNaN(Date.parse(r.updated_at)))
})

test('the public key may be sent without its prefix; the record stores it prefixed', async t => {
  const dev = developer(3)
  const body = signSpec(dev.keyPair, { name: 'No Prefix', public_key: dev.publicKey.slice('ed25519:'.length) })
  const res = await http(shared.url, 'POST', '/v1/developers', { body })
  t.is(res.status, 201)
  t.is(res.body.public_key, dev.publicKey)
  t.is(res.body.developer_id, dev.id)
})

test('deployed form: signature over {github, name, profile_url, public_key} with absent fields as ""', async t => {
  const dev = developer(4)
  const body: Record<string, unknown> = { name: 'Plain Dev', public_key: dev.publicKey, handle: 'plaindev' }
  body.signature = sign(
    dev.keyPair,
    canonicalJson({ github: '', name: 'Plain Dev', profile_url: '', public_key: dev.publicKey })
  )
  const res = await http(shared.url, 'POST', '/v1/developers', { body })
  t.is(res.status, 201)
  t.is(res.body.developer_id, dev.id)
  const got = await http(shared.url, 'GET', `/v1/developers/${dev.id}`)
  t.is(got.body.github, null)
  t.is(got.body.profile_url, null)
})

test('deployed form with Go HTML escaping (& < >) → 201', async t => {
  const dev = developer(5)
  const fields = {
    github: 'bob-co',
    name: 'Bob & Co <dev>',
    profile_url: 'https://bob.example/?a=1&b=2',
    public_key: dev.publicKey
  }
  const escaped = goEscapedJson(canonicalJson(fields))
  t.truthy(escaped)
  t.true(escaped!.includes('\\u0026') && escaped!.includes('\\u003c'))
  const body = { ...fields, handle: 'bob', signature: sign(dev.keyPair, escaped!) }
  const res = await http(shared.url, 'POST', '/v1/developers', { body })
  t.is(res.status, 201)
  t.is(res.body.name, 'Bob & Co <dev>')
  const got = await http(shared.url, 'GET', `/v1/developers/${dev.id}`)
  t.is(got.body.name, 'Bob & Co <dev>')
  t.is(got.body.profile_url, 'https://bob.example/?a=1&b=2')
})

test('duplicate registration → 409 developer_exists', async t => {
  const dev = developer(6)
  t.is((await registerDeveloper(shared.url, dev)).status, 201)
  const again = await registerDeveloper(shared.url, dev)
  t.like(again, { status: 409, body: { error: 'developer_exists' } })
  const renamed = await registerDeveloper(shared.url, dev, { name: 'Someone Else' })
  t.like(renamed, { status: 409, body: { error: 'developer_exists' } })
})

test('bad signature → 401 signature_invalid', async t => {
  const dev = developer(7)
  const forger = developer(8)
  const forged = {
    ...signSpec(forger.keyPair, { name: 'Mallory', public_key: dev.publicKey }),
    public_key: dev.publicKey
  }
  const res = await http(shared.url, 'POST', '/v1/developers', { body: forged })
  t.like(res, { status: 401, body: { error: 'signature_invalid' } })
  const tampered = { ...developerRegistration(dev), name: 'Tampered' }
  const res2 = await http(shared.url, 'POST', '/v1/developers', { body: tampered })
  t.like(res2, { status: 401, body: { error: 'signature_invalid' } })
  t.is((await http(shared.url, 'GET', `/v1/developers/${dev.id}`)).status, 404, 'nothing was stored')
})

test('unprefixed signature → 400 validation_failed on signature', async t => {
  const dev = developer(9)
  const body = developerRegistration(dev)
  const res = await http(shared.url, 'POST', '/v1/developers', {
    body: { ...body, signature: String(body.signature).slice('ed25519:'.length) }
  })
  t.like(res, { status: 400, body: { error: 'validation_failed' } })
  t.is(res.body.field, 'signature')
})

test('missing name → 400 validation_failed on name', async t => {
  const dev = developer(10)
  const body = signSpec(dev.keyPair, { public_key: dev.publicKey, github: 'nobody' })
  const res = await http(shared.url, 'POST', '/v1/developers', { body })
  t.like(res, { status: 400, body: { error: 'validation_failed' } })
  t.is(res.body.field, 'name')
})

test('other registration validation: bad profile_url, bad public key, non-object body', async t => {
  const dev = developer(11)
  const badUrl = await http(shared.url, 'POST', '/v1/developers', {
    body: developerRegistration(dev, { profile_url: 'ftp://x.example' })
  })
  t.is(badUrl.status, 400)
  t.is(badUrl.body.field, 'profile_url')
  const badKey = await http(shared.url, 'POST', '/v1/developers', {
    body: { ...developerRegistration(dev), public_key: 'ed25519:short' }
  })
  t.is(badKey.status, 400)
  t.is(badKey.body.field, 'public_key')
  const array = await http(shared.url, 'POST', '/v1/developers', { body: [] })
  t.like(array, { status: 400, body: { error: 'validation_failed' } })
})

test('PUT with Authorization: Bearer over the raw body bytes → 200', async t => {
  const dev = developer(12)
  t.is((await registerDeveloper(shared.url, dev)).status, 201)
  // Spacing the canonical form would not have: the signature covers these exact bytes.
  const raw = '{ "name" : "Renamed by Bearer",  "github": "renamed" }'
  const res = await http(shared.url, 'PUT', `/v1/developers/${dev.id}`, { raw, headers: bearer(dev, raw) })
  t.is(res.status, 200)
  t.is(res.body.name, 'Renamed by Bearer')
  t.is(res.body.github, 'renamed')
  t.is(res.body.profile_url, 'https://alice.example.com', 'fields not sent are kept')
  const got = await http(shared.url, 'GET', `/v1/developers/${enc(dev.id)}`)
  t.is(got.body.name, 'Renamed by Bearer')
})

test('PUT with a body signature over the canonical JSON of the body → 200', async t => {
  const dev = developer(13)
  t.is((await registerDeveloper(shared.url, dev)).status, 201)
  const body = signSpec(dev.keyPair, { name: 'Renamed by Body', profile_url: 'https://new.example.com' })
  const res = await http(shared.url, 'PUT', `/v1/developers/${enc(dev.id)}`, { body })
  t.is(res.status, 200)
  t.is(res.body.name, 'Renamed by Body')
  t.is(res.body.profile_url, 'https://new.example.com')
  t.is(res.body.signature, body.signature)
})

test('PUT signed by the wrong key → 401 signature_invalid; unsigned → 401 authorization_required', async t => {
  const dev = developer(14)
  const other = developer(15)
  t.is((await registerDeveloper(shared.url, dev)).status, 201)
  const raw = JSON.stringify({ name: 'Hijacked' })
  const wrong = await http(shared.url, 'PUT', `/v1/developers/${dev.id}`, { raw, headers: bearer(other, raw) })
  t.like(wrong, { status: 401, body: { error: 'signature_invalid' } })
  const wrongBody = await http(shared.url, 'PUT', `/v1/developers/${dev.id}`, {
    body: signSpec(other.keyPair, { name: 'Hijacked' })
  })
  t.like(wrongBody, { status: 401, body: { error: 'signature_invalid' } })
  const none = await http(shared.url, 'PUT', `/v1/developers/${dev.id}`, { raw })
  t.like(none, { status: 401, body: { error: 'authorization_required' } })
  const malformed = await http(shared.url, 'PUT', `/v1/developers/${dev.id}`, {
    raw,
    headers: { authorization: 'Bearer not-a-signature' }
  })
  t.like(malformed, { status: 401, body: { error: 'signature_invalid' } })
  t.is((await http(shared.url, 'GET', `/v1/developers/${dev.id}`)).body.name, 'Alice the Builder', 'unchanged')
})

test('PUT changing public_key or developer_id → 400 field_immutable', async t => {
  const dev = developer(16)
  const other = developer(17)
  t.is((await registerDeveloper(shared.url, dev)).status, 201)
  const raw = JSON.stringify({ name: 'x', public_key: other.publicKey })
  const res = await http(shared.url, 'PUT', `/v1/developers/${dev.id}`, { raw, headers: bearer(dev, raw) })
  t.like(res, { status: 400, body: { error: 'field_immutable' } })
  t.is(res.body.field, 'public_key')
  const sameKey = JSON.stringify({ name: 'Same Key', public_key: dev.publicKey.slice('ed25519:'.length) })
  const ok = await http(shared.url, 'PUT', `/v1/developers/${dev.id}`, { raw: sameKey, headers: bearer(dev, sameKey) })
  t.is(ok.status, 200, 'restating the same key (any spelling) is not a change')
  const idRaw = JSON.stringify({ developer_id: other.id })
  const idRes = await http(shared.url, 'PUT', `/v1/developers/${dev.id}`, { raw: idRaw, headers: bearer(dev, idRaw) })
  t.like(idRes, { status: 400, body: { error: 'field_immutable' } })
  t.is(idRes.body.field, 'developer_id')
})

test('PUT on an unknown developer → 404; on a malformed ID → 400 invalid_id', async t => {
  const dev = developer(18)
  const raw = JSON.stringify({ name: 'Ghost' })
  const unknown = await http(shared.url, 'PUT', `/v1/developers/${dev.id}`, { raw, headers: bearer(dev, raw) })
  t.like(unknown, { status: 404, body: { error: 'developer_not_found' } })
  const malformed = await http(shared.url, 'PUT', '/v1/developers/zns:dev:XYZ', { raw, headers: bearer(dev, raw) })
  t.like(malformed, { status: 400, body: { error: 'invalid_id' } })
})

test('DELETE: entities first, then the developer; tombstone blocks replays but not new registrations', async t => {
  const node = await start()
  const dev = developer(20)
  const a = agent(dev, 1)
  const registration = developerRegistration(dev)
  t.is((await http(node.url, 'POST', '/v1/developers', { body: registration })).status, 201)
  const entity = await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, a) })
  t.is(entity.status, 201)
  t.is(entity.body.entity_id, a.agentId)
  t.is((await http(node.url, 'GET', `/v1/developers/${dev.id}`)).body.entity_count, 1)
  t.is((await info(node.url)).developer_count, 1)

  const unsigned = await http(node.url, 'DELETE', `/v1/developers/${dev.id}`)
  t.like(unsigned, { status: 401, body: { error: 'authorization_required' } })
  const wrongKey = await http(node.url, 'DELETE', `/v1/developers/${dev.id}`, { headers: bearer(a, dev.id) })
  t.like(wrongKey, { status: 401, body: { error: 'signature_invalid' } })

  const blocked = await http(node.url, 'DELETE', `/v1/developers/${dev.id}`, { headers: bearer(dev, dev.id) })
  t.like(blocked, { status: 409, body: { error: 'developer_has_entities' } })

  const gone = await http(node.url, 'DELETE', `/v1/entities/${a.agentId}`, { headers: bearer(a, a.agentId) })
  t.is(gone.status, 200)
  t.is(gone.body.entity_id, a.agentId)

  const deleted = await http(node.url, 'DELETE', `/v1/developers/${dev.id}`, { headers: bearer(dev, dev.id) })
  t.is(deleted.status, 200)
  t.is(deleted.body.developer_id, dev.id)
  t.is(typeof deleted.body.message, 'string')
  t.is((await info(node.url)).developer_count, 0)

  const missing = await http(node.url, 'GET', `/v1/developers/${dev.id}`)
  t.like(missing, { status: 404, body: { error: 'developer_not_found' } })
  const deleteAgain = await http(node.url, 'DELETE', `/v1/developers/${dev.id}`, { headers: bearer(dev, dev.id) })
  t.is(deleteAgain.status, 404)

  const newAgent = await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, agent(dev, 2)) })
  t.is(newAgent.status, 409, 'a deregistered developer does not come back implicitly')
  t.is(newAgent.body.error, 'developer_deregistered')

  const replay = await http(node.url, 'POST', '/v1/developers', { body: registration })
  t.like(replay, { status: 409, body: { error: 'developer_deregistered' } })

  const fresh = await registerDeveloper(node.url, dev, { name: 'Alice Returns' })
  t.is(fresh.status, 201)
  t.is(fresh.body.name, 'Alice Returns')
  const back = await http(node.url, 'GET', `/v1/developers/${dev.id}`)
  t.is(back.status, 200)
  t.is(back.body.name, 'Alice Returns')
  t.is(back.body.entity_count, 0)
  t.false(back.body.implicit)
  t.is((await info(node.url)).developer_count, 1)
  t.is((await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, agent(dev, 2)) })).status, 201)
})

test('DELETE signed over the URL path (spec form) and with an encoded ID', async t => {
  const dev = developer(21)
  t.is((await registerDeveloper(shared.url, dev)).status, 201)
  const path = `/v1/developers/${enc(dev.id)}`
  const res = await http(shared.url, 'DELETE', path, { headers: { 'x-signature': sign(dev.keyPair, path) } })
  t.is(res.status, 200)
  t.is((await http(shared.url, 'GET', path)).status, 404)
})

test('implicit developer: created by an entity registration, then registered explicitly', async t => {
  const node = await start()
  const dev = developer(30)
  const a = agent(dev, 3)
  const entity = await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, a) })
  t.is(entity.status, 201)

  const implicit = await http(node.url, 'GET', `/v1/developers/${dev.id}`)
  t.is(implicit.status, 200)
  t.true(implicit.body.implicit)
  t.is(implicit.body.name, null)
  t.is(implicit.body.public_key, dev.publicKey)
  t.is(implicit.body.entity_count, 1)
  t.is(implicit.body.home_registry, 'registry.test')
  t.is((await info(node.url)).developer_count, 1)

  const res = await registerDeveloper(node.url, dev, { name: 'Now Explicit' })
  t.is(res.status, 201)
  t.is(res.body.developer_id, dev.id)
  const explicit = await http(node.url, 'GET', `/v1/developers/${dev.id}`)
  t.false(explicit.body.implicit)
  t.is(explicit.body.name, 'Now Explicit')
  t.is(explicit.body.entity_count, 1)
  t.is(explicit.body.registered_at, implicit.body.registered_at, 'registered_at is kept from the implicit record')
  t.is((await info(node.url)).developer_count, 1, 'the explicit registration does not count the developer twice')

  const again = await registerDeveloper(node.url, dev, { name: 'Once More' })
  t.like(again, { status: 409, body: { error: 'developer_exists' } })
})

test("GET /v1/developers/{id}/entities and /agents list the developer's entities", async t => {
  const dev = developer(31)
  const a1 = agent(dev, 1)
  const a2 = agent(dev, 2)
  t.is((await registerDeveloper(shared.url, dev)).status, 201)
  const empty = await http(shared.url, 'GET', `/v1/developers/${dev.id}/entities`)
  t.is(empty.status, 200)
  t.deepEqual(empty.body, { developer_id: dev.id, entities: [], agents: [], count: 0, total: 0, limit: 200, offset: 0 })

  t.is((await http(shared.url, 'POST', '/v1/entities', { body: specRegistration(dev, a1) })).status, 201)
  t.is((await http(shared.url, 'POST', '/v1/entities', { body: specRegistration(dev, a2) })).status, 201)

  for (const suffix of ['entities', 'agents']) {
    const res = await http(shared.url, 'GET', `/v1/developers/${dev.id}/${suffix}`)
    t.is(res.status, 200, suffix)
    t.deepEqual(Object.keys(res.body).sort(), [
      'agents',
      'count',
      'developer_id',
      'entities',
      'limit',
      'offset',
      'total'
    ])
    t.is(res.body.developer_id, dev.id)
    t.is(res.body.count, 2)
    t.is(res.body.total, 2)
    t.deepEqual(res.body.agents, res.body.entities)
    t.deepEqual(
      res.body.entities.map((e: { entity_id: string }) => e.entity_id).sort(),
      [a1.agentId, a2.agentId].sort()
    )
    t.true(res.body.entities.every((e: { developer_id: string }) => e.developer_id === dev.id))
  }

  const page = await http(shared.url, 'GET', `/v1/developers/${dev.id}/entities?limit=1&offset=1`)
  t.is(page.body.count, 1)
  t.is(page.body.total, 2)
  const clamped = await http(shared.url, 'GET', `/v1/developers/${dev.id}/entities?limit=5000&offset=-3`)
  t.like(clamped.body, { count: 2, limit: 200, offset: 0 })
  const badLimit = await http(shared.url, 'GET', `/v1/developers/${dev.id}/entities?limit=many`)
  t.like(badLimit, { status: 400, body: { error: 'invalid_query' } })

  const encoded = await http(shared.url, 'GET', `/v1/developers/${enc(dev.id)}/agents`)
  t.is(encoded.status, 200)
  t.is(encoded.body.developer_id, dev.id)
  t.is(encoded.body.total, 2)
  t.is((await http(shared.url, 'GET', `/v1/developers/${enc(dev.id)}`)).body.entity_count, 2)
})

test('developer listings: unknown developer → 404, malformed ID → 400 invalid_id', async t => {
  const ghost = developer(32)
  for (const path of [
    `/v1/developers/${ghost.id}`,
    `/v1/developers/${ghost.id}/entities`,
    `/v1/developers/${enc(ghost.id)}/agents`
  ]) {
    const res = await http(shared.url, 'GET', path)
    t.is(res.status, 404, path)
    t.is(res.body.error, 'developer_not_found', path)
  }
  for (const path of [
    '/v1/developers/zns:dev:123',
    '/v1/developers/zns%3A34750f98bd59fcfc946da45aaabe933b/entities',
    '/v1/developers/bogus/agents'
  ]) {
    const res = await http(shared.url, 'GET', path)
    t.is(res.status, 400, path)
    t.is(res.body.error, 'invalid_id', path)
    t.is(res.body.field, 'developer_id', path)
  }
})

test('restricted mode: no self-registration, no implicit developers; /v1/info says where to go', async t => {
  const node = await start({ onboarding: { mode: 'restricted', auth_url: 'https://auth.example' } })
  const dev = developer(40)
  const a = agent(dev, 1)
  const res = await registerDeveloper(node.url, dev)
  t.like(res, { status: 403, body: { error: 'onboarding_required' } })

  const entity = await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, a) })
  t.like(entity, { status: 403, body: { error: 'onboarding_required' } })
  t.is(
    (await http(node.url, 'GET', `/v1/entities/${a.agentId}`)).status,
    404,
    'the refused registration left nothing behind'
  )
  t.is((await http(node.url, 'GET', `/v1/developers/${dev.id}`)).status, 404)

  const i = await info(node.url)
  t.is(i.onboarding_mode, 'restricted')
  t.is(i.auth_url, 'https://auth.example')
  t.deepEqual(i.developer_onboarding, { mode: 'restricted', auth_url: 'https://auth.example' })
  t.is(i.developer_count, 0)
  t.is(i.entity_count, 0)
})
