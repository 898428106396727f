/**
 * Profiles as an operator meets them on the command line: `config show` names the profile as the
 * source of what it set, a mistyped or incomplete profile is one line before anything starts, and a
 * public node that peers elsewhere could not dial says so when it starts.
 */
import { execFile, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import test from 'ava'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'
import { outputOf } from '../helpers/shared.js'
import { until } from '../helpers/wait.js'

const exec = promisify(execFile)
const PEER = '12D3KooWGzxzKZYveHXtpG6AsrUJBcWxHBFS2HsEoGTxrMLvKXtf'

async function cli(
  args: string[],
  env: NodeJS.ProcessEnv = {}
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [...CLI_FOR_TESTS, ...args], {
      env: { ...process.env, ...env },
      timeout: 60_000
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}

test('config show marks what the profile set, and what overrides it', async t => {
  const { code, stdout } = await cli([
    'config',
    'show',
    '--profile',
    'private',
    '--allow-peer',
    PEER,
    '--hole-punching'
  ])
  t.is(code, 0)
  t.regex(stdout, /^profile +\t?= "private" {3}# flag --profile$/m)
  t.regex(stdout, /^p2p\.relay_server +\t?= false {3}# profile private$/m)
  t.regex(stdout, /^p2p\.hole_punching +\t?= true {3}# flag --hole-punching$/m)
  t.regex(stdout, /^p2p\.target_peers +\t?= 8$/m)
  const json = await cli(['config', 'show', '--json'], { REGISTRY_NODE_PROFILE: 'public' })
  const shown = JSON.parse(json.stdout) as Record<string, { value: unknown; source: string }>
  t.deepEqual(shown['p2p.relay_server'], { value: true, source: 'profile public' })
})

test('a mistyped profile, a private one without an allow list and public with --dev are one line each', async t => {
  const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
    [
      ['config', 'check', '--profile', 'pubilc'],
      {},
      /^registry-node: profile \(--profile\): expected one of none, public, private; did you mean public\?$/
    ],
    [
      ['config', 'check'],
      { REGISTRY_NODE_PROFILE: 'privte' },
      /^registry-node: profile \(REGISTRY_NODE_PROFILE\): .*did you mean private\?$/
    ],
    [
      ['start', '--profile', 'private', '--http-port', '0', '--p2p-port', '0'],
      {},
      /^registry-node: profile private needs p2p\.allow_peers/
    ],
    [['start', '--profile', 'public', '--dev', '--http-port', '0'], {}, /^registry-node: profile public and --dev/]
  ]
  for (const [args, env, line] of cases) {
    const { code, stderr } = await cli(args, env)
    t.is(code, 2, stderr)
    t.is(stderr.trim().split('\n').length, 1, stderr)
    t.regex(stderr.trim(), line)
  }
})

test('a public node listening on loopback without an announced address is warned at start; init told its PeerId', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-profile-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const init = await cli(['init', '--config', join(dir, 'node.toml'), '--data', join(dir, 'data')])
  const { peer_id } = JSON.parse(init.stdout) as { peer_id: string }
  t.regex(peer_id, /^12D3KooW/)
  const child = spawn(
    process.execPath,
    [
      ...CLI_FOR_TESTS,
      'start',
      '--profile',
      'public',
      '--host',
      'node.example.org',
      '--data',
      join(dir, 'data'),
      '--http-port',
      '0',
      '--p2p-port',
      '0',
      '--p2p-host',
      '127.0.0.1'
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }
  )
  const out = outputOf(child)
  const exited = new Promise(resolve => child.once('exit', resolve))
  t.teardown(async () => {
    child.kill('SIGTERM')
    await exited
  })
  await until('the node prints its p2p line', () => /registry-node p2p /.test(out()) || undefined, 60_000)
  t.true(out().includes(`registry-node p2p ${peer_id} at `), out())
  t.regex(
    out(),
    /registry-node: warning: profile public with p2p\.host 127\.0\.0\.1, a private address, and no p2p\.announce/
  )
})
