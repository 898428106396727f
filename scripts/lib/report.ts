import { percentile as nearestRank } from '../../src/testnet/experiments/report.js'

/** One benchmark figure per line: `name: value unit` (PERF.md). */
export function report(name: string, value: string | number, unit: string): void {
  console.log(`${name}: ${value}${unit ? ` ${unit}` : ''}`)
}

/** Percentile of an ascending-sorted array (nearest rank); NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  return nearestRank(sorted, p) ?? NaN
}
