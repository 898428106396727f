/**
 * What a simulated run leaves behind so that it can be checked and repeated: `bundle.json` holds
 * everything the run depended on (commit, version, command line, seed, network model, gossipsub
 * parameters, Node version) and `summary.json` its figures, per run and across runs (mean and 95 %
 * confidence interval). `registry-node experiment reproduce DIR` runs the bundle again and compares.
 */
import { execFileSync } from 'node:child_process'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gossipMeshBounds } from '../../mesh/libp2p-node.js'
import { NODE_VERSION } from '../../version.js'
import type { NetworkModelSpec } from './network-model.js'

/** What every simulated experiment is run with. */
interface CommonParameters {
  nodes: number
  topology: string
  seed: number
  /** Runs, seeds seed, seed + 1, …; figures across them get confidence intervals. */
  runs: number
  mesh_degree: number
  network: NetworkModelSpec
}

export interface PropagationParameters extends CommonParameters {
  experiment: 'propagation'
  messages: number
  /** Messages per second of virtual time. */
  rate: number
  settle_ms: number
}

export interface ConvergenceParameters extends CommonParameters {
  experiment: 'convergence'
  /** Entities registered on every side before the partition, then by each half while apart. */
  entities_before: number
  entities_per_side: number
  /** Virtual time the halves stay apart after their registrations, and allowed after the heal. */
  apart_ms: number
  timeout_ms: number
}

export interface ScenarioParameters extends CommonParameters {
  experiment: 'scenario'
  /** The console commands run in order (sim-console.ts), from the scenario file. */
  commands: string[]
}

export interface LivenessParameters extends CommonParameters {
  experiment: 'liveness'
  entities: number
  /** Share of the entities stopped, (0, 1]. */
  kill: number
  /** The entities' heartbeat period, and the nodes' inactivity threshold and sweep period. */
  heartbeat_ms: number
  inactive_after_ms: number
  sweep_ms: number
  /** Virtual time allowed beyond the threshold and a sweep for every node to show them inactive, and after the restart. */
  timeout_ms: number
}

export type SimulationParameters =
  | PropagationParameters
  | ConvergenceParameters
  | LivenessParameters
  | ScenarioParameters

export interface Provenance {
  commit: string | null
  /** Whether the checkout had changes not committed. */
  dirty: boolean | null
  version: string
  node: string
  command_line: string[]
  created_at: string
}

export interface Bundle {
  format: 1
  provenance: Provenance
  parameters: SimulationParameters
  /** gossipsub's mesh bounds from D, its heartbeat and the rest as the nodes ran them. */
  gossipsub: Record<string, number | string | boolean>
}

export function makeBundle(parameters: SimulationParameters, commandLine: string[]): Bundle {
  return {
    format: 1,
    provenance: {
      ...gitState(),
      version: NODE_VERSION,
      node: process.versions.node,
      command_line: commandLine,
      created_at: new Date().toISOString()
    },
    parameters,
    gossipsub: {
      ...gossipMeshBounds(parameters.mesh_degree),
      heartbeat_interval_ms: 1000,
      seen_ttl_ms: 300_000,
      signature_policy: 'StrictNoSign',
      flood_publish: true,
      scoring: 'registry-node topic parameters (p2p.gossip_scoring)'
    }
  }
}

function gitState(): { commit: string | null; dirty: boolean | null } {
  const cwd = dirname(fileURLToPath(import.meta.url))
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd, encoding: 'utf8', stdio: 'pipe' }).trim()
    const status = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd,
      encoding: 'utf8',
      stdio: 'pipe'
    })
    return { commit, dirty: status.trim() !== '' }
  } catch {
    return { commit: null, dirty: null }
  }
}

export interface Interval {
  mean: number
  /** Half-width of the 95 % confidence interval of the mean (Student's t); null for one run. */
  ci95: number | null
  runs: number
}

/** Two-sided 97.5 % quantiles of Student's t by degrees of freedom (1–30); beyond, the normal's 1.96. */
const T_975 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11,
  2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042
]

export function interval(values: readonly number[]): Interval {
  const n = values.length
  const mean = n === 0 ? 0 : values.reduce((a, b) => a + b, 0) / n
  if (n < 2) return { mean: round3(mean), ci95: null, runs: n }
  const variance = values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (n - 1)
  const t = T_975[n - 2] ?? 1.96
  return { mean: round3(mean), ci95: round3((t * Math.sqrt(variance)) / Math.sqrt(n)), runs: n }
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000
