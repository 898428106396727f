/**
 * The propagation experiment's bundle (sim-experiment.ts): per run the figures of sim-propagation.ts,
 * across runs the mean and 95 % interval of the key ones; `propagation.csv` (per run, message and
 * receiving node), `latency-cdf.svg` and `hops-cdf.svg` (one line per run).
 */
import { join } from 'node:path'
import { writeFile } from 'node:fs/promises'
import { cdfChart, type CdfSeries, writeCsv } from '../experiments/report.js'
import { interval, type Interval, type PropagationParameters } from './bundle.js'
import type { RunRecord, SimulatedSummary } from './sim-runs.js'
import { simulatedRuns } from './sim-runs.js'
import { type PropagationFigures, runSimPropagation } from './sim-propagation.js'

export interface SimulatedPropagationSummary extends SimulatedSummary<PropagationFigures> {
  experiment: 'propagation'
  runs: (PropagationFigures & RunRecord)[]
  across_runs: {
    latency_mean_ms: Interval
    latency_p50_ms: Interval
    latency_p99_ms: Interval
    hops_mean: Interval
    duplicates_per_node_per_message: Interval
    delivery_ratio: Interval
  }
}

export async function runSimulatedPropagation(
  p: PropagationParameters,
  out: string,
  log: (line: string) => void
): Promise<SimulatedPropagationSummary> {
  const rows: (string | number | null)[][] = []
  const latencySeries: CdfSeries[] = []
  const hopSeries: CdfSeries[] = []
  const runs = await simulatedRuns(p, log, async (sim, seed, runLog) => {
    const { figures, rows: deliveries } = await runSimPropagation(sim, {
      messages: p.messages,
      rate: p.rate,
      settleMs: p.settle_ms,
      seed,
      log: runLog
    })
    const r = latencySeries.length + 1
    for (const d of deliveries) rows.push([r, seed, d.message, d.origin, d.node, d.latency_ms, d.hops, d.copies])
    latencySeries.push({
      label: `run ${r} (mean ${figures.latency_ms.mean ?? '–'} ms)`,
      values: deliveries.flatMap(d => (d.latency_ms === null ? [] : [d.latency_ms])),
      reach: figures.delivery_ratio
    })
    hopSeries.push({
      label: `run ${r} (mean ${figures.hops.mean ?? '–'})`,
      values: deliveries.flatMap(d => (d.hops === null ? [] : [d.hops])),
      reach: figures.delivery_ratio
    })
    runLog(
      `delivery ${(figures.delivery_ratio * 100).toFixed(1)} %, latency mean ${figures.latency_ms.mean} ms p99 ${figures.latency_ms.p99} ms, hops mean ${figures.hops.mean}, duplicates/node/message ${figures.duplicates_per_node_per_message.mean}`
    )
    return figures
  })
  await writeCsv(
    join(out, 'propagation.csv'),
    ['run', 'seed', 'message', 'origin', 'node', 'latency_ms', 'hops', 'copies'],
    rows
  )
  const title = `${p.nodes} simulated nodes (${p.topology}, D ${p.mesh_degree}), ${p.messages} messages at ${p.rate}/s`
  await writeFile(
    join(out, 'latency-cdf.svg'),
    cdfChart(`Propagation: ${title}`, 'latency from publish to first arrival (ms)', latencySeries, 'auto')
  )
  await writeFile(join(out, 'hops-cdf.svg'), cdfChart(`Hops: ${title}`, 'hops from the origin', hopSeries))
  return {
    experiment: 'propagation',
    mode: 'simulation',
    runs,
    across_runs: {
      latency_mean_ms: interval(runs.map(r => r.latency_ms.mean ?? 0)),
      latency_p50_ms: interval(runs.map(r => r.latency_ms.p50 ?? 0)),
      latency_p99_ms: interval(runs.map(r => r.latency_ms.p99 ?? 0)),
      hops_mean: interval(runs.map(r => r.hops.mean ?? 0)),
      duplicates_per_node_per_message: interval(runs.map(r => r.duplicates_per_node_per_message.mean)),
      delivery_ratio: interval(runs.map(r => r.delivery_ratio))
    }
  }
}
