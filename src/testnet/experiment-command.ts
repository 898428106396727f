/**
 * The `experiment` command of the CLI: propagation, convergence, liveness and trust experiments on
 * a testnet of processes, in simulation with `--simulate`, and `experiment reproduce DIR`.
 */
import { parseArgs } from 'node:util'
import { defaultConfig } from '../config/load.js'
import { integer, lossOf, networkOf, print, stamp, topologies, UsageError } from './command-args.js'
import { runConvergence } from './experiments/convergence.js'
import { runLiveness } from './experiments/liveness.js'
import { runPropagation } from './experiments/propagation.js'
import { runTrustExperiment } from './experiments/trust.js'
import { type Interval, makeBundle, type SimulationParameters } from './sim/bundle.js'
import {
  convergenceParameters,
  livenessParameters,
  loadNetworkModel,
  propagationParameters,
  reproduceBundle,
  runBundle
} from './sim/sim-experiment.js'

export async function experimentCommand(argv: string[]): Promise<void> {
  const [kind, ...rest] = argv
  if (kind === 'reproduce') return reproduceCommand(rest)
  const { values } = parseArgs({
    args: rest,
    options: {
      simulate: { type: 'boolean' },
      runs: { type: 'string' },
      'network-model': { type: 'string' },
      'mesh-degree': { type: 'string' },
      'settle-seconds': { type: 'string' },
      nodes: { type: 'string' },
      messages: { type: 'string' },
      topology: { type: 'string' },
      loss: { type: 'string' },
      latency: { type: 'string' },
      bandwidth: { type: 'string' },
      rate: { type: 'string' },
      out: { type: 'string' },
      network: { type: 'string' },
      seed: { type: 'string' },
      entities: { type: 'string' },
      kill: { type: 'string' },
      'inactive-after': { type: 'string' },
      developers: { type: 'string' },
      interactions: { type: 'string' },
      ring: { type: 'string' },
      'attack-edges': { type: 'string' },
      'node-arg': { type: 'string', multiple: true }
    }
  })
  const nodeArgs = values['node-arg'] ?? []
  if (values.bandwidth !== undefined && (kind !== 'propagation' || values.simulate))
    throw new UsageError(
      values.simulate
        ? '--bandwidth shapes real packets; a simulation takes its upload bandwidth from --network-model'
        : '--bandwidth goes with experiment propagation'
    )
  if (values.simulate) return simulatedExperiment(kind, values, argv)
  if (kind === 'trust') {
    const out = values.out ?? `results/trust-${stamp()}`
    await runTrustExperiment({
      developers: integer('developers', values.developers, 200, 2),
      entitiesPer: 3,
      verified: 0.3,
      interactions: integer('interactions', values.interactions, 20, 1),
      paid: 0.3,
      ring: integer('ring', values.ring, 1000, 0),
      attackEdges: integer('attack-edges', values['attack-edges'], 0, 0),
      out,
      seed: integer('seed', values.seed, 1),
      log: print
    })
    print(`results in ${out}`)
    return
  }
  const nodes = integer('nodes', values.nodes, undefined, 2)
  const seed = integer('seed', values.seed, 1)
  const network = networkOf(values.network)
  const out = values.out ?? `results/${kind}-${stamp()}`
  if (kind === 'propagation') {
    const loss = lossOf(values.loss)
    const latencyMs = values.latency === undefined ? undefined : integer('latency', values.latency, undefined)
    const bandwidthMbit = values.bandwidth === undefined ? undefined : Number(values.bandwidth)
    if (bandwidthMbit !== undefined && !(bandwidthMbit > 0 && Number.isFinite(bandwidthMbit)))
      throw new UsageError("--bandwidth is each node's uplink in Mbit/s, above 0")
    if (bandwidthMbit !== undefined && network === 'process')
      throw new UsageError(
        '--bandwidth needs netns mode (--network netns or auto): processes on loopback are not shaped'
      )
    const rate = values.rate === undefined ? 10 : Number(values.rate)
    if (!(rate > 0)) throw new UsageError('--rate must be a positive number of messages per second')
    const summary = await runPropagation({
      nodes,
      messages: integer('messages', values.messages, undefined, 1),
      topologies: topologies(values.topology),
      out,
      rate,
      seed,
      network,
      nodeArgs,
      log: print,
      ...(loss !== undefined ? { loss } : {}),
      ...(latencyMs !== undefined ? { latencyMs } : {}),
      ...(bandwidthMbit !== undefined ? { bandwidthMbit } : {})
    })
    for (const t of summary.topologies) {
      print(
        `${t.topology.padEnd(10)} delivery ${(t.delivery_ratio * 100).toFixed(1)} %  p50 ${t.latency_ms.p50} ms  p95 ${t.latency_ms.p95} ms  p99 ${t.latency_ms.p99} ms  max ${t.latency_ms.max} ms  duplicates/node/msg ${t.duplicates_per_node.per_message}  bytes/msg ${t.bytes_sent.per_message}`
      )
    }
  } else if (kind === 'convergence') {
    const summary = await runConvergence({
      nodes,
      topologies: topologies(values.topology),
      out,
      seed,
      network,
      nodeArgs,
      log: print,
      ...(values.entities !== undefined ? { perSide: integer('entities', values.entities, undefined, 1) } : {})
    })
    for (const r of summary.runs) {
      print(
        `${r.topology.padEnd(10)} converged: ${r.converged}${r.convergence_ms !== null ? ` in ${r.convergence_ms} ms` : ''} (partition ${r.partition_mode} mode, halves apart: ${r.partition_held})`
      )
    }
  } else if (kind === 'liveness') {
    const kill = Number(values.kill ?? '0.2')
    if (!(kill > 0 && kill <= 1)) throw new UsageError('--kill is the share of entities stopped, in (0, 1]')
    const summary = await runLiveness({
      nodes,
      entities: integer('entities', values.entities, 20, 1),
      kill,
      out,
      seed,
      network,
      nodeArgs,
      log: print,
      ...(values.topology ? { topology: topologies(values.topology)[0] as string } : {}),
      ...(values['inactive-after']
        ? { inactiveAfterSeconds: integer('inactive-after', values['inactive-after'], undefined, 1) }
        : {})
    })
    print(
      `inactive on every node: p50 ${summary.inactive_ms.p50} ms, p99 ${summary.inactive_ms.p99} ms, max ${summary.inactive_ms.max} ms (${summary.seen_inactive} of ${summary.pairs}); active again: p50 ${summary.active_ms.p50} ms, max ${summary.active_ms.max} ms (${summary.seen_active} of ${summary.pairs})`
    )
  } else {
    throw new UsageError('experiment is propagation, convergence, liveness or trust')
  }
  print(`results in ${out}`)
}

type ExperimentValues = Record<string, string | boolean | string[] | undefined>

/** `experiment propagation|convergence|liveness --simulate`: the bundle's parameters from the flags, then the runs. */
async function simulatedExperiment(kind: string | undefined, values: ExperimentValues, argv: string[]): Promise<void> {
  const text = (name: string): string | undefined => values[name] as string | undefined
  if (kind !== 'propagation' && kind !== 'convergence' && kind !== 'liveness')
    throw new UsageError(
      '--simulate runs the propagation, convergence and liveness experiments (trust runs as processes)'
    )
  const common = {
    nodes: integer('nodes', text('nodes'), undefined, 2),
    topology: topologies(text('topology') ?? 'random:4')[0] as string,
    seed: integer('seed', text('seed'), 1),
    runs: integer('runs', text('runs'), 1, 1),
    mesh_degree: integer('mesh-degree', text('mesh-degree'), defaultConfig().p2p.gossip_mesh_degree, 2),
    network: await loadNetworkModel(text('network-model') ?? 'default')
  }
  let parameters: SimulationParameters
  if (kind === 'propagation') {
    const rate = text('rate') === undefined ? 10 : Number(text('rate'))
    if (!(rate > 0)) throw new UsageError('--rate must be a positive number of messages per second')
    parameters = propagationParameters({
      ...common,
      messages: integer('messages', text('messages'), undefined, 1),
      rate,
      settle_ms: integer('settle-seconds', text('settle-seconds'), 30, 1) * 1000
    })
  } else if (kind === 'liveness') {
    const kill = Number(text('kill') ?? '0.2')
    if (!(kill > 0 && kill <= 1)) throw new UsageError('--kill is the share of entities stopped, in (0, 1]')
    parameters = livenessParameters({
      ...common,
      entities: integer('entities', text('entities'), 20, 1),
      kill,
      // The real experiment's heartbeat period and sweep (experiments/liveness.ts).
      heartbeat_ms: 2_000,
      inactive_after_ms: integer('inactive-after', text('inactive-after'), 6, 1) * 1000,
      sweep_ms: 500,
      timeout_ms: integer('settle-seconds', text('settle-seconds'), 60, 1) * 1000
    })
  } else {
    parameters = convergenceParameters({
      ...common,
      entities_before: 10,
      entities_per_side: integer('entities', text('entities'), 20, 1),
      apart_ms: 10_000,
      timeout_ms: integer('settle-seconds', text('settle-seconds'), 120, 1) * 1000
    })
  }
  const out = text('out') ?? `results/${kind}-sim-${stamp()}`
  // Ctrl-C exits through 'exit', where the simulation removes its stores from memory-backed /dev/shm.
  process.once('SIGINT', () => process.exit(130))
  const summary = await runBundle(makeBundle(parameters, ['registry-node', 'experiment', ...argv]), out, print)
  const ci = (i: Interval): string => `${i.mean}${i.ci95 === null ? '' : ` ± ${i.ci95}`}`
  const a = summary.across_runs as Record<string, Interval>
  print(
    `simulated: ${Object.entries(a)
      .map(([name, i]) => `${name.replaceAll('_', ' ')} ${ci(i)}`)
      .join(', ')}`
  )
  print(`results in ${out} (registry-node experiment reproduce ${out} runs it again)`)
}

async function reproduceCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { out: { type: 'string' } },
    allowPositionals: true
  })
  const [dir] = positionals
  if (!dir || positionals.length > 1) throw new UsageError('reproduce takes the folder of a simulated run')
  const out = values.out ?? `${dir.replace(/\/+$/, '')}-again`
  const { same, differences } = await reproduceBundle(dir, out, print)
  if (same) {
    print(`reproduced: every figure of ${dir} came out the same (the run is in ${out})`)
    return
  }
  for (const line of differences) print(line)
  throw new UsageError(`${differences.length} figures differ from the recorded run (the new run is in ${out})`)
}
