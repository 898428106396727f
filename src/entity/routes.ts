/**
 * The entity's HTTP surface, on the same router and front as the node's API (server.ts): thin
 * routes over the webhook and A2A services.
 */
import { Type } from '@sinclair/typebox'
import type { RouteDefinition } from '../http/http.js'
import { json } from '../http/http.js'
import type { A2AService } from './a2a.js'
import type { WebhookService } from './webhooks.js'
import type { Paywall } from './x402/paywall.js'

export interface EntityRouteComponents {
  webhooks: WebhookService
  a2a: A2AService
  health: () => Record<string, unknown>
  card: () => Record<string, unknown>
  /** Set on a priced entity: /webhook/sync is paid with x402. */
  paywall: Paywall | null
  /** The public URL of /webhook/sync (the x402 resource). */
  syncUrl: () => string
}

const AgentMessageBody = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      'AgentMessage {message_id?, sender_id?, receiver_id?, content (or prompt), message_type?, conversation_id?, in_reply_to?, metadata?, timestamp?, sender_public_key?, signature?}'
  }
)
const Any = Type.Object({}, { additionalProperties: true })
const PAYMENT_ERRORS = [
  'payment_required',
  'payment_invalid',
  'payment_quote_unknown',
  'payment_requirements_mismatch',
  'payment_amount_mismatch',
  'payment_expired',
  'payment_signature_invalid',
  'payment_replayed',
  'payment_insufficient_funds',
  'payment_rejected',
  'payment_settlement_failed',
  'payment_unavailable'
] as const
const MESSAGE_ERRORS = [
  'invalid_json',
  'unsupported_media_type',
  'body_too_large',
  'validation_failed',
  'signature_required',
  'signature_invalid',
  'sender_unknown',
  'sender_key_mismatch',
  'timestamp_out_of_window',
  'message_replayed'
] as const

export function entityRoutes(c: EntityRouteComponents): RouteDefinition[] {
  const tag = 'entity'
  const card: RouteDefinition = {
    method: 'GET',
    path: '/.well-known/agent-card.json',
    summary: "The entity's signed card",
    tag,
    limit: 'none',
    responses: { 200: { description: 'the card, signed over its canonical JSON without signature', schema: Any } },
    handler: () => json(200, c.card())
  }
  return [
    {
      method: 'POST',
      path: '/webhook/sync',
      summary: 'Send a message and wait for the reply (x402-priced when the entity has pricing)',
      tag,
      limit: 'none',
      body: AgentMessageBody,
      responses: {
        200: {
          description:
            '{status: "success", message_id, response, payment?}; a paid call also has PAYMENT-RESPONSE and X-PAYMENT-RESPONSE',
          schema: Any
        }
      },
      errors: [...MESSAGE_ERRORS, 'handler_timeout', 'handler_failed', ...(c.paywall ? PAYMENT_ERRORS : [])],
      handler: async ctx => {
        const paywall = c.paywall
        if (!paywall) return json(200, await c.webhooks.sync(ctx.json()))
        return paywall.handle(ctx, c.syncUrl(), payment => c.webhooks.sync(ctx.json(), payment))
      }
    },
    {
      method: 'POST',
      path: '/webhook',
      summary: 'Send a message; the reply is read later at /webhook/response/{message_id}',
      tag,
      limit: 'none',
      body: AgentMessageBody,
      responses: { 202: { description: '{status: "accepted", message_id}', schema: Any } },
      errors: [...MESSAGE_ERRORS],
      handler: async ctx => json(202, await c.webhooks.accept(ctx.json()))
    },
    {
      method: 'GET',
      path: '/webhook/response/{message_id}',
      summary: 'The reply to an async message, once',
      tag,
      limit: 'none',
      responses: { 200: { description: '{status: "success" | "error", message_id, response | error}', schema: Any } },
      errors: ['response_not_ready'],
      handler: ctx => json(200, c.webhooks.takeResponse(ctx.params.message_id ?? ''))
    },
    {
      method: 'GET',
      path: '/health',
      summary: 'Liveness of this entity',
      tag,
      limit: 'none',
      responses: {
        200: {
          description:
            '{status, agent_id, entity_id, uptime_seconds, last_heartbeat, webhook_requests_total, timestamp}',
          schema: Any
        }
      },
      handler: () => json(200, c.health())
    },
    card,
    { ...card, path: '/.well-known/agent.json', summary: "The entity's signed card (older path)" },
    {
      method: 'POST',
      path: '/a2a/v1',
      summary: 'A2A JSON-RPC: message/send, tasks/get (x-zynd-auth per auth_mode)',
      tag,
      limit: 'none',
      body: Any,
      responses: { 200: { description: 'a JSON-RPC response', schema: Any } },
      errors: ['invalid_json', 'unsupported_media_type', 'body_too_large'],
      handler: async ctx => json(200, await c.a2a.handle(ctx.json()))
    }
  ]
}
