import { Type, type Static } from '@sinclair/typebox'
import { Nullable } from './common.js'

export const Health = Type.Record(Type.String(), Type.String(), { $id: 'Health', example: { status: 'ok' } })

export const Runtime = Type.Object(
  {
    node: Type.String({ description: 'Node.js version running this node' }),
    http_server: Type.Union([Type.Literal('uws'), Type.Literal('node')], {
      description: 'server under the API: uws (uWebSockets.js) or node (node:http + ws)'
    })
  },
  { $id: 'Runtime' }
)
export type RuntimeInfo = Static<typeof Runtime>

export const NodeInfo = Type.Object(
  {
    node_id: Type.String({ description: 'the registry ID, zns:registry:<hex>' }),
    registry_id: Type.String(),
    name: Type.String(),
    host: Type.String(),
    version: Type.String(),
    onboarding_mode: Type.Union([Type.Literal('open'), Type.Literal('restricted')]),
    auth_url: Nullable(Type.String()),
    developer_onboarding: Type.Object({ mode: Type.String(), auth_url: Nullable(Type.String()) }),
    agent_count: Type.Integer(),
    service_count: Type.Integer(),
    entity_count: Type.Integer(),
    developer_count: Type.Integer(),
    peer_count: Type.Integer(),
    public_key: Type.String(),
    runtime: Runtime
  },
  { $id: 'NodeInfo' }
)
