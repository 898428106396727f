/**
 * Calling an entity as `registry-node call` does: find it (an FQAN or entity ID through the
 * registry, or a URL), fetch its card and check the card's signature against the registered key
 * (or, for a bare URL, against the key the card states, which must hash to its entity_id), then
 * send a signed AgentMessage to `/webhook/sync`, or to `/webhook` and read the reply when ready.
 */
import { randomBytes } from 'node:crypto'
import { verifyCard, type CardVerification } from '../identity/card-signature.js'
import { parsePublicKey } from '../identity/encoding.js'
import { deriveId, ID_PATTERNS } from '../identity/ids.js'
import { keyPairFromSeed, type KeyPair } from '../identity/keys.js'
import { taskReplyText } from './a2a.js'
import { signA2AMessage } from './a2a-auth.js'
import { signAgentMessage } from './agent-message.js'
import { networkCause } from '../client/network-cause.js'
import { RegistryClient, RegistryRequestError } from './registry-client.js'
import type { PayingClient } from './x402/payer.js'

export interface CallOptions {
  /** Registry base URL; needed for FQANs and entity IDs. */
  registry?: string
  /** The caller's key and ID; an ephemeral key (its public key in the message) when absent. */
  key?: KeyPair
  senderId?: string
  async?: boolean
  /**
   * Call over A2A (`/a2a/v1`, message/send signed with x-zynd-auth) instead of the webhook; without
   * it, an entity that has no `/webhook/sync` (the public SDKs' current entities) is called over A2A.
   */
  a2a?: boolean
  /** Overall time limit (default 60 s). */
  timeoutMs?: number
  /** Pays an x402-priced /webhook/sync within its cap (a refused or over-cap payment throws PaymentClientError). */
  payer?: PayingClient
  /**
   * After the call, the caller states how it went as a signed attestation (`POST /v1/attestations`
   * on `registry`), with the call's message ID and a paid call's settlement as evidence. Opt-in; needs
   * `key` and `senderId` of a registered entity, and a target the registry knows.
   */
  attest?: boolean
}

export interface CallResult {
  entity_id: string | null
  url: string
  card_verification: CardVerification | 'unavailable'
  message_id: string
  sender_id: string
  status: number
  /** The entity's JSON answer as sent. */
  reply: Record<string, unknown>
  /** `reply.response` when the call succeeded. */
  response: string | null
  /** The settlement receipt of a paid call (transaction, network, payer). */
  payment?: Record<string, unknown>
  /** The attestation recorded after the call (`attest`). */
  attestation_id?: string
}

const CARD_PATHS = ['/.well-known/agent-card.json', '/.well-known/agent.json']

export async function callEntity(target: string, content: string, o: CallOptions = {}): Promise<CallResult> {
  if (o.attest && !(o.key && o.senderId && o.registry))
    throw new Error(
      'attest needs key and senderId of a registered entity, and registry: the caller signs the attestation'
    )
  const result = await send(target, content, o)
  if (!o.attest || result.entity_id === null) return result
  return { ...result, attestation_id: await attestCall(result, o) }
}

/** The caller's statement of how a call went: its message ID (and a paid call's settlement) as evidence. */
async function attestCall(result: CallResult, o: CallOptions): Promise<string> {
  const payment = result.payment
  const settled =
    payment && typeof payment.transaction === 'string' && typeof payment.network === 'string'
      ? { network: payment.network, transaction: payment.transaction }
      : undefined
  const attested = await new RegistryClient(o.registry as string).attest(o.key as KeyPair, {
    issuer: o.senderId as string,
    subject: result.entity_id as string,
    outcome: result.response === null ? 'failure' : 'success',
    messageId: result.message_id,
    ...(settled ? { payment: settled } : {})
  })
  return String(attested.attestation_id)
}

async function send(target: string, content: string, o: CallOptions): Promise<CallResult> {
  const deadline = Date.now() + (o.timeoutMs ?? 60_000)
  const found = await locate(target, o.registry)
  const fetched = await fetchCard(found.url, deadline)
  const card = fetched?.body ?? null
  const verification =
    fetched === null
      ? 'unavailable'
      : verifyCard(fetched.body, found.publicKey ?? stateKey(fetched.body) ?? '', fetched.text).verification
  const key = o.key ?? keyPairFromSeed(randomBytes(32))
  const senderId = o.senderId ?? deriveId('agent', key.publicKey)
  const entityId = found.entityId ?? (card && typeof card.entity_id === 'string' ? card.entity_id : null)
  const message = signAgentMessage(key, senderId, { content, ...(entityId ? { receiverId: entityId } : {}) })
  const base = {
    entity_id: entityId,
    url: found.url,
    card_verification: verification,
    message_id: message.message_id,
    sender_id: senderId
  } as const
  const a2a = a2aEndpoint(card, found.url)
  if (o.a2a) return { ...base, ...(await callA2A(a2a, content, key, senderId, message.message_id, deadline)) }
  const post = await fetchJson(
    `${found.url}${o.async ? '/webhook' : '/webhook/sync'}`,
    deadline,
    { method: 'POST', body: JSON.stringify(message) },
    o.async ? undefined : o.payer
  )
  if (post.status === 404 && post.body.error !== 'response_not_ready')
    return { ...base, ...(await callA2A(a2a, content, key, senderId, message.message_id, deadline)) }
  let { status, body } = post
  if (o.async && status === 202) {
    // The reply is read once it is ready; 404 means not yet.
    for (let wait = 50; ; wait = Math.min(wait * 2, 1000)) {
      const polled = await fetchJson(
        `${found.url}/webhook/response/${encodeURIComponent(message.message_id)}`,
        deadline
      )
      if (polled.status !== 404) {
        status = polled.status
        body = polled.body
        break
      }
      if (Date.now() + wait > deadline)
        throw new Error(`no reply from ${found.url} for message ${message.message_id} within the time limit`)
      await new Promise(resolve => setTimeout(resolve, wait))
    }
  }
  return {
    ...base,
    status,
    reply: body,
    response: status === 200 && typeof body.response === 'string' ? body.response : null,
    ...(post.receipt ? { payment: post.receipt } : {})
  }
}

/**
 * The JSON-RPC endpoint an A2A card names (`url` when its preferred transport is JSON-RPC, else a
 * JSON-RPC entry of `additionalInterfaces`); the conventional `/a2a/v1` without a card that says.
 */
export function a2aEndpoint(card: Record<string, unknown> | null, baseUrl: string): string {
  const jsonRpc = (url: unknown, transport: unknown) =>
    typeof url === 'string' && /^https?:\/\//.test(url) && (transport ?? 'JSONRPC') === 'JSONRPC'
  if (card && jsonRpc(card.url, card.preferredTransport)) return card.url as string
  const listed = Array.isArray(card?.additionalInterfaces) ? card.additionalInterfaces : []
  for (const entry of listed as Array<Record<string, unknown> | null>)
    if (entry && jsonRpc(entry.url, entry.transport)) return entry.url as string
  return `${baseUrl}/a2a/v1`
}

/** A2A message/send with the x-zynd-auth block; the reply is the completed task's text. */
async function callA2A(
  endpoint: string,
  content: string,
  key: KeyPair,
  senderId: string,
  messageId: string,
  deadline: number
): Promise<Pick<CallResult, 'status' | 'reply' | 'response'>> {
  const message = signA2AMessage(
    { kind: 'message', messageId, role: 'user', parts: [{ kind: 'text', text: content }] },
    { keyPair: key, entityId: senderId }
  )
  const { status, body } = await fetchJson(endpoint, deadline, {
    method: 'POST',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message } })
  })
  const task = body.result as { status?: { state?: string } } | undefined
  return {
    status,
    reply: body,
    response: status === 200 && task?.status?.state === 'completed' ? taskReplyText(task) : null
  }
}

interface Located {
  url: string
  entityId: string | null
  publicKey: string | null
}

async function locate(target: string, registryUrl: string | undefined): Promise<Located> {
  if (/^https?:\/\//.test(target)) return { url: target.replace(/\/+$/, ''), entityId: null, publicKey: null }
  if (!registryUrl) throw new Error(`${target} is not a URL: give --registry to resolve it`)
  const registry = new RegistryClient(registryUrl)
  let record: Record<string, unknown>
  if (ID_PATTERNS.entity.test(target)) {
    const found = await registry.getEntity(target)
    if (found === null)
      throw new RegistryRequestError(404, 'entity_not_found', `${target} is not registered at ${registry.baseUrl}`)
    record = found
  } else {
    record = await registry.resolveFqan(target)
  }
  const url =
    typeof record.entity_url === 'string' && record.entity_url !== ''
      ? record.entity_url
      : typeof record.service_endpoint === 'string'
        ? record.service_endpoint
        : null
  if (!url) throw new Error(`${target} has no entity_url to call`)
  return {
    url: url.replace(/\/+$/, ''),
    entityId: typeof record.entity_id === 'string' ? record.entity_id : null,
    publicKey: typeof record.public_key === 'string' ? record.public_key : null
  }
}

/** The key a card states, when it hashes to the card's entity_id (a card fetched by URL alone). */
function stateKey(card: Record<string, unknown>): string | null {
  const key = typeof card.public_key === 'string' ? parsePublicKey(card.public_key) : null
  if (!key || typeof card.entity_id !== 'string') return null
  return card.entity_id === deriveId('agent', key) || card.entity_id === deriveId('service', key)
    ? (card.public_key as string)
    : null
}

async function fetchCard(
  base: string,
  deadline: number
): Promise<{ body: Record<string, unknown>; text: string } | null> {
  for (const path of CARD_PATHS) {
    const res = await fetchJson(base + path, deadline).catch(() => null)
    if (res?.status === 200) return { body: res.body, text: res.text }
  }
  return null
}

/** The entity's URL did not answer (refused, no such host, reset, no answer in time). */
export class EntityUnreachableError extends Error {
  override name = 'EntityUnreachableError'
}

async function fetchJson(
  url: string,
  deadline: number,
  init: RequestInit = {},
  payer?: PayingClient
): Promise<{ status: number; body: Record<string, unknown>; text: string; receipt?: Record<string, unknown> }> {
  const request: RequestInit = {
    ...init,
    headers: init.body ? { 'content-type': 'application/json' } : {},
    signal: AbortSignal.timeout(Math.max(1, deadline - Date.now()))
  }
  let paid: Awaited<ReturnType<PayingClient['fetch']>> | null = null
  let res: Response
  let text: string
  try {
    paid = payer ? await payer.fetch(url, request) : null
    res = paid?.response ?? (await fetch(url, request))
    text = await res.text()
  } catch (err) {
    if (err instanceof Error && err.name === 'PaymentClientError') throw err
    throw new EntityUnreachableError(
      `cannot reach the entity at ${url} (${networkCause(err)}): it may be stopped or its URL out of date`
    )
  }
  let body: Record<string, unknown>
  try {
    body = JSON.parse(text) as Record<string, unknown>
  } catch {
    body = { error: 'not_json', message: text.slice(0, 200) }
  }
  return {
    status: res.status,
    body,
    text,
    ...(paid?.receipt ? { receipt: paid.receipt as unknown as Record<string, unknown> } : {})
  }
}
