/**
 * Simulated experiments as bundles: `registry-node experiment propagation|convergence|liveness
 * --simulate` and `testnet --simulate --scenario` run the bundle's parameters K times (seeds S,
 * S + 1, …), each on a fresh simulation (sim-runs.ts), and write the figures of each run with their
 * means and confidence intervals, a CSV and charts (sim-propagation-report.ts,
 * sim-convergence-report.ts, sim-liveness-report.ts), or a scenario's transcript (sim-scenario.ts);
 * `registry-node experiment reproduce DIR` runs a bundle again and compares its figures with the
 * recorded ones.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type {
  Bundle,
  ConvergenceParameters,
  LivenessParameters,
  PropagationParameters,
  ScenarioParameters
} from './bundle.js'
import { NETWORK_PRESETS, type NetworkModelSpec } from './network-model.js'
import type { SimulatedSummary } from './sim-runs.js'

/** A preset's name, or a JSON file of a network model (network-model.ts: NetworkModelSpec). */
export async function loadNetworkModel(name: string): Promise<NetworkModelSpec> {
  const preset = NETWORK_PRESETS[name]
  if (preset) return preset
  try {
    return JSON.parse(await readFile(name, 'utf8')) as NetworkModelSpec
  } catch (err) {
    throw new Error(
      `--network-model is ${Object.keys(NETWORK_PRESETS).join(', ')} or a JSON file of one (${(err as Error).message})`
    )
  }
}

/** Runs a bundle into `out`: the bundle first, then the experiment's summary, CSV and charts. */
export async function runBundle(bundle: Bundle, out: string, log: (line: string) => void): Promise<SimulatedSummary> {
  await mkdir(out, { recursive: true })
  await writeFile(join(out, 'bundle.json'), `${JSON.stringify(bundle, null, 2)}\n`)
  const p = bundle.parameters
  // Each experiment's report module is loaded when asked for: one experiment does not load the others.
  const summary =
    p.experiment === 'propagation'
      ? await (await import('./sim-propagation-report.js')).runSimulatedPropagation(p, out, log)
      : p.experiment === 'convergence'
        ? await (await import('./sim-convergence-report.js')).runSimulatedConvergence(p, out, log)
        : p.experiment === 'liveness'
          ? await (await import('./sim-liveness-report.js')).runSimulatedLiveness(p, out, log)
          : await (await import('./sim-scenario.js')).runSimulatedScenario(p, out, log)
  await writeFile(join(out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`)
  return summary
}

/** The figures that must repeat exactly: everything but the machine's wall time and memory. */
export function reproducibleFigures(summary: SimulatedSummary): Record<string, unknown>[] {
  return summary.runs.map(({ wall_seconds: _w, peak_rss_mib: _m, ...figures }) => figures as Record<string, unknown>)
}

/** Runs a bundle again into `out` and lists the figures that differ from the recorded ones. */
export async function reproduceBundle(
  dir: string,
  out: string,
  log: (line: string) => void
): Promise<{ same: boolean; differences: string[] }> {
  const bundle = JSON.parse(await readFile(join(dir, 'bundle.json'), 'utf8')) as Bundle
  const recorded = JSON.parse(await readFile(join(dir, 'summary.json'), 'utf8')) as SimulatedSummary
  const again = await runBundle(bundle, out, log)
  const after = reproducibleFigures(again)
  const differences: string[] = []
  reproducibleFigures(recorded).forEach((run, r) => {
    for (const [key, value] of Object.entries(run)) {
      const now = after[r]?.[key]
      if (JSON.stringify(now) !== JSON.stringify(value))
        differences.push(`run ${r + 1} ${key}: recorded ${JSON.stringify(value)}, now ${JSON.stringify(now)}`)
    }
  })
  return { same: differences.length === 0, differences }
}

export function propagationParameters(p: Omit<PropagationParameters, 'experiment'>): PropagationParameters {
  return { experiment: 'propagation', ...p }
}

export function scenarioParameters(p: Omit<ScenarioParameters, 'experiment'>): ScenarioParameters {
  return { experiment: 'scenario', ...p }
}

export function convergenceParameters(p: Omit<ConvergenceParameters, 'experiment'>): ConvergenceParameters {
  return { experiment: 'convergence', ...p }
}

export function livenessParameters(p: Omit<LivenessParameters, 'experiment'>): LivenessParameters {
  return { experiment: 'liveness', ...p }
}
