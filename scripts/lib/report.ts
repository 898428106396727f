/** One benchmark figure per line: `name: value unit` (PERF.md). */
export function report(name: string, value: string | number, unit: string): void {
  console.log(`${name}: ${value}${unit ? ` ${unit}` : ''}`)
}

/** Percentile of an ascending-sorted array (nearest rank). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number
}
