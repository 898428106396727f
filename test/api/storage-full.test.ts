/**
 * A full disk (issue 17): the node's data directory on a real, small tmpfs. Writes are refused
 * 507 storage_full once less than store.min_free_bytes is free; reads and heartbeats go on; what was
 * acknowledged survives a restart; writes resume when space returns. Needs permission to mount a
 * tmpfs (root, as in CI); elsewhere the test is skipped and says so.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, statfsSync } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { agent, developer, developerRegistration, sign, specRegistration } from '../helpers/identities.js'
import { heartbeatOnce, http, startTestNode } from '../helpers/node.js'
import { sleep } from '../helpers/wait.js'

const MiB = 2 ** 20

function mountTmpfs(sizeMiB: number): string | null {
  const dir = mkdtempSync(join(tmpdir(), 'registry-node-tmpfs-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', dir], { stdio: 'ignore' })
    return dir
  } catch {
    rmSync(dir, { recursive: true, force: true })
    return null
  }
}

function unmount(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'ignore' })
  } catch {
    /* already gone */
  }
  rmSync(dir, { recursive: true, force: true })
}

/** Writes a file that leaves `leaveBytes` free on the filesystem of `dir`. */
async function fill(dir: string, leaveBytes: number): Promise<string> {
  const path = join(dir, 'filler')
  const file = await open(path, 'a')
  const chunk = Buffer.alloc(256 * 1024)
  try {
    for (;;) {
      const { bavail, bsize } = statfsSync(dir)
      const free = Number(bavail) * Number(bsize)
      if (free <= leaveBytes) break
      await file.write(chunk, 0, Math.min(chunk.length, free - leaveBytes))
    }
  } finally {
    await file.close()
  }
  return path
}

// Whether a tmpfs can be mounted here; under CI it must be (as the other fallbacks, a skip there is a failure).
const probe = mountTmpfs(1)
if (probe) unmount(probe)
if (!probe) {
  const missing = 'cannot mount a tmpfs (needs root)'
  if (process.env.CI) test('the full-disk tests can mount a tmpfs', t => t.fail(missing))
  else console.log(`storage-full: skipped: ${missing}`)
}
const maybe = probe ? test : test.skip

maybe(
  'a full disk: writes get 507 storage_full, reads and heartbeats go on, nothing acknowledged is lost, writes resume when space returns',
  async t => {
    const mount = mountTmpfs(48) as string
    t.teardown(() => unmount(mount))
    const dataDir = join(mount, 'data')
    const overrides = { store: { min_free_bytes: 8 * MiB } }
    let node = await startTestNode(overrides, dataDir)
    const dev = developer(0x71)
    t.is((await http(node.url, 'POST', '/v1/developers', { body: developerRegistration(dev) })).status, 201)
    const acknowledged = [1, 2, 3].map(i => agent(dev, i))
    for (const a of acknowledged)
      t.is((await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, a) })).status, 201)

    const filler = await fill(mount, 4 * MiB)
    await sleep(1_100) // the free-space check is cached for a second
    const refused = agent(dev, 4)
    const post = await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, refused) })
    t.like(post, { status: 507, body: { error: 'storage_full' } })
    t.regex(post.body.message, /disk is full/)
    const first = acknowledged[0]!
    const update = await http(node.url, 'PUT', `/v1/entities/${first.agentId}`, {
      body: { summary: 'changed', signature: sign(first.keyPair, JSON.stringify({ summary: 'changed' })) }
    })
    t.true([401, 507].includes(update.status), `update: ${update.status}`)

    // Reads, search and heartbeats go on.
    t.is((await http(node.url, 'GET', `/v1/entities/${first.agentId}`)).status, 200)
    t.is((await http(node.url, 'GET', `/v1/entities/${refused.agentId}`)).status, 404)
    t.is(
      (await http(node.url, 'POST', '/v1/search', { body: { query: 'translates documents' } })).body.results.length,
      3
    )
    t.like(await heartbeatOnce(node.url, first), { type: 'ack', agent_id: first.agentId })
    t.like(await heartbeatOnce(node.url, acknowledged[1]!), { type: 'ack' })
    t.is((await http(node.url, 'GET', '/health')).status, 200)

    // Space returns: writes resume.
    await rm(filler)
    await sleep(1_100)
    t.is((await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, refused) })).status, 201)

    // A restart finds every acknowledged write, and the liveness the heartbeats left.
    await node.stop(true)
    node = await startTestNode(overrides, dataDir)
    t.teardown(() => node.stop(true))
    for (const a of [...acknowledged, refused])
      t.is((await http(node.url, 'GET', `/v1/entities/${a.agentId}`)).status, 200)
    t.is((await http(node.url, 'GET', `/v1/entities/${first.agentId}`)).body.status, 'active')
  }
)

maybe('a node does not create its store on a disk with less than the reserve free', async t => {
  const mount = mountTmpfs(8) as string
  t.teardown(() => unmount(mount))
  await fill(mount, 2 * MiB)
  const err = await t.throwsAsync(startTestNode({ store: { min_free_bytes: 4 * MiB } }, join(mount, 'data')))
  t.regex(err?.message ?? '', /disk is full/)
})
