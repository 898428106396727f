// Makes sure Debian's chromium is at /usr/bin/chromium for the dashboard's headless-browser test
// (test/api/dashboard-browser.test.ts). Run by `npm test` as its pretest step; plain Node, no deps.
//
// - /usr/bin/chromium exists: does nothing.
// - root with apt-get: `apt-get update` (only when the package lists do not know chromium yet), then
//   `apt-get install -y --no-install-recommends chromium`, and says what it did and how long it took.
// - otherwise: says why it could not; the browser test then skips (or fails under CI=true).
// Exits 0 in every case: a missing browser is reported by the test, not by this step.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'

const CHROMIUM = '/usr/bin/chromium'
const log = message => console.log(`ensure-chromium: ${message}`)

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

/** True when apt's package lists already offer a chromium candidate. */
function aptKnowsChromium() {
  const policy = spawnSync('apt-cache', ['policy', 'chromium'], { encoding: 'utf8' })
  const candidate = /Candidate:\s*(\S+)/.exec(policy.stdout ?? '')
  return candidate !== null && candidate[1] !== '(none)'
}

function main() {
  if (existsSync(CHROMIUM)) return
  if (process.platform !== 'linux')
    return log(
      `${CHROMIUM} is missing and this is not Linux (${process.platform}): install Chromium by hand; the browser test will skip`
    )
  if (typeof process.getuid !== 'function' || process.getuid() !== 0)
    return log(
      `${CHROMIUM} is missing and this is not root: run \`sudo apt-get install chromium\`; the browser test will skip`
    )
  if (!onPath('apt-get'))
    return log(
      `${CHROMIUM} is missing and apt-get is not available: install Chromium by hand; the browser test will skip`
    )

  if (!aptKnowsChromium()) {
    log('apt-get update (the package lists do not offer chromium yet)')
    const update = run('apt-get', ['update'])
    if (!update.ok)
      return log(`apt-get update failed (${update.why}) after ${update.seconds} s; the browser test will skip`)
    log(`apt-get update took ${update.seconds} s`)
  }
  log('apt-get install -y --no-install-recommends chromium')
  const install = run('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'])
  if (!install.ok)
    return log(
      `apt-get install chromium failed (${install.why}) after ${install.seconds} s; the browser test will skip`
    )
  log(
    existsSync(CHROMIUM)
      ? `installed ${CHROMIUM} in ${install.seconds} s`
      : `apt-get install finished in ${install.seconds} s but ${CHROMIUM} is still missing`
  )
}

main()
