/**
 * Restricted onboarding over real HTTP against real nodes: the 403 for self-registration, the admin
 * approval webhook (and decrypting the key it returns exactly as docs/compatibility.md lays it out), the 303
 * start of onboarding, open-mode refusals, and the registry identity proof.
 */
import { createDecipheriv, createHash } from 'node:crypto'
import test from 'ava'
import { formatKey } from '../../src/identity/encoding.js'
import { deriveAgentKeyPair, developerProofMessage } from '../../src/identity/hd.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed, sign, type KeyPair } from '../../src/identity/keys.js'
import { verifyRegistryProof } from '../../src/identity/registry-proof.js'
import { agent, developer, developerRegistration, signSpec, specRegistration } from '../helpers/identities.js'
import { http, startTestNode, type TestNode } from '../helpers/node.js'

const SECRET = 'whsec_test'
const AUTH_URL = 'https://auth.example/approve'
let restricted: TestNode
let open: TestNode

test.before(async () => {
  ;[restricted, open] = await Promise.all([
    startTestNode({ onboarding: { mode: 'restricted', auth_url: AUTH_URL, webhook_secret: SECRET } }),
    startTestNode()
  ])
})
test.after.always(async () => {
  await Promise.all([restricted?.stop(), open?.stop()])
})

const admin = { authorization: `Bearer ${SECRET}` }
const approve = (
  base: string,
  body: unknown,
  headers: Record<string, string> = admin,
  path = '/v1/admin/developers/approve'
) => http(base, 'POST', path, { body, headers })

/** docs/compatibility.md: base64(12-byte nonce ‖ AES-256-GCM ciphertext ‖ 16-byte tag), key = SHA-256(UTF-8 state), plaintext = base64 of seed ‖ public key. */
function decryptPrivateKey(
  privateKeyEnc: string,
  state: string
): { seed: Buffer; publicKey: Buffer; plaintext: string } {
  const blob = Buffer.from(privateKeyEnc, 'base64')
  const nonce = blob.subarray(0, 12)
  const tag = blob.subarray(blob.length - 16)
  const ciphertext = blob.subarray(12, blob.length - 16)
  const decipher = createDecipheriv('aes-256-gcm', createHash('sha256').update(state, 'utf8').digest(), nonce)
  decipher.setAuthTag(tag)
  const plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8')
  const key = Buffer.from(plaintext, 'base64')
  if (key.length !== 64) throw new Error(`the private key is ${key.length} bytes, not 64`)
  return { seed: key.subarray(0, 32), publicKey: key.subarray(32), plaintext }
}

test('restricted node: POST /v1/developers → 403 onboarding_required with auth_url; /v1/info says restricted', async t => {
  const dev = developer(70)
  const res = await http(restricted.url, 'POST', '/v1/developers', { body: developerRegistration(dev) })
  t.is(res.status, 403, JSON.stringify(res.body))
  t.like(res.body, { error: 'onboarding_required', auth_url: AUTH_URL })
  t.is(typeof res.body.message, 'string')
  t.is((await http(restricted.url, 'GET', `/v1/developers/${encodeURIComponent(dev.id)}`)).status, 404)

  // An unknown developer cannot come into being through an entity's proof or a claim either.
  const viaProof = await http(restricted.url, 'POST', '/v1/entities', { body: specRegistration(dev, agent(dev, 1)) })
  t.is(viaProof.status, 403)
  t.like(viaProof.body, { error: 'onboarding_required', auth_url: AUTH_URL })
  const viaClaim = await http(restricted.url, 'POST', '/v1/handles', {
    body: signSpec(dev.keyPair, { developer_id: dev.id, handle: 'sneaky', public_key: dev.publicKey })
  })
  t.is(viaClaim.status, 403)
  t.like(viaClaim.body, { error: 'onboarding_required', auth_url: AUTH_URL })

  const info = await http(restricted.url, 'GET', '/v1/info')
  t.is(info.status, 200)
  t.like(info.body, {
    onboarding_mode: 'restricted',
    auth_url: AUTH_URL,
    developer_onboarding: { mode: 'restricted', auth_url: AUTH_URL }
  })
  t.like((await http(open.url, 'GET', '/v1/info')).body, {
    onboarding_mode: 'open',
    auth_url: null,
    developer_onboarding: { mode: 'open', auth_url: null }
  })
})

test('approve: admin secret required; the key decrypts as deployed clients expect (docs/compatibility.md); the developer registers entities', async t => {
  const base = restricted.url
  const state = 'state-approve-0123456789'
  const body = { name: 'Approved Dev', state, callback_port: 5555 }

  const none = await approve(base, body, {})
  t.like(none, { status: 401, body: { error: 'admin_unauthorized' } })
  const wrong = await approve(base, body, { authorization: 'Bearer whsec_wrong' })
  t.like(wrong, { status: 401, body: { error: 'admin_unauthorized' } })
  const notBearer = await approve(base, body, { authorization: SECRET })
  t.like(notBearer, { status: 401, body: { error: 'admin_unauthorized' } })

  const res = await approve(base, body)
  t.is(res.status, 201, JSON.stringify(res.body))
  t.regex(res.body.developer_id, /^zns:dev:[0-9a-f]{32}$/)
  t.regex(res.body.public_key, /^ed25519:[A-Za-z0-9+/]{43}=$/)
  t.is(typeof res.body.private_key_enc, 'string')

  const { seed, publicKey, plaintext } = decryptPrivateKey(res.body.private_key_enc, state)
  t.is(
    Buffer.concat([seed, publicKey]).toString('base64'),
    plaintext,
    'the plaintext is standard base64 of the 64 bytes'
  )
  const keyPair: KeyPair = keyPairFromSeed(seed)
  t.true(keyPair.publicKey.equals(publicKey), 'the seed derives the public half')
  t.is(formatKey(keyPair.publicKey), res.body.public_key)
  t.is(deriveId('developer', keyPair.publicKey), res.body.developer_id)
  t.throws(
    () => decryptPrivateKey(res.body.private_key_enc, 'another-state-entirely'),
    undefined,
    'another state does not decrypt'
  )

  const record = await http(base, 'GET', `/v1/developers/${encodeURIComponent(res.body.developer_id)}`)
  t.is(record.status, 200)
  t.like(record.body, {
    developer_id: res.body.developer_id,
    name: 'Approved Dev',
    public_key: res.body.public_key,
    implicit: false,
    home_registry: 'registry.test',
    dev_handle: null
  })

  // The developer proof made from the decrypted seed admits an entity on the restricted node.
  const dev = { keyPair, id: res.body.developer_id as string, publicKey: res.body.public_key as string }
  const agentKey = deriveAgentKeyPair(seed, 3)
  const proofSignature = sign(keyPair, developerProofMessage(agentKey.publicKey, 3))
  const a = {
    keyPair: agentKey,
    index: 3,
    publicKey: formatKey(agentKey.publicKey),
    agentId: deriveId('agent', agentKey.publicKey),
    serviceId: deriveId('service', agentKey.publicKey),
    proof: {
      developer_public_key: dev.publicKey,
      agent_public_key: formatKey(agentKey.publicKey),
      index: 3,
      signature: proofSignature
    }
  }
  const entity = await http(base, 'POST', '/v1/entities', { body: specRegistration(dev, a) })
  t.is(entity.status, 201, JSON.stringify(entity.body))
  t.like((await http(base, 'GET', `/v1/entities/${encodeURIComponent(a.agentId)}`)).body, {
    developer_id: dev.id,
    entity_index: 3
  })
  // …and a handle claim signed by it.
  const claim = await http(base, 'POST', '/v1/handles', {
    body: signSpec(keyPair, { developer_id: dev.id, handle: 'approved-dev', public_key: dev.publicKey })
  })
  t.is(claim.status, 201, JSON.stringify(claim.body))

  const again = await approve(base, { name: 'Someone Else', state })
  t.like(again, { status: 409, body: { error: 'approval_exists' } })

  const noName = await approve(base, { state: 'state-without-a-name' })
  t.is(noName.status, 400)
  t.like(noName.body, { error: 'validation_failed', field: 'name' })
  const shortState = await approve(base, { name: 'X', state: 'short' })
  t.is(shortState.status, 400)
  t.like(shortState.body, { error: 'validation_failed', field: 'state' })
})

test('approve with a handle claims it; /v1/onboarding/approve is the same endpoint', async t => {
  const base = restricted.url
  const res = await approve(
    base,
    { name: 'Handle Dev', state: 'state-with-handle-1', handle: 'approved-handle', metadata: { github: 'octo' } },
    admin,
    '/v1/onboarding/approve'
  )
  t.is(res.status, 201, JSON.stringify(res.body))
  t.is(res.body.handle, 'approved-handle')
  const { seed } = decryptPrivateKey(res.body.private_key_enc, 'state-with-handle-1')
  t.is(deriveId('developer', keyPairFromSeed(seed).publicKey), res.body.developer_id)

  const handle = await http(base, 'GET', '/v1/handles/approved-handle')
  t.is(handle.status, 200)
  t.like(handle.body, {
    developer_id: res.body.developer_id,
    developer_name: 'Handle Dev',
    verification_tier: 'self-claimed'
  })
  t.like((await http(base, 'GET', `/v1/developers/${encodeURIComponent(res.body.developer_id)}`)).body, {
    dev_handle: 'approved-handle'
  })

  const alias401 = await approve(base, { name: 'X', state: 'state-alias-unauth' }, {}, '/v1/onboarding/approve')
  t.like(alias401, { status: 401, body: { error: 'admin_unauthorized' } })
  const reserved = await approve(
    base,
    { name: 'X', state: 'state-reserved-handle', handle: 'admin' },
    admin,
    '/v1/onboarding/approve'
  )
  t.like(reserved, { status: 400, body: { error: 'handle_reserved' } })
})

// Serial: it compares developer_count, which the other tests of this file change.
test.serial('approve with a taken handle fails as a whole, so the same state can be approved again', async t => {
  const base = restricted.url
  t.is((await approve(base, { name: 'First', state: 'state-handle-owner', handle: 'contested' })).status, 201)
  const infoBefore = await http(base, 'GET', '/v1/info')

  const clash = await approve(base, { name: 'Second', state: 'state-handle-clash', handle: 'contested' })
  t.like(clash, { status: 409, body: { error: 'handle_claimed' } })
  const retry = await approve(base, { name: 'Second', state: 'state-handle-clash', handle: 'contested-2' })
  t.is(retry.status, 201, JSON.stringify(retry.body))
  t.is(
    (await http(base, 'GET', '/v1/info')).body.developer_count,
    infoBefore.body.developer_count + (retry.status === 201 ? 1 : 0)
  )
})

test('open node: approve → 503 admin_unavailable; onboarding request → 409 onboarding_disabled', async t => {
  const res = await approve(open.url, { name: 'X', state: 'state-open-mode-1' })
  t.like(res, { status: 503, body: { error: 'admin_unavailable' } })
  const req = await fetch(`${open.url}/v1/onboarding/request?state=abcdefgh12345678&callback_port=5555`, {
    method: 'POST',
    redirect: 'manual'
  })
  t.is(req.status, 409)
  t.is(((await req.json()) as { error: string }).error, 'onboarding_disabled')
})

test('POST /v1/onboarding/request → 303 to auth_url with state, callback_port and registry_url', async t => {
  const base = restricted.url
  const res = await fetch(`${base}/v1/onboarding/request?state=abcdefgh12345678&callback_port=5555`, {
    method: 'POST',
    redirect: 'manual'
  })
  t.is(res.status, 303)
  const location = res.headers.get('location')
  t.truthy(location)
  const url = new URL(location!)
  t.is(url.origin + url.pathname, AUTH_URL)
  t.is(url.searchParams.get('state'), 'abcdefgh12345678')
  t.is(url.searchParams.get('callback_port'), '5555')
  t.is(url.searchParams.get('registry_url'), base, 'registry_url is the Host the request came to (no public_url set)')

  // The same from a JSON body.
  const viaBody = await fetch(`${base}/v1/onboarding/request`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ state: 'body-state-12345678', callback_port: 6000, name: 'Ada' })
  })
  t.is(viaBody.status, 303)
  const bodyUrl = new URL(viaBody.headers.get('location')!)
  t.is(bodyUrl.searchParams.get('state'), 'body-state-12345678')
  t.is(bodyUrl.searchParams.get('callback_port'), '6000')
  t.is(bodyUrl.searchParams.get('name'), 'Ada')

  const short = await http(base, 'POST', '/v1/onboarding/request?state=short&callback_port=5555')
  t.is(short.status, 400)
  t.like(short.body, { error: 'validation_failed', field: 'state' })
  const badPort = await http(base, 'POST', '/v1/onboarding/request?state=abcdefgh12345678&callback_port=70000')
  t.is(badPort.status, 400)
  t.like(badPort.body, { error: 'validation_failed', field: 'callback_port' })
})

test('GET /.well-known/node-registry.json: a cacheable proof that verifies for registry.test', async t => {
  for (const node of [restricted, open]) {
    const res = await http(node.url, 'GET', '/.well-known/node-registry.json')
    t.is(res.status, 200)
    const cache = res.headers.get('cache-control') ?? ''
    const maxAge = /max-age=(\d+)/.exec(cache)
    t.truthy(maxAge, cache)
    t.true(Number(maxAge![1]) > 0 && Number(maxAge![1]) <= 3600, cache)
    const check = verifyRegistryProof(res.body, { expectedDomain: 'registry.test' })
    t.deepEqual(check.problems, [])
    t.true(check.ok)
    t.is(res.body.domain, 'registry.test')
    const info = await http(node.url, 'GET', '/v1/info')
    t.is(check.registry_id, info.body.node_id)
    t.false(verifyRegistryProof(res.body, { expectedDomain: 'other.example' }).ok)
    t.false(verifyRegistryProof({ ...res.body, domain: 'evil.example' }).ok, 'the signature covers the domain')
  }
})
