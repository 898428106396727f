/**
 * Figures and files of experiments: percentiles, CSV, and an SVG chart of cumulative distributions
 * (one line per series) drawn by hand, so a results folder opens in any browser with nothing else.
 */
import { readFile, writeFile } from 'node:fs/promises'

export interface Percentiles {
  count: number
  p50: number | null
  p95: number | null
  p99: number | null
  max: number | null
  mean: number | null
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number
}

export function percentiles(values: readonly number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b)
  const round = (x: number | null): number | null => (x === null ? null : Math.round(x * 10) / 10)
  return {
    count: sorted.length,
    p50: round(percentile(sorted, 0.5)),
    p95: round(percentile(sorted, 0.95)),
    p99: round(percentile(sorted, 0.99)),
    max: round(sorted.at(-1) ?? null),
    mean: round(sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null)
  }
}

export async function writeCsv(
  path: string,
  header: readonly string[],
  rows: readonly (readonly (string | number | null)[])[]
): Promise<void> {
  const cell = (v: string | number | null): string => {
    const text = v === null ? '' : String(v)
    return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
  }
  await writeFile(path, `${[header, ...rows].map(r => r.map(cell).join(',')).join('\n')}\n`)
}

export interface CdfSeries {
  label: string
  values: readonly number[]
  /** Share of the population the values stand for (delivery ratio): the line ends at this height. */
  reach?: number
}

const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf']

const escapeXml = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** Round tick spacing: 1, 2 or 5 × 10^k, about `count` ticks over [0, max]. */
function tickStep(max: number, count: number): number {
  const raw = max / count
  const power = 10 ** Math.floor(Math.log10(raw))
  return ([1, 2, 5, 10].find(m => m * power >= raw) ?? 10) * power
}

/** The x axis of a chart: where a value goes (0 to 1 across the plot) and the values to mark. */
interface Axis {
  at(v: number): number
  ticks: number[]
  max: number
  /** Where a line starts (the axis's left end). */
  min: number
}

/** Largest and smallest of many values (spread arguments overflow the stack past about 100,000). */
const maxOf = (values: readonly number[]): number => values.reduce((a, b) => Math.max(a, b), -Infinity)
const minOf = (values: readonly number[]): number => values.reduce((a, b) => Math.min(a, b), Infinity)

/** Above this many values a series is drawn through quantiles rather than step by step. */
const MAX_STEPS = 2000

function linearAxis(values: readonly number[]): Axis {
  const max = Math.max(1, maxOf(values)) * 1.05
  const step = tickStep(max, 8)
  const ticks: number[] = []
  for (let v = 0; v <= max; v += step) ticks.push(v)
  return { at: v => v / max, ticks, max, min: 0 }
}

/** Decades from the smallest positive value to the largest; ticks at 1, 2 and 5 of each. */
function logAxis(values: readonly number[]): Axis {
  const positive = values.filter(v => v > 0)
  const lo = 10 ** Math.floor(Math.log10(minOf(positive)))
  const hi = 10 ** Math.ceil(Math.log10(maxOf(positive) * 1.0001))
  const span = Math.log10(hi) - Math.log10(lo)
  const ticks: number[] = []
  for (let decade = lo; decade < hi * 1.0001; decade *= 10)
    for (const m of [1, 2, 5]) if (decade * m <= hi * 1.0001) ticks.push(Number((decade * m).toPrecision(6)))
  return { at: v => (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / span, ticks, max: hi, min: lo }
}

/**
 * An SVG line chart of the cumulative distribution of each series (x: value, y: share ≤ x). The x
 * axis is logarithmic when asked, or (`'auto'`) when the positive values span more than two decades.
 */
export function cdfChart(
  title: string,
  xLabel: string,
  series: readonly CdfSeries[],
  scale: 'linear' | 'log' | 'auto' = 'linear'
): string {
  const width = 760
  const height = 440
  const m = { left: 64, right: 24, top: 48, bottom: 56 }
  const plotW = width - m.left - m.right
  const plotH = height - m.top - m.bottom
  const all = series.flatMap(s => s.values)
  const positive = all.filter(v => v > 0)
  const spread = positive.length > 0 ? maxOf(positive) / minOf(positive) : 1
  const log = positive.length > 0 && (scale === 'log' || (scale === 'auto' && spread > 100))
  const axis = log ? logAxis(all) : linearAxis(all)
  const xMax = axis.max
  const x = (v: number): number => m.left + axis.at(v) * plotW
  const y = (share: number): number => m.top + (1 - share) * plotH
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`
  ]
  for (const v of axis.ticks) {
    parts.push(
      `<line x1="${x(v).toFixed(1)}" y1="${m.top}" x2="${x(v).toFixed(1)}" y2="${m.top + plotH}" stroke="#eee"/>`
    )
    parts.push(
      `<text x="${x(v).toFixed(1)}" y="${m.top + plotH + 18}" text-anchor="middle">${Number(v.toPrecision(6))}</text>`
    )
  }
  for (let k = 0; k <= 10; k += 2) {
    const share = k / 10
    parts.push(
      `<line x1="${m.left}" y1="${y(share).toFixed(1)}" x2="${m.left + plotW}" y2="${y(share).toFixed(1)}" stroke="#eee"/>`
    )
    parts.push(`<text x="${m.left - 8}" y="${(y(share) + 4).toFixed(1)}" text-anchor="end">${share.toFixed(1)}</text>`)
  }
  parts.push(`<rect x="${m.left}" y="${m.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`)
  parts.push(
    `<text x="${m.left + plotW / 2}" y="${height - 14}" text-anchor="middle">${escapeXml(log ? `${xLabel}, log scale` : xLabel)}</text>`
  )
  parts.push(
    `<text transform="translate(18 ${m.top + plotH / 2}) rotate(-90)" text-anchor="middle">cumulative share</text>`
  )
  series.forEach((s, k) => {
    const colour = COLOURS[k % COLOURS.length] as string
    const sorted = [...s.values].sort((a, b) => a - b)
    const reach = s.reach ?? 1
    const points: string[] = [`${x(axis.min).toFixed(1)},${y(0).toFixed(1)}`]
    if (sorted.length <= MAX_STEPS) {
      // A step line: the share rises at each value.
      sorted.forEach((v, i) => {
        points.push(`${x(v).toFixed(1)},${y((i / sorted.length) * reach).toFixed(1)}`)
        points.push(`${x(v).toFixed(1)},${y(((i + 1) / sorted.length) * reach).toFixed(1)}`)
      })
    } else {
      // Many values: the line through MAX_STEPS quantiles, finer than the plot's pixels.
      for (let j = 0; j <= MAX_STEPS; j++) {
        const v = sorted[Math.round((j / MAX_STEPS) * (sorted.length - 1))] as number
        points.push(`${x(v).toFixed(1)},${y((j / MAX_STEPS) * reach).toFixed(1)}`)
      }
    }
    if (sorted.length > 0) points.push(`${x(xMax).toFixed(1)},${y(reach).toFixed(1)}`)
    parts.push(`<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points.join(' ')}"/>`)
  })
  // The legend sits bottom right, where a CDF leaves the plot empty.
  const legendW = 12 + 30 + 7 * Math.max(0, ...series.map(s => s.label.length))
  const legendTop = m.top + plotH - 12 - series.length * 18
  parts.push(
    `<rect x="${m.left + plotW - legendW - 8}" y="${legendTop - 6}" width="${legendW}" height="${series.length * 18 + 8}" fill="#fff" stroke="#ccc"/>`
  )
  series.forEach((s, k) => {
    const colour = COLOURS[k % COLOURS.length] as string
    const ly = legendTop + 12 + k * 18
    const lx = m.left + plotW - legendW
    parts.push(`<line x1="${lx}" y1="${ly - 4}" x2="${lx + 24}" y2="${ly - 4}" stroke="${colour}" stroke-width="3"/>`)
    parts.push(`<text x="${lx + 30}" y="${ly}">${escapeXml(s.label)}</text>`)
  })
  parts.push('</svg>')
  return `${parts.join('\n')}\n`
}

/** The JSON lines of a trace file (missing file: none; a torn last line is skipped). */
export async function readJsonLines<T>(path: string): Promise<T[]> {
  const text = await readFile(path, 'utf8').catch(() => '')
  return text
    .split('\n')
    .filter(Boolean)
    .flatMap(line => {
      try {
        return [JSON.parse(line) as T]
      } catch {
        return []
      }
    })
}
