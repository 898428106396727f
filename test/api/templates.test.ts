/**
 * The files the CLI writes start what they configure with every commented line uncommented: the
 * node's registry-node.toml (init) and an entity's entity.toml (entity init), payments included.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import test from 'ava'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'
import { startTestNode } from '../helpers/node.js'

const exec = promisify(execFile)
/** Anvil's account #0: any well-formed key does, since starting settles nothing. */
const SETTLEMENT_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'

/** `# key = value` and `# [table]` become live lines; prose comments stay. */
const uncommentAll = (toml: string): string => toml.replace(/^# (\[[a-z_.]+\]|[a-z_]+ = )/gm, '$1')

async function cli(cwd: string, args: string[]): Promise<string> {
  return (await exec(process.execPath, [...CLI_FOR_TESTS, ...args], { cwd })).stdout
}

/** Runs a long-lived command until its output matches `ready`; resolves with the output. */
function runUntil(cwd: string, args: string[], ready: RegExp): Promise<{ child: ChildProcess; out: string }> {
  const child = spawn(process.execPath, [...CLI_FOR_TESTS, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready in 60 s:\n${out}`)), 60_000)
    const seen = (chunk: Buffer): void => {
      out += chunk
      if (ready.test(out)) {
        clearTimeout(timer)
        resolve({ child, out })
      }
    }
    child.stdout?.on('data', seen)
    child.stderr?.on('data', seen)
    child.on('exit', code => {
      clearTimeout(timer)
      reject(new Error(`exited ${code}:\n${out}`))
    })
  })
}

async function stop(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit')
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

test("init's registry-node.toml starts a node with every setting uncommented", async t => {
  const dir = await mkdtemp(join(tmpdir(), 'template-node-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await cli(dir, ['init', '--config', 'node.toml'])
  const written = await readFile(join(dir, 'node.toml'), 'utf8')
  const live = uncommentAll(written)
  t.true(live.split('\n').filter(l => /^[a-z_]+ = /.test(l)).length > 80, 'every setting is in the file')
  await writeFile(join(dir, 'node.toml'), live)
  // The defaults' fixed ports may be taken here; flags override the file.
  const { child, out } = await runUntil(
    dir,
    ['start', '--config', 'node.toml', '--http-port', '0', '--p2p-port', '0', '--http-host', '127.0.0.1'],
    /registry-node p2p /
  )
  t.regex(out, /listening on http:\/\/127\.0\.0\.1:\d+/)
  await stop(child)
})

test("entity init's entity.toml starts a priced entity with every commented line uncommented", async t => {
  const node = await startTestNode({ entities: { allow_http_url: true }, cards: { allow_private_addresses: true } })
  const dir = await mkdtemp(join(tmpdir(), 'template-entity-'))
  t.teardown(async () => {
    await node.stop()
    await rm(dir, { recursive: true, force: true })
  })
  await cli(dir, ['keys', 'new', '--out', 'developer.json'])
  await cli(dir, ['entity', 'init', '--developer', 'developer.json', '--name', 'Echo Bot', '--registry', node.url])
  const toml = await readFile(join(dir, 'echo-bot/entity.toml'), 'utf8')
  t.regex(toml, /^# \[payments\]$/m)
  await writeFile(join(dir, 'echo-bot/entity.toml'), uncommentAll(toml))
  // Where the template says the local chain writes it (npm run local-chain).
  await mkdir(join(dir, 'local-chain'))
  await writeFile(join(dir, 'local-chain/settlement-key.txt'), `${SETTLEMENT_KEY}\n`)
  const { child, out } = await runUntil(
    dir,
    ['entity', 'serve', '--config', 'echo-bot/entity.toml', '--echo', '--registry', node.url],
    /priced: .*\n/
  )
  t.regex(out, /serving on http:\/\/127\.0\.0\.1:\d+ .*registered/)
  t.regex(out, /priced: 0\.01 USDC per \/webhook\/sync call on eip155:84532/)
  await stop(child)
})
