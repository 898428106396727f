/**
 * G2: federated search. A requesting node R and --peers peer nodes (5), each holding --entities (10k)
 * home entities of its own from the Zipf corpus, all connected to R; then a slow peer (a node process
 * stopped and continued in turn: SIGSTOP for --slow-ms of every 2 × --slow-ms) and a dead one
 * (SIGSTOP: its sockets stay open, as with a hung or partitioned machine), both started alone and
 * connected to R by the admin route when their turn comes.
 *
 * Before measuring, the nodes settle: a node that starts announces each of its home entities in the
 * DHT (src/mesh/locator.ts: at most 20 a second, 4 at a time). In a connected mesh each announcement
 * is a DHT query that keeps every node busy (about 45 % of a core each with 3 nodes × 1k entities,
 * measured); 1k entities per node took about 3 minutes to drain, so 10k would take most of an hour
 * (a node alone does not drain faster: its announcements wait for their time limit). The bench waits
 * until the nodes together use less than --quiet-percent of a core, at most --settle-max-s, and
 * reports the idle CPU it measured at: at 10k entities the measurements run beside the announcements.
 * The slow and dead peers hold a few entities only (--extra-entities), so theirs drain quickly.
 *
 * Measures over HTTP, one connection, the same queries local and federated:
 *
 *   1. healthy: R + the peers; federated vs local p50/p95 for common and rare keywords;
 *   2. with the slow peer added;
 *   3. with the dead peer added (per-peer deadline --timeout-ms): what the dead peer costs over the
 *      deadline, and whether each reply names it.
 *
 *   npm run bench:federated -- [--entities 10000] [--peers 5] [--queries 200] [--timeout-ms 500]
 *                               [--slow-ms 100] [--no-slow] [--no-dead] [--quiet-percent 15]
 *                               [--settle-max-s 180] [--extra-entities 100] [--keep]
 *
 * About 9 minutes at the defaults (3 of them settling, and the queries slow while the announcements
 * run); --entities 1000 settles fully and takes about 3 minutes.
 *
 * Loading: each node's records are written straight into its LMDB store before it starts (the node
 * then indexes them as at any start), as home records of that node, without operations. Registrations
 * over HTTP would be replicated to every node by gossip and sync, leaving each node with all 50k and
 * nothing to federate; records without operations stay where they were written (the loopback tests
 * plant entities the same way). Records are not signed (search never checks record signatures); their
 * IDs derive from real keys, which the requester checks. Prints `name: value unit` lines (progress on
 * stderr).
 */
import { createHash } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { formatKey } from '../../src/identity/encoding.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed } from '../../src/identity/keys.js'
import { loadOrCreateNodeIdentity } from '../../src/identity/node-identity.js'
import type { EntityRecord } from '../../src/store/records.js'
import { RegistryStore } from '../../src/store/registry-store.js'
import { DOMAIN, VOCABULARY, entityContent, zipfCorpus } from '../lib/corpus.js'
import { machineLoad, sleep } from '../lib/mesh-bench.js'
import { cpuSeconds, spawnNode, type NodeProcess } from '../lib/node-process.js'
import { percentile, report } from '../lib/report.js'
import { storedEntity } from '../lib/stored-records.js'

/** src/node.ts's NODE_KEY_FILE (not imported: node.ts loads the whole node, uWS included). */
const NODE_KEY_FILE = 'node-key.json'
/** R's webhook secret: the admin route that connects the slow and dead peers when their turn comes. */
const ADMIN_SECRET = 'bench-federated-admin'

interface BenchNode {
  name: string
  data: string
  registryId: string
  process: NodeProcess
  base: URL
  peerId: string
  tcp: string
}

/** Writes `count` home entities of the node at `data` (host `host`) into its store; returns its registry ID. */
async function prepare(name: string, data: string, host: string, count: number, corpusSeed: number): Promise<string> {
  const identity = await loadOrCreateNodeIdentity(join(data, NODE_KEY_FILE))
  const store = await RegistryStore.open(data)
  const corpus = zipfCorpus(corpusSeed)
  const now = new Date().toISOString()
  let batch: EntityRecord[] = []
  const flush = async () => {
    const records = batch
    batch = []
    await store.commit(tx => {
      for (const r of records) tx.putEntity(r)
    })
  }
  for (let i = 0; i < count; i++) {
    const content = entityContent(corpus, i)
    const key = keyPairFromSeed(createHash('sha256').update(`bench-federated ${name} ${i}`).digest()).publicKey
    batch.push(
      storedEntity({
        entity_id: deriveId(content.type, key),
        type: content.type,
        name: content.name,
        category: content.category,
        summary: content.summary,
        tags: content.tags,
        public_key: formatKey(key),
        entity_url: content.type === 'agent' ? `https://${name}-${i}.bench.example` : null,
        service_endpoint: content.type === 'service' ? `https://${name}-${i}.bench.example/api` : null,
        capability_summary: content.capability_summary,
        registered_at: now,
        updated_at: now,
        home_registry: host,
        home_registry_id: identity.registryId
      })
    )
    if (batch.length === 2000) await flush()
  }
  await flush()
  await store.close()
  return identity.registryId
}

async function start(name: string, data: string, registryId: string, extra: string[]): Promise<BenchNode> {
  const proc = await spawnNode([
    '--data',
    data,
    '--http-port',
    '0',
    '--no-rate-limit',
    '--log-level',
    'warn',
    '--name',
    name,
    '--host',
    `${name}.bench.test`,
    // No writes here: no verification worker; entities stay active for the whole run.
    '--verify-workers',
    '0',
    '--inactive-after-seconds',
    '86400',
    ...extra
  ])
  let line: RegExpExecArray | null = null
  for (let i = 0; i < 200 && !(line = /registry-node p2p (\S+) at (.*)/.exec(proc.output())); i++) await sleep(25)
  if (!line) throw new Error(`${name}: no p2p line:\n${proc.output()}`)
  const tcp = line[2]!.split(' ').find(a => !a.includes('/ws'))!
  return { name, data, registryId, process: proc, base: new URL(proc.url), peerId: line[1]!, tcp }
}

interface Reply {
  status: number
  body: any
  ms: number
}

function post(
  agent: Agent,
  base: URL,
  path: string,
  body: unknown,
  headers: Record<string, string> = {}
): Promise<Reply> {
  const text = JSON.stringify(body)
  return new Promise(resolve => {
    const started = performance.now()
    const req = request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers }
      },
      res => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const ms = performance.now() - started
          let parsed: unknown = null
          try {
            parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'))
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, ms })
        })
      }
    )
    req.on('error', err => resolve({ status: 0, body: String(err), ms: performance.now() - started }))
    req.end(text)
  })
}

type QueryMaker = (i: number) => Record<string, unknown>

const QUERIES: Record<string, QueryMaker> = {
  // Domain words: in every node's filter, so every peer is asked.
  common: i => ({ query: `${DOMAIN[i % 5]} ${DOMAIN[5 + (i % 20)]}` }),
  // Rarer words: in some nodes' filters only.
  rare: i => ({ query: `${VOCABULARY[200 + ((i * 13) % 700)]} ${VOCABULARY[900 + ((i * 7) % 19_000)]}` })
}

interface Run {
  ms: number[]
  asked: number
  answered: number
  federatedResults: number
  errors: number
  replies: any[]
}

async function run(
  agent: Agent,
  base: URL,
  make: QueryMaker,
  count: number,
  extra: Record<string, unknown>,
  from = 0
): Promise<Run> {
  const r: Run = { ms: [], asked: 0, answered: 0, federatedResults: 0, errors: 0, replies: [] }
  for (let i = 0; i < count; i++) {
    const reply = await post(agent, base, '/v1/search', { ...make(from + i), ...extra })
    if (reply.status !== 200) {
      r.errors++
      if (r.errors === 1) console.error(`  error: ${reply.status} ${JSON.stringify(reply.body).slice(0, 300)}`)
      continue
    }
    r.ms.push(reply.ms)
    const stats = reply.body.search_stats
    r.asked += stats.peers_queried
    r.answered += stats.peers_answered ?? 0
    r.federatedResults += stats.federated_results
    r.replies.push(reply.body)
  }
  r.ms.sort((a, b) => a - b)
  return r
}

function summary(prefix: string, r: Run, count: number): void {
  report(`${prefix}_p50`, percentile(r.ms, 0.5).toFixed(1), 'ms')
  report(`${prefix}_p95`, percentile(r.ms, 0.95).toFixed(1), 'ms')
  if (r.asked > 0)
    report(
      `${prefix}_peers_asked`,
      (r.asked / Math.max(1, r.ms.length)).toFixed(2),
      `per query (${r.errors} errors in ${count})`
    )
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      entities: { type: 'string', default: '10000' },
      peers: { type: 'string', default: '5' },
      queries: { type: 'string', default: '200' },
      'timeout-ms': { type: 'string', default: '500' },
      'slow-ms': { type: 'string', default: '100' },
      'no-slow': { type: 'boolean', default: false },
      'no-dead': { type: 'boolean', default: false },
      'quiet-percent': { type: 'string', default: '15' },
      'settle-max-s': { type: 'string', default: '180' },
      'extra-entities': { type: 'string', default: '100' },
      keep: { type: 'boolean', default: false }
    }
  })
  const N = Number(args.entities)
  const P = Number(args.peers)
  const Q = Number(args.queries)
  const timeoutMs = Number(args['timeout-ms'])
  const slowMs = Number(args['slow-ms'])
  const benchStarted = performance.now()
  report('machine_load_at_start', machineLoad(), '(1, 5, 15 min)')

  // 1. Data: R, the peers, and the slow and dead peers (a tenth as many entities each), written offline.
  const names = [
    'r',
    ...Array.from({ length: P }, (_, i) => `p${i + 1}`),
    ...(args['no-slow'] ? [] : ['slow']),
    ...(args['no-dead'] ? [] : ['dead'])
  ]
  const dirs = new Map<string, string>()
  const ids = new Map<string, string>()
  const prepStarted = performance.now()
  for (const [k, name] of names.entries()) {
    const dir = await mkdtemp(join(tmpdir(), `bench-federated-${name}-`))
    dirs.set(name, dir)
    const count = name === 'slow' || name === 'dead' ? Number(args['extra-entities']) : N
    ids.set(name, await prepare(name, dir, `${name}.bench.test`, count, 100 + k))
  }
  report(
    'prepare_time',
    ((performance.now() - prepStarted) / 1000).toFixed(1),
    `s (${names.length} stores, ${N} entities per node)`
  )

  // 2. R, the healthy peers bootstrapped from it; the slow and dead peers alone until their turn.
  const startStarted = performance.now()
  const r = await start('r', dirs.get('r')!, ids.get('r')!, [
    '--federation-max-peers',
    String(P + 2),
    '--webhook-secret',
    ADMIN_SECRET
  ])
  const peers = await Promise.all(
    names.filter(n => /^p\d+$/.test(n)).map(n => start(n, dirs.get(n)!, ids.get(n)!, ['--bootstrap', r.tcp]))
  )
  const extras = await Promise.all(
    names.filter(n => n === 'slow' || n === 'dead').map(n => start(n, dirs.get(n)!, ids.get(n)!, []))
  )
  const extra = (name: string): BenchNode => extras.find(n => n.name === name)!
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const connect = async (n: BenchNode): Promise<void> => {
    const reply = await post(
      agent,
      r.base,
      '/v1/network/peers',
      { address: n.tcp },
      { authorization: `Bearer ${ADMIN_SECRET}` }
    )
    if (reply.status !== 201)
      throw new Error(`R could not add ${n.name}: ${reply.status} ${JSON.stringify(reply.body)}`)
  }
  const answeredBy = async (expected: number): Promise<boolean> => {
    const reply = await post(agent, r.base, '/v1/search', { query: 'agent', federated: true, type: 'any' })
    return reply.status === 200 && reply.body.search_stats.peers_answered === expected
  }
  for (let i = 0; i < 600 && !(await answeredBy(P)); i++) await sleep(100)
  if (!(await answeredBy(P))) throw new Error('R never got answers from every peer')
  report(
    'mesh_ready',
    ((performance.now() - startStarted) / 1000).toFixed(1),
    `s (spawn to ${P} peers answering a federated query)`
  )
  // Settle: embeddings and the DHT announcements of every home entity (see the header).
  const all = [r, ...peers, ...extras]
  const perNode = async () => Promise.all(all.map(n => cpuSeconds(n.process.child.pid!).catch(() => NaN)))
  const cpu = async () => (await perNode()).reduce((a, b) => a + b, 0)
  const settleStarted = performance.now()
  let idle: number[] = []
  for (;;) {
    const from = await perNode()
    await sleep(5000)
    const to = await perNode()
    idle = to.map((c, i) => ((c - from[i]!) / 5) * 100)
    const settled = performance.now() - settleStarted
    if (
      idle.reduce((a, b) => a + b, 0) < Number(args['quiet-percent']) ||
      settled > Number(args['settle-max-s']) * 1000
    )
      break
    if (Math.round(settled / 1000) % 60 < 5)
      console.error(
        `  settling: ${(settled / 1000).toFixed(0)} s, nodes at ${idle.reduce((a, b) => a + b, 0).toFixed(0)} % of a core`
      )
  }
  report(
    'settle_time',
    ((performance.now() - settleStarted) / 1000).toFixed(0),
    `s (until the nodes together used < ${args['quiet-percent']} % of a core; DHT announcements of ${N} entities per node at 20/s)`
  )
  report(
    'idle_cpu_nodes',
    idle.reduce((a, b) => a + b, 0).toFixed(1),
    `% of one core (all ${all.length} nodes together, the last 5 s of settling; per node ${idle.map(x => x.toFixed(0)).join(' ')})`
  )

  // 3. Healthy mesh: local vs federated, same queries.
  for (const make of Object.values(QUERIES)) {
    await run(agent, r.base, make, 20, {}, 1_000_000)
    await run(agent, r.base, make, 20, { federated: true }, 1_000_000)
  }
  for (const [kind, make] of Object.entries(QUERIES)) {
    const c0 = await cpu()
    const local = await run(agent, r.base, make, Q, {})
    const c1 = await cpu()
    const federated = await run(agent, r.base, make, Q, { federated: true })
    const c2 = await cpu()
    report(
      `${kind}_node_cpu_per_query`,
      `local ${(((c1 - c0) / Q) * 1000).toFixed(1)}, federated ${(((c2 - c1) / Q) * 1000).toFixed(1)}`,
      'ms (all nodes)'
    )
    summary(`${kind}_local`, local, Q)
    summary(`${kind}_federated`, federated, Q)
    report(
      `${kind}_federated_minus_local_p95`,
      (percentile(federated.ms, 0.95) - percentile(local.ms, 0.95)).toFixed(1),
      'ms (G2: ≤ 100)'
    )
    report(
      `${kind}_federated_results`,
      (federated.federatedResults / Math.max(1, federated.ms.length)).toFixed(1),
      'of the merged results per query came from peers'
    )
  }

  // 4. A slow peer: stopped for slowMs of every 2 × slowMs.
  let slowTimer: NodeJS.Timeout | null = null
  if (!args['no-slow']) {
    const slow = extra('slow')
    await connect(slow)
    for (let i = 0; i < 600 && !(await answeredBy(P + 1)); i++) await sleep(100)
    const pid = slow.process.child.pid!
    slowTimer = setInterval(() => {
      process.kill(pid, 'SIGSTOP')
      setTimeout(() => {
        try {
          process.kill(pid, 'SIGCONT')
        } catch {
          /* gone */
        }
      }, slowMs)
    }, 2 * slowMs)
    const federated = await run(agent, r.base, QUERIES.common!, Q, { federated: true }, 2 * Q)
    summary('with_slow_peer_common_federated', federated, Q)
    const slowReports = federated.replies.flatMap(b => b.search_stats.peers.filter((p: any) => p.name === 'slow'))
    report(
      'with_slow_peer_slow_latency_p95',
      percentile(
        slowReports.map((p: any) => p.latency_ms).sort((a: number, b: number) => a - b),
        0.95
      ).toFixed(1),
      `ms (the slow peer's own, stopped ${slowMs} ms of every ${2 * slowMs})`
    )
  }

  // 5. A dead peer: SIGSTOP. Every query waits for its deadline; the reply must name it.
  if (!args['no-dead']) {
    const dead = extra('dead')
    await connect(dead)
    const expected = P + 1 + (args['no-slow'] ? 0 : 1)
    // While the slow peer is being stopped it may miss a probe: wait until the dead one has answered once.
    let seen = false
    for (let i = 0; i < 600 && !seen; i++) {
      const reply = await post(agent, r.base, '/v1/search', { query: 'agent', federated: true, type: 'any' })
      seen =
        reply.status === 200 &&
        reply.body.search_stats.peers.some((p: any) => p.name === 'dead' && p.outcome === 'answered')
      if (!seen) await sleep(100)
    }
    if (!seen) throw new Error('the dead peer never answered before it was stopped')
    process.kill(dead.process.child.pid!, 'SIGSTOP')
    const stoppedAt = performance.now()
    // Queries until R stops asking it (libp2p's connection monitor closes a connection whose pings
    // go unanswered), at most 60; then 20 more to show what a query costs once it is gone.
    const named: { ms: number; latency: number; outcome: string }[] = []
    let total = 0
    let droppedAfter: number | null = null
    for (let i = 0; i < 60 && droppedAfter === null; i++) {
      const reply = await post(agent, r.base, '/v1/search', {
        ...QUERIES.common!(3 * Q + i),
        federated: true,
        timeout_ms: timeoutMs
      })
      if (reply.status !== 200) continue
      total++
      const mine = reply.body.search_stats.peers.find((p: any) => p.name === 'dead')
      if (mine) named.push({ ms: reply.ms, latency: mine.latency_ms, outcome: mine.outcome })
      else droppedAfter = (performance.now() - stoppedAt) / 1000
      if (mine && mine.outcome !== 'timed_out')
        console.error(`  the dead peer was reported as ${mine.outcome}: ${mine.error ?? ''} (${mine.latency_ms} ms)`)
    }
    const after = await run(agent, r.base, QUERIES.common!, 20, { federated: true, timeout_ms: timeoutMs }, 4 * Q)
    const overhead = named.map(n => n.ms - timeoutMs).sort((a, b) => a - b)
    report('dead_peer_timeout', timeoutMs, 'ms (timeout_ms of each request)')
    report(
      'dead_peer_named',
      `${named.length} of ${total}`,
      `replies asked it and name it: ${named.filter(n => n.outcome === 'timed_out').length} as timed_out, ${named.filter(n => n.outcome === 'failed').length} as failed (${expected} peers connected)`
    )
    report(
      'dead_peer_cost_over_timeout_p50',
      percentile(overhead, 0.5).toFixed(1),
      'ms (client time − timeout, replies that asked it)'
    )
    report('dead_peer_cost_over_timeout_p95', percentile(overhead, 0.95).toFixed(1), 'ms (G2: ≤ 50)')
    report('dead_peer_cost_over_timeout_max', (overhead[overhead.length - 1] ?? NaN).toFixed(1), 'ms')
    report(
      'dead_peer_reported_latency_max',
      Math.max(...named.map(n => n.latency)).toFixed(1),
      'ms (its search_stats.peers latency_ms)'
    )
    report(
      'dead_peer_dropped_after',
      droppedAfter === null ? 'not within the run' : droppedAfter.toFixed(1),
      's after SIGSTOP (R no longer asks it: its connection was closed)'
    )
    summary('after_dead_peer_dropped_common_federated', after, 20)
  }

  if (slowTimer) clearInterval(slowTimer)
  agent.destroy()
  for (const n of [r, ...peers, ...extras]) {
    try {
      process.kill(n.process.child.pid!, 'SIGCONT')
    } catch {
      /* gone */
    }
    n.process.child.kill('SIGKILL')
    await n.process.exited
  }
  if (args.keep) console.error(`data kept in ${[...dirs.values()].join(' ')}`)
  else for (const dir of dirs.values()) await rm(dir, { recursive: true, force: true })
  report('machine_load_at_end', machineLoad(), '(1, 5, 15 min)')
  report('bench_time', ((performance.now() - benchStarted) / 1000).toFixed(1), 's')
}

await main()
