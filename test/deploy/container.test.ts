/**
 * The container image built and run: scripts/check-container.sh (buildah builds docker/Dockerfile,
 * podman runs two nodes of docker/compose.yml with their ports and --announce, and compose runs the
 * whole file through podman's Docker API where docker-compose is installed). It takes minutes
 * (npm ci in the build) and needs root, buildah and podman, so it runs only when asked:
 * CHECK_CONTAINER=1 npx ava test/deploy/container.test.ts; skipped with the reason otherwise.
 */
import { spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import test from 'ava'

const REPO = fileURLToPath(new URL('../../', import.meta.url))
const has = (tool: string): boolean => !spawnSync(tool, ['--version']).error

const missing =
  process.env.CHECK_CONTAINER !== '1'
    ? 'set CHECK_CONTAINER=1 to build and run the image (about 5 min; needs root, buildah and podman)'
    : process.platform !== 'linux'
      ? 'needs Linux'
      : process.getuid?.() !== 0
        ? 'needs root'
        : !has('buildah') || !has('podman')
          ? 'buildah and podman are not installed (Debian: apt-get install -y buildah podman)'
          : null

if (missing) {
  console.log(`container image test skipped: ${missing}`)
  test.skip('the image builds with buildah and runs under podman with its ports and --announce', () => {})
} else {
  test('the image builds with buildah and runs under podman with its ports and --announce', async t => {
    t.timeout(40 * 60_000)
    const child = spawn('bash', ['scripts/check-container.sh'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', d => {
      out += d
    })
    child.stderr.on('data', d => {
      out += d
    })
    const code = await new Promise<number | null>(resolve => child.on('close', resolve))
    t.log(out.trim().split('\n').slice(-14).join('\n'))
    t.is(code, 0, out)
    const skipped = /^SKIPPED: (.*)$/m.exec(out)
    if (skipped) t.log(`the script skipped: ${skipped[1]}`)
    else t.regex(out, /check-container: all passed/)
  })
}
