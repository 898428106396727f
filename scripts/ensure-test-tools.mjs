// Makes sure the Debian tools the test suite drives are installed. Run by `npm test` as its pretest
// step (and by scripts/runtimes.mjs); plain Node, no deps.
//
// - every tool present: does nothing.
// - root with apt-get: `apt-get update` (only when the package lists do not offer a missing package
//   yet), then one `apt-get install -y --no-install-recommends` of the missing packages, and says what
//   it did and how long it took.
// - otherwise: says why it could not; the tests that need a missing tool then skip or fail saying so.
// Exits 0 in every case: a missing tool is reported by its test, not by this step.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'

const TOOLS = [
  { path: '/usr/bin/chromium', pkg: 'chromium', usedBy: 'the dashboard browser test' },
  { path: '/usr/sbin/dnsmasq', pkg: 'dnsmasq-base', usedBy: 'the dnsaddr bootstrap walkthrough of docs/operator.md' },
  { path: '/usr/sbin/nft', pkg: 'nftables', usedBy: 'the firewalled nodes of netns testnets' },
  { path: '/usr/bin/jq', pkg: 'jq', usedBy: 'the walkthroughs of the docs' }
]
const log = message => console.log(`ensure-test-tools: ${message}`)

function run(command, args) {
  const started = Date.now()
  const result = spawnSync(command, args, {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  })
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  if (result.error) return { ok: false, seconds, why: result.error.message }
  return { ok: result.status === 0, seconds, why: `exit code ${result.status ?? result.signal}` }
}

function onPath(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0
}

/** True when apt's package lists offer a candidate for every one of `packages`. */
function aptKnows(packages) {
  return packages.every(pkg => {
    const policy = spawnSync('apt-cache', ['policy', pkg], { encoding: 'utf8' })
    const candidate = /Candidate:\s*(\S+)/.exec(policy.stdout ?? '')
    return candidate !== null && candidate[1] !== '(none)'
  })
}

function main() {
  const missing = TOOLS.filter(tool => !existsSync(tool.path))
  if (missing.length === 0) return
  const packages = missing.map(tool => tool.pkg)
  const what = missing.map(tool => `${tool.path} (${tool.usedBy})`).join(', ')
  if (process.platform !== 'linux')
    return log(`missing: ${what}; this is not Linux (${process.platform}): install them by hand`)
  if (typeof process.getuid !== 'function' || process.getuid() !== 0)
    return log(`missing: ${what}; this is not root: run \`sudo apt-get install ${packages.join(' ')}\``)
  if (!onPath('apt-get')) return log(`missing: ${what}; apt-get is not available: install them by hand`)

  if (!aptKnows(packages)) {
    log('apt-get update (the package lists do not offer every missing package yet)')
    const update = run('apt-get', ['update'])
    if (!update.ok) return log(`apt-get update failed (${update.why}) after ${update.seconds} s; missing: ${what}`)
    log(`apt-get update took ${update.seconds} s`)
  }
  log(`apt-get install -y --no-install-recommends ${packages.join(' ')}`)
  const install = run('apt-get', ['install', '-y', '--no-install-recommends', ...packages])
  if (!install.ok) return log(`apt-get install failed (${install.why}) after ${install.seconds} s; missing: ${what}`)
  const still = missing.filter(tool => !existsSync(tool.path))
  log(
    still.length === 0
      ? `installed ${packages.join(', ')} in ${install.seconds} s`
      : `apt-get install finished in ${install.seconds} s but these are still missing: ${still.map(t => t.path).join(', ')}`
  )
}

main()
