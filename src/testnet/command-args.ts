/** Arguments and output of the `testnet` and `experiment` commands: parsing with one clear error each, and printing. */
import type { NetworkMode } from './testnet.js'
import { parseTopology } from './topology.js'

export class UsageError extends Error {
  override name = 'UsageError'
}

export function integer(name: string, text: string | undefined, fallback: number | undefined, min = 0): number {
  if (text === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`)
    return fallback
  }
  const value = Number(text)
  if (!Number.isInteger(value) || value < min) throw new UsageError(`--${name} must be an integer of at least ${min}`)
  return value
}

/** A comma-separated list of node indexes ("1,2"). */
export function nodeList(name: string, text: string | undefined): number[] {
  if (text === undefined) return []
  return text.split(',').map(part => {
    const value = Number(part.trim())
    if (part.trim() === '' || !Number.isInteger(value) || value < 0)
      throw new UsageError(`--${name} takes node indexes separated by commas (e.g. 1,2)`)
    return value
  })
}

/** A loss given as a percentage ("5" or "5%") → a probability. */
export function lossOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  const value = Number(text.replace(/%$/, ''))
  if (!Number.isFinite(value) || value < 0 || value > 100) throw new UsageError('--loss is a percentage from 0 to 100')
  return value / 100
}

export function networkOf(text: string | undefined): NetworkMode | 'auto' {
  if (text === undefined || text === 'auto' || text === 'netns' || text === 'process') return text ?? 'auto'
  throw new UsageError('--network is auto, netns or process')
}

export function topologies(text: string | undefined): string[] {
  const list = (text ?? 'full')
    .split(',')
    .map(t => t.trim())
    .filter(Boolean)
  for (const t of list) parseTopology(t)
  return list
}

export const stamp = (): string => new Date().toISOString().replace(/[:.]/g, '-')
export const print = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

/** A printer that starts each line (of a multi-line text too) with the seconds since `origin` (performance.now()). */
export function stampedPrinter(origin = performance.now()): (text: string) => void {
  return text => {
    const prefix = `[${((performance.now() - origin) / 1000).toFixed(3).padStart(9)}] `
    process.stdout.write(`${prefix}${text.replaceAll('\n', `\n${prefix}`)}\n`)
  }
}
