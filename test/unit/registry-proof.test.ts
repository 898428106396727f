import test from 'ava'
import { createHash, createPublicKey } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generate } from 'selfsigned'
import { canonicalJson, goEscapedJson, withoutSignature } from '../../src/identity/canonical-json.js'
import { keyPairFromSeed, sign } from '../../src/identity/keys.js'
import { identityFromKeyPair } from '../../src/identity/node-identity.js'
import {
  createRegistryProof,
  spkiFingerprint,
  verifyRegistryProof,
  type RegistryProof
} from '../../src/identity/registry-proof.js'
import { RegistryProofProvider } from '../../src/services/registry/registry-proof-provider.js'

const identity = identityFromKeyPair(keyPairFromSeed(Buffer.alloc(32, 3)))
const other = identityFromKeyPair(keyPairFromSeed(Buffer.alloc(32, 4)))
const T0 = new Date('2030-01-01T00:00:00.000Z')
const DAY = 24 * 60 * 60 * 1000
const at = (ms: number): Date => new Date(T0.getTime() + ms)

const certificate = generate([{ name: 'commonName', value: 'registry.example.com' }], { keySize: 2048 })

function resign(unsigned: Record<string, unknown>, by = identity): RegistryProof {
  return {
    ...unsigned,
    signature: sign(by.keyPair, canonicalJson(withoutSignature(unsigned)))
  } as unknown as RegistryProof
}

test('a proof round-trips: created, then verified with every binding', async t => {
  const { cert } = await certificate
  const proof = createRegistryProof(identity, { domain: 'Registry.Example.com', certPem: cert, now: T0 })
  t.is(proof.type, 'registry-identity-proof')
  t.is(proof.version, '1')
  t.is(proof.domain, 'registry.example.com')
  t.is(proof.registry_id, identity.registryId)
  t.is(proof.ed25519_public_key, identity.publicKey)
  t.regex(proof.tls_spki_fingerprint!, /^sha256:[0-9a-f]{64}$/)
  t.is(proof.issued_at, '2030-01-01T00:00:00.000Z')
  t.is(proof.expires_at, '2030-01-08T00:00:00.000Z', 'seven days by default')
  const check = verifyRegistryProof(JSON.parse(JSON.stringify(proof)), {
    now: at(DAY),
    expectedDomain: 'REGISTRY.example.com.',
    expectedSpki: spkiFingerprint(cert)
  })
  t.deepEqual(check, { ok: true, registry_id: identity.registryId, problems: [] })
})

test('a proof without a certificate has no fingerprint and fails an SPKI expectation only', t => {
  const proof = createRegistryProof(identity, { domain: 'r.example', now: T0, validityMs: 1000 })
  t.false('tls_spki_fingerprint' in proof)
  t.is(proof.expires_at, '2030-01-01T00:00:01.000Z')
  t.true(verifyRegistryProof(proof, { now: T0 }).ok)
  const check = verifyRegistryProof(proof, { now: T0, expectedSpki: `sha256:${'0'.repeat(64)}` })
  t.false(check.ok)
  t.is(check.problems.length, 1)
  t.regex(check.problems[0]!, /no tls_spki_fingerprint/)
})

test('a tampered field breaks the signature', t => {
  const proof = createRegistryProof(identity, { domain: 'registry.example.com', now: T0 })
  const check = verifyRegistryProof({ ...proof, domain: 'evil.example.com' }, { now: T0 })
  t.false(check.ok)
  t.deepEqual(check.problems, ['the signature does not verify against ed25519_public_key'])
  const added = verifyRegistryProof({ ...proof, extra: 'unsigned member' }, { now: T0 })
  t.false(added.ok, 'unknown members are covered by the signature too')
  t.true(verifyRegistryProof(resign({ ...withoutSignature({ ...proof }), extra: 'signed member' }), { now: T0 }).ok)
})

test('the Go-escaped form of the signed text is accepted', t => {
  const unsigned = withoutSignature({ ...createRegistryProof(identity, { domain: 'a&b.example', now: T0 }) })
  const escaped = goEscapedJson(canonicalJson(unsigned))!
  t.true(escaped.includes('a\\u0026b'))
  const proof = { ...unsigned, signature: sign(identity.keyPair, escaped) }
  t.true(verifyRegistryProof(proof, { now: T0 }).ok)
})

test('registry_id must be the ID derived from the key', t => {
  const proof = createRegistryProof(identity, { domain: 'registry.example.com', now: T0 })
  const forged = resign({ ...withoutSignature({ ...proof }), registry_id: other.registryId })
  const check = verifyRegistryProof(forged, { now: T0 })
  t.false(check.ok)
  t.is(check.registry_id, identity.registryId, 'the check reports the ID the key derives')
  t.deepEqual(check.problems, [
    `registry_id ${other.registryId} does not match the key, which derives ${identity.registryId}`
  ])
  const signedByOther = resign({ ...withoutSignature({ ...proof }) }, other)
  t.deepEqual(verifyRegistryProof(signedByOther, { now: T0 }).problems, [
    'the signature does not verify against ed25519_public_key'
  ])
})

test('an expired proof fails; the expiry instant itself is already expired', t => {
  const proof = createRegistryProof(identity, { domain: 'registry.example.com', now: T0, validityMs: DAY })
  t.true(verifyRegistryProof(proof, { now: at(DAY - 1) }).ok)
  const check = verifyRegistryProof(proof, { now: at(DAY) })
  t.false(check.ok)
  t.deepEqual(check.problems, ['the proof expired at 2030-01-02T00:00:00.000Z'])
})

test('issued_at may lie up to 60 s in the future, no further', t => {
  const proof = createRegistryProof(identity, { domain: 'registry.example.com', now: T0 })
  t.true(verifyRegistryProof(proof, { now: at(-60_000) }).ok)
  const check = verifyRegistryProof(proof, { now: at(-60_001) })
  t.false(check.ok)
  t.is(check.problems.length, 1)
  t.regex(check.problems[0]!, /issued_at .* is in the future/)
})

test('the domain must be the expected one', t => {
  const proof = createRegistryProof(identity, { domain: 'registry.example.com', now: T0 })
  const check = verifyRegistryProof(proof, { now: T0, expectedDomain: 'other.example.com' })
  t.false(check.ok)
  t.deepEqual(check.problems, ['domain registry.example.com is not the expected other.example.com'])
})

test('the SPKI fingerprint must be the expected one', async t => {
  const { cert } = await certificate
  const proof = createRegistryProof(identity, { domain: 'registry.example.com', certPem: cert, now: T0 })
  const check = verifyRegistryProof(proof, { now: T0, expectedSpki: `sha256:${'a'.repeat(64)}` })
  t.false(check.ok)
  t.regex(check.problems[0]!, /^tls_spki_fingerprint sha256:[0-9a-f]{64} is not the expected sha256:a{64}$/)
})

test('malformed proofs are described, not thrown on', t => {
  t.deepEqual(verifyRegistryProof(null), { ok: false, problems: ['the proof is not a JSON object'] })
  t.deepEqual(verifyRegistryProof([1]), { ok: false, problems: ['the proof is not a JSON object'] })
  const partial = verifyRegistryProof({ type: 'registry-identity-proof', version: 1, tls_spki_fingerprint: 5 })
  t.false(partial.ok)
  t.true(partial.problems.includes('version is missing or not a string'))
  t.true(partial.problems.includes('signature is missing or not a string'))
  t.true(partial.problems.includes('tls_spki_fingerprint is not a string'))
  const proof = createRegistryProof(identity, { domain: 'registry.example.com', now: T0 })
  const bad = verifyRegistryProof(
    { ...proof, ed25519_public_key: 'nope', issued_at: 'yesterday', type: 'other' },
    { now: T0 }
  )
  t.false(bad.ok)
  t.is(bad.registry_id, undefined)
  t.deepEqual(bad.problems, [
    'type is "other", expected "registry-identity-proof"',
    'ed25519_public_key is not ed25519:<base64 of 32 bytes>',
    'issued_at is not an ISO 8601 timestamp'
  ])
  t.deepEqual(verifyRegistryProof({ ...proof, signature: 'ed25519:short' }, { now: T0 }).problems, [
    'signature is not ed25519:<base64 of 64 bytes>'
  ])
})

test('spkiFingerprint is SHA-256 over the DER SubjectPublicKeyInfo of the certificate key', async t => {
  const pems = await certificate
  // Independently: the SPKI of the key pair the certificate was made for.
  const fromPrivate = createPublicKey(pems.private).export({ type: 'spki', format: 'der' })
  const fromPublic = createPublicKey(pems.public).export({ type: 'spki', format: 'der' })
  t.deepEqual(fromPrivate, fromPublic)
  const expected = `sha256:${createHash('sha256').update(fromPrivate).digest('hex')}`
  t.is(spkiFingerprint(pems.cert), expected)
  const second = await generate([{ name: 'commonName', value: 'other' }], { keySize: 2048 })
  t.is(
    spkiFingerprint(`${pems.cert}\n${second.cert}`),
    expected,
    'a chain is fingerprinted by its first (leaf) certificate'
  )
  t.not(spkiFingerprint(second.cert), expected)
  t.throws(() => spkiFingerprint('not a certificate'))
})

test('the provider caches the proof and renews it within renewBeforeMs of expiry', t => {
  let now = T0
  const provider = new RegistryProofProvider(identity, {
    domain: 'registry.example.com',
    validityMs: 7 * DAY,
    renewBeforeMs: DAY,
    now: () => now
  })
  const first = provider.current()
  t.is(first.issued_at, T0.toISOString())
  t.is(provider.secondsUntilRenewal(), (6 * DAY) / 1000)
  now = at(6 * DAY - 1)
  t.is(provider.current(), first, 'cached until renewal is due')
  t.is(provider.secondsUntilRenewal(), 0)
  now = at(6 * DAY)
  const second = provider.current()
  t.not(second, first)
  t.is(second.issued_at, at(6 * DAY).toISOString())
  t.is(second.expires_at, at(13 * DAY).toISOString())
  t.is(provider.current(), second)
  t.true(verifyRegistryProof(second, { now, expectedDomain: 'registry.example.com' }).ok)
})

test('the provider fingerprints its certificate file once, at construction', async t => {
  const { cert } = await certificate
  const dir = await mkdtemp(join(tmpdir(), 'registry-proof-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'cert.pem')
  await writeFile(file, cert)
  const provider = new RegistryProofProvider(identity, { domain: 'registry.example.com', certFile: file })
  await rm(file)
  t.is(provider.tlsSpkiFingerprint, spkiFingerprint(cert))
  t.is(provider.current().tls_spki_fingerprint, spkiFingerprint(cert))
  t.false(
    'tls_spki_fingerprint' in
      new RegistryProofProvider(identity, { domain: 'registry.example.com', certFile: '' }).current()
  )
})

test('the provider throws, naming the file, when the certificate is missing or invalid', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-proof-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const missing = join(dir, 'missing.pem')
  const error = t.throws(
    () => new RegistryProofProvider(identity, { domain: 'registry.example.com', certFile: missing })
  )
  t.true(error.message.includes(missing))
  const garbage = join(dir, 'garbage.pem')
  await writeFile(garbage, 'not a certificate\n')
  const invalid = t.throws(
    () => new RegistryProofProvider(identity, { domain: 'registry.example.com', certFile: garbage })
  )
  t.true(invalid.message.includes(garbage))
  t.throws(() => new RegistryProofProvider(identity, { domain: 'r.example', validityMs: DAY, renewBeforeMs: DAY }), {
    instanceOf: RangeError
  })
})
