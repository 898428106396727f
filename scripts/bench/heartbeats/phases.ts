/**
 * The heartbeat benchmark's timeline: phases (each with its role in a segment), segments (one
 * stretch of continuous valid load with every beat's send, ack and error time), the valid client's
 * event loop per phase, what a phase measured, and how an error frame is put on a beat.
 */
import type { IntervalHistogram } from 'node:perf_hooks'
import type { FloodStats } from './flood.js'
import type { Sample } from './measure.js'

export interface Phase {
  name: string
  start: number
  end: number
  flood?: 'a' | 'b'
  role: 'load' | 'prep' | 'flood' | 'recovery'
}
/** The valid client's event loop in one phase, and how late it sent. */
export interface PhaseLoop {
  delay: IntervalHistogram
  lateMax: number
  late10: number
}

/** What one phase measured, for the summary and the profile windows. */
export interface PhaseResult {
  phase: Phase
  from: Sample
  to: Sample
  latencies: number[]
  ackRate: number
  nodeCpu: number
  flood?: FloodStats
}

/**
 * One stretch of continuous valid load: its beats signed for its own timeline, sent, acknowledged,
 * then drained (waiting for the last acks) before the next segment starts.
 */
export interface Segment {
  phases: Phase[]
  durationMs: number
  beats: number
  wallT0: number
  T0: number
  wallAtT0: number
  sendTimes: Float64Array
  ackTimes: Float64Array
  /** When an error frame answered the beat (it names the entity, not the beat: see markError). */
  errorTimes: Float64Array
}

/** A segment's phases as [name, seconds, role, flood]. */
export type PhaseList = [string, number, Phase['role'], ('a' | 'b')?][]

/** A phase list's phases (a phase of 0 s is left out) and the segment's duration. */
export function phasesOf(phaseList: PhaseList): { phases: Phase[]; durationMs: number } {
  const phases: Phase[] = []
  let s = 0
  for (const [name, seconds, role, f] of phaseList) {
    if (seconds > 0) phases.push({ name, start: s, end: s + seconds * 1000, role, ...(f ? { flood: f } : {}) })
    s += seconds * 1000
  }
  return { phases, durationMs: s }
}

/** An error frame names the entity only: it is put on the entity's oldest beat still unanswered. */
export function markError(s: Segment, e: number, at: number): void {
  for (let k = 0; k < s.beats; k++) {
    const index = e * s.beats + k
    if (s.sendTimes[index]! > 0 && s.ackTimes[index] === 0 && s.errorTimes[index] === 0) {
      s.errorTimes[index] = at
      return
    }
  }
}
