/** The node's own metrics: HTTP requests, rejected writes, what it holds, its embedder and its store. */
import type { StoreCommitStats } from '../store/registry-store.js'
import type { MetricDefinition } from './metric-definition.js'

export interface NodeMetricSources {
  entities(type: 'agent' | 'service'): number
  developers(): number
  embeddingFailures(): number
  embeddingBacklog(): number
  storeCommits(): StoreCommitStats
  /** Labels of the constant registry_node_info gauge. */
  runtime(): { version: string; node: string; http_server: string }
}

/** The HTTP metrics the server records on each request (NodeMetrics.observe and rejected). */
export const HTTP_REQUESTS = 'registry_http_requests_total'
export const HTTP_DURATION = 'registry_http_request_duration_seconds'
export const WRITE_REJECTIONS = 'registry_write_rejections_total'

export const NODE_METRICS: readonly MetricDefinition<NodeMetricSources>[] = [
  {
    name: HTTP_REQUESTS,
    type: 'counter',
    help: 'HTTP requests by route template, method and status',
    labels: ['route', 'method', 'status']
  },
  {
    name: HTTP_DURATION,
    type: 'histogram',
    help: 'HTTP request latency by route template',
    labels: ['route', 'method']
  },
  { name: WRITE_REJECTIONS, type: 'counter', help: 'Rejected writes by error code', labels: ['code'] },
  {
    name: 'registry_node_info',
    type: 'gauge',
    help: 'Always 1; the labels say what runs this node',
    labels: ['version', 'node', 'http_server'],
    read: s => [[s.runtime(), 1]]
  },
  {
    name: 'registry_entities',
    type: 'gauge',
    help: 'Entities held on this node (its own and those of other registries) by type',
    labels: ['type'],
    values: '`agent`, `service`',
    read: s => [
      [{ type: 'agent' }, s.entities('agent')],
      [{ type: 'service' }, s.entities('service')]
    ]
  },
  {
    name: 'registry_developers',
    type: 'gauge',
    help: 'Developers held on this node',
    read: s => s.developers()
  },
  {
    name: 'registry_embedding_backlog',
    type: 'gauge',
    help: 'Entities waiting for their embedding (searchable by text until it is done)',
    read: s => s.embeddingBacklog()
  },
  {
    name: 'registry_embedding_failures_total',
    type: 'counter',
    help: 'Texts the embedder failed on since start (searchable by text only)',
    read: s => s.embeddingFailures()
  },
  {
    name: 'registry_store_commits_total',
    type: 'counter',
    help: 'LMDB transactions committed since start (concurrent writes share one)',
    read: s => s.storeCommits().commits
  },
  {
    name: 'registry_store_pages_written_total',
    type: 'counter',
    help: 'LMDB pages written by commits since start',
    read: s => s.storeCommits().pagesWritten
  },
  {
    name: 'registry_store_commit_seconds_total',
    type: 'counter',
    help: 'Time of LMDB commits by phase: open (start to commit), waiting_for_callbacks (part of open: the writer waiting for the event loop to run the writes), page_writes, sync (overlaps the next transaction)',
    labels: ['phase'],
    values: '`open`, `waiting_for_callbacks`, `page_writes`, `sync`',
    read: s => {
      const { seconds } = s.storeCommits()
      return [
        [{ phase: 'open' }, seconds.open],
        [{ phase: 'waiting_for_callbacks' }, seconds.waitingForCallbacks],
        [{ phase: 'page_writes' }, seconds.pageWrites],
        [{ phase: 'sync' }, seconds.sync]
      ]
    }
  }
]
