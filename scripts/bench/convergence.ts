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
  call, connectedPeers, cpuOf, cpuPressure, getJson, reportMachine, meshShape, removeData, REPO, rssMiB, sleep,
  startMeshNode, stopNode, summarize, type MeshNode
} from '../lib/mesh-bench.js'
import { seededRandom } from '../lib/random.js'
import { report } from '../lib/report.js'

const log = (text: string): void => { process.stderr.write(`${text}\n`) }

interface Status { entities: { agents: number; services: number }; mesh: { peer_count: number } }

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

type Write =
  | { kind: 'register'; entity: SignedEntity; variant: number }
  | { kind: 'deregister'; entity: SignedEntity }

function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[items[i], items[j]] = [items[j]!, items[i]!]
  }
  return items
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({
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
  })
  const N = Number(args.nodes)
  const H = Math.floor(N / 2)
  if (H < 1 || N !== 2 * H) throw new Error('--nodes must be even and at least 2')
  const E = Number(args.entities)
  const T = Number(args.tombstones)
  const C = Math.min(Number(args.conflicts), Math.floor(E / 4))
  const perHalf = Math.floor(E / 2)
  const crossTombstones = Math.round(T * Number(args['cross-share']))
  const S = Math.max(Number(args.shared ?? T), crossTombstones)
  const inHalfTombstones = T - crossTombstones
  const rate = Number(args.rate)
  const random = seededRandom(11)
  const secret = `bench_${randomBytes(16).toString('hex')}`
  const benchStarted = performance.now()
  process.setMaxListeners(8 * N + 20)

  const machine = await reportMachine()
  report('node_sources', args['node-src'] ?? `${REPO}src`, '')
  const nodeExtra = ['--webhook-secret', secret, '--max-list-limit', '10000',
    ...(args['sync-interval'] ? ['--sync-interval-seconds', args['sync-interval']] : []), ...args['node-arg']]
  report('node_extra_args', [...nodeExtra.slice(2), '(and --webhook-secret)'].join(' '), '')

  // 1. Signed registrations. Entities 0 … S-1 are shared; then half A's own, half B's own, and the
  // conflicting keys (two bodies each).
  const ownPerHalf = perHalf - C
  const jobs = entityJobs(0, S + 2 * ownPerHalf + C, Number(args.developers))
  for (const job of jobs.slice(S + 2 * ownPerHalf)) job.variants = 2
  const signStarted = performance.now()
  const signed = await signEntitiesInWorkers(jobs, `${args.seed} ${Date.now()}`, Number(args.workers))
  report('sign_time', ((performance.now() - signStarted) / 1000).toFixed(1), `s (${signed.length} keys, ${signed.length + C} bodies, ${args.workers} worker threads, before any node starts)`)
  const shared = signed.slice(0, S)
  const ownA = signed.slice(S, S + ownPerHalf)
  const ownB = signed.slice(S + ownPerHalf, S + 2 * ownPerHalf)
  const conflicting = signed.slice(S + 2 * ownPerHalf)

  // Deregistrations: distinct shared entities for each half, and some of each half's own.
  const sharedPool = shuffle([...shared], random)
  const crossA = sharedPool.slice(0, Math.ceil(crossTombstones / 2))
  const crossB = sharedPool.slice(Math.ceil(crossTombstones / 2), crossTombstones)
  const inA = shuffle([...ownA], random).slice(0, Math.ceil(inHalfTombstones / 2))
  const inB = shuffle([...ownB], random).slice(0, inHalfTombstones - Math.ceil(inHalfTombstones / 2))
  report('plan', `shared ${S}; per half ${perHalf} registrations (${C} of them conflicting keys); tombstones ${crossA.length}+${crossB.length} of shared, ${inA.length}+${inB.length} within the half`, '')
  // What the nodes must end with follows from the writes the nodes acknowledged (a write that
  // failed changes nothing): registered minus deregistered.
  const expectedOf = (runs: readonly WriteRun[]): Set<string> => {
    const ids = new Set<string>()
    for (const r of runs) for (const id of r.registered) ids.add(id)
    for (const r of runs) for (const id of r.deregistered) ids.delete(id)
    return ids
  }

  // 2. Connected mesh: a tree in each half, b0 also bootstrapped from a0.
  const A: MeshNode[] = []
  const B: MeshNode[] = []
  const all = (): MeshNode[] => [...A, ...B]
  const treeParent = (i: number): number => Math.floor((i - 1) / 2)
  const start = (half: 'a' | 'b', i: number, bootstrap: string[], data?: string): Promise<MeshNode> =>
    startMeshNode({ index: half === 'a' ? i : H + i, name: `${half}${i}`, bootstrap, data, extra: nodeExtra, nodeSrc: args['node-src'], logLevel: 'debug' })
  const startHalf = async (half: 'a' | 'b', list: MeshNode[], first: string[], data?: string[]): Promise<void> => {
    list[0] = await start(half, 0, first, data?.[0])
    for (let i = 1; i < H; i += 2) {
      const group = [i, i + 1].filter(k => k < H)
      const started = await Promise.all(group.map(k => start(half, k, [list[treeParent(k)]!.tcp], data?.[k])))
      for (const n of started) list[n.index - (half === 'a' ? 0 : H)] = n
    }
  }
  const agent = new Agent({ keepAlive: true, maxSockets: Number(args.concurrency) * 2 })
  const pollAgent = new Agent({ keepAlive: true, maxSockets: N * 2 })
  let finished = false
  const stopping = new Set<MeshNode>()
  const cleanup = async (): Promise<void> => {
    for (const n of all().filter(Boolean)) stopping.add(n)
    agent.destroy()
    pollAgent.destroy()
    await Promise.all(all().filter(Boolean).map(n => stopNode(n)))
    if (finished) await Promise.all(all().filter(Boolean).map(removeData))
    else log(`data directories kept: ${all().filter(Boolean).map(n => n.data).join(' ')}`)
  }

  try {
    // A node process that exits on its own is reported at once, with the end of its output.
    const exits: string[] = []
    const watchExit = (n: MeshNode): void => {
      void n.proc.exited.then(code => {
        if (stopping.has(n)) return
        const line = `${n.name} exited with code ${code} at ${new Date().toISOString()}`
        exits.push(line)
        log(`!! ${line}; the end of its output:\n${n.proc.output().slice(-4000)}`)
      })
    }
    const startedAt = performance.now()
    await startHalf('a', A, [])
    await startHalf('b', B, [A[0]!.tcp])
    report('nodes_started', ((performance.now() - startedAt) / 1000).toFixed(1), `s (${N} processes)`)
    for (const n of all()) watchExit(n)
    const statusOf = (n: MeshNode): Promise<Status> => getJson<Status>(pollAgent, n.base, '/v1/network/status')
    const countOf = (s: Status): number => s.entities.agents + s.entities.services
    // A poll that fails (a node too busy to answer in time) counts as NaN: never equal, never fatal.
    const counts = async (list: readonly MeshNode[]): Promise<number[]> => Promise.all(list.map(n => statusOf(n).then(countOf, () => NaN)))
    const waitCounts = async (list: readonly MeshNode[], expected: number, limitMs: number): Promise<number> => {
      const t0 = performance.now()
      let lastPrint = t0
      for (;;) {
        const c = await counts(list)
        if (c.every(x => x === expected)) return performance.now() - t0
        if (performance.now() - t0 > limitMs) return Infinity
        if (performance.now() - lastPrint > 10_000) { lastPrint = performance.now(); log(`  counts ${list.map((n, k) => `${n.name}=${c[k]}`).join(' ')} (expected ${expected})`) }
        await sleep(250)
      }
    }
    let shape = await meshShape(pollAgent, all())
    for (let k = 0; k < 120 && !shape.connected; k++) { await sleep(500); shape = await meshShape(pollAgent, all()) }
    report('connected_mesh', `connected ${shape.connected}, ${shape.edges} connections`, `(degrees ${shape.degrees.join(' ')})`)

    // Writes over keep-alive HTTP at a rate, at most --concurrency in flight.
    const failures: string[] = []
    const runWrites = async (writes: readonly Write[], targets: readonly MeshNode[], perSecond: number): Promise<WriteRun> => {
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
        while (performance.now() < due || inFlight >= Number(args.concurrency)) await sleep(Math.max(1, Math.min(5, due - performance.now())))
        const w = writes[k]!
        const target = targets[Math.floor(random() * targets.length)]!
        inFlight++
        pending.push((async () => {
          const reply = w.kind === 'register'
            ? await call(agent, target.base, 'POST', '/v1/entities', w.entity.bodies[w.variant])
            : await call(agent, target.base, 'DELETE', `/v1/entities/${w.entity.id}`, undefined, { authorization: `Bearer ${w.entity.deleteToken}` })
          inFlight--
          if (reply.retried) retried++
          // Sent again after a reset keep-alive socket: 409 / 404 "deregistered" mean the first attempt was accepted.
          const accepted = w.kind === 'register'
            ? reply.status === 201 || (reply.retried && reply.status === 409 && reply.text.includes('entity_exists'))
            : reply.status === 200 || (reply.retried && reply.status === 404 && reply.text.includes('deregistered'))
          if (accepted) {
            ok++
            if (w.kind === 'register') registered.add(w.entity.id)
            else deregistered.add(w.entity.id)
            if (w.kind === 'register' && w.entity.bodies.length > 1) replies.set(w.entity.id, target.name)
          } else { failed++; if (failures.length < 10) failures.push(`${w.kind} on ${target.name}: ${reply.status} ${reply.text.slice(0, 200)}`) }
        })())
      }
      await Promise.all(pending)
      return { ok, failed, retried, seconds: (performance.now() - t0) / 1000, replies, registered, deregistered }
    }

    // 3. Shared entities while connected.
    const sharedRun = await runWrites(shared.map(entity => ({ kind: 'register', entity, variant: 0 })), all(), rate)
    const sharedConverged = await waitCounts(all(), sharedRun.registered.size, 180_000)
    report('shared_registered', `${sharedRun.ok} of ${S}${sharedRun.retried ? ` (${sharedRun.retried} sent twice after a reset socket)` : ''}`, `in ${sharedRun.seconds.toFixed(1)} s; every node held them ${sharedConverged === Infinity ? 'never (within 180 s)' : `${(sharedConverged / 1000).toFixed(1)} s later`}`)

    // 4. Partition: half B restarts on new ports, bootstrapped only within B.
    const bData = B.map(n => n.data)
    const oldB = new Set(B.map(n => n.peerId))
    for (const n of B) stopping.add(n)
    await Promise.all(B.map(n => stopNode(n)))
    await startHalf('b', B, [], bData)
    for (const n of B) watchExit(n)
    await sleep(3000)
    const aIds = new Set(A.map(n => n.peerId))
    const crossing = async (): Promise<number> => {
      let n = 0
      for (const a of A) n += (await connectedPeers(pollAgent, a)).filter(p => oldB.has(p)).length
      for (const b of B) n += (await connectedPeers(pollAgent, b)).filter(p => aIds.has(p)).length
      return n
    }
    const crossBefore = await crossing()
    const shapeA = await meshShape(pollAgent, A)
    const shapeB = await meshShape(pollAgent, B)
    report('partition', `connections across the halves: ${crossBefore}`, `(half A connected ${shapeA.connected}, degrees ${shapeA.degrees.join(' ')}; half B connected ${shapeB.connected}, degrees ${shapeB.degrees.join(' ')})`)

    // 5. Divergence: both halves at once.
    const plan = (own: SignedEntity[], conflictVariant: number, cross: SignedEntity[], inHalf: SignedEntity[]): Write[] => [
      ...shuffle<Write>([
        ...own.map(entity => ({ kind: 'register', entity, variant: 0 }) as Write),
        ...conflicting.map(entity => ({ kind: 'register', entity, variant: conflictVariant }) as Write),
        ...cross.map(entity => ({ kind: 'deregister', entity }) as Write)
      ], random),
      ...inHalf.map(entity => ({ kind: 'deregister', entity }) as Write)
    ]
    const writesA = plan(ownA, 0, crossA, inA)
    const writesB = plan(ownB, 1, crossB, inB)
    const cpuDiv0 = await Promise.all(all().map(n => cpuOf(n.proc.child.pid!)))
    const divStarted = performance.now()
    const [runA, runB] = await Promise.all([runWrites(writesA, A, rate / 2), runWrites(writesB, B, rate / 2)])
    const divSeconds = (performance.now() - divStarted) / 1000
    report('divergent_writes', `A ${runA.ok} ok / ${runA.failed} failed, B ${runB.ok} ok / ${runB.failed} failed${runA.retried + runB.retried ? ` (${runA.retried + runB.retried} sent twice after a reset socket)` : ''}`, `in ${divSeconds.toFixed(1)} s (target ${rate} operations/s over both halves)`)
    for (const f of failures) log(`  write failure: ${f}`)
    const expectedIds = expectedOf([sharedRun, runA, runB])
    const expA = expectedOf([sharedRun, runA]).size
    const expB = expectedOf([sharedRun, runB]).size
    report('expected_entities_after_heal', expectedIds.size, `(from the acknowledged writes; planned ${S + 2 * ownPerHalf + C - crossA.length - crossB.length - inA.length - inB.length})`)
    const [halfA, halfB] = await Promise.all([waitCounts(A, expA, Number(args['half-timeout']) * 1000), waitCounts(B, expB, Number(args['half-timeout']) * 1000)])
    const cpuDiv1 = await Promise.all(all().map(n => cpuOf(n.proc.child.pid!)))
    const divCpu = cpuDiv1.reduce((a, c, i) => a + (c - cpuDiv0[i]!), 0)
    const fmtWait = (ms: number): string => (ms === Infinity ? `not within ${args['half-timeout']} s` : `${(ms / 1000).toFixed(1)} s`)
    report('halves_converged_after_writes', `A ${fmtWait(halfA)}, B ${fmtWait(halfB)}`, `(expected A ${expA}, B ${expB}; now ${(await counts(all())).join(' ')})`)
    report('divergence_node_cpu', ((100 * divCpu) / ((performance.now() - divStarted) / 1000)).toFixed(0), `% of one core, ${N} nodes together (writes and the halves' own convergence; ${((1000 * divCpu) / Math.max(1, runA.ok + runB.ok)).toFixed(1)} ms per write summed over the nodes)`)

    // Who wins each conflict: the later registered_at of the two homes' copies.
    const winner = new Map<string, string>() // entity ID → expected signature
    let ties = 0
    for (const e of conflicting) {
      const homeA = A.find(n => n.name === runA.replies.get(e.id))
      const homeB = B.find(n => n.name === runB.replies.get(e.id))
      if (!homeA || !homeB) continue
      const [ra, rb] = await Promise.all([homeA, homeB].map(n => getJson<{ registered_at: string; signature: string }>(pollAgent, n.base, `/v1/entities/${e.id}`)))
      if (ra!.registered_at === rb!.registered_at) { ties++; continue }
      winner.set(e.id, ra!.registered_at > rb!.registered_at ? ra!.signature : rb!.signature)
    }
    report('conflicts', `${winner.size} with a later copy known`, `(${ties} same-millisecond ties, not checked)`)

    // Full check of one node: IDs, conflict winners, digest.
    type Check = { digest: string; count: number; missing: number; extra: number; wrongWinner: number }
    const fullCheck = (n: MeshNode): Promise<Check> => listAndCompare(n).catch((err: Error) => ({ digest: `error: ${err.message.slice(0, 80)}`, count: NaN, missing: NaN, extra: NaN, wrongWinner: NaN }))
    const listAndCompare = async (n: MeshNode): Promise<Check> => {
      const lines: string[] = []
      for (let offset = 0; ; offset += 10_000) {
        const page = await getJson<{ entities: { entity_id: string; signature: string; registered_at: string }[]; has_more: boolean }>(pollAgent, n.base, `/v1/entities?type=all&limit=10000&offset=${offset}`)
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
      return { digest: createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 16), count: ids.size, missing, extra: ids.size - (expectedIds.size - missing), wrongWinner }
    }
    const before = await Promise.all(all().map(fullCheck))
    report('digests_before_heal', all().map((n, k) => `${n.name}=${before[k]!.digest}`).join(' '), '')

    // 6. Heal.
    const bridges = Math.min(H, Math.max(1, Number(args.bridges)))
    const cpuHeal0 = await Promise.all(all().map(n => cpuOf(n.proc.child.pid!)))
    const healIso = new Date().toISOString()
    const healAt = performance.now()
    for (let k = 0; k < bridges; k++) {
      const reply = await call(agent, A[k]!.base, 'POST', '/v1/network/peers', JSON.stringify({ address: B[k]!.tcp }), { authorization: `Bearer ${secret}` })
      report(`heal_${k}`, `${A[k]!.name} → ${B[k]!.name}: ${reply.status}`, `in ${reply.ms.toFixed(0)} ms${reply.status === 201 ? '' : ` ${reply.text.slice(0, 200)}`}`)
    }
    const since = (): number => (performance.now() - healAt) / 1000
    let countsEqualAt = Infinity
    let convergedAt = Infinity
    let lastFull = -Infinity
    let lastPrint = -Infinity
    let lastCheck: Awaited<ReturnType<typeof fullCheck>>[] = []
    const expected = expectedIds.size
    for (;;) {
      const statuses = await Promise.all(all().map(n => statusOf(n).catch(() => null)))
      const c = statuses.map(st => (st ? countOf(st) : NaN))
      const t = since()
      if (t - lastPrint >= 10) {
        lastPrint = t
        report(`counts_at_${Math.round(t)}s`, all().map((n, k) => `${n.name}=${c[k]}`).join(' '), `(peers ${statuses.map(st => st?.mesh.peer_count ?? '?').join(' ')}; expected ${expected})`)
      }
      if (c.every(x => x === expected)) {
        if (countsEqualAt === Infinity) countsEqualAt = t
        if (performance.now() - lastFull > 3000) {
          lastFull = performance.now()
          lastCheck = await Promise.all(all().map(fullCheck))
          const ok = lastCheck.every(r => r.missing === 0 && r.extra === 0 && r.wrongWinner === 0 && r.digest === lastCheck[0]!.digest)
          if (ok) { convergedAt = t; break }
          log(`  full check at ${t.toFixed(1)} s: ${lastCheck.map((r, k) => `${all()[k]!.name}:${r.digest}/-${r.missing}/+${r.extra}/w${r.wrongWinner}`).join(' ')}`)
        }
      }
      if (t > Number(args['heal-timeout'])) break
      await sleep(Number(args['poll-ms']))
    }
    const healSeconds = since()
    const cpuHeal1 = await Promise.all(all().map(n => cpuOf(n.proc.child.pid!)))
    const healCpu = cpuHeal1.map((c, i) => c - cpuHeal0[i]!)
    const finalCounts = await counts(all())
    report('counts_final', all().map((n, k) => `${n.name}=${finalCounts[k]}`).join(' '), `(expected ${expected})`)
    report('counts_equal_after', countsEqualAt === Infinity ? `not within ${args['heal-timeout']}` : countsEqualAt.toFixed(1), 's after the heal (every node counts the expected number)')
    report('converged_after', convergedAt === Infinity ? `not within ${args['heal-timeout']}` : convergedAt.toFixed(1), 's after the heal (identical sets, checked in full: IDs, conflict winners, digest)')
    if (convergedAt === Infinity) {
      if (lastCheck.length === 0) lastCheck = await Promise.all(all().map(fullCheck))
      report('last_full_check', lastCheck.map((r, k) => `${all()[k]!.name}: ${r.count} held, ${r.missing} missing, ${r.extra} extra, ${r.wrongWinner} wrong winners, digest ${r.digest}`).join('; '), '')
    } else {
      report('digest_after', lastCheck[0]!.digest, `(all ${N} nodes)`)
    }

    // Tombstones held everywhere: samples of each class.
    const samples = [...crossA.slice(0, 10), ...crossB.slice(0, 10), ...inA.slice(0, 10), ...inB.slice(0, 10)]
    let tombOk = 0
    let tombChecked = 0
    for (const n of all()) {
      for (const e of samples) {
        const reply = await call(pollAgent, n.base, 'GET', `/v1/entities/${e.id}`)
        tombChecked++
        if (reply.status === 404 && /deregistered/.test(reply.text)) tombOk++
      }
    }
    report('tombstones_held', `${tombOk} of ${tombChecked}`, `(GET answers 404 "deregistered": ${samples.length} sampled tombstones × ${N} nodes, a quarter from each class)`)

    // Sync sessions from the logs since the heal.
    const sessions: { node: string; peer: string; sent: number; received: number; applied: number; invalid: number; ms: number; time: string }[] = []
    let rejected = 0
    const rejectedSamples: string[] = []
    const syncFailures: string[] = []
    for (const n of all()) {
      for (const line of n.proc.output().split('\n')) {
        if (line.includes('"msg":"rejected an invalid operation from the mesh"')) { rejected++; if (rejectedSamples.length < 5) rejectedSamples.push(`${n.name}: ${line.slice(0, 600)}`) }
        if (/"msg":"sync (with|from) peer failed"/.test(line) && syncFailures.length < 5) syncFailures.push(`${n.name}: ${line.slice(0, 400)}`)
        if (!line.includes('"msg":"synced with peer"')) continue
        try {
          const entry = JSON.parse(line) as { time: string; peer: string; sent: number; received: number; applied: number; invalid: number; ms: number }
          if (entry.time >= healIso) sessions.push({ node: n.name, ...entry })
        } catch { /* a partial line */ }
      }
    }
    sessions.sort((a, b) => (a.time < b.time ? -1 : 1))
    const sum = (f: (s: (typeof sessions)[number]) => number): number => sessions.reduce((a, s) => a + f(s), 0)
    report('sync_sessions_after_heal', sessions.length, `(logged by both sides; sent ${sum(s => s.sent)}, received ${sum(s => s.received)}, applied ${sum(s => s.applied)}, invalid ${sum(s => s.invalid)} operations; longest ${Math.max(0, ...sessions.map(s => s.ms))} ms)`)
    const peerName = new Map(all().map(n => [n.peerId, n.name]))
    for (const s of sessions.slice(0, 40)) {
      const t = ((Date.parse(s.time) - Date.parse(healIso)) / 1000).toFixed(1)
      log(`  sync +${t}s ${s.node}↔${peerName.get(s.peer) ?? s.peer.slice(-6)}: sent ${s.sent}, received ${s.received}, applied ${s.applied}, invalid ${s.invalid}, ${s.ms} ms`)
    }
    report('sync_timeline', sessions.slice(0, 30).map(s => `+${((Date.parse(s.time) - Date.parse(healIso)) / 1000).toFixed(0)}s ${s.node}<${peerName.get(s.peer) ?? '?'} ${s.received}/${s.applied}`).join(', '), '(first 30: time, node<peer, received/applied)')
    report('invalid_operations_logged', rejected, '(gossip messages rejected as invalid, whole run; the first ones on stderr)')
    for (const line of rejectedSamples) log(`  rejected: ${line}`)
    report('sync_failures_logged', all().reduce((a, n) => a + (n.proc.output().match(/"msg":"sync (with|from) peer failed"/g)?.length ?? 0), 0), '(sessions that failed, log level debug; the first ones on stderr)')
    for (const line of syncFailures) log(`  sync failure: ${line}`)
    report('node_exits', exits.length, exits.length ? `(${exits.join('; ')}): a node process ended by itself` : '(no node process ended by itself)')
    report('cpu_pressure_avg60', (await cpuPressure()).toFixed(0), '% (/proc/pressure/cpu "some" at the end: share of time runnable tasks waited for a core)')
    report('heal_node_cpu', ((100 * healCpu.reduce((a, b) => a + b, 0)) / healSeconds).toFixed(0), `% of one core, ${N} nodes together over ${healSeconds.toFixed(1)} s after the heal (per node s: ${healCpu.map(c => c.toFixed(1)).join(' ')})`)
    const rss = await Promise.all(all().map(n => rssMiB(n.proc.child.pid!)))
    const r = summarize(rss)
    report('node_rss', `median ${r.p50.toFixed(0)}, max ${r.max.toFixed(0)}`, 'MiB')
    const alive = all().filter(n => n.proc.child.exitCode === null && n.proc.child.signalCode === null)
    const endShape = await meshShape(pollAgent, alive).catch(() => null)
    if (endShape) report('degree_at_end', `${endShape.edges} connections`, `(degrees ${endShape.degrees.join(' ')} of ${alive.map(n => n.name).join(' ')}; across halves ${await crossingAfter(pollAgent, A.filter(n => alive.includes(n)), B)})`)
    machine.after()
    finished = true
  } finally {
    await cleanup()
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
