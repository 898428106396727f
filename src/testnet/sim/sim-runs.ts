/**
 * The runs of a simulated experiment: each on a fresh simulation whose mesh has formed, with what
 * every run records beside the experiment's own figures.
 */
import type { SimulationParameters } from './bundle.js'
import { Simulation, type SimulationOptions } from './simulation.js'

/** What every run records beside its figures; wall time and memory are this machine's, not the simulation's. */
export interface RunRecord {
  seed: number
  mesh_formed_ms: number
  wall_seconds: number
  peak_rss_mib: number
}

export interface SimulatedSummary<Run extends object = object> {
  experiment: SimulationParameters['experiment']
  mode: 'simulation'
  runs: (Run & RunRecord)[]
  across_runs: Record<string, unknown>
}

/**
 * Runs `body` once per run of `p` on a fresh simulation whose mesh has formed (each node's settings
 * changed first by `configure`, when given); returns each run's result with its seed, the virtual
 * time the mesh took to form, wall time and peak memory.
 */
export async function simulatedRuns<Run>(
  p: SimulationParameters,
  log: (line: string) => void,
  body: (sim: Simulation, seed: number, log: (line: string) => void) => Promise<Run>,
  configure?: SimulationOptions['configure']
): Promise<(Run & RunRecord)[]> {
  const runs: (Run & RunRecord)[] = []
  for (let r = 0; r < p.runs; r++) {
    const seed = p.seed + r
    const runLog = (line: string): void => log(`[run ${r + 1}/${p.runs}] ${line}`)
    const wallStart = Date.now()
    const sim = new Simulation({
      nodes: p.nodes,
      seed,
      topology: p.topology,
      network: p.network,
      meshDegree: p.mesh_degree,
      log: runLog,
      configure
    })
    let result: Run
    let formedAt: number
    let peakRss = process.memoryUsage().rss
    try {
      await sim.start()
      formedAt = Math.round(sim.clock.elapsed)
      result = await body(sim, seed, runLog)
      peakRss = Math.max(peakRss, process.memoryUsage().rss)
    } finally {
      await sim.stop()
    }
    runs.push({
      ...result,
      seed,
      mesh_formed_ms: formedAt,
      wall_seconds: Math.round((Date.now() - wallStart) / 100) / 10,
      peak_rss_mib: Math.round(peakRss / 2 ** 20)
    })
  }
  return runs
}
