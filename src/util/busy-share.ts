import { performance } from 'node:perf_hooks'

/**
 * A sampler of this thread's event loop: each call returns the share of the time since the call
 * before (since the sampler was made, the first time) that the loop was busy, from 0 to 1.
 */
export function busyShare(): () => number {
  let last = performance.eventLoopUtilization()
  return () => {
    const now = performance.eventLoopUtilization()
    const { utilization } = performance.eventLoopUtilization(now, last)
    last = now
    return utilization
  }
}
