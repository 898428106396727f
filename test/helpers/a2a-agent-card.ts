/**
 * The A2A AgentCard as the A2A protocol 0.3.0 specifies it (a2a-protocol.org, "AgentCard": its
 * required members and their types), for checking that a card is one an A2A client can use.
 * Members the specification leaves open (extensions, security schemes, x- members) are not
 * constrained; extra members are allowed, as A2A allows them.
 */
import { Type } from '@sinclair/typebox'

const Text = Type.String({ minLength: 1 })
const Modes = Type.Array(Type.String())

const AgentInterface = Type.Object({ url: Text, transport: Text })

const AgentSkill = Type.Object({
  id: Text,
  name: Text,
  description: Type.String(),
  tags: Type.Array(Type.String()),
  examples: Type.Optional(Type.Array(Type.String())),
  inputModes: Type.Optional(Modes),
  outputModes: Type.Optional(Modes)
})

export const A2AAgentCard = Type.Object(
  {
    protocolVersion: Text,
    name: Text,
    description: Type.String(),
    url: Text,
    preferredTransport: Type.Optional(Type.Union(['JSONRPC', 'GRPC', 'HTTP+JSON'].map(t => Type.Literal(t)))),
    additionalInterfaces: Type.Optional(Type.Array(AgentInterface)),
    iconUrl: Type.Optional(Type.String()),
    provider: Type.Optional(Type.Object({ organization: Type.String(), url: Type.String() })),
    version: Text,
    documentationUrl: Type.Optional(Type.String()),
    capabilities: Type.Object({
      streaming: Type.Optional(Type.Boolean()),
      pushNotifications: Type.Optional(Type.Boolean()),
      stateTransitionHistory: Type.Optional(Type.Boolean()),
      extensions: Type.Optional(Type.Array(Type.Object({ uri: Text })))
    }),
    securitySchemes: Type.Optional(Type.Record(Type.String(), Type.Object({ type: Text }))),
    security: Type.Optional(Type.Array(Type.Record(Type.String(), Type.Array(Type.String())))),
    defaultInputModes: Modes,
    defaultOutputModes: Modes,
    skills: Type.Array(AgentSkill),
    supportsAuthenticatedExtendedCard: Type.Optional(Type.Boolean()),
    signatures: Type.Optional(
      Type.Array(Type.Object({ protected: Text, signature: Text, header: Type.Optional(Type.Object({})) }))
    )
  },
  { $id: 'A2AAgentCard' }
)
