/**
 * Metrics of liveness and the WebSocket endpoints: open sockets, heartbeats by outcome, sweeps and
 * the status changes they and heartbeats write. Read at scrape time from the counters the socket
 * endpoints and the liveness service keep.
 */
import { byKey, type MetricDefinition } from './metric-definition.js'

export interface LivenessMetricSources {
  sockets(): {
    connections: { heartbeat: number; activity: number }
    /** Heartbeat frames by outcome: `accepted` or the error code answered. */
    heartbeats: ReadonlyMap<string, number>
    droppedEvents: number
  }
  liveness(): { sweeps: number; sweepSeconds: number; activated: number; deactivated: number }
}

export const LIVENESS_METRICS: readonly MetricDefinition<LivenessMetricSources>[] = [
  {
    name: 'registry_heartbeat_sockets',
    type: 'gauge',
    help: 'Heartbeat WebSocket connections open now (/v1/entities/{id}/ws and /v1/heartbeat)',
    read: s => s.sockets().connections.heartbeat
  },
  {
    name: 'registry_activity_sockets',
    type: 'gauge',
    help: 'Activity stream subscribers connected now (/v1/ws/activity)',
    read: s => s.sockets().connections.activity
  },
  {
    name: 'registry_activity_events_dropped_total',
    type: 'counter',
    help: 'Activity events dropped for subscribers too slow to read them',
    read: s => s.sockets().droppedEvents
  },
  {
    name: 'registry_heartbeats_total',
    type: 'counter',
    help: 'Heartbeats received on the sockets, by outcome: accepted, or the error code they were answered with',
    labels: ['outcome'],
    values:
      '`accepted`, `heartbeat_invalid`, `clock_skew`, `signature_invalid`, `entity_not_found`, `not_home_registry`, `rate_limited`, `too_many_entities`, `overloaded`, …',
    read: s => byKey('outcome', s.sockets().heartbeats)
  },
  {
    name: 'registry_liveness_sweeps_total',
    type: 'counter',
    help: 'Inactivity sweeps run (each finds the home entities silent too long and writes their change)',
    read: s => s.liveness().sweeps
  },
  {
    name: 'registry_liveness_sweep_seconds_total',
    type: 'counter',
    help: 'Time spent in inactivity sweeps (a large one paces its writes over half the sweep interval)',
    read: s => s.liveness().sweepSeconds
  },
  {
    name: 'registry_liveness_transitions_total',
    type: 'counter',
    help: 'Status changes of home entities written: active to inactive (by a sweep) and inactive to active (by a heartbeat)',
    labels: ['from', 'to'],
    values: '`active` → `inactive`, `inactive` → `active`',
    read: s => {
      const counts = s.liveness()
      return [
        [{ from: 'active', to: 'inactive' }, counts.deactivated],
        [{ from: 'inactive', to: 'active' }, counts.activated]
      ]
    }
  }
]
