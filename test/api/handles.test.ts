/**
 * Handles over real HTTP against a real node: claims in both signing forms, the ownership rules,
 * availability, claiming in a developer registration, ownership verification through a real DNS
 * server and a real HTTPS stand-in for the GitHub API, release, and the events each write publishes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test, { type ExecutionContext } from 'ava'
import {
  agent,
  canonicalJson,
  developer,
  developerRegistration,
  sign,
  signSpec,
  specRegistration,
  type Developer
} from '../helpers/identities.js'
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js'
import { json, startHttpsServer, type TestHttpsServer } from '../helpers/https-server.js'
import { enc, http, recordEvents, startTestNode, type HttpResult, type TestNode } from '../helpers/node.js'

let node: TestNode
let base: string
let dns: TestDnsServer
let github: TestHttpsServer
let tmp: string

const b64 = (dev: Developer) => dev.publicKey.slice('ed25519:'.length)

// Developers that publish their keys (the DNS zone and the GitHub stand-in are built from them).
const dnsDev = developer(40)
const bearerDnsDev = developer(41)
const githubDev = developer(42)
const githubNoneDev = developer(43)
const githubBrokenDev = developer(44)

/** The GitHub API stand-in: users' gist lists and single gists. */
function githubApi(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'https://stand-in')
  switch (url.pathname) {
    case '/users/keyholder/gists':
      return json(res, 200, [
        { id: 'g1', files: { 'notes.md': { filename: 'notes.md', content: 'nothing to see' } } },
        { id: 'g2', files: { 'zns.txt': { filename: 'zns.txt' } } } // content only in the gist itself
      ])
    case '/gists/g2':
      return json(res, 200, {
        id: 'g2',
        files: { 'zns.txt': { filename: 'zns.txt', content: `my registry key: ${githubDev.publicKey}\n` } }
      })
    case '/users/nokey/gists':
      return json(res, 200, [{ id: 'h1', files: { 'a.txt': { filename: 'a.txt', content: b64(githubDev) } } }])
    case '/users/broken/gists':
      return json(res, 500, { message: 'Server Error' })
    default:
      return json(res, 404, { message: 'Not Found' })
  }
}

test.before(async () => {
  dns = await startDnsServer({
    '_zns-verify.example.com': [[dnsDev.publicKey]],
    '_zns-verify.bearer.example': [[`v=zns1; k=ed25519; p=${b64(bearerDnsDev)}`]],
    '_zns-verify.wrong.example': [[b64(developer(99))], ['unrelated']]
  })
  github = await startHttpsServer(githubApi)
  tmp = await mkdtemp(join(tmpdir(), 'handles-test-'))
  const caFile = join(tmp, 'github-ca.pem')
  await writeFile(caFile, github.certPem)
  // Generous: the local DNS server and GitHub stand-in answer at once, a busy machine may be slow to get there.
  node = await startTestNode({
    verification: { dns_servers: [dns.address], github_api_url: github.url, github_ca_file: caFile, timeout_ms: 20_000 }
  })
  base = node.url
})

test.after.always(async () => {
  await node?.stop()
  await dns?.close()
  await github?.close()
  if (tmp) await rm(tmp, { recursive: true, force: true })
})

async function registerDeveloper(dev: Developer, fields: Record<string, unknown> = {}) {
  const res = await http(base, 'POST', '/v1/developers', {
    body: developerRegistration(dev, { name: `Dev ${dev.id.slice(-4)}`, ...fields })
  })
  if (res.status !== 201) throw new Error(`developer registration failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res
}

/** Developers of these seeds, registered on the node (default names). */
async function registeredDevelopers<const S extends readonly number[]>(
  ...seeds: S
): Promise<{ [K in keyof S]: Developer }> {
  const devs = seeds.map(seed => developer(seed))
  for (const dev of devs) await registerDeveloper(dev)
  return devs as { [K in keyof S]: Developer }
}

function claimBody(
  dev: Developer,
  handle: string,
  signer: Developer = dev,
  publicKey = dev.publicKey
): Record<string, unknown> {
  return signSpec(signer.keyPair, { developer_id: dev.id, handle, public_key: publicKey })
}

const claim = (dev: Developer, handle: string) => http(base, 'POST', '/v1/handles', { body: claimBody(dev, handle) })

/** A request to verify `handle` by `method`, signed in the spec form by `signer`. */
const verifyHandle = (signer: Developer, handle: string, method: string, proof: string) =>
  http(base, 'POST', `/v1/handles/${handle}/verify`, { body: signSpec(signer.keyPair, { method, proof }) })

/** `res` is the answer to a verification that succeeded by `method` with `proof`, reaching `tier`. */
function verifiedBy(t: ExecutionContext, res: HttpResult, method: string, proof: string, tier: string): void {
  t.is(res.status, 200, JSON.stringify(res.body))
  t.like(res.body, { verified: true, verification_method: method, verification_proof: proof, verification_tier: tier })
}

const releaseAuth = (dev: Developer, subject: string) => ({
  authorization: `Bearer ${sign(dev.keyPair, `release:${subject}`)}`
})

test('claim in the spec form → 201 with the handle view; GET shows it self-claimed; 404 when unclaimed', async t => {
  const dev = developer(10)
  await registerDeveloper(dev, { name: 'Spec Claimer' })
  const rec = recordEvents(node, t)

  const res = await claim(dev, 'spec-claimer')
  t.is(res.status, 201, JSON.stringify(res.body))
  t.like(res.body, {
    handle: 'spec-claimer',
    developer_id: dev.id,
    developer_name: 'Spec Claimer',
    verified: false,
    verification_method: null,
    verification_proof: null,
    verification_tier: 'self-claimed',
    verified_at: null
  })
  t.is(typeof res.body.message, 'string')
  t.false(Number.isNaN(Date.parse(res.body.claimed_at)))

  const got = await http(base, 'GET', '/v1/handles/spec-claimer')
  t.is(got.status, 200)
  t.like(got.body, {
    handle: 'spec-claimer',
    developer_id: dev.id,
    developer_name: 'Spec Claimer',
    verified: false,
    verification_method: null,
    verification_tier: 'self-claimed',
    claimed_at: res.body.claimed_at
  })
  t.is(
    (await http(base, 'GET', '/v1/handles/SPEC-CLAIMER')).body.handle,
    'spec-claimer',
    'the path is case-insensitive'
  )

  const devRecord = await http(base, 'GET', `/v1/developers/${enc(dev.id)}`)
  t.like(devRecord.body, { dev_handle: 'spec-claimer', handle: 'spec-claimer', dev_handle_verified: false })

  const claimed = rec.events.filter(e => e.type === 'handle_claimed' && e.data.handle === 'spec-claimer')
  t.is(claimed.length, 1)
  t.like(claimed[0]?.data, { handle: 'spec-claimer', developer_id: dev.id, action: 'claim' })

  const missing = await http(base, 'GET', '/v1/handles/nobody-has-this')
  t.like(missing, { status: 404, body: { error: 'handle_not_found' } })
})

test('claim in the deployed form (signature over exactly {developer_id, handle, public_key}) → 201', async t => {
  const dev = developer(11)
  await registerDeveloper(dev)
  // An unsigned extra member makes the spec form (the whole body) differ from the deployed form.
  const body: Record<string, unknown> = {
    developer_id: dev.id,
    handle: 'deployed-claimer',
    public_key: dev.publicKey,
    client: 'zns-cli/1.0'
  }
  body.signature = sign(
    dev.keyPair,
    canonicalJson({ developer_id: dev.id, handle: 'deployed-claimer', public_key: dev.publicKey })
  )
  const res = await http(base, 'POST', '/v1/handles', { body })
  t.is(res.status, 201, JSON.stringify(res.body))
  t.like(res.body, { handle: 'deployed-claimer', developer_id: dev.id, verification_tier: 'self-claimed' })

  // A body member that is signed by neither form fails.
  const other = developer(12)
  await registerDeveloper(other)
  const tampered = { ...claimBody(other, 'tampered-claim'), handle: 'tampered-claim2' }
  const bad = await http(base, 'POST', '/v1/handles', { body: tampered })
  t.like(bad, { status: 401, body: { error: 'signature_invalid' } })
})

test('ownership rules of a claim', async t => {
  const [owner, other] = await registeredDevelopers(13, 14)

  // public_key is another developer's key, signed by that other key.
  const foreign = await http(base, 'POST', '/v1/handles', {
    body: claimBody(owner, 'stolen-key', other, other.publicKey)
  })
  t.is(foreign.status, 401, JSON.stringify(foreign.body))
  t.is(foreign.body.error, 'signature_invalid')
  // The developer's own key as public_key, but signed by someone else.
  const forged = await http(base, 'POST', '/v1/handles', { body: claimBody(owner, 'forged-sig', other) })
  t.like(forged, { status: 401, body: { error: 'signature_invalid' } })

  // An unregistered developer_id that is not the ID of public_key.
  const ghost = developer(15)
  const unknown = await http(base, 'POST', '/v1/handles', {
    body: claimBody(ghost, 'ghost-handle', other, other.publicKey)
  })
  t.is(unknown.status, 404, JSON.stringify(unknown.body))
  t.like(unknown.body, { error: 'developer_not_found', field: 'developer_id' })
  t.is((await http(base, 'GET', `/v1/developers/${enc(ghost.id)}`)).status, 404)

  t.is((await claim(owner, 'owned-handle')).status, 201)
  const taken = await claim(other, 'owned-handle')
  t.like(taken, { status: 409, body: { error: 'handle_claimed' } })

  const second = await claim(owner, 'second-handle')
  t.like(second, { status: 409, body: { error: 'developer_has_handle' } })
  t.is((await http(base, 'GET', '/v1/handles/second-handle')).status, 404)

  for (const handle of ['ab', 'Bad', '-x-', 'a_b', 'x'.repeat(33)]) {
    const res = await claim(other, handle)
    t.is(res.status, 400, handle)
    t.like(res.body, { error: 'handle_invalid', field: 'handle' }, handle)
  }
  for (const handle of ['admin', 'agent']) {
    const res = await claim(other, handle)
    t.is(res.status, 400, handle)
    t.like(res.body, { error: 'handle_reserved', field: 'handle' }, handle)
  }

  // Re-claiming your own handle changes nothing; the code answers 201 with the existing record.
  const before = await http(base, 'GET', '/v1/handles/owned-handle')
  const again = await claim(owner, 'owned-handle')
  t.is(again.status, 200, JSON.stringify(again.body)) // re-claiming one's own handle changes nothing
  t.like(again.body, { handle: 'owned-handle', developer_id: owner.id, claimed_at: before.body.claimed_at })
  t.deepEqual((await http(base, 'GET', '/v1/handles/owned-handle')).body, before.body)
  t.like((await http(base, 'GET', `/v1/developers/${enc(owner.id)}`)).body, { dev_handle: 'owned-handle' })
})

test('availability: available, claimed, invalid, reserved', async t => {
  const dev = developer(16)
  await registerDeveloper(dev)
  t.is((await claim(dev, 'avail-taken')).status, 201)

  const free = await http(base, 'GET', '/v1/handles/avail-free/available')
  t.is(free.status, 200)
  t.deepEqual(free.body, { handle: 'avail-free', available: true })
  const unavailable = [
    ['avail-taken', 'claimed'],
    ['ab', 'invalid'],
    ['-x-', 'invalid'],
    ['admin', 'reserved']
  ]
  for (const [handle, reason] of unavailable) {
    t.deepEqual((await http(base, 'GET', `/v1/handles/${handle}/available`)).body, { handle, available: false, reason })
  }
})

test('POST /v1/developers with a handle claims it in the same write; a taken handle fails the whole registration', async t => {
  const dev = developer(17)
  const rec = recordEvents(node, t)
  const res = await http(base, 'POST', '/v1/developers', {
    body: developerRegistration(dev, { name: 'With Handle', handle: 'with-handle' })
  })
  t.is(res.status, 201, JSON.stringify(res.body))
  t.like(res.body, { developer_id: dev.id, handle: 'with-handle' })

  const handle = await http(base, 'GET', '/v1/handles/with-handle')
  t.is(handle.status, 200)
  t.like(handle.body, { developer_id: dev.id, developer_name: 'With Handle', verification_tier: 'self-claimed' })
  t.like((await http(base, 'GET', `/v1/developers/${enc(dev.id)}`)).body, {
    dev_handle: 'with-handle',
    dev_handle_verified: false
  })
  t.true(
    rec.events.some(
      e => e.type === 'handle_claimed' && e.data.handle === 'with-handle' && e.data.developer_id === dev.id
    )
  )

  const late = developer(18)
  const clash = await http(base, 'POST', '/v1/developers', {
    body: developerRegistration(late, { handle: 'with-handle' })
  })
  t.like(clash, { status: 409, body: { error: 'handle_claimed' } })
  t.is((await http(base, 'GET', '/v1/handles/with-handle')).body.developer_id, dev.id)
  const none = await http(base, 'GET', `/v1/developers/${enc(late.id)}`)
  // The registration is all or nothing: the developer written before the claim failed is rolled back.
  t.is(none.status, 404, 'the failed registration left nothing behind')

  const reservedDev = developer(24)
  const reserved = await http(base, 'POST', '/v1/developers', {
    body: developerRegistration(reservedDev, { handle: 'admin' })
  })
  t.like(reserved, { status: 400, body: { error: 'handle_reserved' } })
  t.is(
    (await http(base, 'GET', `/v1/developers/${enc(reservedDev.id)}`)).status,
    404,
    'the failed registration left nothing behind'
  )
})

test('verify by DNS through a real resolver (body signature and Authorization over the raw body)', async t => {
  await registerDeveloper(dnsDev, { name: 'DNS Dev' })
  t.is((await claim(dnsDev, 'dns-dev')).status, 201)
  const rec = recordEvents(node, t)

  const res = await verifyHandle(dnsDev, 'dns-dev', 'dns', 'example.com')
  t.is(res.status, 200, JSON.stringify(res.body))
  t.like(res.body, {
    handle: 'dns-dev',
    verified: true,
    verification_method: 'dns',
    verification_proof: 'example.com',
    verification_tier: 'dns-verified'
  })
  t.false(Number.isNaN(Date.parse(res.body.verified_at)))
  t.like((await http(base, 'GET', '/v1/handles/dns-dev')).body, {
    verified: true,
    verification_method: 'dns',
    verification_tier: 'dns-verified'
  })
  t.like((await http(base, 'GET', `/v1/developers/${enc(dnsDev.id)}`)).body, {
    dev_handle: 'dns-dev',
    dev_handle_verified: true,
    verification_method: 'dns',
    verification_proof: 'example.com',
    verification_tier: 'dns-verified'
  })
  const verified = rec.events.filter(e => e.type === 'handle_verified' && e.data.handle === 'dns-dev')
  t.is(verified.length, 1)
  t.like(verified[0]?.data, { handle: 'dns-dev', developer_id: dnsDev.id, method: 'dns' })

  // The deployed form: Authorization: Bearer over the raw body bytes.
  await registerDeveloper(bearerDnsDev)
  t.is((await claim(bearerDnsDev, 'bearer-dns')).status, 201)
  const raw = JSON.stringify({ method: 'dns', proof: 'bearer.example' })
  const bearer = await http(base, 'POST', '/v1/handles/bearer-dns/verify', {
    raw,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${sign(bearerDnsDev.keyPair, raw)}` }
  })
  verifiedBy(t, bearer, 'dns', 'bearer.example', 'dns-verified')
})

test('verify: unsigned, signed by another key, wrong TXT, unknown handle', async t => {
  const [dev, stranger] = await registeredDevelopers(19, 20)
  t.is((await claim(dev, 'verify-fails')).status, 201)

  const unsigned = await http(base, 'POST', '/v1/handles/verify-fails/verify', {
    body: { method: 'dns', proof: 'example.com' }
  })
  t.like(unsigned, { status: 401, body: { error: 'authorization_required' } })

  const byStranger = await verifyHandle(stranger, 'verify-fails', 'dns', 'example.com')
  t.like(byStranger, { status: 401, body: { error: 'signature_invalid' } })
  const raw = JSON.stringify({ method: 'dns', proof: 'example.com' })
  const bearerStranger = await http(base, 'POST', '/v1/handles/verify-fails/verify', {
    raw,
    headers: { authorization: `Bearer ${sign(stranger.keyPair, raw)}` }
  })
  t.like(bearerStranger, { status: 401, body: { error: 'signature_invalid' } })

  // example.com publishes dnsDev's key, not this developer's; wrong.example publishes other keys.
  for (const proof of ['wrong.example', 'example.com', 'nothing-here.example']) {
    const res = await verifyHandle(dev, 'verify-fails', 'dns', proof)
    t.is(res.status, 400, `${proof}: ${JSON.stringify(res.body)}`)
    t.is(res.body.error, 'verification_failed', proof)
  }
  t.like((await http(base, 'GET', '/v1/handles/verify-fails')).body, {
    verified: false,
    verification_tier: 'self-claimed'
  })

  const unknown = await verifyHandle(dev, 'no-such-handle', 'dns', 'example.com')
  t.like(unknown, { status: 404, body: { error: 'handle_not_found' } })
})

test('verify by GitHub against the HTTPS stand-in: found, not found, unavailable', async t => {
  await registerDeveloper(githubDev)
  await registerDeveloper(githubNoneDev)
  await registerDeveloper(githubBrokenDev)
  t.is((await claim(githubDev, 'gh-dev')).status, 201)
  t.is((await claim(githubNoneDev, 'gh-none')).status, 201)
  t.is((await claim(githubBrokenDev, 'gh-broken')).status, 201)

  const ok = await verifyHandle(githubDev, 'gh-dev', 'github', 'keyholder')
  verifiedBy(t, ok, 'github', 'keyholder', 'github-verified')
  t.like((await http(base, 'GET', `/v1/developers/${enc(githubDev.id)}`)).body, {
    dev_handle_verified: true,
    verification_method: 'github',
    verification_tier: 'github-verified'
  })

  // nokey's gist holds githubDev's key, not githubNoneDev's.
  const none = await verifyHandle(githubNoneDev, 'gh-none', 'github', 'nokey')
  t.is(none.status, 400, JSON.stringify(none.body))
  t.is(none.body.error, 'verification_failed')
  const noUser = await verifyHandle(githubNoneDev, 'gh-none', 'github', 'nosuchuser')
  t.like(noUser, { status: 400, body: { error: 'verification_failed' } })

  const broken = await verifyHandle(githubBrokenDev, 'gh-broken', 'github', 'broken')
  t.is(broken.status, 502, JSON.stringify(broken.body))
  t.is(broken.body.error, 'verification_unavailable')
  t.like((await http(base, 'GET', '/v1/handles/gh-broken')).body, {
    verified: false,
    verification_tier: 'self-claimed'
  })
})

test('release: by the owner frees the handle and its names; a new claimant inherits nothing', async t => {
  const [owner, successor] = await registeredDevelopers(21, 22)
  t.is((await claim(owner, 'released-handle')).status, 201)
  const a = agent(owner, 1)
  t.is((await http(base, 'POST', '/v1/entities', { body: specRegistration(owner, a) })).status, 201)
  const bind = await http(base, 'POST', '/v1/names', {
    body: signSpec(owner.keyPair, {
      developer_handle: 'released-handle',
      entity_name: 'worker',
      entity_id: a.agentId,
      version: '1.0.0'
    })
  })
  t.is(bind.status, 201, JSON.stringify(bind.body))

  const listed = await http(base, 'GET', '/v1/handles/released-handle/entities')
  t.is(listed.status, 200)
  t.true(Array.isArray(listed.body))
  t.is(listed.body.length, 1)
  t.like(listed.body[0], {
    fqan: 'registry.test/released-handle/worker',
    entity_id: a.agentId,
    entity_name: 'worker',
    developer_handle: 'released-handle',
    version: '1.0.0'
  })
  t.is((await http(base, 'GET', `/v1/entities/${enc(a.agentId)}`)).body.fqan, 'registry.test/released-handle/worker')

  const unsigned = await http(base, 'DELETE', '/v1/handles/released-handle')
  t.like(unsigned, { status: 401, body: { error: 'authorization_required' } })
  const byOther = await http(base, 'DELETE', '/v1/handles/released-handle', {
    headers: releaseAuth(successor, 'released-handle')
  })
  t.like(byOther, { status: 401, body: { error: 'signature_invalid' } })
  const wrongSubject = await http(base, 'DELETE', '/v1/handles/released-handle', {
    headers: releaseAuth(owner, 'other-handle')
  })
  t.like(wrongSubject, { status: 401, body: { error: 'signature_invalid' } })
  t.is((await http(base, 'GET', '/v1/handles/released-handle')).status, 200, 'failed releases change nothing')

  const rec = recordEvents(node, t)
  const released = await http(base, 'DELETE', '/v1/handles/released-handle', {
    headers: releaseAuth(owner, 'released-handle')
  })
  t.is(released.status, 200, JSON.stringify(released.body))
  t.like(released.body, { handle: 'released-handle' })
  t.deepEqual(released.body.names_released, ['registry.test/released-handle/worker'])
  t.true(
    rec.events.some(
      e =>
        e.type === 'name_released' &&
        e.data.fqan === 'registry.test/released-handle/worker' &&
        e.data.entity_id === a.agentId
    )
  )
  t.true(rec.events.some(e => e.type === 'handle_released' && e.data.handle === 'released-handle'))

  t.is((await http(base, 'GET', '/v1/handles/released-handle')).status, 404)
  const name = await http(base, 'GET', '/v1/names/released-handle/worker')
  t.like(name, { status: 404, body: { error: 'name_not_found' } })
  const entity = await http(base, 'GET', `/v1/entities/${enc(a.agentId)}`)
  t.is(entity.status, 200)
  t.is(entity.body.fqan, null)
  t.is(entity.body.developer_handle, null)
  t.like((await http(base, 'GET', `/v1/developers/${enc(owner.id)}`)).body, {
    dev_handle: null,
    dev_handle_verified: false
  })
  t.deepEqual((await http(base, 'GET', '/v1/handles/released-handle/available')).body, {
    handle: 'released-handle',
    available: true
  })

  t.is((await claim(successor, 'released-handle')).status, 201)
  const inherited = await http(base, 'GET', '/v1/handles/released-handle/entities')
  t.is(inherited.status, 200)
  t.deepEqual(inherited.body, [])
  t.is((await http(base, 'GET', '/v1/names/released-handle/worker')).status, 404)
  // The old developer may claim a handle again.
  t.is((await claim(owner, 'released-again')).status, 201)

  const missing = await http(base, 'DELETE', '/v1/handles/never-claimed', {
    headers: releaseAuth(owner, 'never-claimed')
  })
  t.like(missing, { status: 404, body: { error: 'handle_not_found' } })
  t.is((await http(base, 'GET', '/v1/handles/never-claimed/entities')).body.error, 'handle_not_found')
})

test('an unregistered developer claiming with its own key comes into being (implicit) with the handle', async t => {
  const dev = developer(25)
  const rec = recordEvents(node, t)
  const res = await claim(dev, 'implicit-claimer')
  t.is(res.status, 201, JSON.stringify(res.body))
  t.like(res.body, {
    handle: 'implicit-claimer',
    developer_id: dev.id,
    developer_name: null,
    verification_tier: 'self-claimed'
  })
  t.like((await http(base, 'GET', `/v1/developers/${enc(dev.id)}`)).body, {
    developer_id: dev.id,
    implicit: true,
    name: null,
    public_key: dev.publicKey,
    dev_handle: 'implicit-claimer'
  })
  t.true(
    rec.events.some(
      e => e.type === 'developer_registered' && e.data.developer_id === dev.id && e.data.implicit === true
    )
  )
  t.true(rec.events.some(e => e.type === 'handle_claimed' && e.data.handle === 'implicit-claimer'))

  // A failed implicit claim (the handle is taken) must not create the developer.
  const loser = developer(26)
  const taken = await claim(loser, 'implicit-claimer')
  t.like(taken, { status: 409, body: { error: 'handle_claimed' } })
  // A failed claim rolls back the implicit developer it would have created.
  t.is((await http(base, 'GET', `/v1/developers/${enc(loser.id)}`)).status, 404, 'a failed claim creates no developer')
})

test('a developer filling in its profile after an implicit start keeps its handle', async t => {
  // The developer comes into being through an entity's developer proof (implicit), claims a
  // handle, then registers its profile with POST /v1/developers.
  const dev = developer(23)
  const a = agent(dev, 1)
  t.is((await http(base, 'POST', '/v1/entities', { body: specRegistration(dev, a) })).status, 201)
  t.is((await claim(dev, 'implicit-first')).status, 201)
  const profile = await http(base, 'POST', '/v1/developers', {
    body: developerRegistration(dev, { name: 'Late Profile' })
  })
  t.is(profile.status, 201, JSON.stringify(profile.body))

  t.is((await http(base, 'GET', '/v1/handles/implicit-first')).body.developer_id, dev.id)
  const record = await http(base, 'GET', `/v1/developers/${enc(dev.id)}`)
  t.like(record.body, {
    name: 'Late Profile',
    implicit: false,
    dev_handle: 'implicit-first',
    verification_tier: 'self-claimed'
  })
  // The one-handle-per-developer rule still holds.
  const second = await claim(dev, 'implicit-second')
  t.is(second.status, 409, JSON.stringify(second.body))
  t.is(second.body.error, 'developer_has_handle')
})
