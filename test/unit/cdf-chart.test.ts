import test from 'ava'
import { cdfChart } from '../../src/testnet/experiments/report.js'

const pointsOf = (svg: string): string[][] =>
  [...svg.matchAll(/<polyline[^>]* points="([^"]*)"/g)].map(m => (m[1] ?? '').split(' '))

test('a CDF of a few values is a step line through every value', t => {
  const svg = cdfChart('t', 'ms', [{ label: 'a', values: [3, 1, 2] }])
  const [line] = pointsOf(svg)
  // The origin, two points per value, and the line carried to the right edge.
  t.is(line?.length, 1 + 2 * 3 + 1)
})

test('a CDF of 100,000 values is drawn through 2,000 quantiles: a small file, and no stack overflow', t => {
  const values = Array.from({ length: 100_000 }, (_, i) => 1 + ((i * 7919) % 100_000) / 10)
  const svg = cdfChart('t', 'ms', [{ label: 'many', values }], 'auto')
  const [line] = pointsOf(svg)
  t.is(line?.length, 1 + 2001 + 1)
  t.true(svg.length < 60_000, `${svg.length} bytes`)
  // 1 to 10,001: four decades, so the axis is logarithmic.
  t.regex(svg, /log scale/)
})
