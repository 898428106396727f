/**
 * Frames of the WebSocket endpoints. The spec fixes the heartbeat frame; what the node sends
 * back is ours (spec "Gaps"): one small ack or error frame per heartbeat, and `{type, timestamp,
 * data}` frames on the activity stream.
 */
import { Type, type Static } from '@sinclair/typebox'

export const HeartbeatFrame = Type.Object(
  {
    agent_id: Type.Optional(
      Type.String({
        maxLength: 80,
        description: 'the entity; required on /v1/heartbeat, optional on /v1/entities/{id}/ws'
      })
    ),
    type: Type.Optional(Type.Literal('heartbeat', { description: 'sent by clients that follow the ecosystem docs' })),
    timestamp: Type.Union(
      [
        Type.String({ maxLength: 64, description: 'ISO 8601' }),
        Type.Integer({ minimum: 0, maximum: 99_999_999_999, description: 'Unix seconds' })
      ],
      {
        description:
          'ISO 8601, or Unix seconds as a number, within max_clock_skew_seconds of the node clock; a number is signed as its decimal text',
        errorMessage: 'must be an ISO 8601 string or Unix seconds'
      }
    ),
    signature: Type.String({
      maxLength: 200,
      description: 'ed25519:<base64> by the entity key over agent_id followed by timestamp, or over the timestamp alone'
    })
  },
  { $id: 'HeartbeatFrame', description: 'one heartbeat; /v1/heartbeat also takes an array of them in one frame' }
)
export type HeartbeatFrame = Static<typeof HeartbeatFrame>

export const HeartbeatAck = Type.Object(
  {
    type: Type.Literal('ack'),
    agent_id: Type.String(),
    timestamp: Type.Union([Type.String(), Type.Integer()], {
      description: 'the timestamp of the acknowledged frame, as sent'
    }),
    status: Type.Literal('active')
  },
  { $id: 'HeartbeatAck' }
)
export type HeartbeatAck = Static<typeof HeartbeatAck>

export const SocketError = Type.Object(
  {
    type: Type.Literal('error'),
    error: Type.String({
      description:
        'a code of the error table: heartbeat_invalid, clock_skew, signature_invalid, entity_not_found, not_home_registry, too_many_entities, rate_limited, overloaded'
    }),
    message: Type.String(),
    agent_id: Type.Optional(Type.String()),
    field: Type.Optional(Type.String()),
    home_registry: Type.Optional(Type.String({ description: 'with not_home_registry' }))
  },
  { $id: 'SocketError', description: 'a rejected frame; the socket stays open' }
)

export const ActivityFrame = Type.Object(
  {
    type: Type.String({ description: 'hello (the first frame), an event kind, or events_dropped' }),
    timestamp: Type.String(),
    data: Type.Record(Type.String(), Type.Unknown())
  },
  { $id: 'ActivityFrame' }
)

/** The payload of each event kind on the activity stream (docs/reference/http-api.md's table is generated from it). */
export const EVENT_PAYLOADS: readonly { type: string; emittedBy: string; data: string }[] = [
  {
    type: 'hello',
    emittedBy: 'the first frame to each subscriber',
    data: 'registry_id, name, host, public_key, version'
  },
  { type: 'events_dropped', emittedBy: 'a subscriber that fell behind, once it catches up', data: 'count' },
  {
    type: 'agent_registered',
    emittedBy: 'POST /v1/entities',
    data: 'entity_id, name, type, category, tags, summary, developer_id'
  },
  { type: 'agent_updated', emittedBy: 'PUT /v1/entities/{id}', data: 'entity_id, name, category, tags, summary' },
  { type: 'agent_deregistered', emittedBy: 'DELETE /v1/entities/{id}', data: 'entity_id, name, category, tags' },
  {
    type: 'agent_heartbeat',
    emittedBy: 'each accepted heartbeat',
    data: 'entity_id, timestamp, form (spec or deployed)'
  },
  {
    type: 'agent_became_active',
    emittedBy: 'the first accepted heartbeat of an inactive entity',
    data: 'entity_id, status, last_heartbeat, changed_at'
  },
  {
    type: 'agent_became_inactive',
    emittedBy: 'the sweep, after inactive_after_seconds of silence',
    data: 'entity_id, status, last_heartbeat, changed_at'
  },
  {
    type: 'agent_status',
    emittedBy: 'each status change (what the mesh gossips)',
    data: 'entity_id, status, last_heartbeat, changed_at'
  },
  {
    type: 'developer_registered',
    emittedBy: 'POST /v1/developers, an implicit developer, an approval',
    data: 'developer_id, name?, implicit, created'
  },
  { type: 'developer_updated', emittedBy: 'PUT /v1/developers/{id}', data: 'developer_id, name' },
  { type: 'developer_deregistered', emittedBy: 'DELETE /v1/developers/{id}', data: 'developer_id' },
  {
    type: 'handle_claimed',
    emittedBy: 'POST /v1/handles, a developer registration with a handle',
    data: 'handle, developer_id, action'
  },
  {
    type: 'handle_verified',
    emittedBy: 'POST /v1/handles/{handle}/verify',
    data: 'handle, developer_id, method, action'
  },
  {
    type: 'handle_released',
    emittedBy: 'DELETE /v1/handles/{handle}, a developer deregistration',
    data: 'handle, developer_id, action, names_released?'
  },
  {
    type: 'attestation_added',
    emittedBy: 'POST /v1/attestations',
    data: 'attestation_id, issuer, subject, kind, outcome'
  },
  {
    type: 'name_registered',
    emittedBy: 'POST /v1/names, a registration with entity_name',
    data: 'fqan, developer_id, entity_id, version, action'
  },
  {
    type: 'name_updated',
    emittedBy: 'PUT /v1/names/{handle}/{name}',
    data: 'fqan, developer_id, entity_id, version, action'
  },
  {
    type: 'name_released',
    emittedBy: 'DELETE /v1/names/{handle}/{name}',
    data: 'fqan, developer_id, entity_id, version, action'
  },
  { type: 'name_resolved', emittedBy: 'GET /v1/resolve/…', data: 'fqan, entity_id, developer_id, action' },
  {
    type: 'search_local',
    emittedBy: 'POST /v1/search (its local part), and each search a peer asks this node for',
    data: 'query, results, total_found, latency_ms'
  },
  {
    type: 'gossip_outgoing',
    emittedBy: 'the mesh: an operation this node accepted, published on its gossip topic',
    data: 'kind, subject, recipients (peers sent to), bytes'
  },
  {
    type: 'gossip_incoming',
    emittedBy: 'the mesh: an operation received by gossip and applied (or already held), or a sync that applied some',
    data: 'kind, subject, origin, from (peer ID), outcome (applied, stale, deferred, unsupported); for sync: kind "sync", applied, received'
  },
  {
    type: 'search_outgoing',
    emittedBy: 'a federated search, for each peer it asks',
    data: 'peer (peer ID), registry_id, query, limit'
  },
  {
    type: 'search_result_incoming',
    emittedBy: 'a federated search, for each peer asked, once it answered, failed or timed out',
    data: 'peer, registry_id, query, outcome (answered, failed, timed_out), results, total_found, latency_ms, error?'
  },
  {
    type: 'peer_connected, peer_disconnected',
    emittedBy: 'the mesh: the first connection to a peer opens, or its last one closes',
    data: 'peer_id, address (a multiaddr ending in /p2p/<peer_id>)'
  }
]
