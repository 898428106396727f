/**
 * The heartbeat benchmark's CPU profiles (--profile): a profile's self time per function within a
 * time window, and the node's main thread's top functions in the steady and flood phases.
 */
import { readdir, readFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { report } from '../../lib/report.js'
import type { PhaseResult } from './phases.js'
import { fmt } from './report.js'

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

/** Top self-time functions of a profile between two CLOCK_MONOTONIC times (µs). */
function topSelf(
  profile: CpuProfile,
  fromUs: number,
  toUs: number,
  n: number
): { total: number; rows: { name: string; share: number }[] } {
  const names = new Map<number, string>()
  for (const node of profile.nodes) {
    const f = node.callFrame
    const where = f.url ? ` (${basename(f.url)})` : ''
    names.set(node.id, `${f.functionName || '(anonymous)'}${where}`)
  }
  const counts = new Map<string, number>()
  let t = profile.startTime
  let total = 0
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0
    if (t < fromUs || t > toUs) continue
    const name = names.get(profile.samples[i]!) ?? '?'
    counts.set(name, (counts.get(name) ?? 0) + 1)
    total++
  }
  const rows = [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, c]) => ({ name, share: c / Math.max(1, total) }))
  return { total, rows }
}

/** The main thread's top self-time functions in the steady and flood phases (--profile). */
export async function reportProfiles(profileDir: string, results: ReadonlyMap<string, PhaseResult>): Promise<void> {
  for (const file of (await readdir(profileDir)).filter(f => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(await readFile(join(profileDir, file), 'utf8')) as CpuProfile
    if (!profile.nodes.some(n => n.callFrame.functionName === 'onHeartbeatMessage')) continue
    for (const [name, r] of results) {
      if (name !== 'steady' && !name.startsWith('flood_')) continue
      const top = topSelf(profile, r.from.hrUs, r.to.hrUs, 25)
      if (top.total === 0) continue
      report(`profile_${name}_samples`, top.total, `main-thread samples (${file})`)
      top.rows.forEach((row, i) => {
        report(`profile_${name}_top${i + 1}`, fmt(row.share * 100, 1), `% self ${row.name}`)
      })
    }
  }
  console.error(`profiles kept in ${profileDir}`)
}
