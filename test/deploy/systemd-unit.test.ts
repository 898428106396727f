/**
 * deploy/systemd/registry-node.service: systemd's own checker accepts it (where systemd-analyze is
 * installed; skipped with the reason elsewhere), its sandbox scores as systemd rates it, the
 * environment it gives the node is what the node's configuration accepts, and the reason it gives
 * for leaving out MemoryDenyWriteExecute= holds on this kernel.
 */
import { execFile, spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import test from 'ava'
import { CLI_FROM_SOURCES } from '../../scripts/lib/node-process.js'

const exec = promisify(execFile)
const REPO = fileURLToPath(new URL('../../', import.meta.url))
const UNIT = join(REPO, 'deploy/systemd/registry-node.service')

/** `Key=value` lines of a unit file, in order (comments and section headers left out). */
function directives(text: string): [string, string][] {
  return text
    .split('\n')
    .filter(line => /^[A-Za-z]+=/.test(line))
    .map(line => {
      const at = line.indexOf('=')
      return [line.slice(0, at), line.slice(at + 1)]
    })
}

/** The unit with ExecStart pointed at this checkout, so the checker finds an executable. */
async function localUnit(dir: string): Promise<string> {
  const text = await readFile(UNIT, 'utf8')
  const local = text.replace(
    /^ExecStart=\/usr\/local\/bin\/registry-node /m,
    `ExecStart=${process.execPath} ${join(REPO, 'dist/cli.js')} `
  )
  const path = join(dir, 'registry-node.service')
  await writeFile(path, local)
  return path
}

const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' })
const analyzeMissing = analyze.error
  ? 'systemd-analyze is not installed (Debian: apt-get install systemd)'
  : analyze.status !== 0
    ? `systemd-analyze --version exited with ${analyze.status}`
    : null

test('the unit sandboxes the node and says why MemoryDenyWriteExecute is absent', async t => {
  const text = await readFile(UNIT, 'utf8')
  const set = new Map<string, string[]>()
  for (const [key, value] of directives(text)) set.set(key, [...(set.get(key) ?? []), value])
  const one = (key: string): string | undefined => set.get(key)?.at(-1)
  t.is(one('ProtectSystem'), 'strict')
  t.is(one('ProtectHome'), 'yes')
  t.is(one('PrivateTmp'), 'yes')
  t.is(one('NoNewPrivileges'), 'yes')
  t.is(one('CapabilityBoundingSet'), '', 'no capabilities at all')
  t.is(one('SystemCallFilter'), '@system-service')
  t.is(one('StateDirectory'), 'registry-node')
  t.is(one('Restart'), 'on-failure')
  t.is(one('KillSignal'), 'SIGTERM')
  t.regex(one('ExecReload') ?? '', /kill -HUP \$MAINPID$/)
  t.true(Number(one('TimeoutStopSec')) >= 5, 'the node gives up its own shutdown after 4 s; systemd waits longer')
  t.true(Number(one('LimitNOFILE')) >= 65536)
  t.deepEqual(one('RestrictAddressFamilies')?.split(' ').sort(), ['AF_INET', 'AF_INET6', 'AF_NETLINK', 'AF_UNIX'])
  t.false(set.has('MemoryDenyWriteExecute'))
  t.regex(text, /# Not MemoryDenyWriteExecute=yes: V8 compiles/)
})

test("the unit's environment is a configuration the node accepts", async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-unit-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const config = join(dir, 'registry-node.toml')
  const env: Record<string, string> = {}
  for (const [key, value] of directives(await readFile(UNIT, 'utf8'))) {
    if (key !== 'Environment') continue
    const at = value.indexOf('=')
    // %S is systemd's state directory root (/var/lib); the config file is the one init writes.
    env[value.slice(0, at)] = value
      .slice(at + 1)
      .replace('%S', dir)
      .replace('/etc/registry-node/registry-node.toml', config)
  }
  t.deepEqual(Object.keys(env).sort(), ['NODE_ENV', 'REGISTRY_NODE_CONFIG', 'REGISTRY_NODE_DATA_DIR'])
  const base = { PATH: process.env.PATH ?? '', HOME: dir }
  await exec(process.execPath, [...CLI_FROM_SOURCES, 'init', '--config', config, '--host', 'reg.example.com'], {
    cwd: dir,
    env: { ...base, REGISTRY_NODE_DATA_DIR: env.REGISTRY_NODE_DATA_DIR! }
  })
  const { stdout } = await exec(process.execPath, [...CLI_FROM_SOURCES, 'config', 'show', '--json'], {
    cwd: dir,
    env: { ...base, ...env }
  })
  const shown = JSON.parse(stdout) as Record<string, { value: unknown; source: string }>
  t.deepEqual(shown.data_dir, { value: join(dir, 'registry-node'), source: 'environment REGISTRY_NODE_DATA_DIR' })
  t.deepEqual(shown.host, { value: 'reg.example.com', source: `file ${config}` })
})

if (analyzeMissing) {
  console.log(`systemd unit check skipped: ${analyzeMissing}`)
  test.skip('systemd-analyze verify accepts the unit', () => {})
} else {
  test('systemd-analyze verify accepts the unit; its sandbox rates as OK or better', async t => {
    const dir = await mkdtemp(join(tmpdir(), 'registry-unit-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const unit = await localUnit(dir)
    const verify = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' })
    t.is(verify.status, 0, verify.stderr)
    t.is(verify.stderr.trim(), '', 'no warnings')
    // --offline (systemd 252+) rates the unit file itself rather than a loaded unit.
    const security = spawnSync('systemd-analyze', ['security', '--offline=yes', '--no-pager', unit], {
      encoding: 'utf8'
    })
    if (security.status !== 0 && /offline/.test(security.stderr)) {
      t.log(`systemd-analyze security --offline is not supported here: ${security.stderr.trim()}`)
      return
    }
    const level = /Overall exposure level for \S+: ([\d.]+)/.exec(security.stdout)
    t.truthy(level, security.stdout + security.stderr)
    t.log(`exposure level ${level![1]} (0 safest, 10 unprotected)`)
    t.true(Number(level![1]) <= 2, 'systemd rates the sandbox OK')
  })
}

// The reason the unit gives for leaving MemoryDenyWriteExecute= out: V8 cannot run under it. The
// kernel's own form of that option (prctl PR_SET_MDWE, Linux 6.3+), which systemd uses where it
// exists, set before node starts.
const mdwe = `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0: sys.exit(42)
os.execv(sys.argv[1], sys.argv[1:])`
const python = spawnSync('python3', ['-c', mdwe, '/bin/true'])
const mdweMissing = python.error
  ? 'python3 is not installed'
  : python.status === 42
    ? 'this kernel has no PR_SET_MDWE (Linux 6.3+)'
    : python.status !== 0
      ? `python3 exited with ${python.status}`
      : null
if (mdweMissing) {
  console.log(`MemoryDenyWriteExecute check skipped: ${mdweMissing}`)
  test.skip('node aborts when memory cannot be both written and executed', () => {})
} else {
  test('node aborts when memory cannot be both written and executed (why the unit leaves it out)', t => {
    const run = spawnSync('python3', ['-c', mdwe, process.execPath, '-e', 'console.log("ran")'], {
      encoding: 'utf8'
    })
    t.not(run.status, 0)
    t.notRegex(run.stdout, /ran/)
    t.regex(run.stderr, /Fatal error|Check failed|SetPermissions/, run.stderr.slice(0, 500))
  })
}
