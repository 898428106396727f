/**
 * Asking for help never acts: `--help` and `-h` on every command print its usage and exit 0, and
 * nothing is written, started or listened on.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import anyTest from 'ava'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'
import { COMMANDS } from '../../src/cli-help.js'

const exec = promisify(execFile)
// The same output under any runtime: not run again under the other runtimes of CI (scripts/runtimes.mjs).
const serial = process.env.REGISTRY_NODE_TEST_RUNTIME ? anyTest.skip : anyTest.serial

async function run(args: string[]): Promise<{ stdout: string; files: string[] }> {
  const cwd = await mkdtemp(join(tmpdir(), 'cli-help-'))
  try {
    const { stdout } = await exec(process.execPath, [...CLI_FOR_TESTS, ...args], { cwd, timeout: 60_000 })
    return { stdout, files: await readdir(cwd) }
  } finally {
    await rm(cwd, { recursive: true, force: true })
  }
}

serial('registry-node --help lists every command, and nothing else runs', async t => {
  for (const args of [['--help'], ['-h'], ['help'], []]) {
    const { stdout, files } = await run(args)
    for (const command of COMMANDS)
      t.regex(stdout, new RegExp(`\\n  ${command.name} `), `${args.join(' ')}: ${command.name}`)
    t.deepEqual(files, [])
  }
})

// One process at a time: some twenty CLI starts at once would measure the machine, not the CLI.
serial('every command: --help prints its usage, exits 0 and writes nothing', async t => {
  for (const command of COMMANDS) {
    const { stdout, files } = await run([...command.name.split(' '), '--help'])
    t.true(stdout.startsWith(`Usage: registry-node ${command.name} `), `${command.name} --help:\n${stdout}`)
    t.regex(stdout, /\nFlags:\n/)
    t.regex(stdout, /\nExamples:\n {2}registry-node /)
    t.deepEqual(files, [], command.name)
  }
})

serial('-h among the flags a command would act on, and help COMMAND, print the usage and act on nothing', async t => {
  for (const args of [
    ['keys', 'new', '--out', 'k.json', '-h'],
    ['start', '--http-port', '1', '-h'],
    ['init', '--config', 'c.toml', '-h'],
    ['entity', 'init', '--developer', 'd.json', '--name', 'x', '-h'],
    ['testnet', '--nodes', '2', '-h'],
    ['help', 'entity', 'serve']
  ]) {
    const { stdout, files } = await run(args)
    t.regex(stdout, /^Usage: registry-node /, args.join(' '))
    t.deepEqual(files, [], args.join(' '))
  }
})

serial('start --help lists every setting by section', async t => {
  const { stdout } = await run(['start', '--help'])
  t.regex(stdout, /\[p2p\]/)
  t.regex(stdout, /--http-port N +default 8080/)
  t.regex(stdout, /--\[no-\]/)
})
