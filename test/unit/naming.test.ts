import test from 'ava'
import {
  compareSemver,
  handleProblem,
  isValidName,
  parseFqan,
  selectVersion
} from '../../src/services/registry/naming.js'
import type { NameVersion } from '../../src/store/records.js'

test('handle rules: 3-32 of [a-z0-9-], letter or digit at both ends, reserved words', t => {
  for (const ok of ['acme', 'a-b', 'abc', 'x'.repeat(32), '007']) t.is(handleProblem(ok), null, ok)
  for (const bad of ['ab', 'x'.repeat(33), 'Acme', '-abc', 'abc-', 'a_b', 'a.b', ''])
    t.is(handleProblem(bad), 'invalid', bad)
  for (const reserved of ['admin', 'agent', 'registry', 'zns']) t.is(handleProblem(reserved), 'reserved', reserved)
})

test('entity names: 1-64 of [a-z0-9-]', t => {
  t.true(isValidName('doc-translator'))
  t.true(isValidName('a'))
  t.false(isValidName('Doc'))
  t.false(isValidName('-x'))
  t.false(isValidName('x'.repeat(65)))
})

test('FQAN parsing: host, zns:// prefix, @version, two-part form', t => {
  t.deepEqual(parseFqan('registry.example.com/acme/doc'), {
    host: 'registry.example.com',
    handle: 'acme',
    name: 'doc',
    version: null
  })
  t.deepEqual(parseFqan('zns://registry.example.com/acme/doc@1.2'), {
    host: 'registry.example.com',
    handle: 'acme',
    name: 'doc',
    version: '1.2'
  })
  t.deepEqual(parseFqan('acme/doc@2.0.0-beta.1'), { host: null, handle: 'acme', name: 'doc', version: '2.0.0-beta.1' })
  // The TypeScript SDK's CLI writes a name of the registry it talks to as @handle/name.
  t.deepEqual(parseFqan('@acme/doc'), { host: null, handle: 'acme', name: 'doc', version: null })
  for (const bad of ['doc', 'a/b/c/d', 'host/ACME!/doc', 'host/acme/doc@', 'host/acme/doc@x', '/acme/doc'])
    t.is(parseFqan(bad), null, bad)
})

test('semver precedence', t => {
  const sorted = [
    '1.0.0-alpha',
    '1.0.0-alpha.1',
    '1.0.0-beta',
    '1.0.0-beta.2',
    '1.0.0-beta.11',
    '1.0.0',
    '1.9.0',
    '1.10.0',
    '2.0.0'
  ]
  for (let i = 1; i < sorted.length; i++)
    t.true(compareSemver(sorted[i - 1]!, sorted[i]!) < 0, `${sorted[i - 1]} < ${sorted[i]}`)
  t.is(compareSemver('1.0.0+build', '1.0.0'), 0)
})

test('version selection: exact, major and major.minor prefixes pick the highest release', t => {
  const v = (version: string | null): NameVersion => ({
    version,
    entity_id: 'zns:x',
    capability_tags: [],
    bound_at: '',
    signature: ''
  })
  const history = [v('2.1.0'), v('1.10.0'), v('1.9.3'), v('2.0.5'), v('2.2.0-rc.1'), v(null)]
  t.is(selectVersion(history, '1.9.3')?.version, '1.9.3')
  t.is(selectVersion(history, '1')?.version, '1.10.0')
  t.is(selectVersion(history, '2')?.version, '2.1.0', 'pre-releases are not picked by a prefix')
  t.is(selectVersion(history, '2.0')?.version, '2.0.5')
  t.is(selectVersion(history, '2.2.0-rc.1')?.version, '2.2.0-rc.1')
  t.is(selectVersion(history, '3'), null)
})

test('fast trust equals the signal-by-signal trust score', async t => {
  const { fastTrust, developerTrustPart, trustScore, trustSignals } = await import(
    '../../src/services/registry/trust.js'
  )
  const now = Date.parse('2026-06-01T00:00:00Z')
  const developer = { implicit: false } as never
  const handle = { verified: true } as never
  for (const [registeredAt, uptime] of [
    [now - 10 * 86_400_000, 1],
    [now - 200 * 86_400_000, 0],
    [now, 0.37]
  ] as const) {
    t.is(
      fastTrust(developerTrustPart(developer, handle), registeredAt, uptime, now),
      trustScore(trustSignals({ registeredAt, uptime, developer, handle, now }))
    )
    t.is(
      fastTrust(developerTrustPart(undefined, undefined), registeredAt, uptime, now),
      trustScore(trustSignals({ registeredAt, uptime, developer: undefined, handle: undefined, now }))
    )
  }
})
