/**
 * `registry-node testnet --simulate`: a simulated testnet driven by console commands (sim-console.ts),
 * from a scenario file or typed. A scenario run is a bundle (sim-experiment.ts) whose figures are its
 * transcript: every line, stamped with virtual time, repeats exactly for the same bundle, and
 * `experiment reproduce` checks that it does.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { ScenarioParameters } from './bundle.js'
import { SimConsole, ScenarioError } from './sim-console.js'
import { type RunRecord, type SimulatedSummary, simulatedRuns } from './sim-runs.js'
import { Simulation, type SimulationOptions } from './simulation.js'

export interface ScenarioRun {
  /** The console's output, each line stamped with virtual seconds. */
  transcript: string[]
}

export interface ScenarioSummary extends SimulatedSummary<ScenarioRun> {
  experiment: 'scenario'
  runs: (ScenarioRun & RunRecord)[]
  across_runs: Record<string, never>
}

/** The scenario's commands: its lines without blanks and `#` comments. */
export function scenarioCommands(text: string): string[] {
  return text
    .split('\n')
    .map(line => line.replace(/#.*$/, '').trim())
    .filter(Boolean)
}

/** Runs the commands in order (a `quit` ends the run early); prints and returns the transcript. */
/**
 * Runs console commands on the simulation, each output line stamped with virtual time and printed;
 * with `echo`, each command too, and every printed line is kept as the transcript. Stops at `quit`
 * or the end of the commands (a scenario's list, or typed lines as they come).
 */
async function runCommands(
  sim: Simulation,
  seed: number,
  commands: Iterable<string> | AsyncIterable<string>,
  print: (line: string) => void,
  echo = true
): Promise<string[]> {
  const simConsole = new SimConsole(sim, seed)
  const transcript: string[] = []
  const say = (line: string): void => {
    const stamped = `${simConsole.stamp()}${line}`
    if (echo) transcript.push(stamped)
    print(stamped)
  }
  for (const line of simConsole.table()) say(line)
  for await (const command of commands) {
    if (echo) say(`> ${command}`)
    try {
      const out = await simConsole.execute(command)
      if (out === 'quit') break
      for (const line of out) say(line)
    } catch (err) {
      if (!(err instanceof ScenarioError)) throw err
      say(`error: ${err.message}`)
    }
  }
  return transcript
}

export async function runSimulatedScenario(
  p: ScenarioParameters,
  out: string,
  log: (line: string) => void
): Promise<ScenarioSummary> {
  const runs = await simulatedRuns(p, log, async (sim, seed) => ({
    transcript: await runCommands(sim, seed, p.commands, log)
  }))
  await writeFile(join(out, 'transcript.txt'), runs.map(r => `${r.transcript.join('\n')}\n`).join('\n'))
  return { experiment: 'scenario', mode: 'simulation', runs, across_runs: {} }
}

/** A simulated testnet taking commands typed on standard input until `quit` or the end of input. */
export async function interactiveSimulation(
  options: SimulationOptions,
  print: (line: string) => void,
  first: readonly string[] = []
): Promise<void> {
  const sim = new Simulation(options)
  await sim.start()
  try {
    print(
      `mesh formed at ${(sim.clock.elapsed / 1000).toFixed(3)} s of virtual time; time runs only when a command runs it`
    )
    const input = createInterface({ input: process.stdin, terminal: false })
    async function* typed(): AsyncGenerator<string> {
      yield* first
      yield* input
    }
    await runCommands(sim, options.seed, typed(), print, false)
    input.close()
  } finally {
    await sim.stop()
  }
}
