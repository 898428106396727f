import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { DEFAULT_NETWORK, NETWORK_PRESETS, type NetworkModelSpec } from '../../src/testnet/sim/network-model.js'
import { makeBundle } from '../../src/testnet/sim/bundle.js'
import {
  convergenceParameters,
  livenessParameters,
  propagationParameters,
  reproduceBundle,
  runBundle,
  scenarioParameters
} from '../../src/testnet/sim/sim-experiment.js'
import { type ScenarioSummary, scenarioCommands } from '../../src/testnet/sim/sim-scenario.js'
import type { SimulatedConvergenceSummary } from '../../src/testnet/sim/sim-convergence-report.js'
import type { SimulatedLivenessSummary } from '../../src/testnet/sim/sim-liveness-report.js'
import type { SimulatedPropagationSummary } from '../../src/testnet/sim/sim-propagation-report.js'
import { runSimPropagation } from '../../src/testnet/sim/sim-propagation.js'
import { Simulation } from '../../src/testnet/sim/simulation.js'

async function propagate(): Promise<unknown> {
  const sim = new Simulation({ nodes: 6, seed: 3, topology: 'random:2', network: DEFAULT_NETWORK })
  try {
    await sim.start()
    const { figures } = await runSimPropagation(sim, { messages: 3, rate: 2, settleMs: 20_000, seed: 3 })
    return { figures, formedAt: sim.clock.elapsed }
  } finally {
    await sim.stop()
  }
}

test.serial(
  'six real nodes on virtual time deliver every message, one link latency per hop, and a second run repeats the first exactly',
  async t => {
    const first = (await propagate()) as { figures: Awaited<ReturnType<typeof runSimPropagation>>['figures'] }
    const { figures } = first
    t.is(figures.delivery_ratio, 1)
    // 50 ms per link in the default network: each hop adds at least that, and little more on an idle mesh.
    t.true((figures.latency_ms.p50 ?? 0) >= 50 * (figures.hops.p50 ?? 1))
    t.true((figures.latency_ms.max ?? 0) < 50 * ((figures.hops.max ?? 1) + 1))
    t.deepEqual(await propagate(), first)
  }
)

test.serial(
  'a simulated experiment writes its bundle, and running the bundle again gives every figure again',
  async t => {
    const out = await mkdtemp(join(tmpdir(), 'sim-bundle-'))
    try {
      const parameters = propagationParameters({
        nodes: 5,
        messages: 2,
        rate: 4,
        topology: 'ring',
        seed: 9,
        runs: 2,
        settle_ms: 10_000,
        mesh_degree: 4,
        network: NETWORK_PRESETS.world as NetworkModelSpec
      })
      const summary = (await runBundle(
        makeBundle(parameters, ['test']),
        join(out, 'first'),
        () => {}
      )) as SimulatedPropagationSummary
      t.is(summary.runs.length, 2)
      t.deepEqual(
        summary.runs.map(r => r.seed),
        [9, 10]
      )
      t.is(summary.across_runs.delivery_ratio.mean, 1)
      t.not(summary.across_runs.latency_mean_ms.ci95, null)
      const bundle = JSON.parse(await readFile(join(out, 'first', 'bundle.json'), 'utf8'))
      t.is(bundle.provenance.node, process.versions.node)
      t.is(bundle.gossipsub.D, 4)
      t.deepEqual(bundle.parameters, parameters)
      for (const file of ['summary.json', 'propagation.csv', 'latency-cdf.svg', 'hops-cdf.svg'])
        t.true((await readFile(join(out, 'first', file), 'utf8')).length > 0, file)
      const again = await reproduceBundle(join(out, 'first'), join(out, 'again'), () => {})
      t.deepEqual(again.differences, [])
      t.true(again.same)
    } finally {
      await rm(out, { recursive: true, force: true })
    }
  }
)

test.serial(
  'convergence in simulation: the halves stay apart, after the heal every node reaches one digest; the bundle reproduces',
  async t => {
    const out = await mkdtemp(join(tmpdir(), 'sim-convergence-'))
    try {
      const parameters = convergenceParameters({
        nodes: 6,
        topology: 'random:2',
        seed: 5,
        runs: 2,
        mesh_degree: 4,
        network: DEFAULT_NETWORK,
        entities_before: 2,
        entities_per_side: 3,
        apart_ms: 5_000,
        timeout_ms: 120_000
      })
      const summary = (await runBundle(
        makeBundle(parameters, ['test']),
        join(out, 'first'),
        () => {}
      )) as SimulatedConvergenceSummary
      t.log(JSON.stringify(summary.across_runs))
      for (const run of summary.runs) {
        t.true(run.apart, 'nothing crossed the partition')
        t.true(run.converged)
        // What waited in the stalled connections arrives one link latency or more after the heal.
        t.true((run.convergence_ms ?? 0) >= 50, JSON.stringify(run))
        t.true(run.operations >= 2 + 2 * 3, `${run.operations} operations`)
      }
      const csv = (await readFile(join(out, 'first', 'convergence.csv'), 'utf8')).trim().split('\n')
      t.is(csv[0], 'run,seed,node,group,held_before_heal,held_after,converged_ms')
      t.is(csv.length, 1 + 2 * 6)
      t.regex(await readFile(join(out, 'first', 'convergence-cdf.svg'), 'utf8'), /^<svg/)
      const again = await reproduceBundle(join(out, 'first'), join(out, 'again'), () => {})
      t.deepEqual(again.differences, [])
    } finally {
      await rm(out, { recursive: true, force: true })
    }
  }
)

test.serial(
  'a scenario on virtual time: partition, heal, a crash and a rejoin, churn; its transcript repeats exactly',
  async t => {
    const out = await mkdtemp(join(tmpdir(), 'sim-scenario-'))
    try {
      const parameters = scenarioParameters({
        nodes: 6,
        topology: 'ring',
        seed: 11,
        runs: 1,
        mesh_degree: 4,
        network: DEFAULT_NETWORK,
        commands: scenarioCommands(`
          # registrations, then apart
          seed 4
          at 5 partition 0,1,2/3,4,5
          seed 2
          at 10 heal
          converge
          at 12 stop 4
          seed 2
          at 20 restart 4
          converge
          churn 10 3
          sleep 20
          churn off
          publish 3 5
          status
          bogus
        `)
      })
      const summary = (await runBundle(
        makeBundle(parameters, ['test']),
        join(out, 'first'),
        () => {}
      )) as ScenarioSummary
      const transcript = summary.runs[0]?.transcript ?? []
      t.log(transcript.join('\n'))
      t.true(
        transcript.every(line => /^\[ *\d+\.\d{3}\] /.test(line)),
        'every line starts with virtual seconds'
      )
      const text = transcript.map(line => line.replace(/^\[ *\d+\.\d{3}\] /, ''))
      t.true(text.includes('partitioned 0,1,2 | 3,4,5'))
      t.true(text.some(l => /^registered 2 entities \(6 in all\); a partition keeps the sides apart$/.test(l)))
      t.true(text.some(l => /^converged: one digest on 6 running nodes, \d+ ms after the heal$/.test(l)))
      t.true(text.includes('stopped node-4 (its connections cut, as in a crash)'))
      t.true(text.some(l => /^converged: one digest on 6 running nodes, \d+ ms after the restart$/.test(l)))
      t.true(text.some(l => /^published 3 of 3: delivery [\d.]+ %/.test(l)))
      t.true(text.some(l => l.startsWith('error: unknown command bogus')))
      const at12 = transcript.find(l => l.includes('stopped node-4'))
      t.regex(at12 ?? '', /^\[ *12\.\d{3}\]/, 'at 12 runs the command at 12 s of virtual time')
      t.regex(await readFile(join(out, 'first', 'transcript.txt'), 'utf8'), /converged/)
      const again = await reproduceBundle(join(out, 'first'), join(out, 'again'), () => {})
      t.deepEqual(again.differences, [])
    } finally {
      await rm(out, { recursive: true, force: true })
    }
  }
)

test.serial(
  'liveness in simulation: every node shows each stopped entity inactive after the threshold, then active again; the bundle reproduces',
  async t => {
    const out = await mkdtemp(join(tmpdir(), 'sim-liveness-'))
    try {
      const parameters = livenessParameters({
        nodes: 5,
        topology: 'random:2',
        seed: 4,
        runs: 2,
        mesh_degree: 4,
        network: DEFAULT_NETWORK,
        entities: 4,
        kill: 0.5,
        heartbeat_ms: 2_000,
        inactive_after_ms: 6_000,
        sweep_ms: 500,
        timeout_ms: 30_000
      })
      const summary = (await runBundle(
        makeBundle(parameters, ['test']),
        join(out, 'first'),
        () => {}
      )) as SimulatedLivenessSummary
      t.log(JSON.stringify(summary.across_runs))
      for (const run of summary.runs) {
        t.log(JSON.stringify(run))
        t.is(run.stopped, 2)
        t.is(run.pairs, 2 * 5)
        t.is(run.seen_inactive, run.pairs, 'every stopped entity inactive on every node')
        t.is(run.seen_active, run.pairs, 'and active again')
        t.is(run.heartbeats_refused, 0)
        // The last heartbeat came at most a period before the stop; silence longer than the threshold counts.
        t.true((run.inactive_ms.p50 ?? 0) >= 6_000 - 2_000, JSON.stringify(run.inactive_ms))
        t.true((run.inactive_at_home_ms.max ?? 0) <= (run.inactive_ms.max ?? 0))
      }
      const csv = (await readFile(join(out, 'first', 'liveness.csv'), 'utf8')).trim().split('\n')
      t.is(csv[0], 'run,seed,entity_id,home,node,inactive_ms,active_ms')
      t.is(csv.length, 1 + 2 * 2 * 5)
      const inactive = csv.slice(1).map(line => Number(line.split(',')[5]))
      t.true(Math.min(...inactive) >= 6_000 - 2_000, `${Math.min(...inactive)} ms`)
      t.regex(await readFile(join(out, 'first', 'liveness-cdf.svg'), 'utf8'), /^<svg/)
      const again = await reproduceBundle(join(out, 'first'), join(out, 'again'), () => {})
      t.deepEqual(again.differences, [])
    } finally {
      await rm(out, { recursive: true, force: true })
    }
  }
)
