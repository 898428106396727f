import { mkdtemp } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Worker } from 'node:worker_threads'
import test from 'ava'
import { RegistryStore } from '../../src/store/registry-store.js'
import { LocalSearchIndex } from '../../src/services/search/search-index.js'
import { ReplicatedSearchIndex } from '../../src/services/search/search-replicas.js'
import { WorkerSearchIndex } from '../../src/services/search/search-worker-index.js'
import { storedEntity } from '../../scripts/lib/stored-records.js'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { http, testNodes, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const dev = developer(41)
const nodes = testNodes()
let inWorker: TestNode
let inThread: TestNode
let inOneWorker: TestNode

const entities: Record<string, unknown>[] = [
  {
    name: 'Doc Translator',
    category: 'language',
    tags: ['translation', 'documents'],
    summary: 'Translates legal documents between forty languages',
    capability_summary: { skills: ['translate'], protocols: ['a2a'], languages: ['en', 'fr'] }
  },
  {
    name: 'Meeting Summarizer',
    category: 'productivity',
    tags: ['summary', 'meetings'],
    summary: 'Summarises meeting transcripts into action items',
    capability_summary: { skills: ['summarize'], protocols: ['mcp'] }
  },
  {
    name: 'Contract Reviewer',
    category: 'legal',
    tags: ['contracts', 'documents'],
    summary: 'Reviews legal documents and flags risky clauses',
    capability_summary: { skills: ['review'], models: ['gpt-4o'] }
  },
  { name: 'Weather Now', category: 'data', tags: ['weather'], summary: 'Current weather and forecasts for any city' },
  {
    name: 'Invoice Parser',
    category: 'finance',
    tags: ['invoice', 'pdf'],
    summary: 'Extracts line items from PDF invoices'
  }
]

const QUERIES: Record<string, unknown>[] = [
  { query: 'legal documents' },
  { query: '"legal documents"' },
  { query: 'translator', type: 'any' },
  { category: 'legal' },
  { tags: ['documents'], max_results: 1, offset: 1 },
  { query: 'documents', skills: ['translate'] },
  { query: 'summarise meetings', fusion: 'rrf' },
  { query: 'weather', status: 'any', min_trust_score: 0.1 }
]

const search = (n: TestNode, body: Record<string, unknown>) => http(n.url, 'POST', '/v1/search', { body })
/** What two nodes holding the same records must agree on (IDs, scores and their parts, totals). */
const answer = async (n: TestNode, body: Record<string, unknown>) => {
  const res = await search(n, body)
  if (res.status !== 200) throw new Error(JSON.stringify(res.body))
  return {
    total: res.body.total_found,
    results: res.body.results.map((r: Record<string, unknown>) => ({
      entity_id: r.entity_id,
      score: r.score,
      breakdown: r.score_breakdown
    }))
  }
}

test.before(async () => {
  inWorker = await nodes.start({ search: { worker_from_entities: 0 } })
  inThread = await nodes.start({ search: { worker: false } })
  inOneWorker = await nodes.start({ search: { worker_from_entities: 0, threads: 1 } })
  for (const n of [inWorker, inThread, inOneWorker]) {
    for (const [i, fields] of entities.entries()) await register(n, i, fields)
    await n.node.search.idle()
  }
})

async function register(n: TestNode, i: number, fields: Record<string, unknown>): Promise<void> {
  const res = await http(n.url, 'POST', '/v1/entities', { body: specRegistration(dev, agent(dev, i + 1), fields) })
  if (res.status !== 201) throw new Error(JSON.stringify(res.body))
}

const indexOf = (n: TestNode) => (n.node.search as unknown as { index: unknown }).index
/** The index's worker threads: one, or one per replica. */
function workersOf(index: unknown): Worker[] {
  if (index instanceof WorkerSearchIndex) return [(index as unknown as { worker: Worker }).worker]
  if (index instanceof ReplicatedSearchIndex) return replicasOf(index).flatMap(workersOf)
  return []
}
const replicasOf = (index: ReplicatedSearchIndex) =>
  (index as unknown as { replicas: { index: WorkerSearchIndex }[] }).replicas.map(replica => replica.index)
const inWorkers = (n: TestNode) => workersOf(indexOf(n)).length > 0
test.after.always(nodes.stopAll)

test.serial('the index in its worker thread answers exactly as the index on the HTTP thread', async t => {
  for (const query of QUERIES) {
    const expected = await answer(inThread, query)
    t.true(expected.total > 0, JSON.stringify(query))
    t.deepEqual(await answer(inWorker, query), expected, JSON.stringify(query))
    t.deepEqual(await answer(inOneWorker, query), expected, JSON.stringify(query))
  }
})

test.serial('two search threads share the queries at once, and answer as one index does', async t => {
  const index = indexOf(inWorker)
  if (availableParallelism() < 2) {
    t.true(index instanceof WorkerSearchIndex, 'one core: one search thread')
    return
  }
  if (!(index instanceof ReplicatedSearchIndex)) return t.fail('two cores: two search threads')
  t.is(workersOf(index).length, 2)
  t.true(indexOf(inOneWorker) instanceof WorkerSearchIndex, 'search.threads 1')
  const replicas = replicasOf(index)
  const asked = replicas.map(() => 0)
  const searches = replicas.map(r => r.search)
  replicas.forEach((replica, n) => {
    replica.search = query => {
      asked[n] = (asked[n] as number) + 1
      return (searches[n] as WorkerSearchIndex['search']).call(replica, query)
    }
  })
  try {
    const expected = await Promise.all(QUERIES.map(query => answer(inThread, query)))
    const answers = await Promise.all(QUERIES.flatMap(query => [answer(inWorker, query), answer(inWorker, query)]))
    for (const [n, got] of answers.entries()) t.deepEqual(got, expected[n >> 1], JSON.stringify(QUERIES[n >> 1]))
    // Each query goes to the thread with fewer waiting: an even split when both keep pace, fewer to a thread
    // another process slows down (13 and 3 beside a busy core), but some to each.
    t.is(
      asked.reduce((a, b) => a + b),
      answers.length
    )
    t.true(
      asked.every(count => count > 0),
      `queries sent at once went to both threads: ${asked.join(', ')}`
    )
  } finally {
    replicas.forEach((replica, n) => {
      replica.search = searches[n] as WorkerSearchIndex['search']
    })
  }
})

test.serial(
  'the index moves to its worker once the store holds worker_from_entities, and answers the same',
  async t => {
    const growing = await nodes.start({ search: { worker_from_entities: 3 } })
    const last = entities.length - 1
    for (const [i, fields] of entities.slice(0, 2).entries()) await register(growing, i, fields)
    t.true(indexOf(growing) instanceof LocalSearchIndex, 'two entities: on the HTTP thread')
    for (const [i, fields] of entities.entries()) if (i >= 2 && i < last) await register(growing, i, fields)
    // The move waits for a quiet second of the HTTP thread; a write made while it copies reaches both indexes.
    await until('the index moves', () => movingOf(growing) !== null, { intervalMs: 5 })
    t.true(indexOf(growing) instanceof LocalSearchIndex, 'queries stay on the HTTP thread while the index moves')
    await register(growing, last, entities[last] as Record<string, unknown>)
    // The store's records were copied at the move's first turn: this one reaches the worker as a change.
    t.not(movingOf(growing), null, 'written while the worker starts')
    await until('the index is in its worker', () => inWorkers(growing))
    await growing.node.search.idle()
    for (const query of QUERIES)
      t.deepEqual(await answer(growing, query), await answer(inThread, query), JSON.stringify(query))
  }
)

const movingOf = (n: TestNode) => (n.node.search as unknown as { moving: { index: unknown } | null }).moving

test.serial('a worker lost while the index moves leaves it on the HTTP thread; the move is tried again', async t => {
  const growing = await nodes.start({ search: { worker_from_entities: 3 } })
  for (const [i, fields] of entities.slice(0, 3).entries()) await register(growing, i, fields)
  const move = await until('the index moves', () => movingOf(growing), { intervalMs: 5 })
  await workersOf(move.index)[0]?.terminate()
  await until('the move is dropped', () => movingOf(growing) === null)
  t.true(indexOf(growing) instanceof LocalSearchIndex)
  t.is((await answer(growing, { query: 'legal documents' })).total, 2, 'the HTTP thread still answers')
  // The next look at the store's size (every third write here) starts a new move.
  for (const [i, fields] of entities.entries()) if (i >= 3) await register(growing, i, fields)
  await register(growing, 5, { name: 'Tide Tables', category: 'data', tags: ['sea'], summary: 'Tides' })
  await until('the index is in its worker', () => inWorkers(growing))
  await growing.node.search.idle()
  const query = { query: 'legal documents' }
  t.is((await answer(growing, query)).total, (await answer(inThread, query)).total)
})

test.serial('a search right after an acknowledged registration finds it', async t => {
  const res = await http(inWorker.url, 'POST', '/v1/entities', {
    body: specRegistration(dev, agent(dev, 20), {
      name: 'Glacier Watcher',
      category: 'data',
      tags: ['ice'],
      summary: 'Tracks glacier retreat'
    })
  })
  t.is(res.status, 201)
  const found = await search(inWorker, { query: 'glacier' })
  t.deepEqual(
    found.body.results.map((r: { name: string }) => r.name),
    ['Glacier Watcher']
  )
})

test.serial('a lost search worker is rebuilt from the store; the queries it held run again', async t => {
  const query = { query: 'legal documents' }
  const before = await answer(inWorker, query)
  const index = indexOf(inWorker)
  const workers = workersOf(index)
  const inFlight = Array.from({ length: 5 }, () => answer(inWorker, query))
  // The last: with several threads, one that writes no snapshot and builds no filter.
  await workers[workers.length - 1]?.terminate()
  // They are answered (by text until the new index has its vectors back, which come from the embedder).
  for (const result of await Promise.all(inFlight)) t.true(result.results.length > 0)
  t.not((inWorker.node.search as unknown as { index: unknown }).index, index, 'a new index')
  await inWorker.node.search.idle()
  t.deepEqual(await answer(inWorker, query), before)
})

test.serial(
  'a node started on more records than a build chunk holds: searches wait until the index has every one',
  async t => {
    const count = 12_000
    const dir = await mkdtemp(join(tmpdir(), 'registry-node-test-'))
    const store = await RegistryStore.open(dir)
    await store.commit(tx => {
      for (let n = 0; n < count; n++)
        tx.putEntity(
          storedEntity({
            entity_id: `zns:${n.toString(16).padStart(32, '0')}`,
            name: `Stored ${n}`,
            category: n % 2 ? 'odd' : 'even',
            summary: n === count - 1 ? 'The last record of the store' : 'A record of the store',
            home_registry: 'elsewhere.test',
            home_registry_id: 'zns:registry:elsewhere'
          })
        )
    })
    await store.close()

    const n = await nodes.start({ search: { worker_from_entities: 0 } }, dir)
    // Sent at once, while the index is filled from the store a chunk per turn.
    const [all, last] = await Promise.all([
      search(n, { type: 'any', status: 'any', max_results: 1 }),
      search(n, { query: 'last record', status: 'any' })
    ])
    t.is(all.body.total_found, count)
    t.is(last.body.results[0]?.name, `Stored ${count - 1}`, 'the last chunk is searchable by its words')
    await register(n, 0, entities[0] as Record<string, unknown>)
    t.is((await search(n, { type: 'any', status: 'any', max_results: 1 })).body.total_found, count + 1)
  }
)
