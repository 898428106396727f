/**
 * The heartbeat benchmark's figures, one `name: value unit` line each (scripts/lib/report.ts): the
 * number formats, the machine and the settings before the run, one phase's figures (latency, CPU by
 * process and thread, memory, the client's event loop, the flood's counts), and goal G5's summary.
 */
import { machineLoad, sleep } from '../../lib/mesh-bench.js'
import { REPO } from '../../lib/node-process.js'
import { percentile, report } from '../../lib/report.js'
import type { FloodStats } from './flood.js'
import { machineBusy, type Sample } from './measure.js'
import type { Settings } from './options.js'
import type { Phase, PhaseLoop, PhaseResult, Segment } from './phases.js'

export const fmt = (x: number, digits = 1): string =>
  Number.isFinite(x) ? x.toFixed(digits) : x === Infinity ? 'never' : 'n/a'
export const list = (counts: Record<string, number>): string =>
  Object.entries(counts)
    .map(([c, k]) => `${c}: ${k}`)
    .join(', ')

/** The machine before the run, and the run's settings. */
export async function reportSettings(s: Settings): Promise<void> {
  const busyBefore = await machineBusy()
  await sleep(3000)
  report(
    'machine_cpu_before',
    fmt((((await machineBusy()) - busyBefore) / 3) * 100, 0),
    '% of one core used by all processes over the 3 s before the benchmark (of 200%)'
  )
  report('machine_load_before', machineLoad(), '(1, 5, 15-minute load averages; 2 cores)')
  report('entities', s.N, '')
  report('offered_rate', s.rate, `heartbeats/s (every entity every ${fmt(s.periodMs / 1000, 2)} s)`)
  report(
    'entity_sockets',
    s.entitySockets,
    `per-entity /v1/entities/{id}/ws, ${s.entitySpec ? 'spec' : 'deployed'} frame form`
  )
  report(
    'mux_sockets',
    s.muxSockets,
    `multiplexed /v1/heartbeat, spec frame form, ${s.perMux === 0 ? 0 : Math.floor(s.rest / s.muxSockets)}–${s.perMux} entities each`
  )
  report('connections', s.connections, 'valid WebSocket connections')
  const L = s.config.liveness
  report(
    'node_liveness_settings',
    `skew ${L.max_clock_skew_seconds} s, ${L.frames_per_second_per_entity} frame/s per entity (burst ×10), ${L.max_entities_per_connection} entities per mux connection, inactive after ${L.inactive_after_seconds} s; verify workers ${s.config.verify.workers}, inline below ${s.config.verify.inline_max_rate}/s`,
    ''
  )
  report('node_flags', s.nodeFlags.join(' '), '')
  report('node_sources', s.args['node-src'] ?? `${REPO}src`, '')
}

/**
 * One phase's figures, from the beats sent in it and the samples at its two ends; `pid` is the
 * node's, `errs` the error frames the valid sockets received in the phase, `f` the flood's figures
 * (a flood phase).
 */
export function reportPhase(
  s: Settings,
  current: Segment,
  p: Phase,
  a: Sample,
  b: Sample,
  l: PhaseLoop,
  drainS: number,
  pid: number,
  errs: Record<string, number> | undefined,
  f: FloodStats | undefined
): PhaseResult {
  const { rate, floodBatch, floodRate, connectionRate, args } = s
  const { durationMs: D, T0 } = current
  const total = s.N * current.beats
  const from = T0 + p.start
  const to = T0 + p.end
  const latencies: number[] = []
  let sent = 0
  let lost = 0
  let rejected = 0
  let acksIn = 0
  for (let index = 0; index < total; index++) {
    const sentAt = current.sendTimes[index]!
    const ack = current.ackTimes[index]!
    if (ack >= from && ack < to) acksIn++
    if (sentAt === 0 || sentAt < from || sentAt >= to) continue
    sent++
    if (ack > 0) latencies.push(ack - sentAt)
    else {
      latencies.push(Infinity)
      if (current.errorTimes[index]! > 0) rejected++
      else lost++
    }
  }
  latencies.sort((x, y) => x - y)
  const seconds = (p.end - p.start) / 1000
  const wall = (b.perf - a.perf) / 1000
  const nodeCpu = ((b.nodeCpu - a.nodeCpu) / wall) * 100
  // Beats answered with an error, or not at all, have no latency: a percentile that lands on them says so.
  const q = (x: number) => {
    const v = percentile(latencies, x)
    return v === Infinity ? 'not acknowledged (rejected, or no answer)' : fmt(v, 1)
  }
  const n = p.name
  report(`${n}_sent`, sent, `valid heartbeats in ${fmt(seconds, 0)} s`)
  report(`${n}_ack_rate`, fmt(acksIn / seconds, 0), 'acks/s received in the phase')
  report(`${n}_latency_p50`, q(0.5), 'ms (send → ack)')
  report(`${n}_latency_p95`, q(0.95), 'ms')
  report(`${n}_latency_p99`, q(0.99), 'ms')
  report(`${n}_latency_max`, q(1), 'ms')
  report(`${n}_rejected`, rejected, 'valid heartbeats answered with an error frame')
  report(
    `${n}_unanswered`,
    lost,
    `valid heartbeats without any answer ${fmt((T0 + D - to) / 1000 + drainS, 0)} s after they were sent`
  )
  report(`${n}_valid_errors`, errs ? list(errs) : 0, '(error frames received on the valid sockets during the phase)')
  report(
    `${n}_node_cpu`,
    fmt(nodeCpu, 0),
    `% of one core = ${fmt(nodeCpu / 2, 0)}% of the machine (headroom ${fmt(100 - nodeCpu / 2, 0)}% of the machine, ${fmt(100 - nodeCpu, 0)}% of one core)`
  )
  const perThread = [...b.threads].map(([tid, sec]) => ({
    tid,
    share: ((sec - (a.threads.get(tid) ?? 0)) / wall) * 100
  }))
  const mainThread = perThread.find(x => x.tid === pid)?.share ?? NaN
  const rest = perThread.filter(x => x.tid !== pid).sort((x, y) => y.share - x.share)
  report(
    `${n}_node_threads`,
    `main ${fmt(mainThread, 0)}%, busiest other ${fmt(rest[0]?.share ?? 0, 0)}%, next ${fmt(rest[1]?.share ?? 0, 0)}%, rest ${fmt(
      rest.slice(2).reduce((x, y) => x + y.share, 0),
      0
    )}%`,
    'of one core (under load the busiest other thread is the signature verification worker)'
  )
  if (acksIn > 0)
    report(
      `${n}_node_cpu_per_ack`,
      fmt(((b.nodeCpu - a.nodeCpu) * 1e6) / acksIn, 0),
      "µs (all the node's CPU in the phase / acks)"
    )
  report(
    `${n}_client_cpu`,
    fmt(((b.clientCpu - a.clientCpu) / wall) * 100, 0),
    '% of one core (the valid load client, all its threads)'
  )
  if (p.role !== 'load')
    report(
      `${n}_flood_client_cpu`,
      fmt(((b.floodCpu - a.floodCpu) / wall) * 100, 0),
      '% of one core (the flood process)'
    )
  const machine = ((b.machine - a.machine) / wall) * 100
  const others = machine - nodeCpu - ((b.clientCpu - a.clientCpu + b.floodCpu - a.floodCpu) / wall) * 100
  report(
    `${n}_machine_cpu`,
    fmt(machine, 0),
    `% of one core, all processes (of 200%); other processes than the node and this benchmark's: ${fmt(Math.max(0, others), 0)}%`
  )
  report(`${n}_node_rss_end`, fmt(b.nodeRss, 0), 'MiB')
  report(
    `${n}_client_event_loop_delay_p99`,
    fmt(l.delay.percentile(99) / 1e6, 1),
    `ms (max ${fmt(l.delay.max / 1e6, 1)} ms; sends > 10 ms late: ${l.late10}, the latest ${fmt(l.lateMax, 1)} ms)`
  )
  if (f) {
    const sendingS = f.sendingMs / 1000
    report(
      `${n}_flood_sockets`,
      f.sockets,
      `multiplexed connections (opened in ${fmt(f.openMs / 1000, 1)} s), ${floodBatch} heartbeats per frame, ${fmt(floodRate / f.sockets, f.mode === 'a' ? 0 : 1)}/s each (the node allows ${connectionRate}/s per connection, bursts of ${connectionRate * 10}), from ${args['flood-address']}`
    )
    report(
      `${n}_flood_offered`,
      f.offered,
      `invalid heartbeats (${fmt(f.offered / sendingS, 0)}/s over ${fmt(sendingS, 1)} s)`
    )
    report(
      `${n}_flood_sent`,
      f.sent,
      `invalid heartbeats (${fmt(f.sent / sendingS, 0)}/s = ${fmt(f.sent / sendingS / rate, 1)} × the valid rate)`
    )
    report(
      `${n}_flood_skipped`,
      f.skippedClosed + f.skippedBackpressure,
      `invalid heartbeats not sent (${f.skippedClosed} on a closed socket, ${f.skippedBackpressure} on one with > 1 MiB unsent)`
    )
    const replies = Object.values(f.replies).reduce((x, y) => x + y, 0)
    report(`${n}_flood_rejected_signature_invalid`, f.replies.signature_invalid ?? 0, 'replies (verified and refused)')
    report(
      `${n}_flood_rejected_rate_limited`,
      f.replies.rate_limited ?? 0,
      'replies (one per frame over the limit; the rest of that array gets no reply)'
    )
    const others = Object.entries(f.replies).filter(([c]) => c !== 'signature_invalid' && c !== 'rate_limited')
    report(`${n}_flood_other_replies`, others.length ? others.map(([c, k]) => `${c}: ${k}`).join(', ') : 0, '')
    report(
      `${n}_flood_no_reply`,
      f.sent - replies,
      'invalid heartbeats without a reply (dropped after rate_limited, or their connection was closed)'
    )
    report(
      `${n}_flood_closed_by_node`,
      Object.values(f.closedByNode).reduce((x, y) => x + y, 0),
      `connections (${list(f.closedByNode) || 'none'})`
    )
    report(`${n}_flood_reconnects`, f.reconnects, `(connect failures ${f.connectFailures})`)
    report(`${n}_flood_client_event_loop_delay_max`, fmt(f.eventLoopDelayMaxMs, 1), 'ms')
  }
  return {
    phase: p,
    from: a,
    to: b,
    latencies,
    ackRate: acksIn / seconds,
    nodeCpu,
    ...(f ? { flood: f } : {})
  }
}

/** Goal G5, as measured here. */
export function reportGoals(s: Settings, results: ReadonlyMap<string, PhaseResult>): void {
  const { rate, connections } = s
  const steady = results.get('steady')!
  // Kept up: acks within 0.5% of the offered rate and nothing left behind (the p99 shows a backlog).
  const keptUp = steady.ackRate >= 0.995 * rate && !steady.latencies.includes(Infinity)
  report(
    'g5_rate',
    `${fmt(steady.ackRate, 0)} of ${rate} offered`,
    `acknowledged (verified) heartbeats/s in the steady phase over ${connections} connections (${connections >= 3000 ? '≥' : '<'} 3000); ${keptUp ? 'kept up' : 'fell behind'}, goal ≥ 5000/s ${keptUp && rate >= 5000 ? 'met' : 'not met'}`
  )
  const p99 = percentile(steady.latencies, 0.99)
  report('g5_steady_p99', `${fmt(p99)} ${p99 <= 100 ? '≤' : '>'} 100`, 'ms (send → ack)')
  report(
    'g5_headroom',
    `${fmt(100 - steady.nodeCpu / 2, 0)} ${100 - steady.nodeCpu / 2 >= 30 ? '≥' : '<'} 30`,
    '% of the machine left by the node in the steady phase'
  )
  for (const f of s.floods) {
    const r = results.get(`flood_${f}`)
    if (!r) continue
    const v = percentile(r.latencies, 0.99)
    const st = r.flood
    report(
      `g5_flood_${f}_valid_p99`,
      `${v === Infinity ? 'not acknowledged' : fmt(v)} ${v <= 250 ? '≤' : '>'} 250`,
      `ms (flood sent at ${st ? fmt(st.sent / (st.sendingMs / 1000) / rate, 1) : '?'} × the valid rate; valid acks ${fmt(r.ackRate, 0)}/s)`
    )
  }
}
