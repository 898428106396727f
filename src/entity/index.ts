/**
 * registry-node/entity: run an agent or service that a registry mesh can find, trust and call,
 * and call others. See docs/guide/entities.md.
 */
// The key files are the command line's (`registry-node keys new`, `entity init`), so a program and the
// CLI can share one developer key; createEntity takes the KeyPair that readKeyFile returns.
export {
  readKeyFile,
  writeKeyFile,
  developerKeyFile,
  entityKeyFile,
  KeyFileError,
  type KeyFile,
  type DeveloperProofFile
} from '../identity/key-file.js'
export { generateKeyPair, keyPairFromSeed, type KeyPair } from '../identity/keys.js'
export {
  createEntity,
  type Entity,
  type EntityOptions,
  type EntityPaymentOptions,
  type EntityType,
  type RegistrationOutcome,
  type RunningEntity
} from './entity.js'
export type { CardInput } from './card.js'
export { derivedPayTo, usdToAtomic, type PricingInput } from './x402/pricing.js'
export { PAYMENT_NETWORKS, paymentNetwork, PaymentConfigError, type PaymentNetwork } from './x402/networks.js'
export type { VerifiedPayment, PaymentReceipt } from './x402/paywall.js'
export {
  PayingClient,
  payingFetch,
  readWalletFile,
  PaymentClientError,
  type PayingFetchOptions,
  type PaidResponse,
  type PaymentClientCode
} from './x402/payer.js'
export type { EntityHandler, HandlerInput } from './webhooks.js'
export type { AuthMode } from './message-auth.js'
export type { HeartbeatForm } from './heartbeat-client.js'
export {
  parseAgentMessage,
  signAgentMessage,
  agentMessageSignable,
  type AgentMessage,
  type OutgoingMessage
} from './agent-message.js'
export { signA2AMessage, verifyA2AMessage, ZYND_AUTH_KEY, type ZyndAuth } from './a2a-auth.js'
export { RegistryClient, RegistryRequestError } from './registry-client.js'
export { callEntity, type CallOptions, type CallResult } from './call.js'
