/** A node's /metrics, read: the metric families it declares and the value of a sample. */

export interface Scrape {
  text: string
  /** Metric families declared (`# TYPE` lines), samples or not. */
  families: Set<string>
  /** The sum of the samples of `name` whose labels include `labels` (0 when none). */
  value(name: string, labels?: Record<string, string>): number
  /** Whether `name`, or the family of a histogram series (`_bucket`, `_sum`, `_count`), is declared. */
  declares(name: string): boolean
}

export function parseMetrics(text: string): Scrape {
  const families = new Set<string>()
  const samples: { name: string; labels: Record<string, string>; value: number }[] = []
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) /.exec(line)
    if (type) families.add(type[1] as string)
    if (line === '' || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line)
    if (!m) continue
    const labels: Record<string, string> = {}
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[k as string] = v as string
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) })
  }
  return {
    text,
    families,
    value(name, labels = {}) {
      return samples
        .filter(s => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((sum, s) => sum + s.value, 0)
    },
    declares(name) {
      return families.has(name) || families.has(name.replace(/_(bucket|sum|count)$/, ''))
    }
  }
}

/** GET /metrics of a node, parsed; throws unless it answers 200. */
export async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`)
  const text = await res.text()
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${text}`)
  return parseMetrics(text)
}
