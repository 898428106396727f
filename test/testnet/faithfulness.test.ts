/**
 * Faithfulness of the simulation: the same propagation scenario (nodes, topology, seed, mesh degree,
 * messages, rate) run by real node processes on real time and by the simulation on virtual time.
 * The testnet's link delay is fed to the simulation as the testnet applies it: without netem (not
 * on this machine) a process-mode delay holds each gossip copy for its time on arrival while every
 * other byte (gossipsub's control messages: IHAVE, IWANT, IDONTWANT) passes at once, so the
 * simulated nodes get the same delay, on a network of no latency. The real nodes' own work per
 * received operation (validation and the store's commit, from the first copy to its application in
 * their traces) is fed to the model too: the time it takes decides whether a peer's IDONTWANT comes
 * before a node forwards, and so the duplicates. So is the wait for the CPU ten processes on two
 * cores add to every transfer (the first hop's time past its delay), as link latency for every
 * message, IDONTWANT included. The protocol's figures must agree: delivery, hop counts on the
 * receive tree, duplicates per node (as distributions), and latency.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import anyTest from 'ava'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'
import { type DeliveryRow, propagationFigures } from '../../src/testnet/experiments/deliveries.js'
import { runPropagation } from '../../src/testnet/experiments/propagation.js'
import type { NetworkModelSpec } from '../../src/testnet/sim/network-model.js'
import { runSimPropagation } from '../../src/testnet/sim/sim-propagation.js'
import { Simulation } from '../../src/testnet/sim/simulation.js'

// Twenty seconds of ten real processes on two cores: once per CI, not per runtime (scripts/runtimes.mjs).
const test = process.env.REGISTRY_NODE_TEST_RUNTIME ? anyTest.skip : anyTest

const SCENARIO = { nodes: 10, topology: 'random:3', seed: 7, messages: 30, rate: 10, meshDegree: 4 }
const LATENCY_MS = 25

/** Share of each value in a distribution. */
function histogram(values: readonly number[]): Map<number, number> {
  const shares = new Map<number, number>()
  for (const v of values) shares.set(v, (shares.get(v) ?? 0) + 1 / values.length)
  return shares
}

/** Total variation distance between two distributions: 0 when equal, 1 when disjoint. */
function distance(a: readonly number[], b: readonly number[]): number {
  const x = histogram(a)
  const y = histogram(b)
  let sum = 0
  for (const key of new Set([...x.keys(), ...y.keys()])) sum += Math.abs((x.get(key) ?? 0) - (y.get(key) ?? 0))
  return sum / 2
}

type RealRow = DeliveryRow & { applied_ms: number | null }

function realRows(csv: string): RealRow[] {
  const [header, ...lines] = csv.trim().split('\n')
  const columns = (header ?? '').split(',')
  const at = (cells: string[], name: string): string => cells[columns.indexOf(name)] ?? ''
  const number = (cell: string): number | null => (cell === '' ? null : Number(cell))
  return lines.map(line => {
    const cells = line.split(',')
    return {
      message: Number(at(cells, 'message')),
      origin: Number(at(cells, 'origin').replace('node-', '')),
      node: Number(at(cells, 'node').replace('node-', '')),
      latency_ms: number(at(cells, 'latency_ms')),
      applied_ms: number(at(cells, 'applied_ms')),
      hops: number(at(cells, 'hops')),
      copies: Number(at(cells, 'copies'))
    }
  })
}

test('the same scenario in real processes and in simulation: equal delivery, hops and duplicates; latency once each hop’s work is counted', async t => {
  const out = await mkdtemp(join(tmpdir(), 'faithfulness-'))
  t.teardown(() => rm(out, { recursive: true, force: true }))

  const real = await runPropagation({
    nodes: SCENARIO.nodes,
    messages: SCENARIO.messages,
    rate: SCENARIO.rate,
    topologies: [SCENARIO.topology],
    seed: SCENARIO.seed,
    latencyMs: LATENCY_MS,
    network: 'process',
    nodeArgs: [`--gossip-mesh-degree=${SCENARIO.meshDegree}`],
    cli: CLI_FOR_TESTS,
    out
  })
  const rows = realRows(await readFile(join(out, 'propagation.csv'), 'utf8'))
  const realFigures = propagationFigures(rows, SCENARIO.messages, real.topologies[0]?.messages ?? 0, SCENARIO.nodes, 0)

  // The real nodes' processing time per operation: the median from first copy to applied.
  const processing = rows
    .flatMap(r => (r.applied_ms !== null && r.latency_ms !== null ? [r.applied_ms - r.latency_ms] : []))
    .sort((a, b) => a - b)
  const validationMs = Math.round(processing[Math.floor(processing.length / 2)] ?? 0)
  // The real processes' wait for the CPU on every transfer, control messages included: the first
  // hop's time past its delay, as a uniform draw from its 10th percentile with its median in the middle.
  const firstHop = rows
    .flatMap(r => (r.hops === 1 && r.latency_ms !== null ? [Math.max(0, r.latency_ms - LATENCY_MS)] : []))
    .sort((a, b) => a - b)
  const quantile = (q: number) => firstHop[Math.floor(q * firstHop.length)] ?? 0
  const transferMs = Math.round(quantile(0.1))
  const transferJitterMs = Math.round(2 * (quantile(0.5) - quantile(0.1)))
  const network: NetworkModelSpec = {
    regions: [{ name: 'testnet', share: 1 }],
    latencyMs: [[transferMs]],
    jitterMs: transferJitterMs,
    loss: 0,
    uploadMbps: 0,
    validationMs
  }
  const sim = new Simulation({
    nodes: SCENARIO.nodes,
    seed: SCENARIO.seed,
    topology: SCENARIO.topology,
    network,
    meshDegree: SCENARIO.meshDegree
  })
  let simulated: Awaited<ReturnType<typeof runSimPropagation>>
  try {
    await sim.start()
    for (const n of sim.nodes) await n.node?.mesh?.faults.apply({ delayMs: LATENCY_MS })
    simulated = await runSimPropagation(sim, {
      messages: SCENARIO.messages,
      rate: SCENARIO.rate,
      settleMs: 15_000,
      seed: SCENARIO.seed
    })
  } finally {
    await sim.stop()
  }
  const simFigures = simulated.figures
  const hops = (r: readonly DeliveryRow[]) => r.flatMap(d => (d.hops === null ? [] : [d.hops]))
  const report = {
    validation_ms: validationMs,
    transfer_ms: [transferMs, transferJitterMs],
    delivery: [realFigures.delivery_ratio, simFigures.delivery_ratio],
    hops_mean: [realFigures.hops.mean, simFigures.hops.mean],
    hops_distance: distance(hops(rows), hops(simulated.rows)),
    duplicates_mean: [
      realFigures.duplicates_per_node_per_message.mean,
      simFigures.duplicates_per_node_per_message.mean
    ],
    duplicates_per_node_range: [realFigures, simFigures].map(f => [
      f.duplicates_per_node_per_message.min,
      f.duplicates_per_node_per_message.max
    ]),
    latency_p50: [realFigures.latency_ms.p50, simFigures.latency_ms.p50],
    latency_p99: [realFigures.latency_ms.p99, simFigures.latency_ms.p99]
  }
  t.log(JSON.stringify(report))

  // Delivery: every node gets every message by gossip, in both.
  t.true(realFigures.delivery_ratio >= 0.99, `real delivery ${realFigures.delivery_ratio}`)
  t.is(simFigures.delivery_ratio, 1)
  // Hops: the same receive trees over the same topology; the meshes gossipsub picks differ run to
  // run, so the distributions may differ by a few deliveries in a hundred.
  t.true(report.hops_distance <= 0.15, `hop distributions differ by ${report.hops_distance.toFixed(3)}`)
  t.true(Math.abs((realFigures.hops.mean ?? 0) - (simFigures.hops.mean ?? 0)) <= 0.3, JSON.stringify(report.hops_mean))
  // Duplicates per node per message: the means within 0.3 or 40 % (0.57–0.79 real against 0.69–0.84
  // simulated in six runs, 0.25 apart at most). Per node they are reported: a node's mean over 30
  // messages swings with the scheduling of two cores more than the network's mean does.
  // On a busy machine (the other test files of a CI run share the two cores, processing median past
  // 40 ms) the waits swing within a run more than a median and a uniform draw hold: the real side no
  // longer stands for the protocol, and its duplicates and latency are reported, not compared.
  const quiet = validationMs <= 40
  if (!quiet) t.log(`busy machine (processing median ${validationMs} ms): duplicates and latency not compared`)
  const [realDup, simDup] = report.duplicates_mean as [number, number]
  if (quiet)
    t.true(
      Math.abs(realDup - simDup) <= Math.max(0.3, 0.4 * Math.max(realDup, simDup)),
      JSON.stringify(report.duplicates_mean)
    )
  // Latency: the same links, processing and waits, drawn around their medians; the real tail is longer.
  const [realP50, simP50] = report.latency_p50 as [number, number]
  if (quiet) t.true(Math.abs(realP50 - simP50) <= 30, `real p50 ${realP50} ms, simulated ${simP50} ms`)
})
