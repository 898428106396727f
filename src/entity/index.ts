/**
 * registry-node/entity: run an agent or service that a registry mesh can find, trust and call,
 * and call others. See the README's "Run an entity".
 */
export { createEntity, type Entity, type EntityOptions, type EntityType, type RegistrationOutcome, type RunningEntity } from './entity.js'
export type { CardInput, PricingInput } from './card.js'
export type { EntityHandler, HandlerInput } from './webhooks.js'
export type { AuthMode } from './message-auth.js'
export type { HeartbeatForm } from './heartbeat-client.js'
export { parseAgentMessage, signAgentMessage, agentMessageSignable, type AgentMessage, type OutgoingMessage } from './agent-message.js'
export { signA2AMessage, verifyA2AMessage, ZYND_AUTH_KEY, type ZyndAuth } from './a2a-auth.js'
export { RegistryClient, RegistryRequestError } from './registry-client.js'
export { callEntity, type CallOptions, type CallResult } from './call.js'
