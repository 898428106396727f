/**
 * The testnet tool end to end: real node processes on loopback (or in network namespaces), started
 * through `registry-node testnet` / `registry-node experiment` and through the library.
 */
import { spawn } from 'node:child_process'
import { access, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { setPriority, tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { EntityFactory } from '../../src/testnet/entity-factory.js'
import type { PropagationSummary } from '../../src/testnet/experiments/propagation.js'
import type { ConvergenceSummary } from '../../src/testnet/experiments/convergence.js'
import type { LivenessSummary } from '../../src/testnet/experiments/liveness.js'
import { probeNetns } from '../../src/testnet/netns.js'
import { Testnet, sleep, type NetworkMode } from '../../src/testnet/testnet.js'
import { buildTopology, connected } from '../../src/testnet/topology.js'
import { until } from '../helpers/wait.js'
import { callEntity } from '../../src/entity/call.js'
import { agent, developer, sign, specRegistration } from '../helpers/identities.js'
import { makeBodies } from '../../scripts/lib/registration-bodies.js'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'

// Probed before any test is declared (ava wants declarations synchronous).
const netns = await probeNetns()

// The experiments' commands, the flood and the netns testnet run the same JavaScript over the same
// protocol under any runtime: they run in the README's test command, not again under the other runtimes
// of CI (scripts/runtimes.mjs), which cover the testnet library's process mode below.
const oncePerCi = process.env.REGISTRY_NODE_TEST_RUNTIME ? test.skip : test.serial

/** Runs the CLI (built, or from the sources); resolves with its exit code and output. */
function cli(
  args: string[],
  input?: (write: (line: string) => void, output: () => string) => Promise<void>
): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [...CLI_FOR_TESTS, ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', d => {
    output += d
  })
  child.stderr.on('data', d => {
    output += d
  })
  const exited = new Promise<number | null>(resolve => child.on('exit', code => resolve(code)))
  if (input)
    void input(
      line => child.stdin.write(`${line}\n`),
      () => output
    ).catch(err => {
      output += `\n[test input failed: ${(err as Error).message}]`
      child.kill('SIGINT')
    })
  else child.stdin.end()
  return exited.then(code => ({ code, output }))
}

/** Waits until the output shows `pattern` (two minutes: these start and stop node processes). */
async function waitFor(output: () => string, pattern: RegExp): Promise<void> {
  await until(`the output shows ${pattern}`, () => pattern.test(output()), { timeoutMs: 120_000, intervalMs: 100 })
}

test('topologies: edges of full, ring, star and random:<d>, always connected', t => {
  t.is(buildTopology('full', 5).edges.length, 10)
  t.deepEqual(buildTopology('ring', 4).edges, [
    [0, 1],
    [0, 3],
    [1, 2],
    [2, 3]
  ])
  t.deepEqual(buildTopology('star', 4).edges, [
    [0, 1],
    [0, 2],
    [0, 3]
  ])
  for (let seed = 1; seed <= 20; seed++) {
    const random = buildTopology('random:1', 12, seed)
    t.true(connected(12, random.edges))
    t.deepEqual(buildTopology('random:1', 12, seed), random, 'the same seed gives the same graph')
  }
  t.throws(() => buildTopology('mesh', 3), { message: /expected full, ring, star or random/ })
})

oncePerCi(
  'registry-node experiment propagation: a 5-node testnet per topology, traces, CSV, summary and chart',
  async t => {
    const out = await mkdtemp(join(tmpdir(), 'experiment-propagation-'))
    t.teardown(() => rm(out, { recursive: true, force: true }))
    const run = await cli([
      'experiment',
      'propagation',
      '--nodes',
      '5',
      '--messages',
      '10',
      '--rate',
      '20',
      '--topology',
      'ring,full',
      '--latency',
      '20',
      '--network',
      'process',
      '--out',
      out
    ])
    t.is(run.code, 0, run.output)

    const summary = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')) as PropagationSummary
    t.deepEqual(
      summary.topologies.map(s => s.topology),
      ['ring', 'full']
    )
    for (const s of summary.topologies) {
      t.is(s.nodes, 5)
      t.is(s.messages, 10)
      t.is(s.network_mode, 'process')
      t.deepEqual(s.fault_modes, { latency: 'process' })
      t.true(s.latency_ms.p50! >= 20, `every hop waits 20 ms: p50 ${s.latency_ms.p50} ms`)
      t.is(s.held_by_all_ratio, 1, 'every node ends up with every entity')
      // Gossip reaches nearly every node; anything it misses sync delivers (held_by_all_ratio).
      t.true(s.delivery_ratio >= 0.9, `delivery ${s.delivery_ratio}`)
      t.true(
        s.latency_ms.count > 0 &&
          s.latency_ms.p50! > 0 &&
          s.latency_ms.p50! <= s.latency_ms.p99! &&
          s.latency_ms.p99! <= s.latency_ms.max!
      )
      t.true(s.bytes_sent.total > 0)
      t.true(s.duplicates_per_node.mean >= 0)
    }
    t.is(summary.topologies[0]!.edges, 5)
    t.is(summary.topologies[1]!.edges, 10)

    const csv = (await readFile(join(out, 'propagation.csv'), 'utf8')).trim().split('\n')
    t.is(csv[0], 'topology,message,entity_id,origin,node,latency_ms,applied_ms,copies,hops')
    t.is(csv.length, 1 + 2 * 10 * 4, 'a row per topology, message and receiving node')

    const svg = await readFile(join(out, 'latency-cdf.svg'), 'utf8')
    t.true(svg.startsWith('<svg'))
    t.is(svg.match(/<polyline/g)?.length, 2, 'one CDF line per topology')
    t.regex(svg, /ring \(p50 [\d.]+ ms\)/)

    for (const topology of ['ring', 'full']) {
      const traces = await readdir(join(out, 'traces', topology))
      t.deepEqual(traces.sort(), ['node-0.jsonl', 'node-1.jsonl', 'node-2.jsonl', 'node-3.jsonl', 'node-4.jsonl'])
      const events = new Set(
        (await readFile(join(out, 'traces', topology, 'node-0.jsonl'), 'utf8'))
          .trim()
          .split('\n')
          .map(l => (JSON.parse(l) as { event: string }).event)
      )
      t.true(events.has('receive') && events.has('copy'))
    }
  }
)

oncePerCi('registry-node experiment convergence: a healed partition converges', async t => {
  const out = await mkdtemp(join(tmpdir(), 'experiment-convergence-'))
  t.teardown(() => rm(out, { recursive: true, force: true }))
  const run = await cli([
    'experiment',
    'convergence',
    '--nodes',
    '5',
    '--topology',
    'ring,star',
    '--entities',
    '10',
    '--network',
    'process',
    '--out',
    out
  ])
  t.is(run.code, 0, run.output)
  const summary = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')) as ConvergenceSummary
  t.is(summary.entities.total, 30)
  t.deepEqual(
    summary.runs.map(r => r.topology),
    ['ring', 'star']
  )
  for (const run of summary.runs) {
    t.true(run.partition_held, `${run.topology}: no entity crossed the partition`)
    // Converged within the experiment's own deadline; how long it took is a figure of the report.
    t.true(run.converged, `${run.topology}: converged`)
    t.is(typeof run.convergence_ms, 'number')
    // Converged means one sync digest on every node, timed per node from its own change time.
    t.regex(run.digest ?? '', /^[0-9a-f]{64}$/)
    t.true((run.operations ?? 0) >= 30, `${run.operations} operations`)
    t.deepEqual(run.held_after, [30, 30, 30, 30, 30])
    t.like(run.per_node_ms, { count: 5, max: run.convergence_ms })
  }
  t.regex(summary.measure, /digest_changed_at/)
  const svg = await readFile(join(out, 'convergence-cdf.svg'), 'utf8')
  t.is(svg.match(/<polyline/g)?.length, 2)
  const csv = (await readFile(join(out, 'convergence.csv'), 'utf8')).trim().split('\n')
  t.is(csv[0], 'topology,node,group,held_before_heal,held_after,converged_ms')
  t.is(csv.filter(row => /,30,\d+$/.test(row)).length, 2 * 5, csv.join('\n'))
})

oncePerCi(
  'registry-node experiment liveness: stopped entities turn inactive on every node, and active again after restart',
  async t => {
    const out = await mkdtemp(join(tmpdir(), 'experiment-liveness-'))
    t.teardown(() => rm(out, { recursive: true, force: true }))
    const run = await cli([
      'experiment',
      'liveness',
      '--nodes',
      '3',
      '--entities',
      '6',
      '--kill',
      '0.5',
      '--inactive-after',
      '3',
      '--network',
      'process',
      '--out',
      out
    ])
    t.is(run.code, 0, run.output)
    const summary = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')) as LivenessSummary
    t.is(summary.parameters.stopped, 3)
    t.is(summary.pairs, 9)
    t.is(summary.seen_inactive, 9, 'every node saw every stopped entity turn inactive (from the traces)')
    t.is(summary.seen_active, 9, 'and active again after its restart')
    // Inactive no sooner than the threshold after the last heartbeat, which came at most one heartbeat period before the stop.
    t.true((summary.inactive_ms.p50 ?? 0) >= 3000 - 2000, JSON.stringify(summary.inactive_ms))
    t.is((await readFile(join(out, 'liveness.csv'), 'utf8')).trim().split('\n').length, 1 + 9)
    t.is((await readFile(join(out, 'liveness-cdf.svg'), 'utf8')).match(/<polyline/g)?.length, 2)
  }
)

test.serial('registry-node testnet: prints the table, takes fault commands on stdin, removes its data', async t => {
  let dataRoot = ''
  const run = await cli(
    [
      'testnet',
      '--nodes',
      '3',
      '--topology',
      'star',
      '--seed-entities',
      '3',
      '--entities',
      '2',
      '--network',
      'process'
    ],
    async (write, output) => {
      await waitFor(output, /commands: status/)
      // The echo entities answer calls through their registry.
      const [, id, registry] = /call it with registry-node call (\S+) hello --registry (\S+)/.exec(output()) ?? []
      const reply = await callEntity(id as string, 'ping', { registry: registry as string })
      if (reply.response !== 'ping') throw new Error(`echo entity answered ${JSON.stringify(reply.reply)}`)
      write('entity-stop 0')
      await waitFor(output, /stopped entity 0/)
      write('entities')
      await waitFor(output, /entity 0 +zns:\w+ +node-0 +stopped/)
      dataRoot = /data in (\S+)/.exec(output())![1]!
      // Asked again until it shows: one status is a snapshot, taken whenever the command is read.
      const settled = /node-2 {2}running {2}peers 1 {2}entities 3/
      await until(
        `status shows ${settled}`,
        () => {
          if (settled.test(output())) return true
          write('status')
          return false
        },
        { timeoutMs: 120_000, intervalMs: 1000 }
      )
      write('stop 1')
      await waitFor(output, /stopped node-1/)
      write('restart 1')
      await waitFor(output, /restarted node-1/)
      write('quit')
    }
  )
  t.is(run.code, 0, run.output)
  t.regex(run.output, /name +http +peer id +multiaddr/)
  t.regex(run.output, /node-0 +http:\/\/127\.0\.0\.1:\d+ +12D3KooW\w+ +\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/12D3KooW/)
  t.regex(run.output, /registered 3 entities/)
  t.regex(run.output, /2 echo entities registered and heartbeating/)
  t.regex(run.output, /data removed/)
  await t.throwsAsync(access(dataRoot))
})

async function partitionAndHeal(t: import('ava').ExecutionContext, network: NetworkMode): Promise<void> {
  const net = new Testnet({ nodes: 5, topology: 'ring', network, cli: CLI_FOR_TESTS })
  t.teardown(() => net.stop())
  await net.start()
  t.is(net.mode, network)
  const factory = new EntityFactory(`partition ${network}`)
  await net.seedEntities(factory, 5)
  await net.waitForEntities(5)

  t.is(
    await net.partition([
      [0, 1],
      [2, 3, 4]
    ]),
    network
  )
  await net.seedEntities(factory, 3, 5, [0, 1])
  await net.seedEntities(factory, 3, 8, [2, 3, 4])
  await net.waitForEntities(8, 30_000)
  // Bounded: whatever could still leak across the partition would do so within this.
  await sleep(1500)
  t.deepEqual(
    await Promise.all([0, 1, 2, 3, 4].map(i => net.entityCount(i))),
    [8, 8, 8, 8, 8],
    'each side holds only its own'
  )

  const healed = Date.now()
  t.is(await net.heal(), network)
  // One sync digest on every node; each node timed by when it applied the last change.
  const converged = await net.waitForConvergence(healed, { entities: 11 })
  t.is(converged.perNodeMs.filter(ms => ms !== null && ms <= converged.ms).length, 5)
  t.log(`${network} mode: converged ${converged.ms} ms after the heal`)

  // Link faults: on chosen links only in netns mode (process-mode faults cannot single out a link).
  if (network === 'netns') {
    t.deepEqual(await net.setLinkFaults({ loss: 1, between: [[0, 1]] }), { loss: 'netns' })
    await net.seedEntities(factory, 1, 100, [0])
    await net.waitForEntities(12, 30_000) // around the ring the other way
    await net.clearLinkFaults()
  } else {
    await t.throwsAsync(net.setLinkFaults({ loss: 0.5, between: [[0, 1]] }), { message: /netns mode/ })
  }
  const held = network === 'netns' ? 12 : 11

  // A stopped node misses registrations and catches up when it restarts.
  await net.stopNode(4)
  await net.seedEntities(factory, 2, 11, [0, 1, 2])
  await net.restartNode(4)
  await net.waitForEntities(held + 2, 60_000)
  t.pass()
}

test.serial('testnet library, process mode: partition and heal converge; a restarted node catches up', t =>
  partitionAndHeal(t, 'process')
)

/** Posts every line of a file as a registration to a node, 32 at a time over keep-alive; prints how many got 201. */
const FLOODER = `
const { readFileSync } = require('node:fs')
const { Agent, request } = require('node:http')
const [file, base] = process.argv.slice(1)
const bodies = readFileSync(file, 'utf8').split('\\n')
const agent = new Agent({ keepAlive: true, maxSockets: 32, timeout: 60000 })
const url = new URL(base)
const post = body => new Promise(resolve => {
  const req = request({ agent, host: url.hostname, port: url.port, path: '/v1/entities', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, res => { res.resume(); res.on('end', () => resolve(res.statusCode)) })
  req.on('error', () => resolve(0))
  req.end(body)
})
let next = 0, accepted = 0
Promise.all(Array.from({ length: 32 }, async () => { while (next < bodies.length) if (await post(bodies[next++]) === 201) accepted++ }))
  .then(() => { console.log(accepted); agent.destroy() })
`

oncePerCi(
  'testnet library, process mode: a node floods 50k validly signed junk registrations; the others keep their API fast and hold at most their quota of it',
  async t => {
    const QUOTA = 2_000
    const net = new Testnet({
      nodes: 3,
      topology: 'full',
      network: 'process',
      syncIntervalSeconds: 5,
      nodeArgs: ['--max-entities-per-origin', String(QUOTA)],
      cli: CLI_FOR_TESTS
    })
    t.teardown(() => net.stop())
    // Signing the flood takes this process about 10 s: done before the nodes start, not between
    // their start and the first probe, where it would leave fetch's pooled keep-alive connections to
    // them idle past the server's idle timeout (the first probe then met a connection just closed).
    const junk = makeBodies(50_000, 2_000_000)
    await net.start()
    // The other nodes' local API, probed throughout the flood.
    const latencies: number[] = []
    let flooding = true
    const probe = async (i: number) => {
      while (flooding) {
        const started = performance.now()
        const res = await fetch(`${net.url(i)}/v1/entities?limit=5`).catch((err: Error & { cause?: unknown }) => {
          const state = net.running().includes(i) ? 'still running' : 'not running'
          throw new Error(`node-${i} (${state}) did not answer its probe: ${String(err.cause ?? err)}`)
        })
        await res.arrayBuffer()
        latencies.push(performance.now() - started)
        await sleep(20)
      }
    }
    // The flooding node and its load generator run at the lowest priority: on this machine they share
    // the cores with the nodes measured, which in a mesh would be other machines.
    setPriority(net.pid(0) as number, 19)
    const probes = [probe(1), probe(2)]
    // The flood comes from another process, so that its requests do not delay the probes' own.
    const dir = await mkdtemp(join(tmpdir(), 'registry-node-flood-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    await writeFile(join(dir, 'bodies.jsonl'), junk.map(b => b.body).join('\n'))
    const flooder = spawn(process.execPath, ['-e', FLOODER, join(dir, 'bodies.jsonl'), net.url(0)], {
      stdio: ['ignore', 'pipe', 'inherit']
    })
    setPriority(flooder.pid as number, 19)
    let output = ''
    flooder.stdout.on('data', chunk => {
      output += chunk
    })
    await new Promise(resolve => flooder.on('exit', resolve))
    const accepted = Number(output.trim())
    flooding = false
    await Promise.all(probes)
    latencies.sort((x, y) => x - y)
    const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? Infinity
    t.log(`flooder accepted ${accepted}; the others' API p99 ${p99.toFixed(1)} ms over ${latencies.length} requests`)
    t.is(accepted, junk.length)
    t.true(p99 <= 100, `p99 ${p99.toFixed(1)} ms`)
    // Two sync rounds later the others still hold at most the quota, and no fewer than it.
    await sleep(12_000)
    for (const i of [1, 2]) {
      const held = await net.entityCount(i)
      t.log(`node-${i} holds ${held} of the flood`)
      t.true(held <= QUOTA && held >= QUOTA / 2, `node-${i} holds ${held}`)
    }
  }
)

test.serial(
  'testnet library, process mode: a captured PUT is refused 409 signature_replayed on every node; a deployed-form DELETE removes a later re-registration on every node; a timestamped DELETE is good once',
  async t => {
    const net = new Testnet({ nodes: 3, topology: 'full', network: 'process', cli: CLI_FOR_TESTS })
    t.teardown(() => net.stop())
    await net.start()
    const dev = developer(0x44)
    const a = agent(dev, 0)
    const send = (
      i: number,
      method: string,
      path: string,
      body: string | undefined,
      headers: Record<string, string> = {}
    ) =>
      fetch(net.url(i) + path, { method, body, headers: { 'content-type': 'application/json', ...headers } }).then(
        async r => ({ status: r.status, body: (await r.json()) as Record<string, unknown> })
      )
    const path = `/v1/entities/${a.agentId}`
    const onEvery = (what: string, probe: (i: number) => Promise<boolean>) =>
      until(what, async () => ((await Promise.all([0, 1, 2].map(probe))).every(Boolean) ? true : undefined), 30_000)
    const summaryEverywhere = (summary: string) =>
      onEvery(
        `summary "${summary}" on every node`,
        async i => (await send(i, 'GET', path, undefined)).body.summary === summary
      )

    t.is((await send(0, 'POST', '/v1/entities', JSON.stringify(specRegistration(dev, a)))).status, 201)
    await onEvery('registered on every node', async i => (await send(i, 'GET', path, undefined)).status === 200)
    // Two edits in the deployed form (Bearer over the raw body: no timestamp), on two nodes; the first is captured.
    const first = JSON.stringify({ summary: 'first edit' })
    const captured = { authorization: `Bearer ${sign(a.keyPair, first)}` }
    t.is((await send(1, 'PUT', path, first, captured)).status, 200)
    await summaryEverywhere('first edit')
    const second = JSON.stringify({ summary: 'second edit' })
    t.is((await send(2, 'PUT', path, second, { authorization: `Bearer ${sign(a.keyPair, second)}` })).status, 200)
    await summaryEverywhere('second edit')
    for (const i of [0, 1, 2]) {
      const replay = await send(i, 'PUT', path, first, captured)
      t.is(replay.status, 409, `PUT replayed on node ${i}`)
      t.is(replay.body.error, 'signature_replayed')
    }

    // A deregistration in the deployed form (a signature over the ID: the same bytes every time). The
    // entity comes back; the same DELETE, the deployed clients' way to deregister it again (and what a
    // captured one can do, SECURITY.md), removes it on every node, the replicas applying the reuse rule too.
    const deletion = { authorization: `Bearer ${sign(a.keyPair, a.agentId)}` }
    t.is((await send(0, 'DELETE', path, undefined, deletion)).status, 200)
    await onEvery('deregistered on every node', async i => (await send(i, 'GET', path, undefined)).status === 404)
    const comeBack = async (summary: string) => {
      t.is((await send(1, 'POST', '/v1/entities', JSON.stringify(specRegistration(dev, a, { summary })))).status, 201)
      await summaryEverywhere(summary)
    }
    await comeBack('back again')
    t.is((await send(2, 'DELETE', path, undefined, deletion)).status, 200, 'the same deployed-form DELETE again')
    await onEvery('deregistered again on every node', async i => (await send(i, 'GET', path, undefined)).status === 404)

    // A timestamped DELETE (the path with its timestamp query, signed) is good once, on every node.
    await comeBack('back a second time')
    const stamped = `${path}?timestamp=${new Date().toISOString().slice(0, 19)}Z`
    const once = { authorization: `Bearer ${sign(a.keyPair, stamped)}` }
    t.is((await send(0, 'DELETE', stamped, undefined, once)).status, 200)
    await onEvery(
      'deregistered by the timestamped DELETE',
      async i => (await send(i, 'GET', path, undefined)).status === 404
    )
    await comeBack('back a third time')
    for (const i of [0, 1, 2]) {
      const replay = await send(i, 'DELETE', stamped, undefined, once)
      t.is(replay.status, 409, `timestamped DELETE replayed on node ${i}`)
      t.is(replay.body.error, 'signature_replayed')
    }
    await sleep(1000)
    for (const i of [0, 1, 2])
      t.is((await send(i, 'GET', path, undefined)).body.summary, 'back a third time', `still registered on node ${i}`)
  }
)

if (netns.namespaces || process.env.CI) {
  // On CI a machine without namespaces fails here (Testnet refuses --network netns and says why).
  oncePerCi('testnet library, netns mode: partition and heal converge on real packets', t =>
    partitionAndHeal(t, 'netns')
  )
} else {
  console.log(`netns testnet test skipped: ${netns.reasons.join('; ')}`)
  test.skip('testnet library, netns mode: partition and heal converge on real packets', () => {})
}
