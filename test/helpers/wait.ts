/**
 * Waiting in tests. CI runs the suite on a loaded 2-core machine, where every delay may stretch:
 * a test waits for the condition it needs, polling with a generous deadline, and never sleeps a
 * fixed time hoping something has happened by then. The deadline only bounds a failure; how fast
 * things happen is for the benchmarks (scripts/bench/).
 */

/** Default deadline of a wait: far beyond what anything takes, even on a busy machine. */
export const WAIT_TIMEOUT_MS = 20_000

export interface WaitOptions {
  /** Deadline (default WAIT_TIMEOUT_MS). */
  timeoutMs?: number
  /** Pause between probes (default 50 ms). */
  intervalMs?: number
  /** Added to the timeout error: the last state seen, to say what was missing. */
  detail?: () => unknown
}

/** Only for bounded negative checks (something does not happen), once what they depend on was awaited with until(). */
export const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/**
 * Calls `probe` until it returns something other than undefined, null or false, and returns that;
 * throws naming `what` once the deadline has passed. `options` may be the deadline alone.
 */
export async function until<T>(
  what: string,
  probe: () => T | Promise<T>,
  options: WaitOptions | number = {}
): Promise<Exclude<T, undefined | null | false>> {
  const {
    timeoutMs = WAIT_TIMEOUT_MS,
    intervalMs = 50,
    detail
  } = typeof options === 'number' ? { timeoutMs: options } : options
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined && value !== null && value !== false) return value as Exclude<T, undefined | null | false>
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting until ${what}${detail ? `; last seen: ${JSON.stringify(detail())}` : ''}`
      )
    }
    await sleep(intervalMs)
  }
}
