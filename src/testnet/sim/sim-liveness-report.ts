/**
 * The liveness experiment's bundle (sim-experiment.ts): per run the figures of sim-liveness.ts,
 * across runs the mean and 95 % interval of the times to inactive (p50, p99) and to active again
 * (p50); `liveness.csv` (per run, stopped entity and node: the two times) and `liveness-cdf.svg`
 * (two lines per run: the share of (entity, node) pairs showing the change over time).
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cdfChart, type CdfSeries, writeCsv } from '../experiments/report.js'
import { interval, type Interval, type LivenessParameters } from './bundle.js'
import { type RunRecord, type SimulatedSummary, simulatedRuns } from './sim-runs.js'
import { type LivenessFigures, livenessSettings, runSimLiveness } from './sim-liveness.js'

export interface SimulatedLivenessSummary extends SimulatedSummary<LivenessFigures> {
  experiment: 'liveness'
  runs: (LivenessFigures & RunRecord)[]
  across_runs: { inactive_p50_ms: Interval; inactive_p99_ms: Interval; active_p50_ms: Interval }
}

export async function runSimulatedLiveness(
  p: LivenessParameters,
  out: string,
  log: (line: string) => void
): Promise<SimulatedLivenessSummary> {
  const rows: (string | number | null)[][] = []
  const series: CdfSeries[] = []
  const stoppedMs = p.inactive_after_ms + p.sweep_ms + p.timeout_ms
  const runs = await simulatedRuns(
    p,
    log,
    async (sim, seed, runLog) => {
      const { figures, rows: pairs } = await runSimLiveness(sim, {
        entities: p.entities,
        kill: p.kill,
        heartbeatMs: p.heartbeat_ms,
        inactiveAfterMs: p.inactive_after_ms,
        stoppedMs,
        timeoutMs: p.timeout_ms,
        seed,
        log: runLog
      })
      const r = series.length / 2 + 1
      for (const x of pairs) rows.push([r, seed, x.entity_id, x.home, x.node, x.inactive_ms, x.active_ms])
      const reach = (seen: number): number => (figures.pairs === 0 ? 0 : seen / figures.pairs)
      series.push(
        {
          label: `run ${r} inactive (p50 ${figures.inactive_ms.p50 ?? '–'} ms)`,
          values: pairs.flatMap(x => (x.inactive_ms === null ? [] : [x.inactive_ms])),
          reach: reach(figures.seen_inactive)
        },
        {
          label: `run ${r} active again (p50 ${figures.active_ms.p50 ?? '–'} ms)`,
          values: pairs.flatMap(x => (x.active_ms === null ? [] : [x.active_ms])),
          reach: reach(figures.seen_active)
        }
      )
      runLog(
        `inactive: p50 ${figures.inactive_ms.p50} ms, p99 ${figures.inactive_ms.p99} ms (${figures.seen_inactive} of ${figures.pairs}); active again: p50 ${figures.active_ms.p50} ms, max ${figures.active_ms.max} ms (${figures.seen_active} of ${figures.pairs})`
      )
      return figures
    },
    livenessSettings(p.inactive_after_ms, p.sweep_ms)
  )
  await writeCsv(
    join(out, 'liveness.csv'),
    ['run', 'seed', 'entity_id', 'home', 'node', 'inactive_ms', 'active_ms'],
    rows
  )
  await writeFile(
    join(out, 'liveness-cdf.svg'),
    cdfChart(
      `Liveness: ${p.nodes} simulated nodes (${p.topology}), ${Math.round(p.kill * 100)} % of ${p.entities} entities stopped, inactive after ${p.inactive_after_ms / 1000} s`,
      'time from stop (inactive) or restart (active) until a node shows it (ms)',
      series,
      'auto'
    )
  )
  // A run that never saw the change counts at its limit: the mean is then a lower bound.
  return {
    experiment: 'liveness',
    mode: 'simulation',
    runs,
    across_runs: {
      inactive_p50_ms: interval(runs.map(r => r.inactive_ms.p50 ?? stoppedMs)),
      inactive_p99_ms: interval(runs.map(r => r.inactive_ms.p99 ?? stoppedMs)),
      active_p50_ms: interval(runs.map(r => r.active_ms.p50 ?? p.timeout_ms))
    }
  }
}
