/**
 * The heartbeat benchmark's course (heartbeats.ts runs it): the settings, the signed registrations,
 * the baseline segment, one segment per flood (on a fresh node when the last one did not drain),
 * then the client's figures, the state check, goal G5, the shutdown and the profiles.
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { report } from '../../lib/report.js'
import { parseOptions, settingsOf } from './options.js'
import { reportProfiles } from './profile.js'
import { fmt, reportGoals, reportSettings } from './report.js'
import { HeartbeatRun } from './run.js'
import { signRegistrations } from './signing.js'

export async function main(): Promise<void> {
  const args = parseOptions()
  const benchStarted = performance.now()
  const s = await settingsOf(args)
  await reportSettings(s)
  const signers = await signRegistrations(s)
  const profileDir = args.profile ? await mkdtemp(join(tmpdir(), 'bench-heartbeats-prof-')) : null
  const run = new HeartbeatRun(s, signers, profileDir)
  await run.start()

  const warmup = Number(args.warmup)
  let drained = await run.runSegment('baseline', [
    ['warmup', warmup, 'load'],
    ['steady', Number(args.seconds), 'load']
  ])
  for (const f of s.floods) {
    if (!drained) {
      report(`flood_${f}_on_a_fresh_node`, 'yes', "(the previous segment's node had not drained its backlog)")
      await run.replaceNode()
    }
    drained = await run.runSegment(`flood_${f}_segment`, [
      [`pre_${f}`, Math.max(5, warmup), 'prep', f],
      [`flood_${f}`, s.floodSeconds, 'flood', f],
      [`recovery_${f}`, 15, 'recovery', f]
    ])
  }
  for (const worker of signers.workers) void worker.terminate()

  run.client.reportClient()
  await run.checkState()
  reportGoals(s, run.results)
  await run.stop()
  if (profileDir) await reportProfiles(profileDir, run.results)
  report('bench_time', fmt((performance.now() - benchStarted) / 1000), 's')
}
