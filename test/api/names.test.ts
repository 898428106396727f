/**
 * Name bindings and resolution over real HTTP against a real node: binding in both signing forms,
 * ownership rules, updates with history, release, availability, binding at registration,
 * release on deregistration, resolution by name, version prefix and entity ID, and the events.
 */
import test, { type ExecutionContext } from 'ava'
import {
  agent,
  bearer,
  canonicalJson,
  developer,
  developerRegistration,
  sign,
  signSpec,
  specRegistration,
  type Agent,
  type Developer
} from '../helpers/identities.js'
import { enc, http, recordEvents, testNodes, type TestNode } from '../helpers/node.js'

const { start, stopAll } = testNodes()
let node: TestNode
let base: string

test.before(async () => {
  node = await start()
  base = node.url
})
test.after.always(stopAll)

const fqan = (handle: string, name: string) => `registry.test/${handle}/${name}`

/** A registered developer holding `handle`. */
async function developerWithHandle(seed: number, handle: string): Promise<Developer> {
  const dev = developer(seed)
  const reg = await http(base, 'POST', '/v1/developers', {
    body: developerRegistration(dev, { name: `Dev ${handle}`, handle })
  })
  if (reg.status !== 201) throw new Error(`developer registration failed: ${reg.status} ${JSON.stringify(reg.body)}`)
  return dev
}

async function registerEntity(
  dev: Developer,
  index: number,
  fields: Record<string, unknown> = {}
): Promise<{ a: Agent; body: any }> {
  const a = agent(dev, index)
  const res = await http(base, 'POST', '/v1/entities', { body: specRegistration(dev, a, fields) })
  if (res.status !== 201) throw new Error(`entity registration failed: ${res.status} ${JSON.stringify(res.body)}`)
  return { a, body: res.body }
}

const bindSpec = (signer: Developer, fields: Record<string, unknown>) =>
  http(base, 'POST', '/v1/names', { body: signSpec(signer.keyPair, fields) })

/** A spec-form binding by `signer` that is refused with `status` and `error`, naming the binding's `field`. */
async function bindRefused(
  t: ExecutionContext,
  signer: Developer,
  fields: Record<string, unknown>,
  refusal: { status: number; error: string; field: string }
): Promise<void> {
  const res = await bindSpec(signer, fields)
  t.is(res.status, refusal.status, JSON.stringify(res.body))
  t.like(res.body, { error: refusal.error, field: refusal.field })
}

/** Deployed form: the signature covers exactly the five binding fields (absent tags = null, absent version = ""). */
function deployedBind(
  signer: Developer,
  fields: {
    developer_handle: string
    entity_id: string
    entity_name: string
    version?: string
    capability_tags?: string[]
  },
  extra: Record<string, unknown> = {}
) {
  const signable = {
    capability_tags: fields.capability_tags ?? null,
    developer_handle: fields.developer_handle,
    entity_id: fields.entity_id,
    entity_name: fields.entity_name,
    version: fields.version ?? ''
  }
  return http(base, 'POST', '/v1/names', {
    body: { ...fields, ...extra, signature: sign(signer.keyPair, canonicalJson(signable)) }
  })
}

function putSigned(signer: Developer, handle: string, name: string, fields: Record<string, unknown>) {
  return http(base, 'PUT', `/v1/names/${handle}/${name}`, { body: signSpec(signer.keyPair, fields) })
}

function putBearer(signer: Developer, handle: string, name: string, fields: Record<string, unknown>) {
  const raw = JSON.stringify(fields)
  return http(base, 'PUT', `/v1/names/${handle}/${name}`, {
    raw,
    headers: { 'content-type': 'application/json', ...bearer(signer, raw) }
  })
}

test('bind in the spec form and in the deployed form, with and without version and capability tags', async t => {
  const dev = await developerWithHandle(50, 'binder')
  const [e1, e2, e3, e4] = await Promise.all([1, 2, 3, 4].map(i => registerEntity(dev, i)))

  const full = await bindSpec(dev, {
    developer_handle: 'binder',
    entity_name: 'spec-full',
    entity_id: e1!.a.agentId,
    version: '1.0.0',
    capability_tags: ['translate', 'docs']
  })
  t.is(full.status, 201, JSON.stringify(full.body))
  t.like(full.body, {
    fqan: fqan('binder', 'spec-full'),
    entity_id: e1!.a.agentId,
    entity_name: 'spec-full',
    developer_handle: 'binder',
    registry_host: 'registry.test',
    developer_id: dev.id,
    version: '1.0.0',
    current_version: '1.0.0'
  })
  t.deepEqual(full.body.capability_tags, ['translate', 'docs'])
  t.is(typeof full.body.message, 'string')

  const bare = await bindSpec(dev, { developer_handle: 'binder', entity_name: 'spec-bare', entity_id: e2!.a.agentId })
  t.is(bare.status, 201, JSON.stringify(bare.body))
  t.like(bare.body, { fqan: fqan('binder', 'spec-bare'), entity_id: e2!.a.agentId, version: null })
  t.deepEqual(bare.body.capability_tags, [])

  // An unsigned extra member keeps the spec form (whole body) from verifying: only the deployed form does.
  const depFull = await deployedBind(
    dev,
    {
      developer_handle: 'binder',
      entity_id: e3!.a.agentId,
      entity_name: 'dep-full',
      version: '2.1.0',
      capability_tags: ['x']
    },
    { client: 'zns-go/0.9' }
  )
  t.is(depFull.status, 201, JSON.stringify(depFull.body))
  t.like(depFull.body, { fqan: fqan('binder', 'dep-full'), entity_id: e3!.a.agentId, version: '2.1.0' })
  t.deepEqual(depFull.body.capability_tags, ['x'])

  const depBare = await deployedBind(dev, {
    developer_handle: 'binder',
    entity_id: e4!.a.agentId,
    entity_name: 'dep-bare'
  })
  t.is(depBare.status, 201, JSON.stringify(depBare.body))
  t.like(depBare.body, { fqan: fqan('binder', 'dep-bare'), entity_id: e4!.a.agentId, version: null })

  // A deployed signature covers the name: the same signature under another name does not verify.
  const wrong = await deployedBind(dev, {
    developer_handle: 'binder',
    entity_id: e4!.a.agentId,
    entity_name: 'dep-other'
  })
  const signedForOther = sign(
    dev.keyPair,
    canonicalJson({
      capability_tags: null,
      developer_handle: 'binder',
      entity_id: e4!.a.agentId,
      entity_name: 'dep-other',
      version: ''
    })
  )
  const tampered = await http(base, 'POST', '/v1/names', {
    body: { developer_handle: 'binder', entity_id: e4!.a.agentId, entity_name: 'dep-other2', signature: signedForOther }
  })
  t.is(wrong.status, 201)
  t.like(tampered, { status: 401, body: { error: 'signature_invalid' } })

  const got = await http(base, 'GET', '/v1/names/binder/spec-full')
  t.is(got.status, 200)
  t.like(got.body, {
    fqan: fqan('binder', 'spec-full'),
    entity_id: e1!.a.agentId,
    version: '1.0.0',
    developer_handle: 'binder',
    entity_name: 'spec-full'
  })
  t.is(
    (await http(base, 'GET', '/v1/names/BINDER/Spec-Full')).body.fqan,
    fqan('binder', 'spec-full'),
    'paths are case-insensitive'
  )

  const entity = await http(base, 'GET', `/v1/entities/${enc(e1!.a.agentId)}`)
  t.like(entity.body, { fqan: fqan('binder', 'spec-full'), developer_handle: 'binder' })

  const listed = await http(base, 'GET', '/v1/handles/binder/entities')
  t.is(listed.status, 200)
  t.deepEqual(
    listed.body.map((b: { fqan: string }) => b.fqan).sort(),
    ['dep-bare', 'dep-full', 'dep-other', 'spec-bare', 'spec-full'].map(n => fqan('binder', n))
  )
})

test('binding rules: ownership, signer, taken, idempotent, invalid, unknown handle and entity', async t => {
  const owner = await developerWithHandle(51, 'rules-owner')
  const other = await developerWithHandle(52, 'rules-other')
  const { a: mine } = await registerEntity(owner, 1)
  const { a: mine2 } = await registerEntity(owner, 2)
  const { a: theirs } = await registerEntity(other, 1)

  await bindRefused(
    t,
    owner,
    { developer_handle: 'rules-owner', entity_name: 'borrowed', entity_id: theirs.agentId },
    { status: 403, error: 'entity_not_owned', field: 'entity_id' }
  )

  const foreignHandle = await bindSpec(other, {
    developer_handle: 'rules-owner',
    entity_name: 'intruder',
    entity_id: theirs.agentId
  })
  t.like(foreignHandle, { status: 401, body: { error: 'signature_invalid' } })

  const first = await bindSpec(owner, { developer_handle: 'rules-owner', entity_name: 'main', entity_id: mine.agentId })
  t.is(first.status, 201)
  await bindRefused(
    t,
    owner,
    { developer_handle: 'rules-owner', entity_name: 'main', entity_id: mine2.agentId },
    { status: 409, error: 'name_taken', field: 'entity_name' }
  )
  const again = await bindSpec(owner, { developer_handle: 'rules-owner', entity_name: 'main', entity_id: mine.agentId })
  t.is(again.status, 200, JSON.stringify(again.body))
  t.like(again.body, { fqan: fqan('rules-owner', 'main'), entity_id: mine.agentId, bound_at: first.body.bound_at })
  t.is(
    (await http(base, 'GET', '/v1/names/rules-owner/main/versions')).body.length,
    1,
    'rebinding the same entity adds no version'
  )

  for (const name of ['Bad', '-x', 'a_b', 'x'.repeat(65), '']) {
    const res = await bindSpec(owner, { developer_handle: 'rules-owner', entity_name: name, entity_id: mine2.agentId })
    t.is(res.status, 400, `${name}: ${JSON.stringify(res.body)}`)
    t.is(res.body.error, 'name_invalid', name)
  }

  await bindRefused(
    t,
    owner,
    { developer_handle: 'never-claimed-x', entity_name: 'thing', entity_id: mine2.agentId },
    { status: 404, error: 'handle_not_found', field: 'developer_handle' }
  )

  const ghost = agent(owner, 77)
  await bindRefused(
    t,
    owner,
    { developer_handle: 'rules-owner', entity_name: 'ghost', entity_id: ghost.agentId },
    { status: 404, error: 'entity_not_found', field: 'entity_id' }
  )
  t.is((await http(base, 'GET', '/v1/names/rules-owner/ghost')).status, 404)
})

test('PUT: signed body or Authorization over the raw body; history kept newest first', async t => {
  const dev = await developerWithHandle(53, 'updater')
  const stranger = developer(54)
  const { a } = await registerEntity(dev, 1)
  t.is(
    (
      await bindSpec(dev, {
        developer_handle: 'updater',
        entity_name: 'svc',
        entity_id: a.agentId,
        version: '1.0.0',
        capability_tags: ['a']
      })
    ).status,
    201
  )

  const signed = await putSigned(dev, 'updater', 'svc', { version: '1.1.0', capability_tags: ['x'] })
  t.is(signed.status, 200, JSON.stringify(signed.body))
  t.like(signed.body, {
    fqan: fqan('updater', 'svc'),
    version: '1.1.0',
    current_version: '1.1.0',
    entity_id: a.agentId
  })
  t.deepEqual(signed.body.capability_tags, ['x'])

  const viaHeader = await putBearer(dev, 'updater', 'svc', { version: '1.2.0' })
  t.is(viaHeader.status, 200, JSON.stringify(viaHeader.body))
  t.like(viaHeader.body, { version: '1.2.0' })
  t.deepEqual(viaHeader.body.capability_tags, ['x'], 'tags left out stay as they were')

  const unsigned = await http(base, 'PUT', '/v1/names/updater/svc', { body: { version: '9.9.9' } })
  t.like(unsigned, { status: 401, body: { error: 'authorization_required' } })
  const byStranger = await putSigned(stranger, 'updater', 'svc', { version: '9.9.9' })
  t.like(byStranger, { status: 401, body: { error: 'signature_invalid' } })
  const bearerStranger = await putBearer(stranger, 'updater', 'svc', { version: '9.9.9' })
  t.like(bearerStranger, { status: 401, body: { error: 'signature_invalid' } })
  const badVersion = await putSigned(dev, 'updater', 'svc', { version: '1.2' })
  t.is(badVersion.status, 400)
  t.like(badVersion.body, { error: 'validation_failed', field: 'version' })
  const missing = await putSigned(dev, 'updater', 'nothing-here', { version: '1.0.0' })
  t.like(missing, { status: 404, body: { error: 'name_not_found' } })

  t.like((await http(base, 'GET', '/v1/names/updater/svc')).body, { version: '1.2.0' })
  const versions = await http(base, 'GET', '/v1/names/updater/svc/versions')
  t.is(versions.status, 200)
  t.true(Array.isArray(versions.body))
  t.deepEqual(
    versions.body.map((v: { version: string }) => v.version),
    ['1.2.0', '1.1.0', '1.0.0']
  )
  for (const v of versions.body) {
    t.deepEqual(Object.keys(v).sort(), ['bound_at', 'capability_tags', 'entity_id', 'signature', 'version'])
    t.is(v.entity_id, a.agentId)
    t.regex(v.signature, /^ed25519:/)
    t.false(Number.isNaN(Date.parse(v.bound_at)))
  }
  t.deepEqual(versions.body[2].capability_tags, ['a'])
  t.deepEqual(versions.body[1].capability_tags, ['x'])
  t.is(versions.body[0].signature, viaHeader.body.signature)
  t.is((await http(base, 'GET', '/v1/names/updater/nothing-here/versions')).body.error, 'name_not_found')
})

test("DELETE: Authorization over release:<fqan> by the handle's developer", async t => {
  const dev = await developerWithHandle(55, 'releaser')
  const stranger = developer(56)
  const { a } = await registerEntity(dev, 1)
  t.is((await bindSpec(dev, { developer_handle: 'releaser', entity_name: 'gone', entity_id: a.agentId })).status, 201)
  const target = fqan('releaser', 'gone')

  const unsigned = await http(base, 'DELETE', '/v1/names/releaser/gone')
  t.like(unsigned, { status: 401, body: { error: 'authorization_required' } })
  const byStranger = await http(base, 'DELETE', '/v1/names/releaser/gone', {
    headers: bearer(stranger, `release:${target}`)
  })
  t.like(byStranger, { status: 401, body: { error: 'signature_invalid' } })
  // The release message names the FQAN, not the bare handle/name.
  const wrongMessage = await http(base, 'DELETE', '/v1/names/releaser/gone', {
    headers: bearer(dev, 'release:releaser/gone')
  })
  t.like(wrongMessage, { status: 401, body: { error: 'signature_invalid' } })
  t.is((await http(base, 'GET', '/v1/names/releaser/gone')).status, 200)

  const released = await http(base, 'DELETE', '/v1/names/releaser/gone', { headers: bearer(dev, `release:${target}`) })
  t.is(released.status, 200, JSON.stringify(released.body))
  t.like(released.body, { fqan: target })
  const after = await http(base, 'GET', '/v1/names/releaser/gone')
  t.like(after, { status: 404, body: { error: 'name_not_found' } })
  t.is((await http(base, 'GET', `/v1/entities/${enc(a.agentId)}`)).body.fqan, null)
  const twice = await http(base, 'DELETE', '/v1/names/releaser/gone', { headers: bearer(dev, `release:${target}`) })
  t.is(twice.status, 404)
  // The name is free again, history restarts.
  t.is(
    (await bindSpec(dev, { developer_handle: 'releaser', entity_name: 'gone', entity_id: a.agentId, version: '3.0.0' }))
      .status,
    201
  )
  t.deepEqual(
    (await http(base, 'GET', '/v1/names/releaser/gone/versions')).body.map((v: { version: string }) => v.version),
    ['3.0.0']
  )
})

test('availability: available, taken (with existing_entity_id), invalid, handle_unclaimed', async t => {
  const dev = await developerWithHandle(57, 'avail-names')
  const { a } = await registerEntity(dev, 1)
  t.is(
    (await bindSpec(dev, { developer_handle: 'avail-names', entity_name: 'used', entity_id: a.agentId })).status,
    201
  )

  const free = await http(base, 'GET', '/v1/names/avail-names/free/available')
  t.is(free.status, 200)
  t.deepEqual(free.body, { developer: 'avail-names', entity_name: 'free', available: true })
  t.deepEqual((await http(base, 'GET', '/v1/names/avail-names/used/available')).body, {
    developer: 'avail-names',
    entity_name: 'used',
    available: false,
    reason: 'taken',
    existing_entity_id: a.agentId
  })
  t.deepEqual((await http(base, 'GET', '/v1/names/avail-names/-bad-/available')).body, {
    developer: 'avail-names',
    entity_name: '-bad-',
    available: false,
    reason: 'invalid'
  })
  t.deepEqual((await http(base, 'GET', '/v1/names/ab/fine/available')).body, {
    developer: 'ab',
    entity_name: 'fine',
    available: false,
    reason: 'invalid'
  })
  t.deepEqual((await http(base, 'GET', '/v1/names/nobody-here/fine/available')).body, {
    developer: 'nobody-here',
    entity_name: 'fine',
    available: false,
    reason: 'handle_unclaimed'
  })
})

test('registration binds entity_name; the registration itself never fails on the name', async t => {
  const rec = recordEvents(node, t)
  const dev = await developerWithHandle(58, 'autobind')
  const bound = await registerEntity(dev, 1, { entity_name: 'translator' })
  t.like(bound.body, { entity_id: bound.a.agentId, fqan: fqan('autobind', 'translator') })
  t.like(bound.body.name_binding, {
    requested: 'translator',
    bound: true,
    fqan: fqan('autobind', 'translator'),
    reason: null
  })
  const entity = await http(base, 'GET', `/v1/entities/${enc(bound.a.agentId)}`)
  t.like(entity.body, { fqan: fqan('autobind', 'translator'), developer_handle: 'autobind', entity_name: 'translator' })
  t.like((await http(base, 'GET', '/v1/names/autobind/translator')).body, {
    entity_id: bound.a.agentId,
    version: '0.1.0'
  })
  t.true(
    rec.events.some(
      e =>
        e.type === 'name_registered' &&
        e.data.fqan === fqan('autobind', 'translator') &&
        e.data.entity_id === bound.a.agentId
    )
  )

  const taken = await registerEntity(dev, 2, { entity_name: 'translator' })
  t.like(taken.body, { entity_id: taken.a.agentId, fqan: null })
  t.like(taken.body.name_binding, { requested: 'translator', bound: false, fqan: null, reason: 'name_taken' })
  t.is((await http(base, 'GET', `/v1/entities/${enc(taken.a.agentId)}`)).body.fqan, null)

  const invalid = await registerEntity(dev, 3, { entity_name: 'Not A Name' })
  t.like(invalid.body, { fqan: null })
  t.like(invalid.body.name_binding, { requested: 'Not A Name', bound: false, reason: 'invalid_name' })

  const noHandleDev = developer(59)
  const noHandle = await registerEntity(noHandleDev, 1, { entity_name: 'translator' })
  t.like(noHandle.body, { fqan: null })
  t.like(noHandle.body.name_binding, { requested: 'translator', bound: false, reason: 'no_handle' })
  t.is((await http(base, 'GET', `/v1/entities/${enc(noHandle.a.agentId)}`)).status, 200, 'registered all the same')
})

test('deregistering an entity releases its names', async t => {
  const dev = await developerWithHandle(60, 'dereg')
  const { a } = await registerEntity(dev, 1, { entity_name: 'first' })
  t.is((await bindSpec(dev, { developer_handle: 'dereg', entity_name: 'second', entity_id: a.agentId })).status, 201)
  const rec = recordEvents(node, t)

  const res = await http(base, 'DELETE', `/v1/entities/${enc(a.agentId)}`, { headers: bearer(a, a.agentId) })
  t.is(res.status, 200, JSON.stringify(res.body))
  for (const name of ['first', 'second']) {
    t.is((await http(base, 'GET', `/v1/names/dereg/${name}`)).status, 404, name)
    t.true(
      rec.events.some(
        e =>
          e.type === 'name_released' && e.data.fqan === fqan('dereg', name) && e.data.reason === 'entity_deregistered'
      ),
      name
    )
  }
  t.deepEqual((await http(base, 'GET', '/v1/handles/dereg/entities')).body, [])
  t.deepEqual((await http(base, 'GET', '/v1/names/dereg/first/available')).body, {
    developer: 'dereg',
    entity_name: 'first',
    available: true
  })
})

test('resolution by name, by version prefix and by entity ID; name_resolved is published', async t => {
  const dev = await developerWithHandle(61, 'resolver')
  const { a } = await registerEntity(dev, 1)
  t.is(
    (await bindSpec(dev, { developer_handle: 'resolver', entity_name: 'svc', entity_id: a.agentId, version: '1.0.0' }))
      .status,
    201
  )
  t.is((await putSigned(dev, 'resolver', 'svc', { version: '1.2.0' })).status, 200)
  t.is((await putSigned(dev, 'resolver', 'svc', { version: '2.0.0', capability_tags: ['v2'] })).status, 200)
  const rec = recordEvents(node, t)

  const res = await http(base, 'GET', '/v1/resolve/resolver/svc')
  t.is(res.status, 200, JSON.stringify(res.body))
  t.like(res.body, {
    fqan: fqan('resolver', 'svc'),
    entity_id: a.agentId,
    entity_url: 'https://agent1.example.com',
    public_key: a.publicKey,
    developer_id: dev.id,
    developer_handle: 'resolver',
    registry_host: 'registry.test',
    version: '2.0.0',
    verification_tier: 'self-claimed',
    status: 'active',
    last_heartbeat: null
  })
  t.is(typeof res.body.trust_score, 'number')
  t.true(res.body.trust_score >= 0 && res.body.trust_score <= 1)
  t.is(res.body.trust.score, res.body.trust_score)
  t.is(res.body.trust.signals.verification, 0, 'the handle is not verified')
  t.is(res.body.trust.signals.developer_profile, 0.1, 'the developer registered a profile')
  t.is(res.body.card_note, undefined)
  const resolved = rec.events.filter(e => e.type === 'name_resolved' && e.data.entity_id === a.agentId)
  t.true(resolved.length >= 1)
  t.is(resolved[0]?.data.fqan, fqan('resolver', 'svc'))

  const at = (spec: string) =>
    http(base, 'GET', `/v1/resolve?fqan=${encodeURIComponent(`zns://registry.test/resolver/svc@${spec}`)}`)
  t.is((await at('1')).body.version, '1.2.0')
  t.is((await at('2')).body.version, '2.0.0')
  t.deepEqual((await at('2')).body.capability_tags, ['v2'])
  t.is((await at('1.0')).body.version, '1.0.0')
  t.is((await at('1.2.0')).body.version, '1.2.0')
  const none = await at('3')
  t.like(none, { status: 404, body: { error: 'name_not_found' } })
  t.is(
    (await http(base, 'GET', '/v1/resolve/resolver/svc@1')).body.version,
    '1.2.0',
    'the path form takes a version too'
  )
  t.is(
    (await http(base, 'GET', `/v1/resolve?fqan=${encodeURIComponent('registry.test/resolver/svc')}`)).body.version,
    '2.0.0',
    'zns:// is optional'
  )

  const otherHost = await http(
    base,
    'GET',
    `/v1/resolve?fqan=${encodeURIComponent('zns://elsewhere.example/resolver/svc')}`
  )
  t.like(otherHost, { status: 404, body: { error: 'name_not_found' } })
  for (const bad of ['zns://registry.test/only-two', 'not an fqan', 'zns://registry.test/resolver/svc@v1', 'a/b/c/d']) {
    const r = await http(base, 'GET', `/v1/resolve?fqan=${encodeURIComponent(bad)}`)
    t.is(r.status, 400, `${bad}: ${JSON.stringify(r.body)}`)
    t.is(r.body.error, 'fqan_invalid', bad)
  }
  t.is((await http(base, 'GET', '/v1/resolve/resolver/unbound-name')).status, 404)

  const byId = await http(base, 'GET', `/v1/resolve/agent/${enc(a.agentId)}`)
  t.is(byId.status, 200)
  t.like(byId.body, {
    fqan: fqan('resolver', 'svc'),
    entity_id: a.agentId,
    developer_handle: 'resolver',
    version: '2.0.0'
  })

  const loner = developer(62)
  const { a: unbound } = await registerEntity(loner, 1)
  const unboundRes = await http(base, 'GET', `/v1/resolve/agent/${unbound.agentId}`)
  t.is(unboundRes.status, 200, JSON.stringify(unboundRes.body))
  t.like(unboundRes.body, {
    fqan: null,
    entity_id: unbound.agentId,
    developer_handle: null,
    verification_tier: 'unclaimed',
    version: '0.1.0'
  })
  t.true(
    rec.events.some(e => e.type === 'name_resolved' && e.data.entity_id === unbound.agentId && e.data.fqan === null)
  )

  const card = await http(base, 'GET', `/v1/resolve/agent/${enc(a.agentId)}?card=true`)
  t.is(card.status, 200)
  t.is(typeof card.body.card_note, 'string')
  t.is(typeof (await http(base, 'GET', '/v1/resolve/resolver/svc?card=true')).body.card_note, 'string')
  t.is(
    typeof (
      await http(base, 'GET', `/v1/resolve?fqan=${encodeURIComponent('zns://registry.test/resolver/svc')}&card=true`)
    ).body.card_note,
    'string'
  )

  const unknownId = await http(base, 'GET', `/v1/resolve/agent/${agent(loner, 55).agentId}`)
  t.like(unknownId, { status: 404, body: { error: 'entity_not_found' } })
  t.is((await http(base, 'GET', '/v1/resolve/agent/not-an-id')).status, 400)
})

test('events: name_registered, name_updated, name_released carry the fqan', async t => {
  const dev = await developerWithHandle(63, 'evented')
  const { a } = await registerEntity(dev, 1)
  const rec = recordEvents(node, t)
  const target = fqan('evented', 'ev')

  t.is(
    (await bindSpec(dev, { developer_handle: 'evented', entity_name: 'ev', entity_id: a.agentId, version: '1.0.0' }))
      .status,
    201
  )
  t.is((await putSigned(dev, 'evented', 'ev', { version: '1.0.1' })).status, 200)
  t.is((await http(base, 'DELETE', '/v1/names/evented/ev', { headers: bearer(dev, `release:${target}`) })).status, 200)

  const mine = rec.events.filter(
    e => e.data.fqan === target && e.type.startsWith('name_') && e.type !== 'name_resolved'
  )
  t.deepEqual(
    mine.map(e => e.type),
    ['name_registered', 'name_updated', 'name_released']
  )
  t.like(mine[0]?.data, { fqan: target, entity_id: a.agentId, developer_id: dev.id, version: '1.0.0' })
  t.like(mine[1]?.data, { fqan: target, entity_id: a.agentId, version: '1.0.1' })
  t.like(mine[2]?.data, { fqan: target, entity_id: a.agentId })
  for (const e of mine) t.false(Number.isNaN(Date.parse(e.timestamp)))
})
