/**
 * G1: gossip propagation across node processes on loopback. Starts `--nodes` registry nodes (20),
 * each its own process with the mesh on 127.0.0.1 (ephemeral TCP/WebSocket and HTTP ports), wired
 * so that the mesh is connected but not a clique: node i bootstraps from its parent in a binary
 * tree, ⌊(i − 1) / 2⌋, and from one other earlier node picked at random (seeded); kad-dht may add
 * connections of its own afterwards (the degree is printed when the mesh is ready and at the end).
 * Then it publishes `--registrations` signed registrations (200) at `--rate` per second (20), each
 * POSTed to a random node, and then `--tombstones` deregistrations (50) of some of them at the same
 * rate, each sent to the entity's home node (where it was registered).
 *
 *   npm run bench:propagation -- [--nodes 20] [--registrations 200] [--tombstones 50] [--rate 20]
 *       [--warmup 5] [--topology tree|star] [--developers 20] [--workers 2] [--drain 30] [--settle 5] [--node-src DIR]
 *       [--node-arg=--flag ...] [--seed propagation] [--profile-dir DIR] [--profile-nodes K] [--dump PREFIX] [--poll]
 *
 * `--topology star` bootstraps every node from node 0 instead (the issue 16 check); `--warmup 0`
 * measures from `--settle` s after the mesh is ready, with no warm-up (a freshly formed mesh).
 *
 * Registrations are spec-form bodies with a developer proof (HD keys of `--developers` developers),
 * content from the Zipf corpus, signed in worker threads before any node starts
 * (scripts/lib/entity-signing.ts). Nodes run with `--no-rate-limit` (the HTTP write limits would
 * otherwise refuse one client writing this much); the gossip limits stay at the node's defaults
 * (`p2p.gossip_max_per_peer_per_second` 100) unless --node-arg changes them.
 *
 * Readiness: every node has a connection and the graph of connections is connected; after
 * `--settle` s (gossipsub forms its mesh on its 1 s heartbeat), warm-up registrations (not
 * measured) are published one at a time until one reaches every node within 5 s: the node's API
 * does not show gossipsub's topic subscribers, so delivery itself is the readiness check.
 *
 * Measurement. The bench subscribes to every node's activity stream (`/v1/ws/activity`) before
 * publishing. A node emits `agent_registered` / `agent_deregistered` when it applies the
 * operation (the home node when it commits, the others when gossip or sync applied it), stamped
 * with its own clock (ISO, millisecond resolution; all nodes share this machine's clock).
 *   post = the moment the bench sent the request (POST or DELETE), as a client's clock starts;
 *   the HTTP round trip is reported on its own (http_reply_p50).
 *   post_to_node: event time on each node other than the home node − post, over all pairs.
 *   post_to_last_node: per operation, the latest of those (only when every node got it).
 *   home_to_node: event time on each other node − the home node's own event time (node clocks
 *   only: leaves out the HTTP reply and the bench's reading of it).
 *   delivery ratio: (operation, non-home node) pairs delivered within `--drain` s after the last
 *   publish, over all pairs.
 * How it arrived: each gossip message a node validates yields a `gossip_incoming` event with the
 * operation's kind, subject and outcome (applied, stale = already held, deferred, …); a sync
 * session that applied something yields one `gossip_incoming` of kind `sync` without subjects. A
 * delivery with no `gossip_incoming … applied` for its subject on that node came by sync.
 * Duplicates that can be seen: a node validating the same operation twice (two `gossip_incoming`
 * for one kind and subject: it passed gossipsub's seen cache twice), and `stale` outcomes.
 * Duplicates that cannot be seen without a hook in the node: copies gossipsub itself drops as
 * already seen (before our validator runs), IHAVE/IWANT traffic, and messages our validator
 * ignores without an event (over the per-peer rate limit, or older than 60 s).
 * Node CPU: /proc utime + stime of every node process over the publishing phases (including
 * the drain waits) and over an idle window of 5 s before them; RSS at the end.
 *
 * --profile-dir writes a V8 CPU profile of every node process there (node --cpu-prof, on exit);
 * --profile-nodes K profiles only the last K nodes (profiling all 20 saturates the machine).
 * --dump PREFIX writes PREFIX-registration.json and PREFIX-tombstone.json: per operation, when the
 * bench sent and read it, its home node, the reply's latency and each node's post → apply delay
 * (to see whether slow deliveries cluster in time or on some nodes).
 *
 * --poll measures as a client reading the API does, instead of publishing at --rate: operations one
 * at a time, each POSTed to a random node (deregistrations at the home node), and from the moment
 * the request is sent, `GET /v1/entities/{id}` is polled every 20 ms on every node until it answers
 * the record (a deregistration: until it no longer does); the next operation starts when every
 * node answered (at most --drain s). Reports `*_poll_to_every_node_*` (from the send to the
 * slowest node's first answer) and the ratio of registrations to tombstones at p50.
 *
 * Prints one `name: value unit` line per figure (progress goes to stderr). Never fails on timing.
 */
import { writeFileSync } from 'node:fs'
import { Agent } from 'node:http'
import { parseArgs } from 'node:util'
import { isMainThread } from 'node:worker_threads'
import { entityJobs, signEntitiesInWorkers, type SignedEntity } from '../lib/entity-signing.js'
import {
  ActivityTap,
  call,
  cpuOf,
  cpuPressure,
  getJson,
  reportMachine,
  meshShape,
  ms1,
  nowMs,
  removeData,
  log,
  REPO,
  rssMiB,
  sleep,
  startMeshNode,
  stopNode,
  summarize,
  type ActivityEvent,
  type MeshNode
} from '../lib/mesh-bench.js'
import { seededRandom } from '../lib/random.js'
import { report } from '../lib/report.js'

interface Published {
  entity: SignedEntity
  home: number
  sentAt: number
  repliedAt: number
  status: number
  httpMs: number
}

/** Per node: the first event time of each entity, by event type; and gossip_incoming per kind|subject. */
interface NodeSeen {
  registered: Map<string, number[]>
  deregistered: Map<string, number[]>
  gossip: Map<string, { count: number; outcomes: string[] }>
  syncApplied: number
  syncSessions: number
  /** gossip_outgoing: recipients of each publication by this node, by kind|subject. */
  published: Map<string, number>
  /** peer_connected / peer_disconnected events (connection churn). */
  connects: number
  disconnects: number
}

function parseOptions() {
  return parseArgs({
    options: {
      nodes: { type: 'string', default: '20' },
      registrations: { type: 'string', default: '200' },
      tombstones: { type: 'string', default: '50' },
      rate: { type: 'string', default: '20' },
      warmup: { type: 'string', default: '5' },
      topology: { type: 'string', default: 'tree' },
      developers: { type: 'string', default: '20' },
      workers: { type: 'string', default: '2' },
      drain: { type: 'string', default: '30' },
      settle: { type: 'string', default: '5' },
      'start-batch': { type: 'string', default: '4' },
      seed: { type: 'string', default: 'propagation' },
      'node-src': { type: 'string' },
      'profile-dir': { type: 'string' },
      'profile-nodes': { type: 'string' },
      dump: { type: 'string' },
      poll: { type: 'boolean', default: false },
      'node-arg': { type: 'string', multiple: true, default: [] }
    }
  }).values
}
type Args = ReturnType<typeof parseOptions>

/** The run's mesh: its nodes, what each one's activity stream showed, and the bench's HTTP clients. */
interface Run {
  args: Args
  N: number
  rate: number
  drainMs: number
  /** Seeded: the bootstrap plan, then the warm-up homes, the publishing homes and the tombstones, in that order. */
  random: () => number
  nodes: MeshNode[]
  seen: NodeSeen[]
  agent: Agent
  statusAgent: Agent
}

type Kind = 'registered' | 'deregistered'

// ---------------------------------------------------------------------------------------------
// Setup: signed registrations, the nodes, the connected mesh, the activity streams.

/** Signed registrations: warm-up ones first, then the measured ones. */
async function signRegistrations(
  args: Args,
  warmupMax: number,
  R: number
): Promise<{ warmupPool: SignedEntity[]; measured: SignedEntity[] }> {
  const signStarted = performance.now()
  const signed = await signEntitiesInWorkers(
    entityJobs(0, warmupMax * 4 + R, Number(args.developers)),
    `${args.seed} ${Date.now()}`,
    Number(args.workers)
  )
  log(`signed ${signed.length} registrations in ${((performance.now() - signStarted) / 1000).toFixed(1)} s`)
  return { warmupPool: signed.slice(0, warmupMax * 4), measured: signed.slice(warmupMax * 4) }
}

/** Nodes: a binary tree plus one random earlier node each (or a star). */
async function startNodes(args: Args, N: number, random: () => number): Promise<MeshNode[]> {
  const nodes: MeshNode[] = []
  // Nodes 0, 1 and 2 start one by one, then in batches of --start-batch: a node's bootstrap peers
  // are among the nodes started before its batch (its tree parent always is, from node 3 on).
  const batch = Math.max(1, Number(args['start-batch']))
  const batchStart = (i: number): number => (i < 3 ? i : 3 + Math.floor((i - 3) / batch) * batch)
  const bootstrapOf = (i: number): number[] => {
    if (i === 0) return []
    if (args.topology === 'star') return [0]
    const parent = Math.floor((i - 1) / 2)
    const picks = [parent]
    const before = batchStart(i)
    if (before >= 2) {
      let other = Math.floor(random() * before)
      if (other === parent) other = (other + 1) % before
      picks.push(other)
    }
    return picks
  }
  const plan = Array.from({ length: N }, (_, i) => bootstrapOf(i))
  const startOne = (i: number): Promise<MeshNode> =>
    startMeshNode({
      index: i,
      name: `n${i}`,
      bootstrap: plan[i]!.map(j => nodes[j]!.tcp),
      nodeSrc: args['node-src'],
      extra: args['node-arg'],
      runtimeArgs:
        args['profile-dir'] && i >= N - Number(args['profile-nodes'] ?? N)
          ? ['--cpu-prof', `--cpu-prof-dir=${args['profile-dir']}`]
          : []
    })
  const startedNodes = performance.now()
  try {
    for (let i = 0; i < Math.min(3, N); i++) nodes[i] = await startOne(i)
    for (let i = 3; i < N; i += batch) {
      const group = Array.from({ length: Math.min(batch, N - i) }, (_, k) => i + k)
      const started = await Promise.all(group.map(startOne))
      for (const n of started) nodes[n.index] = n
    }
  } catch (err) {
    await Promise.all(nodes.filter(Boolean).map(n => stopNode(n, 2000)))
    await Promise.all(nodes.filter(Boolean).map(removeData))
    throw err
  }
  log(`${N} nodes started in ${((performance.now() - startedNodes) / 1000).toFixed(1)} s`)
  report('nodes', N, 'processes')
  report('bootstrap_plan', plan.map((b, i) => `${i}<-${b.join('+') || '-'}`).join(' '), '')
  return nodes
}

type MeshShape = Awaited<ReturnType<typeof meshShape>>

const degreeLine = (s: MeshShape): string => {
  const d = [...s.degrees].sort((a, b) => a - b)
  return `min ${d[0]}, median ${d[Math.floor(d.length / 2)]}, max ${d.at(-1)}, mean ${(d.reduce((a, b) => a + b, 0) / d.length).toFixed(1)}; ${s.edges} connections`
}

/** Waits (at most 90 s) until every node has a connection and the graph of connections is connected. */
async function waitForMesh(run: Run): Promise<void> {
  const meshWait = performance.now()
  let shape = await meshShape(run.statusAgent, run.nodes)
  while ((!shape.connected || shape.degrees.some(d => d === 0)) && performance.now() - meshWait < 90_000) {
    await sleep(500)
    shape = await meshShape(run.statusAgent, run.nodes)
  }
  report(
    'mesh_ready_after',
    ((performance.now() - meshWait) / 1000).toFixed(1),
    `s (every node connected; graph connected: ${shape.connected}, components ${shape.components})`
  )
  report('degree_at_start', degreeLine(shape), `(per node: ${shape.degrees.join(' ')})`)
}

/** Records an activity event of a node in what that node has seen. */
function record(s: NodeSeen, e: ActivityEvent): void {
  const push = (m: Map<string, number[]>, key: string, at: number): void => {
    const list = m.get(key)
    if (list) list.push(at)
    else m.set(key, [at])
  }
  if (e.type === 'agent_registered') push(s.registered, String(e.data.entity_id), e.at)
  else if (e.type === 'agent_deregistered') push(s.deregistered, String(e.data.entity_id), e.at)
  else if (e.type === 'peer_connected') s.connects++
  else if (e.type === 'peer_disconnected') s.disconnects++
  else if (e.type === 'gossip_outgoing') s.published.set(`${e.data.kind}|${e.data.subject}`, Number(e.data.recipients))
  else if (e.type === 'gossip_incoming') {
    if (e.data.kind === 'sync') {
      s.syncSessions++
      s.syncApplied += Number(e.data.applied ?? 0)
      return
    }
    const key = `${e.data.kind}|${e.data.subject}`
    const g = s.gossip.get(key) ?? { count: 0, outcomes: [] }
    g.count++
    g.outcomes.push(String(e.data.outcome))
    s.gossip.set(key, g)
  }
}

// ---------------------------------------------------------------------------------------------
// Publishing

const everyNodeHas = (run: Run, id: string, kind: Kind): boolean => run.seen.every(s => s[kind].has(id))

async function post(run: Run, entity: SignedEntity, home: number): Promise<Published> {
  const sentAt = nowMs()
  const reply = await call(run.agent, run.nodes[home]!.base, 'POST', '/v1/entities', entity.bodies[0])
  if (reply.status !== 201) log(`registration on n${home}: ${reply.status} ${reply.text.slice(0, 300)}`)
  return { entity, home, sentAt, repliedAt: reply.at, status: reply.status, httpMs: reply.ms }
}

async function deregister(run: Run, { entity, home }: Published): Promise<Published> {
  const sentAt = nowMs()
  const reply = await call(run.agent, run.nodes[home]!.base, 'DELETE', `/v1/entities/${entity.id}`, undefined, {
    authorization: `Bearer ${entity.deleteToken}`
  })
  if (reply.status !== 200) log(`deregistration on n${home}: ${reply.status} ${reply.text.slice(0, 300)}`)
  return { entity, home, sentAt, repliedAt: reply.at, status: reply.status, httpMs: reply.ms }
}

/** After --settle s, warm-up registrations one at a time until one reaches every node within 5 s. */
async function warmUp(run: Run, warmupMax: number, warmupPool: readonly SignedEntity[]): Promise<void> {
  const { args, N, random } = run
  await sleep(Number(args.settle) * 1000)
  let warmups = 0
  let warmedAfter = NaN
  const warmStarted = performance.now()
  for (const entity of warmupMax === 0 ? [] : warmupPool) {
    warmups++
    await post(run, entity, Math.floor(random() * N))
    const deadline = performance.now() + 5000
    while (!everyNodeHas(run, entity.id, 'registered') && performance.now() < deadline) await sleep(20)
    if (everyNodeHas(run, entity.id, 'registered') && warmups >= Math.min(warmupMax, warmupPool.length)) {
      warmedAfter = performance.now() - warmStarted
      break
    }
  }
  if (warmupMax === 0) report('warmup', 0, `registrations (none: measured from ${args.settle} s after start)`)
  else
    report(
      'warmup',
      warmups,
      `registrations until one reached all ${N} nodes within 5 s (${Number.isNaN(warmedAfter) ? 'never' : `${(warmedAfter / 1000).toFixed(1)} s`})`
    )
}

const cpuAll = async (run: Run): Promise<number[]> => Promise.all(run.nodes.map(n => cpuOf(n.proc.child.pid!)))

/** Gossip counters of one node (network status), summed over the nodes. */
interface GossipTotals {
  copies: number
  first: number
  bytesSent: number
}
async function gossipTotals(run: Run): Promise<GossipTotals> {
  type Gossip = { copies_received: number; first_received: number; bytes_sent: number }
  const all = await Promise.all(
    run.nodes.map(n => getJson<{ mesh: { gossip?: Gossip } }>(run.statusAgent, n.base, '/v1/network/status'))
  )
  const sum = (f: (g: Gossip) => number) => all.reduce((a, s) => a + (s.mesh.gossip ? f(s.mesh.gossip) : 0), 0)
  return { copies: sum(g => g.copies_received), first: sum(g => g.first_received), bytesSent: sum(g => g.bytes_sent) }
}

/** Idle CPU of the nodes over 5 s. */
async function reportIdleCpu(run: Run): Promise<void> {
  const idle0 = await cpuAll(run)
  const idleStarted = performance.now()
  await sleep(5000)
  const idle1 = await cpuAll(run)
  const idleCores = idle1.reduce((a, c, i) => a + (c - idle0[i]!), 0) / ((performance.now() - idleStarted) / 1000)
  report(
    'node_cpu_idle',
    (idleCores * 100).toFixed(0),
    `% of one core, all ${run.N} nodes together (5 s before publishing)`
  )
}

/** Calls `one(k)` for k = 0 … count − 1 at --rate per second; all the answers. */
async function publishAtRate<T>(rate: number, count: number, one: (k: number) => Promise<T>): Promise<T[]> {
  const started = performance.now()
  const pending: Promise<T>[] = []
  for (let k = 0; k < count; k++) {
    const due = started + (k * 1000) / rate
    const wait = due - performance.now()
    if (wait > 0) await sleep(wait)
    pending.push(one(k))
  }
  return Promise.all(pending)
}

/** How long until every node has seen every ID (Infinity: not within --drain). */
async function waitDelivered(run: Run, ids: readonly string[], kind: Kind): Promise<number> {
  const started = performance.now()
  while (performance.now() - started < run.drainMs) {
    if (ids.every(id => everyNodeHas(run, id, kind))) return performance.now() - started
    await sleep(100)
  }
  return Infinity
}

/** What the publish phase did, and what it cost. */
interface PublishPhase {
  regsOk: Published[]
  delsOk: Published[]
  chosen: Published[]
  regDrain: number
  delDrain: number
  seconds: number
  pressure: number
  cpu0: number[]
  cpu1: number[]
  gossip0: GossipTotals
  gossip1: GossipTotals
  clientCpu: NodeJS.CpuUsage
  churn0: (readonly [number, number])[]
}

/** Registrations at the rate to random nodes, then tombstones at their home nodes; each followed by a drain. */
async function publish(run: Run, R: number, T: number, measured: readonly SignedEntity[]): Promise<PublishPhase> {
  const { args, N, rate, random, seen } = run
  const clientCpu0 = process.cpuUsage()
  const cpu0 = await cpuAll(run)
  const gossip0 = await gossipTotals(run)
  const churn0 = seen.map(s => [s.connects, s.disconnects] as const)
  const phaseStarted = performance.now()
  const monotonicStart = process.hrtime.bigint() / 1000n

  log(`publishing ${R} registrations at ${rate}/s`)
  const regs = await publishAtRate(rate, R, k => post(run, measured[k]!, Math.floor(random() * N)))
  const regsOk = regs.filter(p => p.status === 201)
  const regDrain = await waitDelivered(
    run,
    regsOk.map(p => p.entity.id),
    'registered'
  )

  // Tombstones: a seeded choice among the acknowledged registrations, each at its home node.
  const pool = [...regsOk]
  const chosen: Published[] = []
  while (chosen.length < T && pool.length > 0) chosen.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!)
  log(`publishing ${chosen.length} deregistrations at ${rate}/s`)
  const dels = await publishAtRate(rate, chosen.length, k => deregister(run, chosen[k]!))
  const delsOk = dels.filter(p => p.status === 200)
  const delDrain = await waitDelivered(
    run,
    delsOk.map(p => p.entity.id),
    'deregistered'
  )
  const seconds = (performance.now() - phaseStarted) / 1000
  const pressure = await cpuPressure()
  if (args['profile-dir'])
    report(
      'profile_window',
      `${monotonicStart} ${process.hrtime.bigint() / 1000n}`,
      "µs of CLOCK_MONOTONIC (the profiles' timestamps): the publish phase"
    )
  const cpu1 = await cpuAll(run)
  const gossip1 = await gossipTotals(run)
  const clientCpu = process.cpuUsage(clientCpu0)
  return {
    regsOk,
    delsOk,
    chosen,
    regDrain,
    delDrain,
    seconds,
    pressure,
    cpu0,
    cpu1,
    gossip0,
    gossip1,
    clientCpu,
    churn0
  }
}

// ---------------------------------------------------------------------------------------------
// Poll mode: one operation at a time, read back on every node by polling from the send

const POLL_INTERVAL_MS = 20

/** From now until every node's GET of `id` satisfies `done` (polled every 20 ms); Infinity past --drain. */
async function pollEveryNode(run: Run, id: string, done: (status: number) => boolean): Promise<number> {
  const started = performance.now()
  const path = `/v1/entities/${encodeURIComponent(id)}`
  const one = async (node: MeshNode): Promise<number> => {
    while (performance.now() - started < run.drainMs) {
      const reply = await call(run.statusAgent, node.base, 'GET', path, undefined, {}, 5000)
      if (done(reply.status)) return performance.now() - started
      await sleep(POLL_INTERVAL_MS)
    }
    return Infinity
  }
  return Math.max(...(await Promise.all(run.nodes.map(one))))
}

/** Polls each operation to every node; the acknowledged registrations and deregistrations, for the event figures. */
async function pollPhase(
  run: Run,
  R: number,
  T: number,
  measured: readonly SignedEntity[]
): Promise<{ regsOk: Published[]; delsOk: Published[] }> {
  const { N, random } = run
  const regs: number[] = []
  const homes: Published[] = []
  log(`poll mode: ${R} registrations, then ${T} deregistrations, one at a time`)
  for (const entity of measured.slice(0, R)) {
    const home = Math.floor(random() * N)
    const reply = post(run, entity, home)
    regs.push(await pollEveryNode(run, entity.id, status => status === 200))
    const p = await reply
    if (p.status === 201) homes.push(p)
  }
  const dels: number[] = []
  const delsOk: Published[] = []
  for (const p of homes.slice(0, T)) {
    const reply = deregister(run, p)
    dels.push(await pollEveryNode(run, p.entity.id, status => status !== 200))
    const d = await reply
    if (d.status === 200) delsOk.push(d)
  }
  const p50s: number[] = []
  for (const [label, times] of [
    ['registration', regs],
    ['tombstone', dels]
  ] as const) {
    const within = times.filter(Number.isFinite)
    const s = summarize(within)
    p50s.push(s.p50)
    report(
      `${label}_poll_to_every_node_p50`,
      ms1(s.p50),
      `ms (${within.length} of ${times.length} read on every node within --drain)`
    )
    report(`${label}_poll_to_every_node_p99`, ms1(s.p99), `ms (max ${ms1(s.max)} ms)`)
  }
  report(
    'registration_to_tombstone_p50_ratio',
    (p50s[0]! / p50s[1]!).toFixed(2),
    '(poll to every node; the goal is ≤ 1.5)'
  )
  return { regsOk: homes, delsOk }
}

// ---------------------------------------------------------------------------------------------
// Figures

/** Delivery figures of one kind of operation: ratio, latencies, how it arrived. */
function reportDelivery(
  run: Run,
  label: string,
  published: readonly Published[],
  kind: Kind,
  gossipKind: string
): void {
  const { N, seen } = run
  const toNode: number[] = []
  const homeToNode: number[] = []
  const toLast: number[] = []
  const http: number[] = []
  let pairs = 0
  let delivered = 0
  let bySync = 0
  let repeatedEvents = 0
  const missing = new Map<number, number>()
  const dumpRows: unknown[] = []
  for (const p of published) {
    http.push(p.httpMs)
    const homeAt = seen[p.home]![kind].get(p.entity.id)?.[0]
    let last = -Infinity
    let complete = true
    for (let j = 0; j < N; j++) {
      const times = seen[j]![kind].get(p.entity.id)
      if (times && times.length > 1) repeatedEvents += times.length - 1
      if (j === p.home) continue
      pairs++
      if (!times) {
        complete = false
        missing.set(j, (missing.get(j) ?? 0) + 1)
        continue
      }
      delivered++
      const at = times[0]!
      toNode.push(at - p.sentAt)
      if (homeAt !== undefined) homeToNode.push(at - homeAt)
      last = Math.max(last, at)
      const g = seen[j]!.gossip.get(`${gossipKind}|${p.entity.id}`)
      if (!g?.outcomes.includes('applied')) bySync++
    }
    if (complete) toLast.push(last - p.sentAt)
    dumpRows.push({
      sent_at: p.sentAt,
      replied_at: p.repliedAt,
      home: p.home,
      http_ms: p.httpMs,
      // null: not delivered within --drain
      post_to_node_ms: Array.from({ length: N }, (_, j) => {
        const at = seen[j]![kind].get(p.entity.id)?.[0]
        return at === undefined ? null : at - p.sentAt
      })
    })
  }
  if (run.args.dump) writeFileSync(`${run.args.dump}-${label}.json`, JSON.stringify(dumpRows))
  const a = summarize(toNode)
  const b = summarize(toLast)
  const c = summarize(homeToNode)
  const h = summarize(http)
  report(
    `${label}_delivery_ratio`,
    ((100 * delivered) / Math.max(1, pairs)).toFixed(2),
    `% (${delivered} of ${pairs} operation × other-node pairs)`
  )
  report(`${label}_post_to_node_p50`, ms1(a.p50), 'ms')
  report(`${label}_post_to_node_p99`, ms1(a.p99), 'ms')
  report(`${label}_post_to_node_max`, ms1(a.max), `ms (min ${ms1(a.min)} ms)`)
  report(`${label}_post_to_last_node_p50`, ms1(b.p50), `ms (${b.n} operations that reached every node)`)
  report(`${label}_post_to_last_node_p99`, ms1(b.p99), 'ms')
  report(`${label}_post_to_last_node_max`, ms1(b.max), 'ms')
  report(`${label}_home_to_node_p50`, ms1(c.p50), 'ms (node clocks only: home node event to other node event)')
  report(`${label}_home_to_node_p99`, ms1(c.p99), 'ms')
  report(`${label}_http_reply_p50`, ms1(h.p50), `ms (p99 ${ms1(h.p99)} ms: request to reply at the home node)`)
  report(
    `${label}_delivered_by_sync`,
    bySync,
    'pairs (applied without a gossip_incoming applied event for the subject on that node)'
  )
  report(`${label}_repeated_apply_events`, repeatedEvents, `(more than one ${kind} event for one entity on one node)`)
  if (missing.size > 0)
    report(`${label}_missing_by_node`, [...missing].map(([j, n]) => `n${j}:${n}`).join(' '), 'pairs')
}

/** Duplicates seen by our validator, outcomes, gossip fan-out, sync sessions and connection churn. */
function reportGossip(run: Run, phase: PublishPhase, taps: readonly ActivityTap[]): void {
  const { seen } = run
  const { regsOk, delsOk, churn0 } = phase
  const measuredIds = new Set([...regsOk, ...delsOk].map(p => p.entity.id))
  const outcomes = new Map<string, number>()
  const dupPerNode: number[] = []
  for (const s of seen) {
    let dups = 0
    for (const [key, g] of s.gossip) {
      if (!measuredIds.has(key.slice(key.indexOf('|') + 1))) continue
      dups += g.count - 1
      for (const o of g.outcomes)
        outcomes.set(
          `${key.slice(0, key.indexOf('|'))}:${o}`,
          (outcomes.get(`${key.slice(0, key.indexOf('|'))}:${o}`) ?? 0) + 1
        )
    }
    dupPerNode.push(dups)
  }
  for (const [label, list, kind] of [
    ['registration', regsOk, 'entity.register'],
    ['tombstone', delsOk, 'entity.deregister']
  ] as const) {
    const recipients = list
      .map(p => seen[p.home]!.published.get(`${kind}|${p.entity.id}`))
      .filter((x): x is number => x !== undefined)
    const r = summarize(recipients)
    report(
      `${label}_gossip_recipients`,
      `min ${r.min}, median ${r.p50}, max ${r.max}`,
      `peers the home node's gossipsub sent each publication to (gossip_outgoing; ${recipients.length} of ${list.length} publications reported)`
    )
  }
  report(
    'gossip_validated_outcomes',
    [...outcomes]
      .sort()
      .map(([k, n]) => `${k}=${n}`)
      .join(' '),
    '(gossip_incoming events for the measured subjects, all nodes)'
  )
  report(
    'gossip_duplicates_validated',
    dupPerNode.reduce((a, b) => a + b, 0),
    `(an operation validated twice by one node; per node max ${Math.max(...dupPerNode)}) — copies gossipsub drops in its seen cache are not visible`
  )
  report(
    'sync_sessions_applying',
    seen.reduce((a, s) => a + s.syncSessions, 0),
    `(sync sessions that applied something during the run; ${seen.reduce((a, s) => a + s.syncApplied, 0)} operations)`
  )
  const connects = seen.reduce((a, s, i) => a + s.connects - churn0[i]![0], 0)
  const disconnects = seen.reduce((a, s, i) => a + s.disconnects - churn0[i]![1], 0)
  report(
    'connection_churn',
    `${connects} connected, ${disconnects} disconnected`,
    '(peer_connected / peer_disconnected events over all nodes during the publish phase; each connection counts at both ends)'
  )
  report(
    'activity_events_dropped',
    taps.reduce((a, t) => a + t.dropped, 0),
    '(activity stream frames the nodes dropped for this subscriber)'
  )
}

/** The nodes' CPU over the publish phase, the client's, and the nodes' memory. */
function reportCost(run: Run, phase: PublishPhase, rss: readonly number[]): void {
  const { N } = run
  const { seconds: phaseSeconds, cpu0, cpu1, gossip0, gossip1, regsOk, delsOk, pressure, clientCpu } = phase
  const cpuPerNode = cpu1.map((c, i) => c - cpu0[i]!)
  const cpuTotal = cpuPerNode.reduce((a, b) => a + b, 0)
  report('publish_phase', phaseSeconds.toFixed(1), 's (registrations, drain, tombstones, drain)')
  report(
    'node_cpu',
    ((100 * cpuTotal) / phaseSeconds).toFixed(0),
    `% of one core, all ${N} nodes together over the publish phase (max one node ${((100 * Math.max(...cpuPerNode)) / phaseSeconds).toFixed(1)} %, median ${((100 * summarize(cpuPerNode).p50) / phaseSeconds).toFixed(1)} %)`
  )
  report(
    'node_cpu_per_operation',
    ((1000 * cpuTotal) / Math.max(1, regsOk.length + delsOk.length)).toFixed(1),
    `ms of node CPU per published operation, summed over ${N} nodes (idle baseline included)`
  )
  const first = gossip1.first - gossip0.first
  report(
    'gossip_copies_per_first',
    ((gossip1.copies - gossip0.copies) / Math.max(1, first)).toFixed(2),
    `message copies received per first copy, all nodes (${first} first copies over the publish phase)`
  )
  report(
    'gossip_bytes_sent_per_operation',
    ((gossip1.bytesSent - gossip0.bytesSent) / Math.max(1, regsOk.length + delsOk.length) / 1024).toFixed(1),
    `KiB of gossipsub RPC (messages, control, subscriptions) summed over ${N} nodes`
  )
  report(
    'cpu_pressure_avg60',
    pressure.toFixed(0),
    '% (/proc/pressure/cpu "some" at the end of the publish phase: share of time runnable tasks waited for a core)'
  )
  report(
    'client_cpu',
    ((100 * (clientCpu.user + clientCpu.system)) / 1e6 / phaseSeconds).toFixed(0),
    '% of one core (this bench process)'
  )
  const r = summarize(rss)
  report(
    'node_rss',
    `median ${r.p50.toFixed(0)}, max ${r.max.toFixed(0)}, total ${rss.reduce((a, b) => a + b, 0).toFixed(0)}`,
    'MiB'
  )
}

async function main(): Promise<void> {
  const args = parseOptions()
  const N = Number(args.nodes)
  const R = Number(args.registrations)
  const T = Math.min(Number(args.tombstones), R)
  const warmupMax = Math.max(0, Number(args.warmup))
  if (args.topology !== 'tree' && args.topology !== 'star') throw new Error('--topology is tree or star')
  const random = seededRandom(7)
  const benchStarted = performance.now()
  process.setMaxListeners(4 * N + 20)

  const machine = await reportMachine()
  report(
    'node_sources',
    args['node-src'] ?? (process.env.BENCH_NODE_BUILT ? `${REPO}dist (BENCH_NODE_BUILT)` : `${REPO}src`),
    ''
  )
  report('node_extra_args', args['node-arg'].join(' ') || 'none', '')

  // 1. Signed registrations; 2. nodes.
  const { warmupPool, measured } = await signRegistrations(args, warmupMax, R)
  const nodes = await startNodes(args, N, random)
  const run: Run = {
    args,
    N,
    rate: Number(args.rate),
    drainMs: Number(args.drain) * 1000,
    random,
    nodes,
    seen: nodes.map(() => ({
      registered: new Map(),
      deregistered: new Map(),
      gossip: new Map(),
      syncApplied: 0,
      syncSessions: 0,
      published: new Map(),
      connects: 0,
      disconnects: 0
    })),
    agent: new Agent({ keepAlive: true, maxSockets: 64 }),
    statusAgent: new Agent({ keepAlive: true, maxSockets: 4 })
  }
  try {
    // 3. Connected mesh; 4. activity streams; 5. settle and warm up; 6. idle CPU.
    await waitForMesh(run)
    const taps = nodes.map(n => new ActivityTap(n, (node, e) => record(run.seen[node.index]!, e)))
    await Promise.all(taps.map(t => t.opened))
    await warmUp(run, warmupMax, warmupPool)
    await reportIdleCpu(run)

    if (args.poll) {
      const { regsOk, delsOk } = await pollPhase(run, R, T, measured)
      reportDelivery(run, 'registration', regsOk, 'registered', 'entity.register')
      reportDelivery(run, 'tombstone', delsOk, 'deregistered', 'entity.deregister')
    } else {
      // 7. Publish registrations at the rate, then tombstones.
      const phase = await publish(run, R, T, measured)
      const rss = await Promise.all(nodes.map(n => rssMiB(n.proc.child.pid!)))

      // 8. Figures.
      report(
        'registrations_published',
        `${phase.regsOk.length} of ${R}`,
        `acknowledged (201), at ${run.rate}/s to random nodes`
      )
      report(
        'tombstones_published',
        `${phase.delsOk.length} of ${phase.chosen.length}`,
        'acknowledged (200), at their home nodes'
      )
      report(
        'registrations_all_delivered_after',
        phase.regDrain === Infinity ? `not within ${args.drain}` : (phase.regDrain / 1000).toFixed(2),
        's after the last reply'
      )
      report(
        'tombstones_all_delivered_after',
        phase.delDrain === Infinity ? `not within ${args.drain}` : (phase.delDrain / 1000).toFixed(2),
        's after the last reply'
      )
      reportDelivery(run, 'registration', phase.regsOk, 'registered', 'entity.register')
      reportDelivery(run, 'tombstone', phase.delsOk, 'deregistered', 'entity.deregister')
      reportGossip(run, phase, taps)
      reportCost(run, phase, rss)
      const endShape = await meshShape(run.statusAgent, nodes)
      report('degree_at_end', degreeLine(endShape), `(per node: ${endShape.degrees.join(' ')})`)
    }
    machine.after()
    for (const t of taps) t.close()
  } finally {
    run.agent.destroy()
    run.statusAgent.destroy()
    await Promise.all(nodes.map(n => stopNode(n)))
    await Promise.all(nodes.map(removeData))
  }
  report('bench_time', ((performance.now() - benchStarted) / 1000).toFixed(1), 's')
}

if (isMainThread) await main()
