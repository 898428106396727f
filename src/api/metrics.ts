import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client'
import { registerRead, type MetricDefinition } from './metric-definition.js'
import { LIVENESS_METRICS, type LivenessMetricSources } from './metrics-liveness.js'
import { MESH_METRICS, type MeshMetricSources } from './metrics-mesh.js'
import { HTTP_DURATION, HTTP_REQUESTS, NODE_METRICS, type NodeMetricSources, WRITE_REJECTIONS } from './metrics-node.js'

/** What the metrics read at scrape time: the node's, the mesh's and liveness counters. */
export interface MetricSources extends NodeMetricSources, MeshMetricSources, LivenessMetricSources {}

/** Every metric the node declares (prom-client's process metrics come on top). */
export const METRICS: readonly MetricDefinition<MetricSources>[] = [
  ...NODE_METRICS,
  ...MESH_METRICS,
  ...LIVENESS_METRICS
]

/** Some of prom-client's process metrics (collectDefaultMetrics), which the reference and the dashboard name. */
export const PROCESS_METRICS = [
  'process_cpu_seconds_total',
  'process_resident_memory_bytes',
  'process_open_fds',
  'nodejs_eventloop_lag_p99_seconds',
  'nodejs_heap_size_used_bytes',
  'nodejs_gc_duration_seconds'
] as const

const definition = (name: string): MetricDefinition<MetricSources> => {
  const def = METRICS.find(m => m.name === name)
  if (!def) throw new Error(`no metric ${name}`)
  return def
}

/** How often the event-loop lag is sampled. */
const EVENT_LOOP_SAMPLE_MS = 100

/** Prometheus metrics (served at /metrics when metrics.enabled): requests, latencies, the mesh, liveness, the store. */
export class NodeMetrics {
  readonly registry = new Registry()
  private readonly requests: Counter<'route' | 'method' | 'status'>
  private readonly latency: Histogram<'route' | 'method'>
  private readonly rejections: Counter<'code'>

  constructor(sources: MetricSources) {
    // Process metrics: event-loop lag, GC, heap, CPU, file descriptors. The lag is sampled by a
    // timer; prom-client's 10 ms wakes an idle node 100 times a second, about 8 ms of CPU a second
    // here (4x the rest of an idle node). At 100 ms a stall of 100 ms or more is always seen and a
    // shorter one in proportion to its length.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS })
    const recorded = <L extends string>(name: string) => {
      const def = definition(name)
      return { name, help: def.help, labelNames: (def.labels ?? []) as L[], registers: [this.registry] }
    }
    this.requests = new Counter(recorded<'route' | 'method' | 'status'>(HTTP_REQUESTS))
    this.latency = new Histogram({
      ...recorded<'route' | 'method'>(HTTP_DURATION),
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
    })
    this.rejections = new Counter(recorded<'code'>(WRITE_REJECTIONS))
    for (const def of METRICS) if (def.read) registerRead(this.registry, def, sources)
  }

  observe(route: string, method: string, status: number, seconds: number): void {
    this.requests.inc({ route, method, status: String(status) })
    this.latency.observe({ route, method }, seconds)
  }

  rejected(code: string): void {
    this.rejections.inc({ code })
  }
}
