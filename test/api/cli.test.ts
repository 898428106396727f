import { execFile, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import test from 'ava'
import { parse as parseToml } from 'smol-toml'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'
import { PORT_TAKEN } from '../../src/testnet/node-process.js'
import { http, startTestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'
import { outputOf } from '../helpers/shared.js'

const exec = promisify(execFile)

async function cli(cwd: string, args: string[], input?: string): Promise<string> {
  const child = exec(process.execPath, [...CLI_FOR_TESTS, ...args], { cwd })
  if (input !== undefined) {
    child.child.stdin!.end(input)
  }
  return (await child).stdout
}

test('the registry guide walk-through: keys, signed bodies, register, read, update, deregister', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-cli-'))
  const node = await startTestNode()
  try {
    const dev = JSON.parse(await cli(dir, ['keys', 'new', '--out', 'keys/developer.json'])) as {
      developer_id: string
      public_key: string
    }
    t.regex(dev.developer_id, /^zns:dev:[0-9a-f]{32}$/)
    const derived = JSON.parse(
      await cli(dir, [
        'keys',
        'derive',
        '--developer',
        'keys/developer.json',
        '--index',
        '0',
        '--out',
        'keys/agent0.json'
      ])
    ) as {
      entity_id: string
      developer_proof: { index: number }
    }
    t.is(derived.developer_proof.index, 0)

    const devBody = await cli(
      dir,
      ['keys', 'sign', '--key', 'keys/developer.json', '--body', '-'],
      '{"name": "Alice the Builder", "github": "alice"}'
    )
    t.is((await http(node.url, 'POST', '/v1/developers', { raw: devBody })).status, 201)

    await writeFile(
      join(dir, 'agent.json'),
      JSON.stringify({
        name: 'Doc Translator',
        type: 'agent',
        category: 'translation',
        entity_url: 'https://translator.example.com'
      })
    )
    const agentBody = await cli(dir, [
      'keys',
      'sign',
      '--key',
      'keys/agent0.json',
      '--body',
      'agent.json',
      '--with-proof'
    ])
    const registered = await http(node.url, 'POST', '/v1/entities', { raw: agentBody })
    t.is(registered.status, 201, JSON.stringify(registered.body))
    t.is(registered.body.entity_id, derived.entity_id)
    t.like((await http(node.url, 'GET', `/v1/entities/${derived.entity_id}`)).body, {
      developer_id: dev.developer_id,
      name: 'Doc Translator'
    })

    const update = await cli(
      dir,
      ['keys', 'sign', '--key', 'keys/agent0.json', '--body', '-'],
      '{"summary": "Translates and summarises documents"}'
    )
    t.like((await http(node.url, 'PUT', `/v1/entities/${derived.entity_id}`, { raw: update })).body, {
      summary: 'Translates and summarises documents'
    })

    const signature = (
      await cli(dir, ['keys', 'sign', '--key', 'keys/agent0.json', '--message', derived.entity_id])
    ).trim()
    t.is(
      (
        await http(node.url, 'DELETE', `/v1/entities/${derived.entity_id}`, {
          headers: { authorization: `Bearer ${signature}` }
        })
      ).status,
      200
    )
    t.is((await http(node.url, 'GET', `/v1/entities/${derived.entity_id}`)).status, 404)

    const shown = JSON.parse(await cli(dir, ['keys', 'show', '--key', 'keys/agent0.json'])) as {
      entity_ids: { agent: string }
    }
    t.is(shown.entity_ids.agent, derived.entity_id)
    await t.throwsAsync(
      cli(dir, ['keys', 'new', '--out', 'keys/developer.json']),
      undefined,
      'never overwrites a key file'
    )
    await t.throwsAsync(
      cli(dir, ['keys', 'derive', '--developer', 'keys/developer.json']),
      undefined,
      'the index is never defaulted'
    )
  } finally {
    await node.stop()
    await rm(dir, { recursive: true, force: true })
  }
})

test('init creates the node identity and a commented TOML config that start reads', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-init-'))
  try {
    const out = JSON.parse(await cli(dir, ['init', '--data', 'nodedata', '--config', 'node.toml'])) as {
      registry_id: string
      config_written: boolean
    }
    t.regex(out.registry_id, /^zns:registry:[0-9a-f]{32}$/)
    t.true(out.config_written)
    const text = await readFile(join(dir, 'node.toml'), 'utf8')
    t.true(text.includes('# Public host name'))
    t.is((parseToml(text) as { data_dir: string }).data_dir, 'nodedata')
    t.truthy(await stat(join(dir, 'nodedata', 'node-key.json')))
    const again = JSON.parse(await cli(dir, ['init', '--data', 'nodedata', '--config', 'node.toml'])) as {
      registry_id: string
      config_written: boolean
    }
    t.is(again.registry_id, out.registry_id, 'the identity is kept')
    t.false(again.config_written, 'an existing config file is not overwritten')
    const help = await cli(dir, ['start', '--help'])
    t.true(help.includes('--no-rate-limit'))
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('init --mode restricted writes a webhook secret; verify-registry checks a live node', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-restricted-'))
  const node = await startTestNode()
  try {
    const out = JSON.parse(
      await cli(dir, [
        'init',
        '--mode',
        'restricted',
        '--auth-url',
        'https://auth.example',
        '--data',
        'd',
        '--config',
        'r.toml'
      ])
    ) as { webhook_secret: string }
    t.regex(out.webhook_secret, /^whsec_[0-9a-f]{64}$/)
    const config = parseToml(await readFile(join(dir, 'r.toml'), 'utf8')) as {
      onboarding: { mode: string; webhook_secret: string; auth_url: string }
    }
    t.like(config.onboarding, {
      mode: 'restricted',
      webhook_secret: out.webhook_secret,
      auth_url: 'https://auth.example'
    })
    const report = await cli(dir, ['verify-registry', node.url])
    t.regex(report, /registry-identity|Registry identity proof/i)
    t.true(report.trimEnd().endsWith('OK'), report)
    await t.throwsAsync(
      cli(dir, ['verify-registry', 'http://127.0.0.1:9']),
      undefined,
      'an unreachable node fails with a non-zero exit'
    )
  } finally {
    await node.stop()
    await rm(dir, { recursive: true, force: true })
  }
})

test('init writes every setting it is given, and says when an existing file keeps its own', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-cli-init-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const given = ['--host', 'node.example.org', '--http-port', '18090', '--p2p-port', '14101', '--name', 'n1']
  const out = JSON.parse(await cli(dir, ['init', ...given])) as { config_written: boolean }
  t.true(out.config_written)
  const file = parseToml(await readFile(join(dir, 'registry-node.toml'), 'utf8')) as {
    host: string
    name: string
    http: { port: number }
    p2p: { port: number }
  }
  t.like(file, { host: 'node.example.org', name: 'n1', http: { port: 18090 }, p2p: { port: 14101 } })
  const again = JSON.parse(await cli(dir, ['init', '--name', 'n2'])) as {
    config_written: boolean
    flags_not_written?: string
  }
  t.false(again.config_written)
  t.regex(again.flags_not_written ?? '', /--force/)
})

test('start warns when the mesh is on and host is localhost, and not once a host is set', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-cli-host-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const warning = /warning: host is "localhost" with the mesh on/
  for (const [flags, warns] of [
    [[], true],
    [['--host', 'node.example.org'], false]
  ] as const) {
    const child = spawn(
      process.execPath,
      [
        ...CLI_FOR_TESTS,
        'start',
        '--data',
        join(dir, `d${flags.length}`),
        '--http-port',
        '0',
        '--p2p-port',
        '0',
        ...flags
      ],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }
    )
    const output = outputOf(child)
    await until('the node prints its p2p line', () => /registry-node p2p /.test(output()) || undefined, 60_000)
    const exited = new Promise(resolve => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
    t.is(warning.test(output()), warns, output())
  }
})

test('SIGTERM to the npm start process, as a supervisor sends it, stops the node', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-cli-npm-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const data = join(dir, 'data')
  const npm = spawn(
    'npm',
    ['start', '--', '--data', data, '--http-port', '0', '--p2p-port', '0', '--host', 'node.example.org'],
    { cwd: fileURLToPath(new URL('../../', import.meta.url)), stdio: ['ignore', 'pipe', 'pipe'] }
  )
  const output = outputOf(npm)
  await until('the node prints its p2p line', () => /registry-node p2p /.test(output()) || undefined, 60_000)
  const nodePid = Number.parseInt(await readFile(join(data, 'registry-node.pid'), 'utf8'), 10)
  const exited = new Promise(resolve => npm.once('exit', resolve))
  npm.kill('SIGTERM')
  await exited
  await until(
    'the node process is gone',
    () => {
      try {
        process.kill(nodePid, 0)
        return false
      } catch {
        return true
      }
    },
    10_000
  )
  t.pass()
})

/** Holds a free loopback-and-any port the way another process would; returns it and how to let it go. */
async function holdPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen({ host: '0.0.0.0', port: 0, exclusive: true }, resolve))
  const port = (server.address() as { port: number }).port
  return { port, release: () => new Promise(resolve => server.close(() => resolve())) }
}

async function startFails(dir: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  try {
    await exec(process.execPath, [...CLI_FOR_TESTS, 'start', '--data', join(dir, 'data'), ...args], {
      cwd: dir,
      timeout: 60_000
    })
    return { code: 0, stderr: '' }
  } catch (err) {
    const failed = err as { code: number | null; stderr: string }
    return { code: failed.code, stderr: failed.stderr }
  }
}

test('a taken port is one line naming the port and the setting, on both HTTP servers and for the mesh', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-cli-ports-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const held = await holdPort()
  t.teardown(held.release)
  for (const server of ['uws', 'node']) {
    const { code, stderr } = await startFails(dir, [
      '--http-port',
      String(held.port),
      '--p2p-port',
      '0',
      '--http-server',
      server === 'uws' ? 'auto' : 'node'
    ])
    t.is(code, 2, stderr)
    t.is(stderr.trim().split('\n').length, 1, stderr)
    t.regex(stderr, new RegExp(`port ${held.port} on 0\\.0\\.0\\.0 is in use.*--http-port`))
    t.regex(stderr, PORT_TAKEN, 'a testnet recognises it and starts the node on other ports')
  }
  const { code, stderr } = await startFails(dir, ['--http-port', '0', '--p2p-port', String(held.port)])
  t.is(code, 2, stderr)
  t.is(stderr.trim().split('\n').length, 1, stderr)
  t.regex(stderr, new RegExp(`p2p port ${held.port} is in use.*--p2p-port`))
  t.regex(stderr, PORT_TAKEN, 'a testnet recognises it and starts the node on other ports')
})

test("a second node on a running node's data directory exits 1 naming the holder", async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-cli-lock-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const first = spawn(
    process.execPath,
    [
      ...CLI_FOR_TESTS,
      'start',
      '--data',
      join(dir, 'data'),
      '--http-port',
      '0',
      '--p2p-port',
      '0',
      '--host',
      'a.example'
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }
  )
  let out = ''
  first.stdout.on('data', d => {
    out += d
  })
  await until('the first node prints its p2p line', () => /registry-node p2p /.test(out) || undefined, 60_000)
  const { code, stderr } = await startFails(dir, ['--http-port', '0', '--p2p-port', '0'])
  t.is(code, 1, stderr)
  t.regex(
    stderr,
    new RegExp(
      `^registry-node: data directory .*data is in use by process ${first.pid}; stop it or choose another --data\\n$`
    )
  )
  const exited = new Promise(resolve => first.once('exit', resolve))
  first.kill('SIGTERM')
  await exited
})
