/** Milliseconds since `started` (a performance.now() reading), to the hundredth: how latencies are reported. */
export function millisecondsSince(started: number): number {
  return Math.round((performance.now() - started) * 100) / 100
}
