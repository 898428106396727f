import test from 'ava'
import {
  canonicalJson,
  goEscapedJson,
  numbersAsWritten,
  parseKeepingNumbers
} from '../../src/identity/canonical-json.js'
import { formatKey, parsePublicKey, parseSignature } from '../../src/identity/encoding.js'
import { deriveAgentKeyPair, deriveAgentSeed, developerProofMessage } from '../../src/identity/hd.js'
import { deriveId } from '../../src/identity/ids.js'
import { sign as cryptoSign, verify as cryptoVerify } from 'node:crypto'
import { ED25519_BACKEND, generateKeyPair, keyPairFromSeed, sign, verifyRaw } from '../../src/identity/keys.js'
import { parseAuthorization } from '../../src/identity/authorization.js'
import {
  deployedRegistrationSignable,
  verifyDeletion,
  verifyDeveloperProof,
  verifyDeveloperRegistration,
  verifyEntityRegistration,
  verifyHeartbeat,
  verifyNameBinding,
  verifyHandleClaim,
  verifyRelease
} from '../../src/identity/verifiers.js'
import { inlineVerifier } from '../../src/identity/verify-pool.js'

// Test vectors from docs/compatibility.md.
const devSeed = Buffer.alloc(32, 1)
const dev = keyPairFromSeed(devSeed)
const agent = deriveAgentKeyPair(devSeed, 7)
const AGENT_KEY = 'ed25519:Rf+eqPiJ8cVhLxf5Gs3FrayrBIzz/QpRua+TDPdGnd0='

test('developer key and ID from the all-ones seed', t => {
  t.is(formatKey(dev.publicKey), 'ed25519:iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w=')
  t.is(deriveId('developer', dev.publicKey), 'zns:dev:34750f98bd59fcfc946da45aaabe933b')
})

test('HD derivation at index 7', t => {
  t.is(deriveAgentSeed(devSeed, 7).toString('hex'), '74fbb532c5e738312fc82e989af7368147af15293fc10f5d3f0e32a83ead7fa4')
  t.is(formatKey(agent.publicKey), AGENT_KEY)
  t.is(deriveId('agent', agent.publicKey), 'zns:ad4be8ca0a9c510018ea5d63f35989ed')
  t.is(deriveId('service', AGENT_KEY), 'zns:svc:ad4be8ca0a9c510018ea5d63f35989ed')
})

test('HD index must be an unsigned 32-bit integer', t => {
  t.throws(() => deriveAgentSeed(devSeed, -1))
  t.throws(() => deriveAgentSeed(devSeed, 2 ** 32))
  t.throws(() => deriveAgentSeed(devSeed, 1.5))
  t.notThrows(() => deriveAgentSeed(devSeed, 2 ** 32 - 1))
})

test('developer proof for index 7 (deterministic Ed25519)', async t => {
  const proof = sign(dev, developerProofMessage(agent.publicKey, 7))
  t.is(proof, 'ed25519:z7/h8PUnQNXwLOmC39SrflEfImNuOTUoq/ns+ApXHCRmQO+S/ChLxT9DL2hI+jJwl7ldyctjOf6PIxAbLuRnCg==')
  const sig = parseSignature(proof)!
  t.true(await verifyDeveloperProof(dev.publicKey, agent.publicKey, 7, sig, inlineVerifier))
  t.false(await verifyDeveloperProof(dev.publicKey, agent.publicKey, 8, sig, inlineVerifier), 'the index is covered')
  t.false(
    await verifyDeveloperProof(agent.publicKey, agent.publicKey, 7, sig, inlineVerifier),
    'the developer key is checked'
  )
})

test('deployed registration signable and its signature vector', async t => {
  const body = {
    name: 'Doc <T&T>',
    category: 'tools',
    entity_url: 'https://a.example.com',
    tags: ['x'],
    public_key: AGENT_KEY,
    developer_id: 'zns:dev:34750f98bd59fcfc946da45aaabe933b',
    entity_name: 'doc'
  }
  const signable = canonicalJson(deployedRegistrationSignable(body))
  t.is(
    signable,
    '{"category":"tools","entity_url":"https://a.example.com","name":"Doc <T&T>","public_key":"ed25519:Rf+eqPiJ8cVhLxf5Gs3FrayrBIzz/QpRua+TDPdGnd0=","summary":"","tags":["x"]}'
  )
  const signature = sign(agent, signable)
  t.is(signature, 'ed25519:3758pwYMBJGbADo4xPhHcjAw9neIsWHeqP9RosewSpt4L4AzcrASIaJOVfwKj4n38TzMgZvM+L8Blc8kiFiCAQ==')
  t.is(
    await verifyEntityRegistration({ ...body, signature }, agent.publicKey, parseSignature(signature)!, inlineVerifier),
    'deployed'
  )
})

test('registration: spec form, escaped fallback, and rejection of everything else', async t => {
  const body = {
    name: 'A & B',
    type: 'agent',
    category: 'x',
    entity_url: 'https://a.example',
    public_key: AGENT_KEY,
    tags: ['t']
  }
  const specSig = parseSignature(sign(agent, canonicalJson(body)))!
  t.is(await verifyEntityRegistration({ ...body, signature: 'x' }, agent.publicKey, specSig, inlineVerifier), 'spec')
  const escaped = goEscapedJson(canonicalJson(body))!
  t.true(escaped.includes('A \\u0026 B'))
  t.is(
    await verifyEntityRegistration(body, agent.publicKey, parseSignature(sign(agent, escaped))!, inlineVerifier),
    'spec-escaped'
  )
  const deployedEscaped = goEscapedJson(canonicalJson(deployedRegistrationSignable(body)))!
  t.is(
    await verifyEntityRegistration(
      body,
      agent.publicKey,
      parseSignature(sign(agent, deployedEscaped))!,
      inlineVerifier
    ),
    'deployed-escaped'
  )
  t.is(await verifyEntityRegistration({ ...body, summary: 'changed' }, agent.publicKey, specSig, inlineVerifier), null)
  t.is(await verifyEntityRegistration(body, dev.publicKey, specSig, inlineVerifier), null)
})

test('deployed registration: services sign service_endpoint as entity_url; entity_type only when sent', t => {
  const svc = {
    name: 'S',
    entity_type: 'service',
    category: 'c',
    service_endpoint: 'https://s.example/api',
    public_key: AGENT_KEY
  }
  t.deepEqual(deployedRegistrationSignable(svc), {
    category: 'c',
    entity_url: 'https://s.example/api',
    name: 'S',
    public_key: AGENT_KEY,
    summary: '',
    tags: null,
    entity_type: 'service'
  })
  t.false('entity_type' in deployedRegistrationSignable({ name: 'x', entity_type: '' }))
})

test('canonical JSON sorts keys recursively by UTF-16 code unit and keeps array order', t => {
  t.is(
    canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null }, B: true, é: 'é' }),
    '{"B":true,"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1,"é":"é"}'
  )
  t.is(canonicalJson({ s: '<>&\u2028' }), '{"s":"<>&\u2028"}')
  t.is(goEscapedJson(canonicalJson({ s: '<>&\u2028\u2029' })), '{"s":"\\u003c\\u003e\\u0026\\u2028\\u2029"}')
  t.is(goEscapedJson('{"s":"plain"}'), null)
  t.is(canonicalJson({ a: undefined, b: 1 }), '{"b":1}')
})

test('canonical JSON orders any number of keys as a code-unit sort does', t => {
  // Shuffled keys, small objects (sorted in place) and large ones (over 32 keys), astral and BMP characters.
  const alphabet = ['a', 'B', 'z', '_', '0', 'é', '\u{1F600}', '\uFF5E', 'aa']
  let seed = 7
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed % n
  }
  for (let round = 0; round < 200; round++) {
    const obj: Record<string, number> = {}
    const size = random(60)
    for (let i = 0; i < size; i++) {
      let key = ''
      for (let k = 0; k <= random(4); k++) key += alphabet[random(alphabet.length)]
      obj[key] = i
    }
    const expected = `{${Object.keys(obj)
      .sort()
      .map(k => `${JSON.stringify(k)}:${obj[k]}`)
      .join(',')}}`
    t.is(canonicalJson(obj), expected)
  }
})

test('heartbeat vector: the timestamp alone (deployed) and agent_id+timestamp (spec)', async t => {
  const ts = '2026-05-21T10:00:00Z'
  const deployed = sign(agent, ts)
  t.is(deployed, 'ed25519:o5PLTrt8uxrZCB6tfGP8VT8lHi6yM7dpap+bVhf17erjeiglJme/j/VrPp7U17zVz3JY1au7i31sDVQdSvzOBQ==')
  const id = 'zns:ad4be8ca0a9c510018ea5d63f35989ed'
  t.is(await verifyHeartbeat(id, ts, agent.publicKey, parseSignature(deployed)!, inlineVerifier), 'deployed')
  t.is(await verifyHeartbeat(id, ts, agent.publicKey, parseSignature(sign(agent, id + ts))!, inlineVerifier), 'spec')
  t.is(
    await verifyHeartbeat(id, '2026-05-21T10:00:01Z', agent.publicKey, parseSignature(deployed)!, inlineVerifier),
    null
  )
})

test('developer registration: deployed subset with HTML escaping on', async t => {
  const body = { name: 'Alice', public_key: formatKey(dev.publicKey), profile_url: 'https://a.example/?a=1&b=2' }
  const deployed = goEscapedJson(
    canonicalJson({ github: '', name: 'Alice', profile_url: body.profile_url, public_key: body.public_key })
  )!
  t.is(
    await verifyDeveloperRegistration(
      { ...body, handle: 'alice' },
      dev.publicKey,
      parseSignature(sign(dev, deployed))!,
      inlineVerifier
    ),
    'deployed-escaped'
  )
  t.is(
    await verifyDeveloperRegistration(
      body,
      dev.publicKey,
      parseSignature(sign(dev, canonicalJson(body)))!,
      inlineVerifier
    ),
    'spec'
  )
})

test('handle claim, name binding, release and deletion messages', async t => {
  const claim = {
    developer_id: deriveId('developer', dev.publicKey),
    handle: 'acme',
    public_key: formatKey(dev.publicKey)
  }
  t.is(
    await verifyHandleClaim(claim, dev.publicKey, parseSignature(sign(dev, canonicalJson(claim)))!, inlineVerifier),
    'spec'
  )
  const bind = { entity_id: 'zns:x', entity_name: 'doc', developer_handle: 'acme' }
  const deployedBind = canonicalJson({
    capability_tags: null,
    developer_handle: 'acme',
    entity_id: 'zns:x',
    entity_name: 'doc',
    version: ''
  })
  t.is(
    await verifyNameBinding(bind, dev.publicKey, parseSignature(sign(dev, deployedBind))!, inlineVerifier),
    'deployed'
  )
  t.is(
    await verifyRelease(
      'acme',
      '/v1/handles/acme',
      dev.publicKey,
      parseSignature(sign(dev, 'release:acme'))!,
      inlineVerifier
    ),
    'release'
  )
  const id = 'zns:svc:ad4be8ca0a9c510018ea5d63f35989ed'
  t.is(
    await verifyDeletion(
      id,
      '/v1/entities/zns%3Asvc%3Aad4be8ca0a9c510018ea5d63f35989ed',
      agent.publicKey,
      parseSignature(sign(agent, id))!,
      inlineVerifier
    ),
    'id'
  )
  t.is(
    await verifyDeletion(
      id,
      '/v1/entities/zns%3Asvc%3Aad4be8ca0a9c510018ea5d63f35989ed',
      agent.publicKey,
      parseSignature(sign(agent, `/v1/entities/${id}`))!,
      inlineVerifier
    ),
    'path-decoded'
  )
})

test('key and signature wire forms', t => {
  t.truthy(parsePublicKey(AGENT_KEY))
  t.truthy(parsePublicKey(AGENT_KEY.slice('ed25519:'.length)), 'prefix optional on keys')
  t.is(parsePublicKey('ed25519:short'), null)
  const sig = sign(agent, 'm')
  t.truthy(parseSignature(sig))
  t.is(parseSignature(sig.slice('ed25519:'.length)), null, 'prefix mandatory on signatures')
  t.true(verifyRaw(agent.publicKey, 'm', parseSignature(sig)!))
  t.false(verifyRaw(Buffer.alloc(31), 'm', parseSignature(sig)!))
})

test('Authorization header forms', t => {
  const sig = sign(agent, 'm')
  t.is(parseAuthorization(`Bearer ${sig}`)?.role, 'self')
  t.is(parseAuthorization(`Bearer-Dev ${sig}`)?.role, 'developer')
  t.is(parseAuthorization(undefined), null)
  t.is(parseAuthorization('Bearer nope'), undefined)
  t.is(parseAuthorization('Basic abc'), undefined)
})

test('Ed25519: RFC 8032 test 1; libsodium (when installed) and node:crypto agree on signatures and verdicts', t => {
  t.is(ED25519_BACKEND, process.env.REGISTRY_NODE_CRYPTO === 'node' ? 'node:crypto' : 'libsodium')
  const rfc = keyPairFromSeed(Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex'))
  t.is(rfc.publicKey.toString('hex'), 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a')
  const rfcSignature =
    'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b'
  t.is(parseSignature(sign(rfc, new Uint8Array(0)))!.toString('hex'), rfcSignature)
  for (let i = 0; i < 20; i++) {
    const pair = generateKeyPair()
    const message = Buffer.from(`message ${i}`)
    const ours = parseSignature(sign(pair, message))!
    t.deepEqual(ours, cryptoSign(null, message, pair.privateKeyObject))
    t.true(verifyRaw(pair.publicKey, message, ours))
    const altered = Buffer.from(ours)
    altered[i % 64] = (altered[i % 64] as number) ^ 1
    t.is(verifyRaw(pair.publicKey, message, altered), cryptoVerify(null, message, pair.privateKeyObject, altered))
    t.false(verifyRaw(pair.publicKey, Buffer.from(`message ${i + 1}`), ours))
  }
})

test('deletions and releases: the timestamped path is a form of its own; without a query only the ID and path forms', async t => {
  const id = 'zns:svc:ad4be8ca0a9c510018ea5d63f35989ed'
  const stamped = `/v1/entities/${id}?timestamp=2026-11-29T10:00:00Z`
  const check = (path: string, message: string) =>
    verifyDeletion(id, path, agent.publicKey, parseSignature(sign(agent, message))!, inlineVerifier)
  t.is(await check(stamped, stamped), 'timestamped')
  t.is(await check(stamped.replaceAll(':', '%3A'), stamped), 'timestamped-decoded')
  t.is(await check(stamped, id), 'id', 'the ID form is still the ID form, whatever the query')
  t.is(await check(stamped, `/v1/entities/${id}`), null, 'a path signed without its query does not cover it')
  t.is(await check(`/v1/entities/${id}`, stamped), null)
  const release = (path: string, message: string) =>
    verifyRelease('acme', path, dev.publicKey, parseSignature(sign(dev, message))!, inlineVerifier)
  t.is(await release('/v1/handles/acme?timestamp=1764410400', '/v1/handles/acme?timestamp=1764410400'), 'timestamped')
  t.is(await release('/v1/handles/acme?timestamp=1764410400', 'release:acme'), 'release')
  t.is(await release('/v1/handles/acme', '/v1/handles/acme'), null, 'an untimestamped path is no release form')
})

test('a service without entity_url: the deployed form signs service_endpoint there, or "" as the Python SDK sends it', async t => {
  const body = {
    name: 'Weather',
    category: 'data',
    entity_type: 'service',
    entity_url: '',
    service_endpoint: 'https://svc.example.com',
    summary: '',
    tags: [],
    public_key: AGENT_KEY
  }
  const signedAs = (signable: Record<string, unknown>) => parseSignature(sign(agent, canonicalJson(signable)))!
  const substituted = deployedRegistrationSignable(body)
  t.is(substituted.entity_url, 'https://svc.example.com')
  t.is(await verifyEntityRegistration(body, agent.publicKey, signedAs(substituted), inlineVerifier), 'deployed')
  const asSent = { ...substituted, entity_url: '' }
  t.is(await verifyEntityRegistration(body, agent.publicKey, signedAs(asSent), inlineVerifier), 'deployed-empty-url')
  const other = { ...substituted, entity_url: 'https://other.example.com' }
  t.is(await verifyEntityRegistration(body, agent.publicKey, signedAs(other), inlineVerifier), null)
})

test('numbers as written: parsed with their text kept, canonical JSON writes them back as they were', t => {
  const text = '{"b": [1.0, -2.50, 3e-05, 10], "a": "x 1.0 \\"2.0\\"", "c": {"n": 0.1}}'
  const parsed = parseKeepingNumbers(text) as Record<string, unknown>
  t.is(
    numbersAsWritten(canonicalJson(parsed)),
    '{"a":"x 1.0 \\"2.0\\"","b":[1.0,-2.50,3e-05,10],"c":{"n":0.1}}',
    'numbers inside strings are text and stay so'
  )
  t.is(parseKeepingNumbers('{"a": 1'), null)
})
