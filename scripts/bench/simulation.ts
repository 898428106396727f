/**
 * What a simulation costs this machine: start-up and propagation wall time, and memory, for N
 * simulated nodes publishing M messages (the figures are the machine's; the simulated ones go to
 * the bundle when --out is given).
 *
 *   npm run bench:simulation -- --nodes 1000 --messages 100 [--topology random:4] [--network-model waku]
 *     [--mesh-degree D] [--rate R] [--out DIR]
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { defaultConfig } from '../../src/config/load.js'
import { makeBundle } from '../../src/testnet/sim/bundle.js'
import { loadNetworkModel, propagationParameters } from '../../src/testnet/sim/sim-experiment.js'
import { runSimPropagation } from '../../src/testnet/sim/sim-propagation.js'
import { Simulation } from '../../src/testnet/sim/simulation.js'

const realNow = Date.now

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      nodes: { type: 'string', default: '200' },
      messages: { type: 'string', default: '20' },
      rate: { type: 'string', default: '10' },
      topology: { type: 'string', default: 'random:4' },
      'network-model': { type: 'string', default: 'waku' },
      'mesh-degree': { type: 'string' },
      seed: { type: 'string', default: '1' },
      out: { type: 'string' }
    }
  })
  const nodes = Number(values.nodes)
  const messages = Number(values.messages)
  const parameters = propagationParameters({
    nodes,
    messages,
    rate: Number(values.rate),
    topology: values.topology as string,
    seed: Number(values.seed),
    runs: 1,
    settle_ms: 30_000,
    mesh_degree: Number(values['mesh-degree'] ?? defaultConfig().p2p.gossip_mesh_degree),
    network: await loadNetworkModel(values['network-model'] as string)
  })
  const rssBefore = process.memoryUsage().rss
  let peakRss = rssBefore
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss)
  }, 500)
  const began = realNow()
  const sim = new Simulation({
    nodes,
    seed: parameters.seed,
    topology: parameters.topology,
    network: parameters.network,
    meshDegree: parameters.mesh_degree,
    log: line => process.stderr.write(`${line}\n`)
  })
  await sim.start()
  const started = realNow()
  const rssStarted = process.memoryUsage().rss
  const { figures } = await runSimPropagation(sim, {
    messages,
    rate: parameters.rate,
    settleMs: parameters.settle_ms,
    seed: parameters.seed
  })
  const propagated = realNow()
  peakRss = Math.max(peakRss, process.memoryUsage().rss)
  await sim.stop()
  clearInterval(sampler)
  const out = (name: string, value: number | string, unit = ''): void => {
    process.stdout.write(`${name}: ${value}${unit ? ` ${unit}` : ''}\n`)
  }
  out('simulation_nodes', nodes)
  out('simulation_messages', messages)
  out('simulation_start_wall', ((started - began) / 1000).toFixed(1), 's')
  out('simulation_start_wall_per_node', ((started - began) / nodes).toFixed(1), 'ms')
  out('simulation_propagation_wall', ((propagated - started) / 1000).toFixed(1), 's')
  out('simulation_total_wall', ((propagated - began) / 1000).toFixed(1), 's')
  out('simulation_rss_per_node_after_start', ((rssStarted - rssBefore) / nodes / 2 ** 20).toFixed(2), 'MiB')
  out('simulation_peak_rss', (peakRss / 2 ** 20).toFixed(0), 'MiB')
  out('simulated_latency_mean', figures.latency_ms.mean ?? 'none', 'ms')
  out('simulated_latency_p99', figures.latency_ms.p99 ?? 'none', 'ms')
  out('simulated_hops_mean', figures.hops.mean ?? 'none')
  out('simulated_duplicates_per_node_per_message', figures.duplicates_per_node_per_message.mean)
  out('simulated_delivery_ratio', figures.delivery_ratio)
  if (values.out)
    await writeFile(
      join(values.out, 'bench.json'),
      `${JSON.stringify({ bundle: makeBundle(parameters, process.argv.slice(1)), figures }, null, 2)}\n`
    )
  process.exit(0)
}

void main()
