/**
 * Upgrades: a data directory written by the previous release (test/fixtures/store-0.2.0.tar.gz, made by
 * that release with scripts/store-fixture.ts) opens with this code, is migrated to the current format,
 * serves every record the fixture holds, and keeps its sync digests; a data directory of a newer
 * format is refused by `registry-node start` with one line naming both versions (exit 1).
 */
import { execFile, execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import test from 'ava'
import { open } from 'lmdb'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'
import { CURRENT_FORMAT } from '../../src/store/registry-store.js'
import { SubjectDigests } from '../../src/store/subject-digests.js'
import { NODE_VERSION } from '../../src/version.js'
import { enc, http, startTestNode } from '../helpers/node.js'

const FIXTURE = new URL('../fixtures/store-0.2.0', import.meta.url).pathname
const exec = promisify(execFile)

interface Fixture {
  release: string
  host: string
  registry_id: string
  developers: { developer_id: string; name: string; handle: string }[]
  entities: { entity_id: string; type: string; name: string; summary: string; fqan: string | null }[]
  names: { handle: string; name: string; entity_id: string; versions?: string[] }[]
  tombstones: string[]
  status_changed: string[]
  sync: { subjects: number; buckets_sha256: string }
}

/** The fixture unpacked in a fresh directory (removed after the test). */
async function unpacked(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'upgrade-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  execFileSync('tar', ['-xzf', `${FIXTURE}.tar.gz`, '-C', dir])
  return dir
}

const metaOf = async (dir: string): Promise<Record<string, unknown>> => {
  const env = open({ path: join(dir, 'registry.lmdb'), maxDbs: 16, readOnly: true })
  try {
    return Object.fromEntries([...env.openDB<unknown, string>({ name: 'meta' }).getRange()].map(r => [r.key, r.value]))
  } finally {
    await env.close()
  }
}

test("the previous release's data directory migrates, serves every record it holds and keeps its sync digests", async t => {
  const fixture = JSON.parse(await readFile(`${FIXTURE}.json`, 'utf8')) as Fixture
  const dir = await unpacked(t)
  t.is((await metaOf(dir)).format_version, undefined, `a ${fixture.release} store records no format version`)

  // Liveness slow enough that no status changes while the test reads (they would change the digests).
  const n = await startTestNode(
    { host: fixture.host, liveness: { inactive_after_seconds: 86_400, sweep_interval_seconds: 3600 } },
    dir
  )
  t.teardown(() => n.stop(true))
  t.is(n.node.store.formatVersion, CURRENT_FORMAT)
  t.is(n.node.identity.registryId, fixture.registry_id, 'the node key came along')

  for (const d of fixture.developers) {
    const res = await http(n.url, 'GET', `/v1/developers/${enc(d.developer_id)}`)
    t.is(res.status, 200, d.developer_id)
    t.like(res.body, { developer_id: d.developer_id, name: d.name })
    t.like((await http(n.url, 'GET', `/v1/handles/${d.handle}`)).body, { developer_id: d.developer_id })
  }
  for (const e of fixture.entities) {
    const res = await http(n.url, 'GET', `/v1/entities/${enc(e.entity_id)}`)
    t.is(res.status, 200, e.entity_id)
    t.like(res.body, { entity_id: e.entity_id, type: e.type, name: e.name, summary: e.summary, fqan: e.fqan })
  }
  for (const b of fixture.names) {
    t.like((await http(n.url, 'GET', `/v1/names/${b.handle}/${b.name}`)).body, { entity_id: b.entity_id })
    if (b.versions) {
      const versions = (await http(n.url, 'GET', `/v1/names/${b.handle}/${b.name}/versions`)).body
      t.deepEqual(
        (versions as { version: string }[]).map(v => v.version),
        b.versions
      )
    }
  }
  for (const id of fixture.tombstones) {
    t.not((await http(n.url, 'GET', `/v1/entities/${enc(id)}`)).status, 200, `${id} stays deregistered`)
    t.truthy(n.node.store.getTombstone(id))
  }
  for (const id of fixture.status_changed)
    t.true(
      n.node.store.operationsOf(id).some(o => o.kind === 'entity.status' || o.kind === 'entity.status.batch'),
      `${id}: its status changes are in its history`
    )

  // The sync digests are those the previous release computed: no operation was added, lost or changed.
  // (Built as a meshed node builds them at start; this one runs without the mesh.)
  const digests = new SubjectDigests(n.node.store)
  digests.start()
  t.is(digests.size, fixture.sync.subjects)
  t.is(createHash('sha256').update(Buffer.concat(digests.bucketDigests())).digest('hex'), fixture.sync.buckets_sha256)
  digests.stop()

  await n.stop(true)
  const meta = await metaOf(dir)
  t.is(meta.format_version, CURRENT_FORMAT)
  t.false('status_changed_at' in meta || 'used_signatures' in meta, 'the marker keys are folded into the version')
})

test('a data directory of a newer format is refused at start with one line naming both versions', async t => {
  const dir = await unpacked(t)
  const env = open({ path: join(dir, 'registry.lmdb'), maxDbs: 16 })
  await env.openDB({ name: 'meta' }).put('format_version', CURRENT_FORMAT + 1)
  await env.close()
  const failed = await exec(
    process.execPath,
    [...CLI_FOR_TESTS, 'start', '--data', dir, '--http-port', '0', '--no-p2p', '--host', 'a.example'],
    { cwd: dir }
  ).then(
    () => null,
    (err: { code: number; stderr: string }) => err
  )
  t.truthy(failed, 'start refused the store')
  t.is(failed?.code, 1)
  t.is(
    failed?.stderr,
    `registry-node: ${dir}: the store has format version ${CURRENT_FORMAT + 1}, written by a newer registry-node; this is registry-node ${NODE_VERSION}, which reads format versions up to ${CURRENT_FORMAT}. Downgrade is not supported: run the newer registry-node on this data directory, or restore a backup taken before the upgrade\n`
  )
  t.is((await metaOf(dir)).format_version, CURRENT_FORMAT + 1, 'the store is left as it was')
})
