/**
 * One row of the node's metric table (metrics-*.ts): its name, kind, help and labels, and, for the
 * metrics read at scrape time, how to read them from the node's own counters. The table is the one
 * place metrics are declared: NodeMetrics registers it and `npm run docs` writes it into
 * docs/reference/metrics.md. Labels take a bounded set of values (never a peer or entity ID).
 */
import { Counter, Gauge, type Registry } from 'prom-client'

export type Labels = Record<string, string>
export type Sample = readonly [labels: Labels, value: number]

export interface MetricDefinition<S> {
  name: string
  type: 'counter' | 'gauge' | 'histogram'
  help: string
  labels?: readonly string[]
  /** The label values the metric takes, for the reference (absent: listed in the help). */
  values?: string
  /** The value, or one sample per label set, at scrape time; absent when the node records it as things happen. */
  read?: (sources: S) => number | Iterable<Sample>
}

/** Samples from a record of counts: one per key, under `label`. */
export function byKey(label: string, counts: Readonly<Record<string, number>> | ReadonlyMap<string, number>): Sample[] {
  const entries = counts instanceof Map ? [...counts] : Object.entries(counts)
  return entries.map(([key, n]) => [{ [label]: key }, n] as const)
}

/** Registers a metric read at scrape time: its collect() replaces every sample with what `read` says now. */
export function registerRead<S>(registry: Registry, def: MetricDefinition<S>, sources: S): void {
  const read = def.read
  if (!read) throw new Error(`${def.name} is recorded as things happen, not read`)
  const options = { name: def.name, help: def.help, labelNames: def.labels ?? [], registers: [registry] }
  if (def.type === 'counter')
    new Counter({
      ...options,
      collect() {
        this.reset()
        const value = read(sources)
        if (typeof value === 'number') this.inc(value)
        else for (const [labels, n] of value) this.inc(labels, n)
      }
    })
  else if (def.type === 'gauge')
    new Gauge({
      ...options,
      collect() {
        this.reset()
        const value = read(sources)
        if (typeof value === 'number') this.set(value)
        else for (const [labels, n] of value) this.set(labels, n)
      }
    })
  else throw new Error(`${def.name}: a histogram cannot be read at scrape time`)
}
