/**
 * The search index's snapshot through a node's life: written at stop, read at the next start, brought
 * up to date from the operation log when the store moved on after it, and built over when it does
 * not fit the store.
 */
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { pino } from 'pino'
import { sign } from '../../src/identity/keys.js'
import { type NodeOptions, startRegistryNode } from '../../src/node.js'
import { SNAPSHOT_FILE } from '../../src/services/search/search-snapshot.js'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { http, testConfig } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const dev = developer(43)
const SUMMARIES = [
  'Translates legal documents between forty languages',
  'Summarises meeting transcripts into action items',
  'Reviews legal contracts and flags risky clauses',
  'Current weather and forecasts for any city'
]

interface Started {
  url: string
  logs: { msg: string; [key: string]: unknown }[]
  stop: () => Promise<void>
  /** Whether each search thread takes queries (one entry per thread). */
  threadsReady: () => boolean[]
}

async function start(
  dataDir: string,
  options: NodeOptions = {},
  liveness: { inactive_after_seconds?: number; sweep_interval_seconds?: number } = {}
): Promise<Started> {
  const logs: Started['logs'] = []
  const logger = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line)) })
  const config = testConfig(dataDir, { search: { worker_from_entities: 0, snapshot_from_entities: 0 }, liveness })
  const node = await startRegistryNode(config, { ...options, logger })
  await node.search.idle()
  const index = () => (node.search as unknown as { index: { replicas?: { ready: boolean }[] } }).index
  return {
    url: node.url,
    logs,
    stop: () => node.stop(),
    threadsReady: () => index().replicas?.map(replica => replica.ready) ?? [true]
  }
}

const logged = (n: Started, msg: string) => n.logs.find(line => line.msg === msg)

async function register(url: string, i: number): Promise<string> {
  const a = agent(dev, i + 1)
  const fields = { name: `Agent ${i}`, category: 'tools', summary: SUMMARIES[i % SUMMARIES.length] }
  const res = await http(url, 'POST', '/v1/entities', { body: specRegistration(dev, a, fields) })
  if (res.status !== 201) throw new Error(JSON.stringify(res.body))
  return a.agentId
}

async function deregister(url: string, i: number): Promise<void> {
  const a = agent(dev, i + 1)
  const headers = { authorization: `Bearer ${sign(a.keyPair, a.agentId)}` }
  const res = await http(url, 'DELETE', `/v1/entities/${encodeURIComponent(a.agentId)}`, { headers })
  if (res.status !== 200) throw new Error(JSON.stringify(res.body))
}

async function found(url: string, query: string, status = 'any'): Promise<string[]> {
  const res = await http(url, 'POST', '/v1/search', { body: { query, status } })
  return (res.body.results as { entity_id: string }[]).map(r => r.entity_id).sort()
}

test('a node restarts from its search snapshot, and one older than the store is brought up to date from the log', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'search-snapshot-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const snapshot = join(dataDir, SNAPSHOT_FILE)

  const first = await start(dataDir)
  t.truthy(logged(first, 'search index built'))
  t.falsy(logged(first, 'search index restored from its snapshot'))
  const ids = []
  for (let i = 0; i < 4; i++) ids.push(await register(first.url, i))
  const legal = await found(first.url, 'legal')
  t.is(legal.length, 2)
  await first.stop()
  t.like(logged(first, 'search index snapshot written'), { entities: 4 })

  const second = await start(dataDir)
  t.like(logged(second, 'search index restored from its snapshot'), { entities: 4, changed: 0 })
  t.deepEqual(await found(second.url, 'legal'), legal)
  t.deepEqual(await found(second.url, 'weather'), [ids[3]])
  // The other search threads read it after the first, through a link removed once they have.
  await until('every search thread restored', () => second.threadsReady().every(Boolean))
  t.is(second.threadsReady().length, Math.min(2, availableParallelism()))
  await until('the link is removed', () => !existsSync(`${snapshot}.replicas.tmp`))
  for (const answer of await Promise.all(Array.from({ length: 6 }, () => found(second.url, 'legal'))))
    t.deepEqual(answer, legal, 'searches at once, answered by every thread')
  // The snapshot of 4 entities, kept as if the node had been killed after this point.
  await copyFile(snapshot, `${snapshot}.kept`)
  const added = await register(second.url, 4)
  await deregister(second.url, 0)
  await second.stop()

  await copyFile(`${snapshot}.kept`, snapshot)
  const third = await start(dataDir)
  // Two operations were stored after the kept snapshot: their entities are indexed again from the store.
  t.like(logged(third, 'search index restored from its snapshot'), { entities: 4, changed: 2 })
  t.deepEqual(await found(third.url, 'legal'), [ids[2], added].sort())
  t.deepEqual(await found(third.url, 'weather'), [ids[3]])
  await third.stop()

  // A file that is not a snapshot of this store is removed, and the index built.
  await writeFile(snapshot, 'not a snapshot')
  const fourth = await start(dataDir)
  t.like(logged(fourth, 'search snapshot not used; building the index'), { file: snapshot })
  t.truthy(logged(fourth, 'search index built'))
  t.deepEqual(await found(fourth.url, 'legal'), [ids[2], added].sort())
  await fourth.stop()
  t.true(existsSync(snapshot), 'written again at stop')
})

test('a running node writes its snapshot while it runs, and has nothing to write at stop', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'search-snapshot-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const node = await start(dataDir, { searchSnapshotTiming: { checkMs: 100, everyMs: 0 } })
  // A failure below leaves the node running: stopped here, so the test file still exits.
  let stopped = false
  t.teardown(() => (stopped ? undefined : node.stop()))
  for (let i = 0; i < 3; i++) await register(node.url, i)
  const written = () => node.logs.filter(line => line.msg === 'search index snapshot written')
  await until('a snapshot of the three is written', () => written().some(line => line.entities === 3), {
    timeoutMs: 60_000,
    detail: () => node.logs.filter(line => /snapshot|worker/.test(line.msg)).slice(-8)
  })
  t.true(existsSync(join(dataDir, SNAPSHOT_FILE)))
  // Built by the first search thread alone; the others read that snapshot, then take queries too.
  await until('every search thread reads the snapshot', () => node.threadsReady().every(Boolean))
  t.is(node.threadsReady().length, Math.min(2, availableParallelism()))
  for (const answer of await Promise.all(Array.from({ length: 6 }, () => found(node.url, 'legal'))))
    t.is(answer.length, 2, 'searches at once, answered by every thread')
  const before = written().length
  await node.stop()
  stopped = true
  t.is(written().length, before, 'nothing changed since: nothing written at stop')
  const again = await start(dataDir)
  t.like(logged(again, 'search index restored from its snapshot'), { entities: 3, changed: 0 })
  await again.stop()
})

test('status changes stored after the snapshot are applied as statuses, without indexing their entities again', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'search-snapshot-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const snapshot = join(dataDir, SNAPSHOT_FILE)
  const first = await start(dataDir)
  const ids = [await register(first.url, 0), await register(first.url, 2)].sort()
  await first.stop()
  await copyFile(snapshot, `${snapshot}.kept`)

  // Entities without heartbeats go inactive: the sweep stores one batch of status changes.
  const quick = { inactive_after_seconds: 1, sweep_interval_seconds: 0.1 }
  const second = await start(dataDir, {}, quick)
  await until('the sweep made both inactive', async () => (await found(second.url, 'legal', 'inactive')).length === 2)
  await second.stop()

  await copyFile(`${snapshot}.kept`, snapshot)
  const third = await start(dataDir, {}, quick)
  t.like(logged(third, 'search index restored from its snapshot'), { entities: 2, changed: 0, status_changed: 2 })
  t.deepEqual(await found(third.url, 'legal', 'inactive'), ids)
  t.deepEqual(await found(third.url, 'legal', 'active'), [])
  await third.stop()
})
