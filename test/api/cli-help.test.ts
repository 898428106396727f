/**
 * Asking for help never acts: `--help` and `-h` on every command print its usage and exit 0, and
 * nothing is written, started or listened on.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import test from 'ava'
import { CLI_FROM_SOURCES } from '../../scripts/lib/node-process.js'
import { COMMANDS } from '../../src/cli-help.js'

const exec = promisify(execFile)

async function run(args: string[]): Promise<{ stdout: string; files: string[] }> {
  const cwd = await mkdtemp(join(tmpdir(), 'cli-help-'))
  try {
    const { stdout } = await exec(process.execPath, [...CLI_FROM_SOURCES, ...args], { cwd, timeout: 30_000 })
    return { stdout, files: await readdir(cwd) }
  } finally {
    await rm(cwd, { recursive: true, force: true })
  }
}

test('registry-node --help lists every command, and nothing else runs', async t => {
  for (const args of [['--help'], ['-h'], ['help'], []]) {
    const { stdout, files } = await run(args)
    for (const command of COMMANDS)
      t.regex(stdout, new RegExp(`\\n  ${command.name} `), `${args.join(' ')}: ${command.name}`)
    t.deepEqual(files, [])
  }
})

for (const command of COMMANDS) {
  test(`registry-node ${command.name} --help prints its usage, exits 0 and writes nothing`, async t => {
    const words = command.name.split(' ')
    // With the arguments a reader would add, help still wins: `start --http-port 1 -h`, `keys new --out x -h`.
    for (const args of [
      [...words, '--help'],
      [...words, '-h'],
      [...words, '--out', 'k.json', '--config', 'c.toml', '-h'],
      ['help', ...words]
    ]) {
      const { stdout, files } = await run(args)
      t.true(stdout.startsWith(`Usage: registry-node ${command.name} `), `${args.join(' ')}:\n${stdout}`)
      t.regex(stdout, /\nFlags:\n/)
      t.regex(stdout, /\nExamples:\n {2}registry-node /)
      t.deepEqual(files, [], args.join(' '))
    }
  })
}

test('start --help lists every setting by section', async t => {
  const { stdout } = await run(['start', '--help'])
  t.regex(stdout, /\[p2p\]/)
  t.regex(stdout, /--http-port N +default 8080/)
  t.regex(stdout, /--\[no-\]/)
})
