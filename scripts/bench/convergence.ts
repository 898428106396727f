/**
 * G7: convergence after a partition. Two halves of a mesh of `--nodes` node processes (10) diverge
 * by `--entities` registrations (10,000, half written into each) and `--tombstones`
 * deregistrations (1,000); then the partition heals and the bench measures the time until every
 * node holds the same set of entities.
 *
 *   npm run bench:convergence -- [--nodes 10] [--entities 10000] [--tombstones 1000] [--shared 1000]
 *       [--conflicts 100] [--cross-share 0.7] [--rate 100] [--developers 100] [--workers 2]
 *       [--bridges 1] [--half-timeout 240] [--heal-timeout 300] [--poll-ms 500]
 *       [--sync-interval SECONDS] [--node-src DIR] [--node-arg=--flag ...] [--seed convergence]
 *
 * Design (what is realistic, and why). There is no route to drop a connection, so the partition is
 * made the way it happens to real nodes that go away and come back elsewhere:
 *   1. Connected: the 10 nodes start as one mesh (each half a tree of bootstrap links inside
 *      itself, b0 bootstrapped from a0 as well; kad-dht adds links of its own). `--shared`
 *      entities (1,000) are registered on random nodes of the whole mesh, and the bench waits
 *      until every node holds all of them: the state both halves share before the split.
 *   2. Partition: the nodes of half B are stopped (SIGTERM) and started again on the same data
 *      directories (same keys, same records) but on new ephemeral ports, bootstrapped only from
 *      each other. Peer stores are in memory, so B forgets A, and A can only reach B's old,
 *      closed addresses: no connection crosses the halves (checked, and printed).
 *   3. Divergence, both halves at once, each at `--rate` / 2 operations per second to random nodes
 *      of its half, over keep-alive HTTP: `--entities` / 2 registrations per half, of which
 *      `--conflicts` (100) are the same keys in both halves with different bodies (two homes accept
 *      a registration of one entity: last writer wins by accepted_at); deregistrations:
 *      `--cross-share` (70%) of `--tombstones` hit shared entities, so after healing a tombstone must
 *      beat a registration the other half holds, and the rest hit entities registered in the same
 *      half during the partition (the other half must receive the registration and its tombstone:
 *      sync sends both). Each half's deregistrations of shared entities are different entities.
 *      The bench then waits until each half has converged within itself (at most --half-timeout s),
 *      so that what is measured next is the healing alone.
 *   4. Heal: `POST /v1/network/peers` on a0 with b0's TCP address (admin route: the nodes run with
 *      `--webhook-secret`, which open mode accepts for admin routes), `--bridges` of them (a_k → b_k).
 *      The clock starts just before the first POST. Sync runs when a connection opens (the side
 *      with the lower peer ID starts it) and every `p2p.sync_interval_seconds` (60 by default;
 *      `--sync-interval` sets it on every node) with one random connected peer. Operations applied
 *      by sync are not gossiped again (they are older than gossip's 60 s age bound anyway), so
 *      beyond the bridge the halves learn from each other by sync sessions only.
 *
 * Measured after the heal: every `--poll-ms` each node's `GET /v1/network/status` (agents +
 * services, peer count), printed every 10 s; once every node counts the expected number, a full
 * check of every node: `GET /v1/entities?type=all&limit=10000` pages (nodes run with
 * `--max-list-limit 10000`), the set of IDs compared with the expected set, the signature of each
 * conflicting entity with the later of its two registrations (read from both homes before the
 * heal), and a digest of (entity ID, signature, registered_at) compared across nodes. Converged =
 * the first full check where all of that holds; `counts_equal_after` is when the counts first
 * matched. Afterwards tombstones are sampled on every node (GET must answer 404 "deregistered").
 * Sync sessions come from the nodes' logs (`synced with peer`, log level info): sessions, operations
 * sent/received/applied, the longest session. Node CPU (/proc) over the heal, RSS at the end.
 *
 * Prints one `name: value unit` line per figure (progress goes to stderr). Never fails on timing.
 */
import { createHash, randomBytes } from 'node:crypto'
import { Agent } from 'node:http'
import { parseArgs } from 'node:util'
import { isMainThread } from 'node:worker_threads'
import { entityJobs, signEntitiesInWorkers, type SignedEntity } from '../lib/entity-signing.js'
import {
  call,
  connectedPeers,
  cpuOf,
  cpuPressure,
  getJson,
  reportMachine,
  meshShape,
  removeData,
  log,
  REPO,
  rssMiB,
  sleep,
  startMeshNode,
  stopNode,
  summarize,
  type MeshNode
} from '../lib/mesh-bench.js'
import { seededRandom } from '../lib/random.js'
import { report } from '../lib/report.js'

interface Status {
  entities: { agents: number; services: number }
  mesh: { peer_count: number }
}

interface WriteRun {
  ok: number
  failed: number
  retried: number
  seconds: number
  /** Conflicting key → the node that accepted this half's copy. */
  replies: Map<string, string>
  registered: Set<string>
  deregistered: Set<string>
}

type Write = { kind: 'register'; entity: SignedEntity; variant: number } | { kind: 'deregister'; entity: SignedEntity }

function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[items[i], items[j]] = [items[j]!, items[i]!]
  }
  return items
}

function parseOptions() {
  return parseArgs({
    options: {
      nodes: { type: 'string', default: '10' },
      entities: { type: 'string', default: '10000' },
      tombstones: { type: 'string', default: '1000' },
      shared: { type: 'string' },
      conflicts: { type: 'string', default: '100' },
      'cross-share': { type: 'string', default: '0.7' },
      rate: { type: 'string', default: '100' },
      developers: { type: 'string', default: '100' },
      workers: { type: 'string', default: '2' },
      bridges: { type: 'string', default: '1' },
      'half-timeout': { type: 'string', default: '240' },
      'heal-timeout': { type: 'string', default: '300' },
      'poll-ms': { type: 'string', default: '500' },
      'sync-interval': { type: 'string' },
      concurrency: { type: 'string', default: '32' },
      seed: { type: 'string', default: 'convergence' },
      'node-src': { type: 'string' },
      'node-arg': { type: 'string', multiple: true, default: [] }
    }
  }).values
}
type Args = ReturnType<typeof parseOptions>

// ---------------------------------------------------------------------------------------------
// The plan: which entities are shared, whose own, conflicting, and which are deregistered where.

/** Entities 0 … S-1 are shared; then half A's own, half B's own, and the conflicting keys (two bodies each). */
interface Plan {
  /** Registrations per half during the partition. */
  perHalf: number
  ownPerHalf: number
  shared: SignedEntity[]
  ownA: SignedEntity[]
  ownB: SignedEntity[]
  conflicting: SignedEntity[]
  /** Deregistrations: distinct shared entities for each half, and some of each half's own. */
  crossA: SignedEntity[]
  crossB: SignedEntity[]
  inA: SignedEntity[]
  inB: SignedEntity[]
}

/** Signs every registration (before any node starts) and picks the deregistrations. */
async function planWrites(args: Args, random: () => number): Promise<Plan> {
  const E = Number(args.entities)
  const T = Number(args.tombstones)
  const C = Math.min(Number(args.conflicts), Math.floor(E / 4))
  const perHalf = Math.floor(E / 2)
  const crossTombstones = Math.round(T * Number(args['cross-share']))
  const S = Math.max(Number(args.shared ?? T), crossTombstones)
  const inHalfTombstones = T - crossTombstones

  const ownPerHalf = perHalf - C
  const jobs = entityJobs(0, S + 2 * ownPerHalf + C, Number(args.developers))
  for (const job of jobs.slice(S + 2 * ownPerHalf)) job.variants = 2
  const signStarted = performance.now()
  const signed = await signEntitiesInWorkers(jobs, `${args.seed} ${Date.now()}`, Number(args.workers))
  report(
    'sign_time',
    ((performance.now() - signStarted) / 1000).toFixed(1),
    `s (${signed.length} keys, ${signed.length + C} bodies, ${args.workers} worker threads, before any node starts)`
  )
  const shared = signed.slice(0, S)
  const ownA = signed.slice(S, S + ownPerHalf)
  const ownB = signed.slice(S + ownPerHalf, S + 2 * ownPerHalf)
  const conflicting = signed.slice(S + 2 * ownPerHalf)

  const sharedPool = shuffle([...shared], random)
  const crossA = sharedPool.slice(0, Math.ceil(crossTombstones / 2))
  const crossB = sharedPool.slice(Math.ceil(crossTombstones / 2), crossTombstones)
  const inA = shuffle([...ownA], random).slice(0, Math.ceil(inHalfTombstones / 2))
  const inB = shuffle([...ownB], random).slice(0, inHalfTombstones - Math.ceil(inHalfTombstones / 2))
  report(
    'plan',
    `shared ${S}; per half ${perHalf} registrations (${C} of them conflicting keys); tombstones ${crossA.length}+${crossB.length} of shared, ${inA.length}+${inB.length} within the half`,
    ''
  )
  return { perHalf, ownPerHalf, shared, ownA, ownB, conflicting, crossA, crossB, inA, inB }
}

/**
 * What the nodes must end with follows from the writes the nodes acknowledged (a write that
 * failed changes nothing): registered minus deregistered.
 */
function expectedOf(runs: readonly WriteRun[]): Set<string> {
  const ids = new Set<string>()
  for (const r of runs) for (const id of r.registered) ids.add(id)
  for (const r of runs) for (const id of r.deregistered) ids.delete(id)
  return ids
}

/** One half's writes during the partition: its own entities, its copies of the conflicting keys, then its deregistrations. */
function halfWrites(
  plan: Plan,
  own: SignedEntity[],
  conflictVariant: number,
  cross: SignedEntity[],
  inHalf: SignedEntity[],
  random: () => number
): Write[] {
  return [
    ...shuffle<Write>(
      [
        ...own.map(entity => ({ kind: 'register', entity, variant: 0 }) as Write),
        ...plan.conflicting.map(entity => ({ kind: 'register', entity, variant: conflictVariant }) as Write),
        ...cross.map(entity => ({ kind: 'deregister', entity }) as Write)
      ],
      random
    ),
    ...inHalf.map(entity => ({ kind: 'deregister', entity }) as Write)
  ]
}

// ---------------------------------------------------------------------------------------------
// The mesh: two halves of node processes, their status, and writes to them.

class Mesh {
  readonly N: number
  readonly H: number
  readonly A: MeshNode[] = []
  readonly B: MeshNode[] = []
  readonly agent: Agent
  readonly pollAgent: Agent
  /** Node processes being stopped on purpose (their exit is not reported). */
  readonly stopping = new Set<MeshNode>()
  /** Node processes that exited on their own. */
  readonly exits: string[] = []
  /** The first write failures, for stderr. */
  readonly failures: string[] = []
  finished = false

  constructor(
    readonly args: Args,
    readonly random: () => number,
    readonly secret: string,
    private readonly nodeExtra: string[]
  ) {
    this.N = Number(args.nodes)
    this.H = Math.floor(this.N / 2)
    this.agent = new Agent({ keepAlive: true, maxSockets: Number(args.concurrency) * 2 })
    this.pollAgent = new Agent({ keepAlive: true, maxSockets: this.N * 2 })
  }

  all(): MeshNode[] {
    return [...this.A, ...this.B]
  }

  private start(half: 'a' | 'b', i: number, bootstrap: string[], data?: string): Promise<MeshNode> {
    return startMeshNode({
      index: half === 'a' ? i : this.H + i,
      name: `${half}${i}`,
      bootstrap,
      data,
      extra: this.nodeExtra,
      nodeSrc: this.args['node-src'],
      logLevel: 'debug'
    })
  }

  /** A tree of bootstrap links inside the half, its first node bootstrapped from `first`. */
  async startHalf(half: 'a' | 'b', first: string[], data?: string[]): Promise<void> {
    const list = half === 'a' ? this.A : this.B
    const treeParent = (i: number): number => Math.floor((i - 1) / 2)
    list[0] = await this.start(half, 0, first, data?.[0])
    for (let i = 1; i < this.H; i += 2) {
      const group = [i, i + 1].filter(k => k < this.H)
      const started = await Promise.all(group.map(k => this.start(half, k, [list[treeParent(k)]!.tcp], data?.[k])))
      for (const n of started) list[n.index - (half === 'a' ? 0 : this.H)] = n
    }
  }

  /** A node process that exits on its own is reported at once, with the end of its output. */
  watchExit(n: MeshNode): void {
    void n.proc.exited.then(code => {
      if (this.stopping.has(n)) return
      const line = `${n.name} exited with code ${code} at ${new Date().toISOString()}`
      this.exits.push(line)
      log(`!! ${line}; the end of its output:\n${n.proc.output().slice(-4000)}`)
    })
  }

  async cleanup(): Promise<void> {
    const all = this.all().filter(Boolean)
    for (const n of all) this.stopping.add(n)
    this.agent.destroy()
    this.pollAgent.destroy()
    await Promise.all(all.map(n => stopNode(n)))
    if (this.finished) await Promise.all(all.map(removeData))
    else log(`data directories kept: ${all.map(n => n.data).join(' ')}`)
  }

  statusOf(n: MeshNode): Promise<Status> {
    return getJson<Status>(this.pollAgent, n.base, '/v1/network/status')
  }

  /** A poll that fails (a node too busy to answer in time) counts as NaN: never equal, never fatal. */
  async counts(list: readonly MeshNode[]): Promise<number[]> {
    return Promise.all(list.map(n => this.statusOf(n).then(countOf, () => NaN)))
  }

  /** How long until every node of `list` counts `expected` entities (Infinity: not within `limitMs`). */
  async waitCounts(list: readonly MeshNode[], expected: number, limitMs: number): Promise<number> {
    const t0 = performance.now()
    let lastPrint = t0
    for (;;) {
      const c = await this.counts(list)
      if (c.every(x => x === expected)) return performance.now() - t0
      if (performance.now() - t0 > limitMs) return Infinity
      if (performance.now() - lastPrint > 10_000) {
        lastPrint = performance.now()
        log(`  counts ${list.map((n, k) => `${n.name}=${c[k]}`).join(' ')} (expected ${expected})`)
      }
      await sleep(250)
    }
  }

  cpu(): Promise<number[]> {
    return Promise.all(this.all().map(n => cpuOf(n.proc.child.pid!)))
  }

  /** Writes over keep-alive HTTP at a rate, at most --concurrency in flight, each to a random node of `targets`. */
  async runWrites(writes: readonly Write[], targets: readonly MeshNode[], perSecond: number): Promise<WriteRun> {
    const concurrency = Number(this.args.concurrency)
    const t0 = performance.now()
    let ok = 0
    let failed = 0
    let retried = 0
    const registered = new Set<string>()
    const deregistered = new Set<string>()
    const replies = new Map<string, string>() // conflicting key → the node that accepted this half's copy
    let inFlight = 0
    const pending: Promise<void>[] = []
    for (let k = 0; k < writes.length; k++) {
      const due = t0 + (k * 1000) / perSecond
      while (performance.now() < due || inFlight >= concurrency)
        await sleep(Math.max(1, Math.min(5, due - performance.now())))
      const w = writes[k]!
      const target = targets[Math.floor(this.random() * targets.length)]!
      inFlight++
      pending.push(
        (async () => {
          const reply =
            w.kind === 'register'
              ? await call(this.agent, target.base, 'POST', '/v1/entities', w.entity.bodies[w.variant])
              : await call(this.agent, target.base, 'DELETE', `/v1/entities/${w.entity.id}`, undefined, {
                  authorization: `Bearer ${w.entity.deleteToken}`
                })
          inFlight--
          if (reply.retried) retried++
          // Sent again after a reset keep-alive socket: 409 / 404 "deregistered" mean the first attempt was accepted.
          const accepted =
            w.kind === 'register'
              ? reply.status === 201 || (reply.retried && reply.status === 409 && reply.text.includes('entity_exists'))
              : reply.status === 200 || (reply.retried && reply.status === 404 && reply.text.includes('deregistered'))
          if (accepted) {
            ok++
            if (w.kind === 'register') registered.add(w.entity.id)
            else deregistered.add(w.entity.id)
            if (w.kind === 'register' && w.entity.bodies.length > 1) replies.set(w.entity.id, target.name)
          } else {
            failed++
            if (this.failures.length < 10)
              this.failures.push(`${w.kind} on ${target.name}: ${reply.status} ${reply.text.slice(0, 200)}`)
          }
        })()
      )
    }
    await Promise.all(pending)
    return { ok, failed, retried, seconds: (performance.now() - t0) / 1000, replies, registered, deregistered }
  }
}

const countOf = (s: Status): number => s.entities.agents + s.entities.services

// ---------------------------------------------------------------------------------------------
// The steps

/** 1. Connected: both halves started as one mesh (b0 also bootstrapped from a0). */
async function connect(mesh: Mesh): Promise<void> {
  const startedAt = performance.now()
  await mesh.startHalf('a', [])
  await mesh.startHalf('b', [mesh.A[0]!.tcp])
  report('nodes_started', ((performance.now() - startedAt) / 1000).toFixed(1), `s (${mesh.N} processes)`)
  for (const n of mesh.all()) mesh.watchExit(n)
  let shape = await meshShape(mesh.pollAgent, mesh.all())
  for (let k = 0; k < 120 && !shape.connected; k++) {
    await sleep(500)
    shape = await meshShape(mesh.pollAgent, mesh.all())
  }
  report(
    'connected_mesh',
    `connected ${shape.connected}, ${shape.edges} connections`,
    `(degrees ${shape.degrees.join(' ')})`
  )
}

/** The shared entities, written while connected, until every node holds them. */
async function writeShared(mesh: Mesh, plan: Plan): Promise<WriteRun> {
  const sharedRun = await mesh.runWrites(
    plan.shared.map(entity => ({ kind: 'register', entity, variant: 0 })),
    mesh.all(),
    Number(mesh.args.rate)
  )
  const sharedConverged = await mesh.waitCounts(mesh.all(), sharedRun.registered.size, 180_000)
  report(
    'shared_registered',
    `${sharedRun.ok} of ${plan.shared.length}${sharedRun.retried ? ` (${sharedRun.retried} sent twice after a reset socket)` : ''}`,
    `in ${sharedRun.seconds.toFixed(1)} s; every node held them ${sharedConverged === Infinity ? 'never (within 180 s)' : `${(sharedConverged / 1000).toFixed(1)} s later`}`
  )
  return sharedRun
}

/** 2. Partition: half B restarts on new ports, bootstrapped only within B; no connection may cross. */
async function partition(mesh: Mesh): Promise<void> {
  const { A, B, pollAgent } = mesh
  const bData = B.map(n => n.data)
  const oldB = new Set(B.map(n => n.peerId))
  for (const n of B) mesh.stopping.add(n)
  await Promise.all(B.map(n => stopNode(n)))
  await mesh.startHalf('b', [], bData)
  for (const n of B) mesh.watchExit(n)
  await sleep(3000)
  const aIds = new Set(A.map(n => n.peerId))
  let crossBefore = 0
  for (const a of A) crossBefore += (await connectedPeers(pollAgent, a)).filter(p => oldB.has(p)).length
  for (const b of B) crossBefore += (await connectedPeers(pollAgent, b)).filter(p => aIds.has(p)).length
  const shapeA = await meshShape(pollAgent, A)
  const shapeB = await meshShape(pollAgent, B)
  report(
    'partition',
    `connections across the halves: ${crossBefore}`,
    `(half A connected ${shapeA.connected}, degrees ${shapeA.degrees.join(' ')}; half B connected ${shapeB.connected}, degrees ${shapeB.degrees.join(' ')})`
  )
}

/** 3. Divergence: both halves at once, then each half converged within itself; the IDs every node must end with. */
async function diverge(
  mesh: Mesh,
  plan: Plan,
  sharedRun: WriteRun
): Promise<{ runA: WriteRun; runB: WriteRun; expectedIds: Set<string> }> {
  const { A, B, N, args, random } = mesh
  const rate = Number(args.rate)
  const { ownA, ownB, crossA, crossB, inA, inB } = plan
  const writesA = halfWrites(plan, ownA, 0, crossA, inA, random)
  const writesB = halfWrites(plan, ownB, 1, crossB, inB, random)
  const cpuDiv0 = await mesh.cpu()
  const divStarted = performance.now()
  const [runA, runB] = await Promise.all([mesh.runWrites(writesA, A, rate / 2), mesh.runWrites(writesB, B, rate / 2)])
  const divSeconds = (performance.now() - divStarted) / 1000
  report(
    'divergent_writes',
    `A ${runA.ok} ok / ${runA.failed} failed, B ${runB.ok} ok / ${runB.failed} failed${runA.retried + runB.retried ? ` (${runA.retried + runB.retried} sent twice after a reset socket)` : ''}`,
    `in ${divSeconds.toFixed(1)} s (target ${rate} operations/s over both halves)`
  )
  for (const f of mesh.failures) log(`  write failure: ${f}`)
  const expectedIds = expectedOf([sharedRun, runA, runB])
  const expA = expectedOf([sharedRun, runA]).size
  const expB = expectedOf([sharedRun, runB]).size
  report(
    'expected_entities_after_heal',
    expectedIds.size,
    `(from the acknowledged writes; planned ${plan.shared.length + 2 * plan.ownPerHalf + plan.conflicting.length - crossA.length - crossB.length - inA.length - inB.length})`
  )
  const [halfA, halfB] = await Promise.all([
    mesh.waitCounts(A, expA, Number(args['half-timeout']) * 1000),
    mesh.waitCounts(B, expB, Number(args['half-timeout']) * 1000)
  ])
  const cpuDiv1 = await mesh.cpu()
  const divCpu = cpuDiv1.reduce((a, c, i) => a + (c - cpuDiv0[i]!), 0)
  const fmtWait = (ms: number): string =>
    ms === Infinity ? `not within ${args['half-timeout']} s` : `${(ms / 1000).toFixed(1)} s`
  report(
    'halves_converged_after_writes',
    `A ${fmtWait(halfA)}, B ${fmtWait(halfB)}`,
    `(expected A ${expA}, B ${expB}; now ${(await mesh.counts(mesh.all())).join(' ')})`
  )
  report(
    'divergence_node_cpu',
    ((100 * divCpu) / ((performance.now() - divStarted) / 1000)).toFixed(0),
    `% of one core, ${N} nodes together (writes and the halves' own convergence; ${((1000 * divCpu) / Math.max(1, runA.ok + runB.ok)).toFixed(1)} ms per write summed over the nodes)`
  )
  return { runA, runB, expectedIds }
}

/** Who wins each conflict: the later registered_at of the two homes' copies (entity ID → expected signature). */
async function conflictWinners(mesh: Mesh, plan: Plan, runA: WriteRun, runB: WriteRun): Promise<Map<string, string>> {
  const winner = new Map<string, string>()
  let ties = 0
  for (const e of plan.conflicting) {
    const homeA = mesh.A.find(n => n.name === runA.replies.get(e.id))
    const homeB = mesh.B.find(n => n.name === runB.replies.get(e.id))
    if (!homeA || !homeB) continue
    const [ra, rb] = await Promise.all(
      [homeA, homeB].map(n =>
        getJson<{ registered_at: string; signature: string }>(mesh.pollAgent, n.base, `/v1/entities/${e.id}`)
      )
    )
    if (ra!.registered_at === rb!.registered_at) {
      ties++
      continue
    }
    winner.set(e.id, ra!.registered_at > rb!.registered_at ? ra!.signature : rb!.signature)
  }
  report('conflicts', `${winner.size} with a later copy known`, `(${ties} same-millisecond ties, not checked)`)
  return winner
}

type Check = { digest: string; count: number; missing: number; extra: number; wrongWinner: number }

/** Full check of one node: IDs, conflict winners, digest (an error counts as a failed check). */
function fullCheck(
  mesh: Mesh,
  n: MeshNode,
  expectedIds: ReadonlySet<string>,
  winner: ReadonlyMap<string, string>
): Promise<Check> {
  return listAndCompare(mesh, n, expectedIds, winner).catch((err: Error) => ({
    digest: `error: ${err.message.slice(0, 80)}`,
    count: NaN,
    missing: NaN,
    extra: NaN,
    wrongWinner: NaN
  }))
}

async function listAndCompare(
  mesh: Mesh,
  n: MeshNode,
  expectedIds: ReadonlySet<string>,
  winner: ReadonlyMap<string, string>
): Promise<Check> {
  const lines: string[] = []
  for (let offset = 0; ; offset += 10_000) {
    const page = await getJson<{
      entities: { entity_id: string; signature: string; registered_at: string }[]
      has_more: boolean
    }>(mesh.pollAgent, n.base, `/v1/entities?type=all&limit=10000&offset=${offset}`)
    for (const e of page.entities) lines.push(`${e.entity_id} ${e.signature} ${e.registered_at}`)
    if (!page.has_more || page.entities.length === 0) break
  }
  lines.sort()
  const ids = new Set(lines.map(l => l.slice(0, l.indexOf(' '))))
  let missing = 0
  for (const id of expectedIds) if (!ids.has(id)) missing++
  let wrongWinner = 0
  for (const l of lines) {
    const [id, sig] = l.split(' ')
    const want = winner.get(id!)
    if (want && want !== sig) wrongWinner++
  }
  return {
    digest: createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 16),
    count: ids.size,
    missing,
    extra: ids.size - (expectedIds.size - missing),
    wrongWinner
  }
}

/** What the heal measured. */
interface Heal {
  healIso: string
  seconds: number
  cpu: number[]
}

/**
 * 4. Heal: a0 → b0 (and more bridges), then every --poll-ms the counts, and once they match a full
 * check of every node, until it passes or --heal-timeout.
 */
async function heal(mesh: Mesh, expectedIds: ReadonlySet<string>, winner: ReadonlyMap<string, string>): Promise<Heal> {
  const { A, B, H, N, args } = mesh
  const all = mesh.all()
  const check = (n: MeshNode): Promise<Check> => fullCheck(mesh, n, expectedIds, winner)
  const bridges = Math.min(H, Math.max(1, Number(args.bridges)))
  const cpuHeal0 = await mesh.cpu()
  const healIso = new Date().toISOString()
  const healAt = performance.now()
  for (let k = 0; k < bridges; k++) {
    const reply = await call(
      mesh.agent,
      A[k]!.base,
      'POST',
      '/v1/network/peers',
      JSON.stringify({ address: B[k]!.tcp }),
      { authorization: `Bearer ${mesh.secret}` }
    )
    report(
      `heal_${k}`,
      `${A[k]!.name} → ${B[k]!.name}: ${reply.status}`,
      `in ${reply.ms.toFixed(0)} ms${reply.status === 201 ? '' : ` ${reply.text.slice(0, 200)}`}`
    )
  }
  const since = (): number => (performance.now() - healAt) / 1000
  let countsEqualAt = Infinity
  let convergedAt = Infinity
  let lastFull = -Infinity
  let lastPrint = -Infinity
  let lastCheck: Check[] = []
  const expected = expectedIds.size
  for (;;) {
    const statuses = await Promise.all(all.map(n => mesh.statusOf(n).catch(() => null)))
    const c = statuses.map(st => (st ? countOf(st) : NaN))
    const t = since()
    if (t - lastPrint >= 10) {
      lastPrint = t
      report(
        `counts_at_${Math.round(t)}s`,
        all.map((n, k) => `${n.name}=${c[k]}`).join(' '),
        `(peers ${statuses.map(st => st?.mesh.peer_count ?? '?').join(' ')}; expected ${expected})`
      )
    }
    if (c.every(x => x === expected)) {
      if (countsEqualAt === Infinity) countsEqualAt = t
      if (performance.now() - lastFull > 3000) {
        lastFull = performance.now()
        lastCheck = await Promise.all(all.map(check))
        const ok = lastCheck.every(
          r => r.missing === 0 && r.extra === 0 && r.wrongWinner === 0 && r.digest === lastCheck[0]!.digest
        )
        if (ok) {
          convergedAt = t
          break
        }
        log(
          `  full check at ${t.toFixed(1)} s: ${lastCheck.map((r, k) => `${all[k]!.name}:${r.digest}/-${r.missing}/+${r.extra}/w${r.wrongWinner}`).join(' ')}`
        )
      }
    }
    if (t > Number(args['heal-timeout'])) break
    await sleep(Number(args['poll-ms']))
  }
  const seconds = since()
  const cpuHeal1 = await mesh.cpu()
  const cpu = cpuHeal1.map((c, i) => c - cpuHeal0[i]!)
  const finalCounts = await mesh.counts(all)
  report('counts_final', all.map((n, k) => `${n.name}=${finalCounts[k]}`).join(' '), `(expected ${expected})`)
  report(
    'counts_equal_after',
    countsEqualAt === Infinity ? `not within ${args['heal-timeout']}` : countsEqualAt.toFixed(1),
    's after the heal (every node counts the expected number)'
  )
  report(
    'converged_after',
    convergedAt === Infinity ? `not within ${args['heal-timeout']}` : convergedAt.toFixed(1),
    's after the heal (identical sets, checked in full: IDs, conflict winners, digest)'
  )
  if (convergedAt === Infinity) {
    if (lastCheck.length === 0) lastCheck = await Promise.all(all.map(check))
    report(
      'last_full_check',
      lastCheck
        .map(
          (r, k) =>
            `${all[k]!.name}: ${r.count} held, ${r.missing} missing, ${r.extra} extra, ${r.wrongWinner} wrong winners, digest ${r.digest}`
        )
        .join('; '),
      ''
    )
  } else {
    report('digest_after', lastCheck[0]!.digest, `(all ${N} nodes)`)
  }
  return { healIso, seconds, cpu }
}

/** Tombstones held everywhere: samples of each class. */
async function reportTombstones(mesh: Mesh, plan: Plan): Promise<void> {
  const samples = [
    ...plan.crossA.slice(0, 10),
    ...plan.crossB.slice(0, 10),
    ...plan.inA.slice(0, 10),
    ...plan.inB.slice(0, 10)
  ]
  let tombOk = 0
  let tombChecked = 0
  for (const n of mesh.all()) {
    for (const e of samples) {
      const reply = await call(mesh.pollAgent, n.base, 'GET', `/v1/entities/${e.id}`)
      tombChecked++
      if (reply.status === 404 && /deregistered/.test(reply.text)) tombOk++
    }
  }
  report(
    'tombstones_held',
    `${tombOk} of ${tombChecked}`,
    `(GET answers 404 "deregistered": ${samples.length} sampled tombstones × ${mesh.N} nodes, a quarter from each class)`
  )
}

/** Sync sessions from the logs since the heal, invalid operations and failed sessions. */
function reportSyncLogs(mesh: Mesh, healIso: string): void {
  const all = mesh.all()
  const sessions: {
    node: string
    peer: string
    sent: number
    received: number
    applied: number
    invalid: number
    ms: number
    time: string
  }[] = []
  let rejected = 0
  const rejectedSamples: string[] = []
  const syncFailures: string[] = []
  for (const n of all) {
    for (const line of n.proc.output().split('\n')) {
      if (line.includes('"msg":"rejected an invalid operation from the mesh"')) {
        rejected++
        if (rejectedSamples.length < 5) rejectedSamples.push(`${n.name}: ${line.slice(0, 600)}`)
      }
      if (/"msg":"sync (with|from) peer failed"/.test(line) && syncFailures.length < 5)
        syncFailures.push(`${n.name}: ${line.slice(0, 400)}`)
      if (!line.includes('"msg":"synced with peer"')) continue
      try {
        const entry = JSON.parse(line) as {
          time: string
          peer: string
          sent: number
          received: number
          applied: number
          invalid: number
          ms: number
        }
        if (entry.time >= healIso) sessions.push({ node: n.name, ...entry })
      } catch {
        /* a partial line */
      }
    }
  }
  sessions.sort((a, b) => (a.time < b.time ? -1 : 1))
  const sum = (f: (s: (typeof sessions)[number]) => number): number => sessions.reduce((a, s) => a + f(s), 0)
  report(
    'sync_sessions_after_heal',
    sessions.length,
    `(logged by both sides; sent ${sum(s => s.sent)}, received ${sum(s => s.received)}, applied ${sum(s => s.applied)}, invalid ${sum(s => s.invalid)} operations; longest ${Math.max(0, ...sessions.map(s => s.ms))} ms)`
  )
  const peerName = new Map(all.map(n => [n.peerId, n.name]))
  for (const s of sessions.slice(0, 40)) {
    const t = ((Date.parse(s.time) - Date.parse(healIso)) / 1000).toFixed(1)
    log(
      `  sync +${t}s ${s.node}↔${peerName.get(s.peer) ?? s.peer.slice(-6)}: sent ${s.sent}, received ${s.received}, applied ${s.applied}, invalid ${s.invalid}, ${s.ms} ms`
    )
  }
  report(
    'sync_timeline',
    sessions
      .slice(0, 30)
      .map(
        s =>
          `+${((Date.parse(s.time) - Date.parse(healIso)) / 1000).toFixed(0)}s ${s.node}<${peerName.get(s.peer) ?? '?'} ${s.received}/${s.applied}`
      )
      .join(', '),
    '(first 30: time, node<peer, received/applied)'
  )
  report(
    'invalid_operations_logged',
    rejected,
    '(gossip messages rejected as invalid, whole run; the first ones on stderr)'
  )
  for (const line of rejectedSamples) log(`  rejected: ${line}`)
  report(
    'sync_failures_logged',
    all.reduce((a, n) => a + (n.proc.output().match(/"msg":"sync (with|from) peer failed"/g)?.length ?? 0), 0),
    '(sessions that failed, log level debug; the first ones on stderr)'
  )
  for (const line of syncFailures) log(`  sync failure: ${line}`)
}

/** Node exits, CPU over the heal, memory, and the mesh at the end. */
async function reportNodes(mesh: Mesh, h: Heal): Promise<void> {
  const { A, B, N, exits } = mesh
  const all = mesh.all()
  report(
    'node_exits',
    exits.length,
    exits.length ? `(${exits.join('; ')}): a node process ended by itself` : '(no node process ended by itself)'
  )
  report(
    'cpu_pressure_avg60',
    (await cpuPressure()).toFixed(0),
    '% (/proc/pressure/cpu "some" at the end: share of time runnable tasks waited for a core)'
  )
  report(
    'heal_node_cpu',
    ((100 * h.cpu.reduce((a, b) => a + b, 0)) / h.seconds).toFixed(0),
    `% of one core, ${N} nodes together over ${h.seconds.toFixed(1)} s after the heal (per node s: ${h.cpu.map(c => c.toFixed(1)).join(' ')})`
  )
  const rss = await Promise.all(all.map(n => rssMiB(n.proc.child.pid!)))
  const r = summarize(rss)
  report('node_rss', `median ${r.p50.toFixed(0)}, max ${r.max.toFixed(0)}`, 'MiB')
  const alive = all.filter(n => n.proc.child.exitCode === null && n.proc.child.signalCode === null)
  const endShape = await meshShape(mesh.pollAgent, alive).catch(() => null)
  if (endShape)
    report(
      'degree_at_end',
      `${endShape.edges} connections`,
      `(degrees ${endShape.degrees.join(' ')} of ${alive.map(n => n.name).join(' ')}; across halves ${await crossingAfter(
        mesh.pollAgent,
        A.filter(n => alive.includes(n)),
        B
      )})`
    )
}

async function main(): Promise<void> {
  const args = parseOptions()
  const N = Number(args.nodes)
  const H = Math.floor(N / 2)
  if (H < 1 || N !== 2 * H) throw new Error('--nodes must be even and at least 2')
  const random = seededRandom(11)
  const secret = `bench_${randomBytes(16).toString('hex')}`
  const benchStarted = performance.now()
  process.setMaxListeners(8 * N + 20)

  const machine = await reportMachine()
  report('node_sources', args['node-src'] ?? `${REPO}src`, '')
  const nodeExtra = [
    '--webhook-secret',
    secret,
    '--max-list-limit',
    '10000',
    ...(args['sync-interval'] ? ['--sync-interval-seconds', args['sync-interval']] : []),
    ...args['node-arg']
  ]
  report('node_extra_args', [...nodeExtra.slice(2), '(and --webhook-secret)'].join(' '), '')

  const plan = await planWrites(args, random)
  const mesh = new Mesh(args, random, secret, nodeExtra)
  try {
    await connect(mesh)
    const sharedRun = await writeShared(mesh, plan)
    await partition(mesh)
    const { runA, runB, expectedIds } = await diverge(mesh, plan, sharedRun)
    const winner = await conflictWinners(mesh, plan, runA, runB)
    const before = await Promise.all(mesh.all().map(n => fullCheck(mesh, n, expectedIds, winner)))
    report(
      'digests_before_heal',
      mesh
        .all()
        .map((n, k) => `${n.name}=${before[k]!.digest}`)
        .join(' '),
      ''
    )
    const healed = await heal(mesh, expectedIds, winner)
    await reportTombstones(mesh, plan)
    reportSyncLogs(mesh, healed.healIso)
    await reportNodes(mesh, healed)
    machine.after()
    mesh.finished = true
  } finally {
    await mesh.cleanup()
  }
  report('bench_time', ((performance.now() - benchStarted) / 1000).toFixed(1), 's')
}

async function crossingAfter(agent: Agent, A: readonly MeshNode[], B: readonly MeshNode[]): Promise<number> {
  const bIds = new Set(B.map(n => n.peerId))
  let n = 0
  for (const a of A) n += (await connectedPeers(agent, a)).filter(p => bIds.has(p)).length
  return n
}

if (isMainThread) await main()
