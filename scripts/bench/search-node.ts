/**
 * G3 and G8: search on a real node holding N entities. Generates N signed registrations from the
 * Zipf corpus (scripts/lib/corpus.ts), loads them through the node's write path (POST /v1/entities
 * over keep-alive HTTP), waits until they are indexed and embedded, then measures keyword,
 * semantic and hybrid-with-filters latency over HTTP (one connection) and queries/s (several),
 * the node's RSS, and a restart on the same data: time until /health, until search sees every
 * entity (index rebuilt from LMDB) and until semantic search has caught up.
 *
 *   npm run bench:search -- [--entities 100000] [--queries 300] [--concurrency 8] [--connections 64]
 *                           [--developers 500] [--workers 2] [--keep] [--data <dir>] [--no-restart]
 *                           [--kinds one_common_word,quoted_phrase,…] [--status any|active|…]
 *
 * --keep keeps the loaded data directory; --data <dir> starts on such a directory (same --entities)
 * instead of signing and loading again. Query kinds: the bench's own four, then the five an
 * independent load generator measured (issue 18): one common word, one rare word, a quoted
 * two-word phrase from a loaded summary, an empty query with a category and/or tag filter, and two
 * words of an entity with its type and one of its tags. Every query carries --status (default `any`, as
 * that load generator sends): a node marks entities without heartbeats inactive as time passes, and
 * the default `active` would make the matches, and the cost, depend on how long ago they were loaded.
 *
 * Entities: 60% carry a developer proof (HD keys of one of --developers developers), the rest
 * have their own random key; 20% are services. Prints one `name: value unit` line per figure
 * (progress goes to stderr).
 */
import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { isMainThread, parentPort } from 'node:worker_threads'
import { deriveAgentSeed } from '../../src/identity/hd.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed } from '../../src/identity/keys.js'
import { developerKeys, signedRegistration, type DeveloperKeys } from '../../src/testnet/entity-factory.js'
import {
  CATEGORIES,
  DOMAIN,
  VOCABULARY,
  entityContent,
  registrationBody,
  zipfCorpus,
  type EntityContent
} from '../lib/corpus.js'
import { sleep } from '../lib/mesh-bench.js'
import { memoryMiB, spawnNode, type NodeProcess } from '../lib/node-process.js'
import { percentile, report } from '../lib/report.js'
import { splitOverWorkers } from '../lib/workers.js'

// ---------------------------------------------------------------------------------------------
// Signing (in worker threads)

/** One entity to sign: its content, and its developer (index into the developers) and HD index. */
interface SignJob {
  i: number
  content: EntityContent
  developer: number | null
  hdIndex: number
}
interface Signed {
  id: string
  body: string
}

const developerSeed = (d: number): Buffer => createHash('sha256').update(`bench-search-node developer ${d}`).digest()
const ownSeed = (i: number): Buffer => createHash('sha256').update(`bench-search-node entity ${i}`).digest()

function signJobs(jobs: readonly SignJob[]): Signed[] {
  const developers = new Map<number, DeveloperKeys>()
  return jobs.map(job => {
    const content = registrationBody(job.content, job.i)
    if (job.developer === null) {
      const keyPair = keyPairFromSeed(ownSeed(job.i))
      return {
        id: deriveId(job.content.type, keyPair.publicKey),
        body: JSON.stringify(signedRegistration(keyPair, content))
      }
    }
    let developer = developers.get(job.developer)
    if (!developer) {
      developer = developerKeys(keyPairFromSeed(developerSeed(job.developer)))
      developers.set(job.developer, developer)
    }
    const keyPair = keyPairFromSeed(deriveAgentSeed(developer.keyPair.seed, job.hdIndex))
    const body = signedRegistration(keyPair, content, { developer, index: job.hdIndex })
    return { id: deriveId(job.content.type, keyPair.publicKey), body: JSON.stringify(body) }
  })
}

if (!isMainThread) {
  parentPort!.once('message', (jobs: SignJob[]) => parentPort!.postMessage(signJobs(jobs)))
}

async function signInWorkers(jobs: SignJob[], workers: number): Promise<Signed[]> {
  if (workers <= 1) return signJobs(jobs)
  return splitOverWorkers<SignJob, Signed>(import.meta.url, jobs, workers)
}

// ---------------------------------------------------------------------------------------------
// HTTP

interface Reply {
  status: number
  text: string
  ms: number
}

function call(agent: Agent, base: URL, method: string, path: string, body?: string): Promise<Reply> {
  return new Promise(resolve => {
    const started = performance.now()
    const headers: Record<string, string | number> =
      body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
    const req = request({ agent, host: base.hostname, port: base.port, path, method, headers }, res => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          text: Buffer.concat(chunks).toString('utf8'),
          ms: performance.now() - started
        })
      )
      res.on('error', err => resolve({ status: 0, text: String(err), ms: performance.now() - started }))
    })
    req.on('error', err => resolve({ status: 0, text: String(err), ms: performance.now() - started }))
    req.end(body)
  })
}

interface SearchReply {
  total_found: number
  results: { entity_id: string; score_breakdown: { text_relevance: number; semantic_similarity: number } }[]
  search_stats: { latency_ms: number; semantic?: string }
}

async function search(
  agent: Agent,
  base: URL,
  query: Record<string, unknown>
): Promise<{ reply: Reply; body: SearchReply | null }> {
  const reply = await call(agent, base, 'POST', '/v1/search', JSON.stringify(query))
  return { reply, body: reply.status === 200 ? (JSON.parse(reply.text) as SearchReply) : null }
}

const seconds = (ms: number) => (ms / 1000).toFixed(1)

// ---------------------------------------------------------------------------------------------
// Readiness checks

/** Every entity, whatever its type and status (an empty query with filters is allowed). */
const EVERYTHING = { type: 'any', status: 'any', max_results: 1 }

/** The text of an entity as a query: finds it by words, and its similarity shows whether it has a vector yet. */
const selfQuery = (c: EntityContent) => `${c.name} ${c.summary}`.slice(0, 500)

/** True when every listed entity is found by its own text with a semantic similarity > 0 (it has a vector). */
async function embedded(
  agent: Agent,
  base: URL,
  probes: readonly { id: string; content: EntityContent }[]
): Promise<boolean> {
  for (const p of probes) {
    const { body } = await search(agent, base, {
      query: selfQuery(p.content),
      fqan: p.id,
      type: 'any',
      status: 'any',
      max_results: 1
    })
    const hit = body?.results[0]
    if (!hit || hit.entity_id !== p.id || !(hit.score_breakdown.semantic_similarity > 0)) return false
  }
  return true
}

/** CPU seconds (user + system) the process has used, from /proc. */
async function cpuSeconds(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** Waits until the process has used under a tenth of a core for two seconds in a row; the time it took. */
async function untilQuiet(pid: number, since: number, limitMs = 600_000): Promise<number> {
  let previous = await cpuSeconds(pid)
  let quietSeconds = 0
  while (performance.now() - since < limitMs) {
    await sleep(1000)
    const now = await cpuSeconds(pid)
    quietSeconds = now - previous < 0.1 ? quietSeconds + 1 : 0
    previous = now
    if (quietSeconds >= 2) return performance.now() - since
  }
  return Number.POSITIVE_INFINITY
}

/** Polls `check` every `everyMs` until it is true or `limitMs` passes; the time it took, or Infinity. */
async function until(check: () => Promise<boolean>, since: number, limitMs: number, everyMs = 50): Promise<number> {
  while (performance.now() - since < limitMs) {
    if (await check()) return performance.now() - since
    await sleep(everyMs)
  }
  return Infinity
}

// ---------------------------------------------------------------------------------------------
// Queries

type QueryMaker = (i: number) => Record<string, unknown>

/** Natural-language requests whose words are not in the corpus (only the vector scan can match them). */
const PARAPHRASES = [
  'something that turns spoken words into written text for meetings',
  'help me plan a cheap trip abroad next spring',
  'keep an eye on my monthly spending and warn me',
  'find bugs in my pull requests before review',
  'write short overviews of long reports',
  'which tool answers customer questions at night',
  'watch prices of stocks and tell me when they drop',
  'turn my photos into drawings',
  'book a table for dinner near the office',
  'check whether a website is down'
]

function queryMakers(contents: readonly EntityContent[], status: string): Record<string, QueryMaker> {
  const makers = queryKinds(contents)
  return Object.fromEntries(
    Object.entries(makers).map(([name, make]) => [name, (i: number) => ({ status, ...make(i) })])
  )
}

function queryKinds(contents: readonly EntityContent[]): Record<string, QueryMaker> {
  const corpus = zipfCorpus(7)
  const pick = (i: number): EntityContent => contents[(i * 7919) % contents.length] as EntityContent
  const wordsOf = (text: string): string[] => text.split(' ')
  const rare = (): string => VOCABULARY[1000 + Math.floor(corpus.random() * (VOCABULARY.length - 1000))] as string
  return {
    keyword_common: i => ({ query: `${DOMAIN[i % 5]} ${DOMAIN[5 + (i % 20)]}` }),
    keyword_rare: i => ({ query: `${VOCABULARY[200 + (i % 700)]} ${VOCABULARY[900 + ((i * 7) % 19_000)]}` }),
    semantic: i => ({ query: `${PARAPHRASES[i % PARAPHRASES.length]} ${rare()} ${rare()}` }),
    hybrid_filtered: i => {
      const query = `${DOMAIN[i % 10]} ${corpus.words(2)}`
      const category = CATEGORIES[i % CATEGORIES.length]
      switch (i % 3) {
        case 0:
          return { query, category }
        case 1:
          return { query, category, tags: [DOMAIN[(i >> 1) % 5]] }
        default:
          return { query, type: 'service', skills: [DOMAIN[i % 5]] }
      }
    },
    one_common_word: i => ({ query: DOMAIN[i % 5] }),
    one_rare_word: i => ({ query: VOCABULARY[1000 + ((i * 37) % 19_000)] }),
    quoted_phrase: i => {
      const words = wordsOf(pick(i).summary)
      const at = i % (words.length - 1)
      return { query: `"${words[at]} ${words[at + 1]}"` }
    },
    filter_only: i => {
      const c = pick(i)
      switch (i % 3) {
        case 0:
          return { category: c.category }
        case 1:
          return { tags: [c.tags[0]] }
        default:
          return { category: c.category, tags: [c.tags[0]] }
      }
    },
    words_type_tag: i => {
      const c = pick(i)
      const words = wordsOf(c.summary)
      return {
        query: `${words[i % words.length]} ${words[(i + 7) % words.length]}`,
        type: c.type,
        tags: [c.tags[i % c.tags.length]]
      }
    }
  }
}

interface Measured {
  client: number[]
  server: number[]
  totals: number
  semanticHits: number
  errors: number
  firstError: string | null
}

/** Runs `count` queries with `concurrency` clients over keep-alive connections. */
async function runQueries(
  base: URL,
  make: QueryMaker,
  count: number,
  concurrency: number,
  from = 0
): Promise<Measured & { seconds: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  const m: Measured = { client: [], server: [], totals: 0, semanticHits: 0, errors: 0, firstError: null }
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++
        const { reply, body } = await search(agent, base, make(from + i))
        if (!body) {
          m.errors++
          m.firstError ??= `${reply.status} ${reply.text.slice(0, 300)}`
          continue
        }
        m.client.push(reply.ms)
        m.server.push(body.search_stats.latency_ms)
        m.totals += body.total_found
        m.semanticHits += body.results.filter(r => r.score_breakdown.semantic_similarity > 0).length
      }
    })
  )
  const elapsed = (performance.now() - started) / 1000
  agent.destroy()
  return { ...m, seconds: elapsed }
}

// ---------------------------------------------------------------------------------------------
// Steps

interface Args {
  N: number
  Q: number
  concurrency: number
  connections: number
  developers: number
  workers: number
  kinds: string[]
  /** Sent with every measured query: `any` counts every entity, whenever it last sent a heartbeat. */
  status: string
}

/** The corpus, with each entity's developer (60 % have one) and HD index. */
function corpusJobs(N: number, developerCount: number): SignJob[] {
  const corpus = zipfCorpus(42)
  const hdNext = new Array<number>(developerCount).fill(0)
  const jobs: SignJob[] = []
  for (let i = 0; i < N; i++) {
    const content = entityContent(corpus, i)
    const developer = developerCount > 0 && corpus.random() < 0.6 ? Math.floor(corpus.random() * developerCount) : null
    jobs.push({ i, content, developer, hdIndex: developer === null ? 0 : hdNext[developer]!++ })
  }
  return jobs
}

/** Posts every registration over keep-alive connections; the index of the last one acknowledged. */
async function load(base: URL, signed: readonly Signed[], jobs: readonly SignJob[], a: Args): Promise<number> {
  const writeAgent = new Agent({ keepAlive: true, maxSockets: a.connections })
  const failures: string[] = []
  let failed = 0
  let lastAcked = -1
  let next = 0
  let done = 0
  const loadStarted = performance.now()
  let lastProgress = loadStarted
  const rateAt: string[] = []
  let sliceStarted = loadStarted
  const slice = Math.max(1, Math.floor(a.N / 10))
  await Promise.all(
    Array.from({ length: a.connections }, async () => {
      while (next < a.N) {
        const i = next++
        const reply = await call(writeAgent, base, 'POST', '/v1/entities', signed[i]!.body)
        if (reply.status === 201) lastAcked = i
        else {
          failed++
          if (failures.length < 5) failures.push(`#${i} ${reply.status} ${reply.text.slice(0, 400)}`)
        }
        if (++done % slice === 0) {
          rateAt.push((slice / ((performance.now() - sliceStarted) / 1000)).toFixed(0))
          sliceStarted = performance.now()
        }
        if (performance.now() - lastProgress > 10_000) {
          lastProgress = performance.now()
          console.error(`  loaded ${next} of ${a.N}`)
        }
      }
    })
  )
  const loadMs = performance.now() - loadStarted
  writeAgent.destroy()
  report('developers', new Set(jobs.map(j => j.developer).filter(d => d !== null)).size, '')
  report('load_time', seconds(loadMs), 's')
  report('load_rate', (a.N / (loadMs / 1000)).toFixed(0), `registrations/s (${a.connections} keep-alive connections)`)
  report('load_rate_by_tenth', rateAt.join(' '), 'registrations/s in each tenth of the load, first to last')
  report('load_failures', failed, 'registrations')
  for (const f of failures) console.error(`  load failure: ${f}`)
  if (failed > 0) throw new Error(`${failed} registrations failed`)
  return lastAcked
}

/** How long a node holding `entities` may take to listen: a minute per 100k, at least 30 s. */
const startTimeoutMs = (entities: number): number => Math.max(30_000, (entities / 100_000) * 60_000)

/** Latency one query at a time, then queries/s with `concurrency` clients, per kind; then the first four kinds mixed. */
async function measureQueries(base: URL, contents: readonly EntityContent[], a: Args): Promise<void> {
  const all = queryMakers(contents, a.status)
  const makers =
    a.kinds.length === 0 ? all : Object.fromEntries(Object.entries(all).filter(([name]) => a.kinds.includes(name)))
  for (const make of Object.values(makers)) await runQueries(base, make, 20, 1, 1_000_000)
  for (const [name, make] of Object.entries(makers)) {
    const m = await runQueries(base, make, a.Q, 1)
    if (m.errors > 0) console.error(`  ${name}: ${m.errors} errors, first: ${m.firstError}`)
    const client = m.client.sort((x, y) => x - y)
    const server = m.server.sort((x, y) => x - y)
    report(`${name}_p50`, percentile(client, 0.5).toFixed(1), 'ms')
    report(`${name}_p95`, percentile(client, 0.95).toFixed(1), 'ms')
    report(`${name}_p99`, percentile(client, 0.99).toFixed(1), 'ms')
    report(`${name}_server_p95`, percentile(server, 0.95).toFixed(1), 'ms (search_stats.latency_ms)')
    report(`${name}_mean_matches`, (m.totals / Math.max(1, client.length)).toFixed(0), 'entities (total_found)')
    if (name === 'semantic')
      report(
        'semantic_mean_vector_hits',
        (m.semanticHits / Math.max(1, client.length)).toFixed(1),
        'of the returned results have semantic similarity > 0'
      )
    const t = await runQueries(base, make, a.Q, a.concurrency, a.Q)
    if (t.errors > 0) console.error(`  ${name} (concurrent): ${t.errors} errors, first: ${t.firstError}`)
    report(`${name}_qps`, (t.client.length / t.seconds).toFixed(0), `queries/s (${a.concurrency} connections)`)
    report(
      `${name}_concurrent_p95`,
      percentile(
        t.client.sort((x, y) => x - y),
        0.95
      ).toFixed(1),
      `ms (${a.concurrency} connections)`
    )
  }
  if (a.kinds.length > 0) return
  const four = Object.values(makers).slice(0, 4)
  const mixed = await runQueries(base, i => (four[i % 4] as QueryMaker)(i), a.Q * 2, a.concurrency, 2 * a.Q)
  report(
    'mixed_qps',
    (mixed.client.length / mixed.seconds).toFixed(0),
    `queries/s (${a.concurrency} connections, the first four kinds in turn)`
  )
}

/**
 * Restart on the same data (G8). Probes for embedding: the entity the node embeds last (the
 * greatest ID: LMDB order), plus a spread of others.
 */
async function restart(
  nodeArgs: string[],
  previous: NodeProcess,
  signed: readonly Signed[],
  jobs: readonly SignJob[],
  N: number
): Promise<NodeProcess> {
  const byId = signed.map((s, i) => ({ id: s.id, content: jobs[i]!.content })).sort((x, y) => (x.id < y.id ? -1 : 1))
  const probes = [
    byId[byId.length - 1]!,
    ...Array.from({ length: 9 }, (_, k) => byId[Math.floor((k * byId.length) / 9)]!)
  ]
  const stopStarted = performance.now()
  previous.child.kill('SIGTERM')
  const code = await previous.exited
  report('stop_time', ((performance.now() - stopStarted) / 1000).toFixed(2), `s (SIGTERM to exit, code ${code})`)

  const startedAt = performance.now()
  let node: NodeProcess
  try {
    // The goal at 1M is 120 s.
    node = await spawnNode([...nodeArgs, '--log-level', 'info'], { startTimeoutMs: startTimeoutMs(N) })
  } catch (err) {
    report('restart_listening', `> ${startTimeoutMs(N) / 1000}`, 's (spawnNode gave up)')
    console.error((err as Error).message.slice(0, 2000))
    throw err
  }
  const listening = performance.now() - startedAt
  const atListening = await memoryMiB(node.child.pid!)
  const base = new URL(node.url)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const health = await until(
    async () => (await call(agent, base, 'GET', '/health')).status === 200,
    startedAt,
    600_000,
    10
  )
  let firstSearch = Infinity
  const full = await until(
    async () => {
      const { body } = await search(agent, base, { ...EVERYTHING, query: `${DOMAIN[0]} ${DOMAIN[5]}` })
      if (body && firstSearch === Infinity) firstSearch = performance.now() - startedAt
      return (await search(agent, base, EVERYTHING)).body?.total_found === N
    },
    startedAt,
    600_000,
    10
  )
  const semanticReady = await until(() => embedded(agent, base, probes), startedAt, 600_000, 50)
  const built = /"ms":(\d+)[^\n]*"msg":"search index built"|"msg":"search index built"[^\n]*"ms":(\d+)/.exec(
    node.output()
  )
  report(
    'restart_index_build',
    built ? (Number(built[1] ?? built[2]) / 1000).toFixed(2) : 'not logged',
    's (the node\'s "search index built" log: text index from LMDB)'
  )
  report('restart_listening', (listening / 1000).toFixed(2), 's (spawn to "listening on")')
  report('restart_health', (health / 1000).toFixed(2), 's (spawn to the first /health 200)')
  report('restart_first_search', (firstSearch / 1000).toFixed(2), 's (spawn to the first answered keyword search)')
  report('restart_all_searchable', (full / 1000).toFixed(2), 's (spawn until search counts every entity)')
  report(
    'restart_semantic_ready',
    semanticReady === Infinity ? 'never' : (semanticReady / 1000).toFixed(2),
    `s (spawn until ${probes.length} probe entities, the last in LMDB order among them, have vectors)`
  )
  const restarted = await memoryMiB(node.child.pid!)
  report(
    'node_rss_after_restart',
    restarted.rss.toFixed(0),
    `MiB (anonymous ${restarted.anon.toFixed(0)} MiB, file-backed ${restarted.file.toFixed(0)} MiB)`
  )
  report(
    'node_rss_peak_until_listening',
    atListening.hwm.toFixed(0),
    'MiB (VmHWM when "listening on" was printed: LMDB read and text index)'
  )
  report('node_rss_peak_after_restart', restarted.hwm.toFixed(0), 'MiB (VmHWM, includes embedding the whole store)')
  agent.destroy()
  return node
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      entities: { type: 'string', default: '100000' },
      queries: { type: 'string', default: '300' },
      concurrency: { type: 'string', default: '8' },
      connections: { type: 'string', default: '64' },
      developers: { type: 'string', default: '500' },
      workers: { type: 'string', default: String(availableParallelism()) },
      keep: { type: 'boolean', default: false },
      data: { type: 'string', default: '' },
      'no-restart': { type: 'boolean', default: false },
      kinds: { type: 'string', default: '' },
      status: { type: 'string', default: 'any' }
    }
  })
  const a: Args = {
    N: Number(args.entities),
    Q: Number(args.queries),
    concurrency: Number(args.concurrency),
    connections: Number(args.connections),
    developers: Number(args.developers),
    workers: Number(args.workers),
    kinds: args.kinds.split(',').filter(Boolean),
    status: args.status
  }
  const benchStarted = performance.now()
  const jobs = corpusJobs(a.N, a.developers)
  const reuse = args.data !== ''
  let signed: Signed[] = []
  if (!reuse) {
    const signStarted = performance.now()
    signed = await signInWorkers(jobs, a.workers)
    report(
      'sign_time',
      seconds(performance.now() - signStarted),
      `s (${a.workers} worker threads, not part of the node)`
    )
  }

  const data = reuse ? args.data : await mkdtemp(join(tmpdir(), 'bench-search-node-'))
  const nodeArgs = ['--data', data, '--http-port', '0', '--no-rate-limit', '--log-level', 'warn']
  // A reused directory holds the entities already: the node reads them before it listens.
  let node: NodeProcess = await spawnNode(nodeArgs, reuse ? { startTimeoutMs: startTimeoutMs(a.N) } : {})
  const base = new URL(node.url)
  report('entities', a.N, reuse ? `(loaded before, in ${data})` : '')
  const lastAcked = reuse ? -1 : await load(base, signed, jobs, a)

  // Indexed (every entity counted) and, after a load, embedded (the last acknowledged one has a vector).
  const readAgent = new Agent({ keepAlive: true, maxSockets: 1 })
  const waitStarted = performance.now()
  const countedAfter = await until(
    async () => (await search(readAgent, base, EVERYTHING)).body?.total_found === a.N,
    waitStarted,
    600_000
  )
  report('all_counted_after_load', countedAfter === Infinity ? 'never' : (countedAfter / 1000).toFixed(2), 's')
  if (!reuse) {
    const last = { id: signed[lastAcked]!.id, content: jobs[lastAcked]!.content }
    const embeddedAfter = await until(() => embedded(readAgent, base, [last]), waitStarted, 600_000)
    report('all_embedded_after_load', embeddedAfter === Infinity ? 'never' : (embeddedAfter / 1000).toFixed(2), 's')
  } else {
    // The store's records get their vectors after the text index is built, off the request path:
    // queries measured before that would share the cores with it.
    const quietAfter = await untilQuiet(node.child.pid!, waitStarted)
    report(
      'quiet_after_start',
      quietAfter === Infinity ? 'never' : (quietAfter / 1000).toFixed(2),
      's (node CPU < 10 % for 2 s)'
    )
  }
  const afterLoad = await memoryMiB(node.child.pid!)
  report('node_rss_after_load', afterLoad.rss.toFixed(0), 'MiB')
  // The sweep makes entities registered more than liveness.inactive_after_seconds ago inactive as it
  // goes; with --status active, how many still are makes the matches, and the cost, of two runs differ.
  const { body: active } = await search(readAgent, base, { ...EVERYTHING, status: 'active' })
  report('active_at_queries', active?.total_found ?? 'unknown', 'entities (status active when the queries began)')
  readAgent.destroy()

  await measureQueries(
    base,
    jobs.map(j => j.content),
    a
  )
  const afterQueries = await memoryMiB(node.child.pid!)
  report(
    'node_rss',
    afterQueries.rss.toFixed(0),
    `MiB (anonymous ${afterQueries.anon.toFixed(0)} MiB, file-backed ${afterQueries.file.toFixed(0)} MiB: the mapped LMDB file)`
  )
  report('node_rss_peak', afterQueries.hwm.toFixed(0), 'MiB (VmHWM, includes the load)')

  if (!args['no-restart'] && !reuse) node = await restart(nodeArgs, node, signed, jobs, a.N)
  node.child.kill('SIGTERM')
  await node.exited
  if (args.keep || reuse) console.error(`data kept in ${data}`)
  else await rm(data, { recursive: true, force: true })
  report('bench_time', seconds(performance.now() - benchStarted), 's')
}

if (isMainThread) await main()
