/**
 * The WebSocket endpoints as routes of the API description. The sockets themselves are served by
 * src/api/sockets.ts; a plain HTTP request on these paths (no upgrade) lands here.
 */
import { RegistryError } from '../../errors.js'
import { ActivityFrame, HeartbeatAck, HeartbeatFrame, SocketError } from '../../wire/sockets.js'
import type { RouteDefinition } from '../../http/http.js'

const upgradeRequired = (): never => {
  throw new RegistryError('upgrade_required')
}

export function socketRoutes(): RouteDefinition[] {
  return [
    {
      method: 'GET',
      path: '/v1/entities/{entity_id}/ws',
      summary:
        'WebSocket: heartbeats of one entity. Send HeartbeatFrame ({timestamp, signature}, agent_id optional); each is answered by a HeartbeatAck or a SocketError frame. Unknown entity: 404 before the upgrade; entity homed elsewhere: 421.',
      tag: 'liveness',
      limit: 'none',
      responses: {
        101: {
          description: 'switching to WebSocket; frames in: HeartbeatFrame, out: HeartbeatAck or SocketError',
          schema: HeartbeatFrame
        },
        200: { description: 'ack frame', schema: HeartbeatAck },
        400: { description: 'error frame', schema: SocketError }
      },
      errors: ['upgrade_required', 'entity_not_found', 'not_home_registry'],
      handler: upgradeRequired
    },
    {
      method: 'GET',
      path: '/v1/heartbeat',
      summary:
        'WebSocket: heartbeats of many entities on one connection (max_entities_per_connection, 50 by default). Each HeartbeatFrame names its agent_id; a frame may also be an array of them. One ack or error frame per heartbeat.',
      tag: 'liveness',
      limit: 'none',
      responses: {
        101: {
          description:
            'switching to WebSocket; frames in: HeartbeatFrame or an array of them, out: HeartbeatAck or SocketError',
          schema: HeartbeatFrame
        },
        200: { description: 'ack frame', schema: HeartbeatAck },
        400: { description: 'error frame', schema: SocketError }
      },
      errors: ['upgrade_required'],
      handler: upgradeRequired
    },
    {
      method: 'GET',
      path: '/v1/ws/activity',
      summary:
        "WebSocket: the read-only stream of this node's events, open and unfiltered. First frame: hello with the node identity; then {type, timestamp, data} per event. A slow subscriber loses events (buffer of activity.queue_size), then gets events_dropped with the count.",
      tag: 'liveness',
      limit: 'none',
      responses: { 101: { description: 'switching to WebSocket; frames out: ActivityFrame', schema: ActivityFrame } },
      errors: ['upgrade_required'],
      handler: upgradeRequired
    }
  ]
}
