/**
 * The convergence experiment's bundle (sim-experiment.ts): per run the figures of sim-convergence.ts,
 * across runs the mean and 95 % interval of the convergence time; `convergence.csv` (per run and
 * node: half, entities held at the heal and at the end, time to converge) and `convergence-cdf.svg`
 * (the share of nodes converged over time since the heal, one line per run).
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cdfChart, type CdfSeries, writeCsv } from '../experiments/report.js'
import { type ConvergenceParameters, interval, type Interval } from './bundle.js'
import { type ConvergenceFigures, runSimConvergence } from './sim-convergence.js'
import { type RunRecord, type SimulatedSummary, simulatedRuns } from './sim-runs.js'

export interface SimulatedConvergenceSummary extends SimulatedSummary<ConvergenceFigures> {
  experiment: 'convergence'
  runs: (ConvergenceFigures & RunRecord)[]
  across_runs: { convergence_ms: Interval; per_node_p50_ms: Interval; converged_ratio: Interval }
}

export async function runSimulatedConvergence(
  p: ConvergenceParameters,
  out: string,
  log: (line: string) => void
): Promise<SimulatedConvergenceSummary> {
  const rows: (string | number | null)[][] = []
  const series: CdfSeries[] = []
  const runs = await simulatedRuns(p, log, async (sim, seed, runLog) => {
    const { figures, perNode } = await runSimConvergence(sim, {
      before: p.entities_before,
      perSide: p.entities_per_side,
      apartMs: p.apart_ms,
      timeoutMs: p.timeout_ms,
      seed,
      log: runLog
    })
    const r = series.length + 1
    for (const n of perNode) rows.push([r, seed, n.node, n.group, n.held_before_heal, n.held_after, n.converged_ms])
    const times = perNode.flatMap(n => (n.converged_ms === null ? [] : [n.converged_ms]))
    series.push({
      label: `run ${r} (${figures.convergence_ms ?? '–'} ms)`,
      values: times,
      reach: times.length / p.nodes
    })
    runLog(
      figures.converged
        ? `converged ${figures.convergence_ms} ms after the heal (per node p50 ${figures.per_node_ms.p50} ms; halves apart before: ${figures.apart})`
        : `not converged within ${p.timeout_ms} ms of the heal`
    )
    return figures
  })
  await writeCsv(
    join(out, 'convergence.csv'),
    ['run', 'seed', 'node', 'group', 'held_before_heal', 'held_after', 'converged_ms'],
    rows
  )
  await writeFile(
    join(out, 'convergence-cdf.svg'),
    cdfChart(
      `Convergence after a heal: ${p.nodes} simulated nodes (${p.topology}), ${2 * p.entities_per_side} entities registered apart`,
      'time since the heal (ms)',
      series,
      'auto'
    )
  )
  return {
    experiment: 'convergence',
    mode: 'simulation',
    runs,
    across_runs: {
      convergence_ms: interval(runs.map(r => r.convergence_ms ?? p.timeout_ms)),
      per_node_p50_ms: interval(runs.map(r => r.per_node_ms.p50 ?? p.timeout_ms)),
      converged_ratio: interval(runs.map(r => (r.converged ? 1 : 0)))
    }
  }
}
