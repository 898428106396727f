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
async function runCommands(sim: Simulation, seed: number, commands: readonly string[], print: (line: string) => void) {
  const simConsole = new SimConsole(sim, seed)
  const transcript: string[] = []
  const say = (line: string): void => {
    const stamped = `${simConsole.stamp()}${line}`
    transcript.push(stamped)
    print(stamped)
  }
  for (const line of simConsole.table()) say(line)
  for (const command of commands) {
    say(`> ${command}`)
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
    const commands: string[] = [...first]
    let ended = false
    let wake: (() => void) | null = null
    input.on('line', line => {
      commands.push(line)
      wake?.()
    })
    input.on('close', () => {
      ended = true
      wake?.()
    })
    const simConsole = new SimConsole(sim, options.seed)
    for (const line of simConsole.table()) print(`${simConsole.stamp()}${line}`)
    for (;;) {
      const command = commands.shift()
      if (command === undefined) {
        if (ended) break
        await new Promise<void>(resolve => {
          wake = resolve
        })
        wake = null
        continue
      }
      try {
        const out = await simConsole.execute(command)
        if (out === 'quit') break
        for (const line of out) print(`${simConsole.stamp()}${line}`)
      } catch (err) {
        if (!(err instanceof ScenarioError)) throw err
        print(`${simConsole.stamp()}error: ${err.message}`)
      }
    }
    input.close()
  } finally {
    await sim.stop()
  }
}
