import test from 'ava'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseToml } from 'smol-toml'
import {
  ConfigError,
  configTemplate,
  defaultConfig,
  loadConfig,
  loadConfigWithSources,
  parseFlags
} from '../../src/config/load.js'
import { PROFILES, isPrivateAddress, profileWarnings } from '../../src/config/profiles.js'
import { envName } from '../../src/config/setting.js'
import { SETTINGS } from '../../src/config/settings.js'

let dir = ''

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'registry-node-config-'))
})

test.after.always(async () => {
  if (dir) await rm(dir, { recursive: true, force: true })
})

async function tomlFile(name: string, text: string): Promise<string> {
  const file = join(dir, name)
  await writeFile(file, text)
  return file
}

test('defaults with no file, no environment and no flags', async t => {
  const config = await loadConfig({ argv: [], env: {} })
  t.deepEqual(config, defaultConfig())
  t.is(config.http.port, 8080)
  t.is(config.onboarding.mode, 'open')
  t.true(config.rate_limit.enabled)
  t.deepEqual(config.http.cors_origins, ['*'])
  t.deepEqual(config.p2p.bootstrap, [])
})

test('defaultConfig returns independent copies (list defaults are not shared)', t => {
  const a = defaultConfig()
  a.http.cors_origins.push('https://mutated.example')
  t.deepEqual(defaultConfig().http.cors_origins, ['*'])
})

test('precedence: defaults < TOML file < environment < flags', async t => {
  const file = await tomlFile(
    'precedence.toml',
    [
      'name = "from-file"',
      'host = "file.example"',
      '[http]',
      'port = 9001',
      'body_limit_bytes = 4096',
      '[rate_limit]',
      'reads_per_minute = 11',
      'writes_per_minute = 12',
      '[log]',
      'level = "warn"'
    ].join('\n')
  )

  const fileOnly = await loadConfig({ argv: ['--config', file], env: {} })
  t.is(fileOnly.name, 'from-file')
  t.is(fileOnly.host, 'file.example')
  t.is(fileOnly.http.port, 9001)
  t.is(fileOnly.http.body_limit_bytes, 4096)
  t.is(fileOnly.rate_limit.reads_per_minute, 11)
  t.is(fileOnly.log.level, 'warn')
  t.is(fileOnly.http.host, '0.0.0.0', 'unset keys keep their defaults')
  t.is(fileOnly.p2p.port, 4001)

  const env = {
    REGISTRY_NODE_HTTP_PORT: '9002',
    REGISTRY_NODE_RATE_LIMIT_READS_PER_MINUTE: '21',
    REGISTRY_NODE_NAME: 'from-env'
  }
  const withEnv = await loadConfig({ argv: ['--config', file], env })
  t.is(withEnv.http.port, 9002)
  t.is(withEnv.rate_limit.reads_per_minute, 21)
  t.is(withEnv.name, 'from-env')
  t.is(withEnv.rate_limit.writes_per_minute, 12, 'the file still applies where the environment is silent')

  const withFlags = await loadConfig({ argv: ['--config', file, '--http-port', '9003', '--name=from-flag'], env })
  t.is(withFlags.http.port, 9003)
  t.is(withFlags.name, 'from-flag')
  t.is(withFlags.rate_limit.reads_per_minute, 21)
  t.is(withFlags.host, 'file.example')
})

test('the config file may also be named by REGISTRY_NODE_CONFIG; --config wins', async t => {
  const a = await tomlFile('env-named.toml', 'name = "env-named"\n')
  const b = await tomlFile('flag-named.toml', 'name = "flag-named"\n')
  t.is((await loadConfig({ env: { REGISTRY_NODE_CONFIG: a } })).name, 'env-named')
  t.is((await loadConfig({ argv: ['--config', b], env: { REGISTRY_NODE_CONFIG: a } })).name, 'flag-named')
})

test('environment names and coercion; empty values are ignored', async t => {
  const port = SETTINGS.find(s => s.key === 'http.port')!
  t.is(envName(port), 'REGISTRY_NODE_HTTP_PORT')
  const config = await loadConfig({
    env: {
      REGISTRY_NODE_METRICS_ENABLED: 'yes',
      REGISTRY_NODE_RATE_LIMIT_ENABLED: 'off',
      REGISTRY_NODE_HTTP_CORS_ORIGINS: 'https://a.example, https://b.example',
      REGISTRY_NODE_ONBOARDING_MODE: 'restricted',
      REGISTRY_NODE_HOST: ''
    }
  })
  t.true(config.metrics.enabled)
  t.false(config.rate_limit.enabled)
  t.deepEqual(config.http.cors_origins, ['https://a.example', 'https://b.example'])
  t.is(config.onboarding.mode, 'restricted')
  t.is(config.host, 'localhost')
})

test('--no-rate-limit and other boolean flag forms', async t => {
  t.false((await loadConfig({ argv: ['--no-rate-limit'], env: {} })).rate_limit.enabled)
  t.false(
    (await loadConfig({ argv: ['--no-rate-limit'], env: { REGISTRY_NODE_RATE_LIMIT_ENABLED: 'true' } })).rate_limit
      .enabled,
    'flags beat the environment'
  )
  t.true((await loadConfig({ argv: ['--metrics'], env: {} })).metrics.enabled)
  t.true((await loadConfig({ argv: ['--metrics=on'], env: {} })).metrics.enabled)
  t.false((await loadConfig({ argv: ['--metrics=false'], env: {} })).metrics.enabled)
  await t.throwsAsync(loadConfig({ argv: ['--metrics=maybe'], env: {} }), { instanceOf: ConfigError })
})

test('--dev: http entity URLs, private card addresses, no rate limits, each still set by the file, environment or flags', async t => {
  const plain = await loadConfig({ argv: [], env: {} })
  t.like(plain, { dev: false, entities: { allow_http_url: false }, rate_limit: { enabled: true } })
  const dev = await loadConfig({ argv: ['--dev'], env: {} })
  t.like(dev, {
    dev: true,
    entities: { allow_http_url: true },
    cards: { allow_private_addresses: true },
    rate_limit: { enabled: false }
  })
  t.true((await loadConfig({ argv: [], env: { REGISTRY_NODE_DEV: 'true' } })).rate_limit.enabled === false)
  const file = await tomlFile('dev.toml', 'dev = true\n[rate_limit]\nenabled = true\n')
  const fromFile = await loadConfig({ argv: ['--config', file], env: {} })
  t.like(
    fromFile,
    { dev: true, entities: { allow_http_url: true }, rate_limit: { enabled: true } },
    'the file sets rate limits back on'
  )
  t.true((await loadConfig({ argv: ['--dev', '--rate-limit'], env: {} })).rate_limit.enabled, 'a flag beats the preset')
})

test('an unknown key in the file or a REGISTRY_NODE_* variable is an error naming the nearest known one', async t => {
  const typo = await tomlFile('typo.toml', '[http]\nprot = 18090\n')
  await t.throwsAsync(loadConfig({ argv: ['--config', typo], env: {} }), {
    instanceOf: ConfigError,
    message: /unknown setting http\.prot; did you mean http\.port\?/
  })
  const stray = await tomlFile('stray.toml', '[nonsense]\nwhatever = 1\n')
  await t.throwsAsync(loadConfig({ argv: ['--config', stray], env: {} }), {
    instanceOf: ConfigError,
    message: /unknown setting nonsense\.whatever$/
  })
  await t.throwsAsync(loadConfig({ argv: [], env: { REGISTRY_NODE_HTTP_PROT: '1' } }), {
    instanceOf: ConfigError,
    message: /unknown environment variable REGISTRY_NODE_HTTP_PROT; did you mean REGISTRY_NODE_HTTP_PORT\?/
  })
  // The variables of the other commands are known.
  const other = { REGISTRY_NODE_URL: 'http://x', REGISTRY_NODE_CONFIG: '', REGISTRY_NODE_SETTLEMENT_KEY: '0x1' }
  t.is((await loadConfig({ argv: [], env: other })).http.port, 8080)
})

test('every effective setting says where it came from: default, --dev, the file, a variable or a flag', async t => {
  const file = await tomlFile('sources.toml', '[http]\nport = 9001\n')
  const { config, sources } = await loadConfigWithSources({
    argv: ['--config', file, '--dev', '--p2p-port', '4111'],
    env: { REGISTRY_NODE_NAME: 'from-env' }
  })
  t.is(config.http.port, 9001)
  t.is(sources.get('http.port'), `file ${file}`)
  t.is(sources.get('name'), 'environment REGISTRY_NODE_NAME')
  t.is(sources.get('p2p.port'), 'flag --p2p-port')
  t.is(sources.get('rate_limit.enabled'), '--dev')
  t.is(sources.get('log.level'), 'default')
  t.is(sources.size, SETTINGS.length)
})

test('list flags repeat and split on commas', async t => {
  const config = await loadConfig({
    argv: [
      '--bootstrap',
      '/ip4/1.1.1.1/tcp/4001',
      '--bootstrap=/ip4/2.2.2.2/tcp/4001,/ip4/3.3.3.3/tcp/4001',
      '--bootstrap',
      ' /dns4/x/tcp/1 , '
    ],
    env: {}
  })
  t.deepEqual(config.p2p.bootstrap, [
    '/ip4/1.1.1.1/tcp/4001',
    '/ip4/2.2.2.2/tcp/4001',
    '/ip4/3.3.3.3/tcp/4001',
    '/dns4/x/tcp/1'
  ])
  const file = await tomlFile(
    'lists.toml',
    '[p2p]\nbootstrap = ["/ip4/9.9.9.9/tcp/1"]\n[http]\ntrusted_proxies = ["10.0.0.0/8"]\n'
  )
  const fromFile = await loadConfig({ argv: ['--config', file], env: {} })
  t.deepEqual(fromFile.p2p.bootstrap, ['/ip4/9.9.9.9/tcp/1'])
  t.deepEqual(fromFile.http.trusted_proxies, ['10.0.0.0/8'])
  const overridden = await loadConfig({ argv: ['--config', file, '--bootstrap', '/ip4/8.8.8.8/tcp/1'], env: {} })
  t.deepEqual(overridden.p2p.bootstrap, ['/ip4/8.8.8.8/tcp/1'], 'a flag replaces the file list rather than appending')
})

test('positionals are kept apart from flags', t => {
  const parsed = parseFlags(['start', '--http-port', '1234', 'extra'])
  t.deepEqual(parsed.positionals, ['start', 'extra'])
  t.is(parsed.configFile, undefined)
  t.is([...parsed.values.values()][0], 1234)
})

test('unknown flags, missing values, bad integers and bad choices are ConfigErrors', async t => {
  await t.throwsAsync(loadConfig({ argv: ['--frobnicate'], env: {} }), {
    instanceOf: ConfigError,
    message: /unknown flag --frobnicate/
  })
  await t.throwsAsync(loadConfig({ argv: ['--http-prot', '9000'], env: {} }), {
    instanceOf: ConfigError,
    message: 'unknown flag --http-prot; did you mean --http-port?'
  })
  await t.throwsAsync(loadConfig({ argv: ['--no-http-port'], env: {} }), {
    instanceOf: ConfigError,
    message: /unknown flag/
  })
  await t.throwsAsync(loadConfig({ argv: ['--http-port'], env: {} }), {
    instanceOf: ConfigError,
    message: /needs a value/
  })
  await t.throwsAsync(loadConfig({ argv: ['--http-port', '--metrics'], env: {} }), {
    instanceOf: ConfigError,
    message: /needs a value/
  })
  await t.throwsAsync(loadConfig({ argv: ['--http-port', 'eighty'], env: {} }), {
    instanceOf: ConfigError,
    message: /integer/
  })
  await t.throwsAsync(loadConfig({ argv: ['--http-port', '80.5'], env: {} }), {
    instanceOf: ConfigError,
    message: /integer/
  })
  await t.throwsAsync(loadConfig({ argv: ['--http-port', '70000'], env: {} }), {
    instanceOf: ConfigError,
    message: /at most 65535/
  })
  await t.throwsAsync(loadConfig({ argv: ['--body-limit', '10'], env: {} }), {
    instanceOf: ConfigError,
    message: /at least 1024/
  })
  await t.throwsAsync(loadConfig({ argv: ['--mode', 'closed'], env: {} }), {
    instanceOf: ConfigError,
    message: /open, restricted/
  })
  await t.throwsAsync(loadConfig({ argv: ['--log-level', 'loud'], env: {} }), { instanceOf: ConfigError })
  await t.throwsAsync(loadConfig({ argv: ['--replica-of', 'registry.example.com'], env: {} }), {
    instanceOf: ConfigError,
    message: /replica_of \(--replica-of\): expected an http:\/\/ or https:\/\/ URL/
  })
  t.is(
    (await loadConfig({ argv: ['--replica-of', 'https://registry.example.com'], env: {} })).replica_of,
    'https://registry.example.com'
  )
  await t.throwsAsync(loadConfig({ argv: [], env: { REGISTRY_NODE_HTTP_PORT: 'x' } }), {
    instanceOf: ConfigError,
    message: /REGISTRY_NODE_HTTP_PORT/
  })
})

test('config file errors are ConfigErrors', async t => {
  await t.throwsAsync(loadConfig({ argv: ['--config', join(dir, 'missing.toml')], env: {} }), {
    instanceOf: ConfigError,
    message: /cannot read config file/
  })
  const broken = await tomlFile('broken.toml', '[http\nport = 1\n')
  await t.throwsAsync(loadConfig({ argv: ['--config', broken], env: {} }), { instanceOf: ConfigError })
  const wrongType = await tomlFile('wrong-type.toml', '[http]\nport = "eighty"\n')
  await t.throwsAsync(loadConfig({ argv: ['--config', wrongType], env: {} }), {
    instanceOf: ConfigError,
    message: /http\.port/
  })
  const badMode = await tomlFile('bad-mode.toml', '[onboarding]\nmode = "closed"\n')
  await t.throwsAsync(loadConfig({ argv: ['--config', badMode], env: {} }), { instanceOf: ConfigError })
})

test('configTemplate parses as TOML and, loaded back, gives the defaults', async t => {
  const text = configTemplate()
  const parsed = parseToml(text) as Record<string, unknown>
  t.true(typeof parsed === 'object')
  for (const s of SETTINGS) t.true(text.includes(`--${s.flag}`), `documents --${s.flag}`)
  const file = await tomlFile('template.toml', text)
  t.deepEqual(await loadConfig({ argv: ['--config', file], env: {} }), defaultConfig())
})

test('configTemplate with overrides sets those keys', async t => {
  const text = configTemplate({
    data_dir: '/var/lib/registry',
    'http.port': 9090,
    'onboarding.mode': 'restricted',
    'metrics.enabled': true,
    'rate_limit.enabled': false,
    'p2p.bootstrap': ['/ip4/1.2.3.4/tcp/4001']
  })
  const parsed = parseToml(text) as Record<string, Record<string, unknown>>
  t.is(parsed.data_dir as unknown, '/var/lib/registry')
  t.is(parsed.http?.port, 9090)
  t.is(parsed.onboarding?.mode, 'restricted')
  t.is(parsed.metrics?.enabled, true)
  t.is(parsed.rate_limit?.enabled, false)
  t.deepEqual(parsed.p2p?.bootstrap, ['/ip4/1.2.3.4/tcp/4001'])
  t.is(parsed.http?.host, undefined, 'keys without overrides stay commented out')
  const file = await tomlFile('template-overrides.toml', text)
  const config = await loadConfig({ argv: ['--config', file], env: {} })
  t.is(config.data_dir, '/var/lib/registry')
  t.is(config.http.port, 9090)
  t.is(config.onboarding.mode, 'restricted')
  t.true(config.metrics.enabled)
  t.false(config.rate_limit.enabled)
  t.deepEqual(config.p2p.bootstrap, ['/ip4/1.2.3.4/tcp/4001'])
})

test('configTemplate escapes strings so they survive TOML', t => {
  const tricky = 'C:\\data "quoted"\tand\u00e9'
  const parsed = parseToml(configTemplate({ name: tricky })) as Record<string, unknown>
  t.is(parsed.name, tricky)
})

test('a profile presets mesh settings above the defaults and names itself as their source', async t => {
  const { config, sources } = await loadConfigWithSources({
    argv: ['--profile', 'private', '--allow-peer', '12D3KooWPeerA'],
    env: {}
  })
  t.like(config.p2p, { relay_server: false, relay_client: 'off', reachability_check: false, hole_punching: false })
  t.is(sources.get('p2p.relay_server'), 'profile private')
  t.is(sources.get('p2p.upnp'), 'profile private')
  t.is(sources.get('profile'), 'flag --profile')
  t.is(sources.get('p2p.target_peers'), 'default', 'what the profile leaves alone stays at its default')
  const pub = await loadConfigWithSources({ argv: [], env: { REGISTRY_NODE_PROFILE: 'public' } })
  t.is(pub.config.p2p.relay_server, true)
  t.is(pub.sources.get('p2p.relay_server'), 'profile public')
  t.is(pub.sources.get('profile'), 'environment REGISTRY_NODE_PROFILE')
  const none = await loadConfigWithSources({ argv: [], env: {} })
  t.is(none.config.profile, 'none')
  t.false([...none.sources.values()].some(source => source.startsWith('profile')))
})

test('the file, environment and flags each win over the profile', async t => {
  const file = await tomlFile(
    'profile.toml',
    'profile = "private"\n[p2p]\nallow_peers = ["12D3KooWPeerA"]\nrelay_server = true\n'
  )
  const { config, sources } = await loadConfigWithSources({
    argv: ['--config', file, '--hole-punching'],
    env: { REGISTRY_NODE_P2P_RELAY_CLIENT: 'always' }
  })
  t.is(config.profile, 'private')
  t.is(sources.get('profile'), `file ${file}`)
  t.true(config.p2p.relay_server)
  t.is(sources.get('p2p.relay_server'), `file ${file}`)
  t.is(config.p2p.relay_client, 'always')
  t.is(sources.get('p2p.relay_client'), 'environment REGISTRY_NODE_P2P_RELAY_CLIENT')
  t.true(config.p2p.hole_punching)
  t.is(sources.get('p2p.hole_punching'), 'flag --hole-punching')
  t.false(config.p2p.reachability_check)
  t.is(sources.get('p2p.reachability_check'), 'profile private')
  const flagWins = await loadConfig({ argv: ['--config', file, '--profile', 'public'], env: {} })
  t.is(flagWins.profile, 'public', 'the flag picks the profile over the file')
  t.is(flagWins.p2p.reachability_check, true)
})

test('an unknown profile, a private one without an allow list and public with --dev are one line each', async t => {
  const unknown = await t.throwsAsync(loadConfig({ argv: ['--profile', 'pubilc'], env: {} }), {
    instanceOf: ConfigError
  })
  t.is(unknown?.message, 'profile (--profile): expected one of none, public, private; did you mean public?')
  const env = await t.throwsAsync(loadConfig({ argv: [], env: { REGISTRY_NODE_PROFILE: 'privat' } }))
  t.regex(env?.message ?? '', /REGISTRY_NODE_PROFILE.*did you mean private\?$/)
  const far = await t.throwsAsync(loadConfig({ argv: ['--profile', 'open-mesh'], env: {} }))
  t.is(far?.message, 'profile (--profile): expected one of none, public, private')
  const closed = await t.throwsAsync(loadConfig({ argv: ['--profile', 'private'], env: {} }), {
    instanceOf: ConfigError
  })
  t.regex(closed?.message ?? '', /^profile private needs p2p\.allow_peers \(--allow-peer/)
  t.false(closed?.message.includes('\n'))
  await t.notThrowsAsync(
    loadConfig({ argv: ['--profile', 'private', '--no-p2p'], env: {} }),
    'no mesh, no allow list needed'
  )
  const dev = await t.throwsAsync(loadConfig({ argv: ['--profile', 'public', '--dev'], env: {} }))
  t.regex(dev?.message ?? '', /^profile public and --dev \(dev\) contradict/)
})

test('every profile presets real settings with values their rows accept', async t => {
  const keys = new Map(SETTINGS.map(s => [s.key, s]))
  for (const [name, preset] of Object.entries(PROFILES)) {
    for (const [key, value] of Object.entries(preset)) {
      const setting = keys.get(key)
      t.truthy(setting, `${name}: ${key} is a setting`)
      const file = await tomlFile(`preset-${name}.toml`, '')
      const flag =
        setting!.kind === 'boolean'
          ? [value ? `--${setting!.flag}` : `--no-${setting!.flag}`]
          : [`--${setting!.flag}`, String(value)]
      const loaded = await loadConfig({ argv: ['--config', file, ...flag, '--allow-peer', 'x'], env: {} })
      t.deepEqual(
        key.split('.').reduce<unknown>((at, part) => (at as Record<string, unknown>)[part], loaded),
        value
      )
    }
  }
})

test('a public node listening on a private address without announcing one is warned at start', t => {
  const base = defaultConfig()
  const at = (profile: 'none' | 'public', host: string, announce: string[] = []) =>
    profileWarnings({ ...base, profile, p2p: { ...base.p2p, host, announce } })
  t.deepEqual(at('public', '0.0.0.0'), [])
  t.is(at('public', '192.168.1.20').length, 1)
  t.regex(at('public', '127.0.0.1')[0] ?? '', /p2p\.host 127\.0\.0\.1, a private address, and no p2p\.announce/)
  t.deepEqual(at('public', '10.0.0.5', ['/ip4/203.0.113.7/tcp/4001']), [])
  t.deepEqual(at('none', '127.0.0.1'), [])
  for (const ip of [
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '100.64.0.1',
    '169.254.1.1',
    '::1',
    'fd00::1',
    'fe80::1'
  ])
    t.true(isPrivateAddress(ip), ip)
  for (const ip of ['172.32.0.1', '203.0.113.7', '8.8.8.8', '2001:db8::1', '0.0.0.0']) t.false(isPrivateAddress(ip), ip)
})
