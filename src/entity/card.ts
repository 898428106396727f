/**
 * The entity's signed card, served at `/.well-known/agent-card.json` and `/.well-known/agent.json`.
 * It is an A2A AgentCard (protocol 0.3.0: `url` and `preferredTransport` name the JSON-RPC
 * endpoint, the capability names are `skills`), and it carries the spec's EntityCard fields and
 * what deployed clients read (`agent_id` beside `entity_id`, `summary` beside `description`, the
 * invoke URLs under `endpoints`). The spec's `capabilities[]` list is A2A's `skills` here, since
 * A2A's `capabilities` is an object. It is signed over every field it serves: `signature` =
 * Ed25519 over the canonical JSON of the card without `signature` (the form the node's card
 * proxy verifies against the registered key).
 */
import { canonicalJson } from '../identity/canonical-json.js'
import { formatKey } from '../identity/encoding.js'
import { sign, type KeyPair } from '../identity/keys.js'
import type { PricingInput } from './x402/pricing.js'

/** What the person running the entity describes (entity.toml's [card]). */
export interface CardInput {
  name: string
  summary?: string
  category?: string
  tags?: string[]
  version?: string
  /** Capability names, or {name, category} objects. */
  capabilities?: Array<string | { name: string; category?: string }>
  /** Set to charge for /webhook/sync (x402; the entity's payments option says how it is settled). */
  pricing?: PricingInput | null
  metadata?: { framework?: string; model?: string; documentation?: string; source_code?: string }
}

export interface CardState {
  entityId: string
  type: 'agent' | 'service'
  keyPair: KeyPair
  /** Public base URL, without a trailing slash. */
  baseUrl: string
  status: 'active' | 'inactive'
  lastHeartbeat: string | null
  now: Date
}

export const CARD_SCHEMA_VERSION = '1.0'

/** The A2A protocol version of the card's shape and of the JSON-RPC endpoint (a2a.ts). */
export const A2A_PROTOCOL_VERSION = '0.3.0'
const MODES = ['text/plain', 'application/json']

export function buildSignedCard(input: CardInput, state: CardState): Record<string, unknown> {
  const base = state.baseUrl
  const a2a = `${base}/a2a/v1`
  const capabilities = (input.capabilities ?? []).map(c => (typeof c === 'string' ? { name: c } : c))
  const summary = input.summary ?? ''
  const tags = input.tags ?? []
  const card: Record<string, unknown> = {
    // An A2A AgentCard (protocol 0.3.0), so A2A clients find the JSON-RPC endpoint from `url`.
    protocolVersion: A2A_PROTOCOL_VERSION,
    name: input.name,
    description: summary,
    url: a2a,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url: a2a, transport: 'JSONRPC' }],
    version: input.version ?? '0.1.0',
    capabilities: { streaming: false, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    // The registry's capability names, as A2A skills (what search's skills filter matches).
    skills:
      capabilities.length > 0
        ? capabilities.map(c => ({
            id: c.name,
            name: c.name,
            description: c.category ? `${c.name} (${c.category})` : c.name,
            tags: c.category ? [c.category] : []
          }))
        : [{ id: 'default', name: input.name, description: summary || input.name, tags }],
    // The registry's EntityCard fields.
    entity_id: state.entityId,
    agent_id: state.entityId,
    type: state.type,
    summary,
    category: input.category ?? 'general',
    tags,
    schema_version: CARD_SCHEMA_VERSION,
    public_key: formatKey(state.keyPair.publicKey),
    entity_url: base,
    status: state.status,
    endpoints: {
      invoke: `${base}/webhook/sync`,
      invoke_async: `${base}/webhook`,
      health: `${base}/health`,
      agent_card: `${base}/.well-known/agent-card.json`,
      a2a
    },
    metadata: input.metadata ?? {},
    signed_at: state.now.toISOString(),
    last_heartbeat: state.lastHeartbeat
  }
  if (input.pricing) card.pricing = input.pricing as Record<string, unknown>
  card.signature = sign(state.keyPair, canonicalJson(card))
  return card
}
