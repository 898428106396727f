/**
 * Makes a data directory with a released registry-node, for the upgrade test (test/api/upgrade.test.ts):
 * it starts that release's own CLI on a temp data directory, writes a small but varied data set
 * through its HTTP API (developers, handles, agents and services, names and a name version, an
 * update, a deregistration's tombstone, status changes from heartbeats and the inactivity sweep),
 * stops it, computes the sync digests with that release's own store code, and writes
 *   OUT.tar.gz   registry.lmdb (compacted: LMDB files are sparse) and node-key.json
 *   OUT.json     what it holds, to check against after an upgrade
 *
 *   git worktree add /tmp/prev <commit> && ln -s "$PWD/node_modules" /tmp/prev/ && (cd /tmp/prev && npm run build)
 *   node --import tsx scripts/store-fixture.ts --release /tmp/prev --out test/fixtures/store-0.2.0
 */
import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { open } from 'lmdb'
import WebSocket from 'ws'
import { RegistryClient } from '../src/client/registry-client.js'
import type { Signer } from '../src/client/signing.js'
import { entityKeyFile } from '../src/identity/key-file.js'
import { keyPairFromSeed, sign, type KeyPair } from '../src/identity/keys.js'
import { deriveId } from '../src/identity/ids.js'

const { values } = parseArgs({ options: { release: { type: 'string' }, out: { type: 'string' } } })
if (!values.release || !values.out) {
  console.error('usage: store-fixture --release DIR (a built checkout of the release) --out PATH (without extension)')
  process.exit(2)
}
const release = resolve(values.release)
const out = resolve(values.out)
const version = (JSON.parse(readFileSync(join(release, 'package.json'), 'utf8')) as { version: string }).version
const work = mkdtempSync(join(tmpdir(), 'store-fixture-'))
const dataDir = join(work, 'data')

const SECRET = 'fixture-admin-secret'
/** Fast liveness, so that a heartbeat and the silence after it make status changes within seconds. */
const node = spawn(
  process.execPath,
  [
    join(release, 'dist/cli.js'),
    'start',
    '--dev',
    '--no-p2p',
    '--data',
    dataDir,
    '--http-port',
    '0',
    '--host',
    'fixture.example',
    '--webhook-secret',
    SECRET,
    '--inactive-after-seconds',
    '1',
    '--sweep-interval-seconds',
    '0.2'
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] }
)
const url = await new Promise<string>((done, fail) => {
  let text = ''
  node.stdout.on('data', (chunk: Buffer) => {
    text += chunk.toString()
    const m = / listening on (http:\/\/\S+)/.exec(text)
    if (m?.[1]) done(m[1])
  })
  node.once('exit', code => fail(new Error(`the ${version} node exited (${code}) before listening`)))
})
const client = new RegistryClient(url)

const developerKey = (seed: number): Signer => {
  const keyPair = keyPairFromSeed(Buffer.alloc(32, seed))
  return { keyPair, role: 'developer', developerId: deriveId('developer', keyPair.publicKey) }
}
const entityKey = (dev: Signer, index: number): Signer & { ids: { agent: string; service: string } } => {
  const { file, keyPair } = entityKeyFile(dev.keyPair, index)
  return {
    keyPair,
    developerId: file.developer_id!,
    developerProof: file.developer_proof!,
    ids: file.entity_ids as { agent: string; service: string }
  }
}
const registration = (name: string, type: 'agent' | 'service', slug: string) => ({
  name,
  type,
  category: 'tools',
  summary: `${name}: a fixture entity written by registry-node ${version}`,
  tags: ['fixture', type],
  entity_url: `https://${slug}.fixture.example`
})

/** One heartbeat of an entity (deployed form: timestamp to the second) on its own socket. */
async function heartbeat(entityId: string, key: KeyPair): Promise<void> {
  const timestamp = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/entities/${encodeURIComponent(entityId)}/ws`)
  await new Promise<void>((done, fail) => {
    ws.once('open', () => ws.send(JSON.stringify({ timestamp, signature: sign(key, timestamp) })))
    ws.once('message', () => {
      ws.close()
      done()
    })
    ws.once('error', fail)
  })
}

async function until(what: string, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise(r => setTimeout(r, 100))
  }
}

try {
  const alice = developerKey(1)
  const bob = developerKey(2)
  await client.registerDeveloper({ name: 'Alice Fixture', github: 'alice', handle: 'alice' }, alice)
  await client.registerDeveloper({ name: 'Bob Fixture', profile_url: 'https://bob.fixture.example' }, bob)
  await client.claimHandle('bob', bob.developerId!, bob)

  const echo = entityKey(alice, 0)
  const weather = entityKey(alice, 1)
  const doc = entityKey(bob, 0)
  const gone = entityKey(bob, 1)
  await client.registerEntity(registration('Echo Agent', 'agent', 'echo'), echo)
  await client.registerEntity(registration('Weather Service', 'service', 'weather'), weather)
  await client.registerEntity(registration('Doc Bot', 'agent', 'doc'), doc)
  await client.registerEntity(registration('Gone Agent', 'agent', 'gone'), gone)
  await client.bindName(
    { entity_id: echo.ids.agent, entity_name: 'echo', developer_handle: 'alice', version: '1.0.0' },
    alice
  )
  await client.bindName({ entity_id: weather.ids.service, entity_name: 'weather', developer_handle: 'alice' }, alice)
  await client.bindName({ entity_id: doc.ids.agent, entity_name: 'doc', developer_handle: 'bob' }, bob)
  await client.updateName('alice', 'echo', { version: '1.1.0', capability_tags: ['echo'] }, alice)
  await client.updateEntity(weather.ids.service, { summary: 'Forecasts for any city, updated hourly' }, weather)
  await client.deregisterEntity(gone.ids.agent, gone)

  // Status changes: active on a heartbeat, inactive after a second of silence (both written as
  // node-signed entity.status operations), then active again.
  const status = async (id: string) => (await client.getEntity(id, { missing: 'throw' })).status
  await heartbeat(echo.ids.agent, echo.keyPair)
  await until('echo is active', async () => (await status(echo.ids.agent)) === 'active')
  await until('echo is inactive', async () => (await status(echo.ids.agent)) === 'inactive')
  await heartbeat(doc.ids.agent, doc.keyPair)
  await until('doc is active', async () => (await status(doc.ids.agent)) === 'active')
  await heartbeat(echo.ids.agent, echo.keyPair)
  await until('echo is active again', async () => (await status(echo.ids.agent)) === 'active')

  const entities = []
  for (const id of [echo.ids.agent, weather.ids.service, doc.ids.agent]) {
    const e = await client.getEntity(id, { missing: 'throw' })
    entities.push({ entity_id: e.entity_id, type: e.type, name: e.name, summary: e.summary, fqan: e.fqan ?? null })
  }
  const held = {
    release: version,
    written_by: `registry-node ${version} (scripts/store-fixture.ts)`,
    host: 'fixture.example',
    registry_id: (await client.info()).registry_id,
    developers: [
      { developer_id: alice.developerId, name: 'Alice Fixture', handle: 'alice' },
      { developer_id: bob.developerId, name: 'Bob Fixture', handle: 'bob' }
    ],
    entities,
    names: [
      { handle: 'alice', name: 'echo', entity_id: echo.ids.agent, versions: ['1.1.0', '1.0.0'] },
      { handle: 'alice', name: 'weather', entity_id: weather.ids.service },
      { handle: 'bob', name: 'doc', entity_id: doc.ids.agent }
    ],
    tombstones: [gone.ids.agent],
    status_changed: [echo.ids.agent, doc.ids.agent]
  }
  node.kill('SIGTERM')
  await new Promise(done => node.once('exit', done))

  // The sync digests as the release itself computes them from its store.
  const { RegistryStore } = await import(join(release, 'dist/store/registry-store.js'))
  const { SubjectDigests } = await import(join(release, 'dist/store/subject-digests.js'))
  const store = await RegistryStore.open(dataDir)
  const digests = new SubjectDigests(store)
  digests.start()
  const sync = {
    subjects: digests.size as number,
    buckets_sha256: createHash('sha256')
      .update(Buffer.concat(digests.bucketDigests() as Buffer[]))
      .digest('hex')
  }
  digests.stop()
  await store.close()

  // A compacted copy (mdb_copy -c) of the store, and the node's key: nothing else is the node's state.
  const packed = join(work, 'packed')
  execFileSync('mkdir', ['-p', packed])
  const env = open({ path: join(dataDir, 'registry.lmdb'), maxDbs: 16, readOnly: true })
  await (env as unknown as { backup(path: string, compact: boolean): Promise<void> }).backup(
    join(packed, 'registry.lmdb'),
    true
  )
  await env.close()
  copyFileSync(join(dataDir, 'node-key.json'), join(packed, 'node-key.json'))
  execFileSync('tar', ['-czf', `${out}.tar.gz`, '-C', packed, 'registry.lmdb', 'node-key.json'])
  writeFileSync(`${out}.json`, `${JSON.stringify({ ...held, sync }, null, 2)}\n`)
  console.log(`wrote ${out}.tar.gz and ${out}.json (registry-node ${version}, ${sync.subjects} subjects)`)
} finally {
  if (node.exitCode === null) node.kill('SIGTERM')
  rmSync(work, { recursive: true, force: true })
}
