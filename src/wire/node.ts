import { Type } from '@sinclair/typebox'
import { Nullable } from './common.js'

export const Health = Type.Record(Type.String(), Type.String(), { $id: 'Health', example: { status: 'ok' } })

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
    public_key: Type.String()
  },
  { $id: 'NodeInfo' }
)
