import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { StoreCommitStats } from '../store/registry-store.js'

export interface GaugeSources {
  entities(type: 'agent' | 'service'): number
  developers(): number
  embeddingFailures(): number
  embeddingBacklog(): number
  /** Operations from other registries refused by quota since start, by reason. */
  quotaRefusals(): Record<string, number>
  storeCommits(): StoreCommitStats
  /** Labels of the constant registry_node_info gauge. */
  runtime(): { version: string; node: string; http_server: string }
}

/** Prometheus metrics (served at /metrics when metrics.enabled): requests, latencies, counts, rejections. */
export class NodeMetrics {
  readonly registry = new Registry()
  private readonly requests: Counter<'route' | 'method' | 'status'>
  private readonly latency: Histogram<'route' | 'method'>
  private readonly rejections: Counter<'code'>

  constructor(sources: GaugeSources) {
    // Process metrics: event-loop lag, GC, heap, CPU, file descriptors.
    collectDefaultMetrics({ register: this.registry })
    this.requests = new Counter({
      name: 'registry_http_requests_total',
      help: 'HTTP requests by route template, method and status',
      labelNames: ['route', 'method', 'status'],
      registers: [this.registry]
    })
    this.latency = new Histogram({
      name: 'registry_http_request_duration_seconds',
      help: 'HTTP request latency by route template',
      labelNames: ['route', 'method'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [this.registry]
    })
    this.rejections = new Counter({
      name: 'registry_write_rejections_total',
      help: 'Rejected writes by error code',
      labelNames: ['code'],
      registers: [this.registry]
    })
    new Gauge({
      name: 'registry_entities',
      help: 'Entities registered on this node by type',
      labelNames: ['type'],
      registers: [this.registry],
      collect() {
        this.set({ type: 'agent' }, sources.entities('agent'))
        this.set({ type: 'service' }, sources.entities('service'))
      }
    })
    new Gauge({
      name: 'registry_node_info',
      help: 'Always 1; the labels say what runs this node',
      labelNames: ['version', 'node', 'http_server'],
      registers: [this.registry],
      collect() {
        this.reset()
        this.set(sources.runtime(), 1)
      }
    })
    new Gauge({
      name: 'registry_developers',
      help: 'Developers registered on this node',
      registers: [this.registry],
      collect() {
        this.set(sources.developers())
      }
    })
    new Gauge({
      name: 'registry_mesh_quota_refusals',
      help: "Operations from other registries refused since start: over their origin's or developer's rate (taken later by sync) or their origin's total of entities",
      labelNames: ['reason'],
      registers: [this.registry],
      collect() {
        for (const [reason, n] of Object.entries(sources.quotaRefusals())) this.set({ reason }, n)
      }
    })
    new Gauge({
      name: 'registry_embedding_backlog',
      help: 'Entities waiting for their embedding (searchable by text until it is done)',
      registers: [this.registry],
      collect() {
        this.set(sources.embeddingBacklog())
      }
    })
    const storeCounts: [name: string, help: string, count: (s: StoreCommitStats) => number][] = [
      [
        'registry_store_commits_total',
        'LMDB transactions committed since start (concurrent writes share one)',
        s => s.commits
      ],
      ['registry_store_pages_written_total', 'LMDB pages written by commits since start', s => s.pagesWritten]
    ]
    for (const [name, help, count] of storeCounts)
      new Counter({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.reset()
          this.inc(count(sources.storeCommits()))
        }
      })
    new Counter({
      name: 'registry_store_commit_seconds_total',
      help: 'Time of LMDB commits by phase: open (start to commit), waiting_for_callbacks (part of open: the writer waiting for the event loop to run the writes), page_writes, sync (overlaps the next transaction)',
      labelNames: ['phase'],
      registers: [this.registry],
      collect() {
        const { seconds } = sources.storeCommits()
        this.reset()
        this.inc({ phase: 'open' }, seconds.open)
        this.inc({ phase: 'waiting_for_callbacks' }, seconds.waitingForCallbacks)
        this.inc({ phase: 'page_writes' }, seconds.pageWrites)
        this.inc({ phase: 'sync' }, seconds.sync)
      }
    })
    new Gauge({
      name: 'registry_embedding_failures',
      help: 'Texts the embedder failed on since start (searchable by text only)',
      registers: [this.registry],
      collect() {
        this.set(sources.embeddingFailures())
      }
    })
  }

  observe(route: string, method: string, status: number, seconds: number): void {
    this.requests.inc({ route, method, status: String(status) })
    this.latency.observe({ route, method }, seconds)
  }

  rejected(code: string): void {
    this.rejections.inc({ code })
  }
}
