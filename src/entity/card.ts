/**
 * The entity's signed card, served at `/.well-known/agent-card.json` and `/.well-known/agent.json`.
 * It carries the spec's EntityCard fields and what deployed clients read (`agent_id` beside
 * `entity_id`, `description` beside `summary`, both invoke URLs), and is signed over every field
 * it serves: `signature` = Ed25519 over the canonical JSON of the card without `signature` (the
 * form the node's card proxy verifies against the registered key).
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

export function buildSignedCard(input: CardInput, state: CardState): Record<string, unknown> {
  const base = state.baseUrl
  const card: Record<string, unknown> = {
    entity_id: state.entityId,
    agent_id: state.entityId,
    type: state.type,
    name: input.name,
    summary: input.summary ?? '',
    description: input.summary ?? '',
    category: input.category ?? 'general',
    tags: input.tags ?? [],
    version: input.version ?? '0.1.0',
    schema_version: CARD_SCHEMA_VERSION,
    public_key: formatKey(state.keyPair.publicKey),
    entity_url: base,
    status: state.status,
    capabilities: (input.capabilities ?? []).map(c => (typeof c === 'string' ? { name: c } : c)),
    endpoints: {
      invoke: `${base}/webhook/sync`,
      invoke_async: `${base}/webhook`,
      health: `${base}/health`,
      agent_card: `${base}/.well-known/agent-card.json`,
      a2a: `${base}/a2a/v1`
    },
    metadata: input.metadata ?? {},
    signed_at: state.now.toISOString(),
    last_heartbeat: state.lastHeartbeat
  }
  if (input.pricing) card.pricing = input.pricing as Record<string, unknown>
  card.signature = sign(state.keyPair, canonicalJson(card))
  return card
}
