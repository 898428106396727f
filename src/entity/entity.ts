/**
 * An entity (agent or service) that the network can find, trust and call: `createEntity(options)`
 * then `start()` derives or loads its key, serves its endpoints (routes.ts) on the same HTTP front
 * as the node, registers or updates itself with its registry the way the deployed SDKs do (GET,
 * then POST; 409 or a changed record → PUT) and keeps its heartbeat socket open; `stop()` closes
 * the socket and the server, and deregisters when asked.
 */
import { pino, type Logger } from 'pino'
import { ClientIpResolver } from '../http/client-ip.js'
import { Cors } from '../http/cors.js'
import type { ServerChoice, ServerKind } from '../http/front.js'
import { HttpServer } from '../http/server.js'
import { canonicalJson } from '../identity/canonical-json.js'
import { formatKey } from '../identity/encoding.js'
import { deriveAgentKeyPair } from '../identity/hd.js'
import { entityKeyFile, type DeveloperProofFile } from '../identity/key-file.js'
import { deriveId } from '../identity/ids.js'
import { sign, type KeyPair } from '../identity/keys.js'
import { A2AService } from './a2a.js'
import { buildSignedCard, type CardInput } from './card.js'
import { HeartbeatClient, type HeartbeatForm } from './heartbeat-client.js'
import { MessageAuthenticator, type AuthMode } from './message-auth.js'
import { RegistryClient, RegistryRequestError } from './registry-client.js'
import { ReplayCache } from './replay-cache.js'
import { entityRoutes } from './routes.js'
import { SenderKeys } from './sender-keys.js'
import { WebhookService, type EntityHandler } from './webhooks.js'
import { createFacilitator } from './x402/facilitator.js'
import { PaymentConfigError } from './x402/networks.js'
import { PaymentLedger } from './x402/payment-ledger.js'
import { Paywall } from './x402/paywall.js'
import { resolvePricing, type ResolvedPricing } from './x402/pricing.js'

export type EntityType = 'agent' | 'service'

export interface EntityOptions {
  /** The entity's own key; or give developerKey and index to derive it (HD, with a developer proof). */
  key?: KeyPair
  developerKey?: KeyPair
  index?: number
  /** The developer proof of `key` (an entity key file's), when the developer key itself is not at hand. */
  developerProof?: DeveloperProofFile
  type?: EntityType
  /** The registry node's base URL; null runs the entity without registering (no heartbeats). */
  registry: string | null
  card: CardInput
  handler: EntityHandler
  /** strict: signed messages only; permissive (default): unsigned ones too. */
  authMode?: AuthMode
  /** Name to bind as <host>/<handle>/<entity_name> when the developer holds a handle. */
  entityName?: string
  /** Listen address (default 127.0.0.1) and port (default 0: any free port). */
  host?: string
  port?: number
  /** Public base URL registered as entity_url (default http://<host>:<port>). */
  url?: string
  httpServer?: ServerChoice
  heartbeat?: { intervalMs?: number; form?: HeartbeatForm }
  /**
   * While the registry cannot be reached at start, keep trying (1 s, doubling up to 30 s), calling
   * `onRetry` before each wait; without it, `start` fails at once. A refusal (4xx) is never retried.
   */
  retryUnreachable?: { onRetry?: (error: RegistryRequestError, waitMs: number) => void }
  /** Handler time limit (default 30 s). */
  handlerTimeoutMs?: number
  /**
   * How a priced entity (card.pricing) is paid: the facilitator that verifies and settles on chain
   * ('local': in process, through rpcUrl, paying gas with settlementKey; or a remote facilitator's
   * URL), the address paid (default: derived from the entity key as the SDKs derive it), and the
   * directory where used payments are kept across restarts.
   */
  payments?: EntityPaymentOptions
  /** Largest message body (default 1 MiB). */
  bodyLimitBytes?: number
  /** Skew window of signed messages' timestamps (default 60 s). */
  maxClockSkewSeconds?: number
  logger?: Logger
}

export interface EntityPaymentOptions {
  facilitator: 'local' | string
  rpcUrl?: string
  settlementKey?: `0x${string}`
  payTo?: string
  dataDir: string
  /** Lifetime of a quote (default 300 s). */
  maxTimeoutSeconds?: number
}

export interface RegistrationOutcome {
  action: 'registered' | 'updated' | 'unchanged' | 'none'
  fqan: string | null
}

export interface RunningEntity {
  readonly entityId: string
  readonly publicKey: string
  readonly url: string
  readonly port: number
  readonly httpServer: ServerKind
  readonly registration: RegistrationOutcome
  /** A priced entity's terms (price, pay_to, network, asset); null when free. */
  readonly pricing: Record<string, unknown> | null
  /** Heartbeats the registry acknowledged. */
  readonly heartbeats: HeartbeatClient | null
  /** Stops serving and heartbeating; `deregister` also removes the entity from the registry. */
  stop(options?: { deregister?: boolean }): Promise<void>
}

export interface Entity {
  readonly entityId: string
  readonly keyPair: KeyPair
  start(): Promise<RunningEntity>
}

const DEFAULTS = {
  handlerTimeoutMs: 30_000,
  bodyLimitBytes: 1024 * 1024,
  maxClockSkewSeconds: 60,
  heartbeatIntervalMs: 30_000
}

export function createEntity(o: EntityOptions): Entity {
  const type = o.type ?? 'agent'
  checkKeyPair(o.key, 'key')
  checkKeyPair(o.developerKey, 'developerKey')
  const keyPair =
    o.key ?? (o.developerKey && o.index !== undefined ? deriveAgentKeyPair(o.developerKey.seed, o.index) : null)
  if (!keyPair) throw new TypeError('createEntity needs key, or developerKey and index')
  const entityId = deriveId(type, keyPair.publicKey)
  return { entityId, keyPair, start: () => startEntity(o, type, keyPair, entityId) }
}

/**
 * A key file's parsed JSON passed as a KeyPair is the likely mistake from outside this package; it
 * would fail deep in the ID derivation with a message about `buffer`, so it is named here instead.
 */
function checkKeyPair(value: KeyPair | undefined, option: string): void {
  if (value === undefined) return
  const { seed, publicKey } = value as Partial<KeyPair>
  if (seed instanceof Uint8Array && seed.length === 32 && publicKey instanceof Uint8Array) return
  throw new TypeError(
    `createEntity: ${option} is not a KeyPair; pass the keyPair of readKeyFile(path) (a key file as \`registry-node keys\` writes it) or of generateKeyPair()`
  )
}

async function startEntity(
  o: EntityOptions,
  type: EntityType,
  keyPair: KeyPair,
  entityId: string
): Promise<RunningEntity> {
  const logger = o.logger ?? pino({ level: 'warn' })
  const startedAt = Date.now()
  const registry = o.registry ? new RegistryClient(o.registry) : null
  const replays = new ReplayCache()
  const authMode = o.authMode ?? 'permissive'
  const auth = new MessageAuthenticator({
    mode: authMode,
    skewMs: (o.maxClockSkewSeconds ?? DEFAULTS.maxClockSkewSeconds) * 1000,
    keys: new SenderKeys(registry),
    replays
  })
  const webhooks = new WebhookService({
    handler: o.handler,
    auth,
    handlerTimeoutMs: o.handlerTimeoutMs ?? DEFAULTS.handlerTimeoutMs,
    logger
  })
  let baseUrl = ''
  const syncUrl = (): string => `${baseUrl}/webhook/sync`
  const payments = await startPayments(o, keyPair, logger)
  const a2a = new A2AService({ webhooks, mode: authMode, replays, pricedAt: payments ? syncUrl() : null })
  let heartbeats: HeartbeatClient | null = null
  // The card is re-signed only when what it shows changes (status, last heartbeat).
  let cached: { key: string; card: Record<string, unknown> } | null = null
  const card = (): Record<string, unknown> => {
    const lastHeartbeat = heartbeats?.lastAck ?? null
    const status = heartbeats === null || heartbeats.connected ? 'active' : 'inactive'
    const key = `${status}|${lastHeartbeat}`
    const input = payments ? { ...o.card, pricing: { ...o.card.pricing, ...payments.paywall.terms } } : o.card
    if (cached?.key !== key)
      cached = {
        key,
        card: buildSignedCard(input, { entityId, type, keyPair, baseUrl, status, lastHeartbeat, now: new Date() })
      }
    return cached.card
  }
  const health = (): Record<string, unknown> => ({
    status: 'healthy',
    agent_id: entityId,
    entity_id: entityId,
    uptime_seconds: Math.floor((Date.now() - startedAt) / 1000),
    last_heartbeat: heartbeats?.lastAck ?? null,
    webhook_requests_total: webhooks.requestsTotal,
    timestamp: new Date().toISOString()
  })
  const http = new HttpServer({
    routes: entityRoutes({ webhooks, a2a, health, card, paywall: payments?.paywall ?? null, syncUrl }),
    logger,
    cors: new Cors(['*']),
    clientIp: new ClientIpResolver([]),
    limiters: null,
    metrics: null,
    bodyLimitBytes: o.bodyLimitBytes ?? DEFAULTS.bodyLimitBytes,
    server: o.httpServer ?? 'auto'
  })
  const host = o.host ?? '127.0.0.1'
  let port: number
  try {
    port = await http.listen(host, o.port ?? 0)
  } catch (err) {
    await payments?.ledger.close()
    throw err
  }
  baseUrl = (o.url ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '')
  const shutdown = async (): Promise<void> => {
    http.close()
    http.closeConnections()
    await payments?.ledger.close()
  }

  let registration: RegistrationOutcome = { action: 'none', fqan: null }
  if (registry) {
    try {
      const body = registrationBody(o, type, keyPair, baseUrl, payments?.pricing ?? null)
      registration = await untilReachable(() => upsert(registry, body, entityId, keyPair), o.retryUnreachable)
      heartbeats = new HeartbeatClient({
        registryUrl: registry.baseUrl,
        entityId,
        keyPair,
        form: o.heartbeat?.form ?? 'deployed',
        intervalMs: o.heartbeat?.intervalMs ?? DEFAULTS.heartbeatIntervalMs,
        onError: message => logger.warn({ entity_id: entityId }, message)
      })
      heartbeats.start()
    } catch (err) {
      await shutdown()
      throw err
    }
  }
  logger.info(
    { entity_id: entityId, url: baseUrl, registry: registry?.baseUrl ?? null, registration },
    'entity started'
  )
  return {
    entityId,
    publicKey: formatKey(keyPair.publicKey),
    url: baseUrl,
    port,
    httpServer: http.kind,
    registration,
    heartbeats,
    pricing: payments ? payments.paywall.terms : null,
    async stop(options = {}) {
      await heartbeats?.stop()
      if (options.deregister && registry) await registry.deregister(entityId, keyPair)
      await shutdown()
    }
  }
}

/**
 * A priced entity's paywall: its pricing resolved (network, price, pay-to), the facilitator, the
 * ledger of used payments. Null for a free entity; a half-configured one throws PaymentConfigError.
 */
async function startPayments(
  o: EntityOptions,
  keyPair: KeyPair,
  logger: Logger
): Promise<{ paywall: Paywall; ledger: PaymentLedger; pricing: ResolvedPricing } | null> {
  const pricingInput = o.card.pricing
  if (!pricingInput && !o.payments) return null
  if (!pricingInput)
    throw new PaymentConfigError(
      'payments are configured but the card has no pricing: add pricing (rates.default) or leave payments out'
    )
  if (!o.payments)
    throw new PaymentConfigError(
      'the card has pricing but no payments: configure the facilitator ("local" with rpc_url and a settlement key, or a facilitator URL) and a data directory'
    )
  const p = o.payments
  const pricing = resolvePricing(pricingInput, {
    ed25519Seed: keyPair.seed,
    ...(p.payTo !== undefined ? { payTo: p.payTo } : {})
  })
  let facilitator: ReturnType<typeof createFacilitator>
  if (p.facilitator === 'local') {
    if (!p.rpcUrl || !p.settlementKey)
      throw new PaymentConfigError(
        'payments.facilitator "local" needs rpc_url (the chain\'s JSON-RPC URL) and a settlement key (pays the gas of settlements)'
      )
    facilitator = createFacilitator(
      { kind: 'local', rpcUrl: p.rpcUrl, settlementKey: p.settlementKey },
      pricing.network
    )
  } else if (/^https?:\/\//.test(p.facilitator)) {
    facilitator = createFacilitator({ kind: 'remote', url: p.facilitator }, pricing.network)
  } else {
    throw new PaymentConfigError(`payments.facilitator ${JSON.stringify(p.facilitator)}: "local" or an http(s) URL`)
  }
  const ledger = await PaymentLedger.open(p.dataDir)
  try {
    const paywall = await Paywall.create({
      pricing,
      facilitator: facilitator.client,
      ...(facilitator.chainReachable ? { chainReachable: facilitator.chainReachable } : {}),
      ledger,
      quoteSecret: keyPair.seed,
      logger,
      ...(p.maxTimeoutSeconds ? { maxTimeoutSeconds: p.maxTimeoutSeconds } : {})
    })
    return { paywall, ledger, pricing }
  } catch (err) {
    await ledger.close()
    throw err
  }
}

/** The registry's PricingModel of a priced entity (numbers, as the registry stores them). */
function pricingModel(pricing: ResolvedPricing): Record<string, unknown> {
  const price = Number(pricing.priceUsd)
  return {
    model: 'per_request',
    base_price_usd: price,
    currency: 'USDC',
    payment_methods: ['x402'],
    rates: { default: price }
  }
}

/** The registration in the spec's signing form: the canonical JSON of the body without `signature`. */
function registrationBody(
  o: EntityOptions,
  type: EntityType,
  keyPair: KeyPair,
  entityUrl: string,
  pricing: ResolvedPricing | null
): Record<string, unknown> {
  const c = o.card
  const body: Record<string, unknown> = {
    name: c.name,
    type,
    category: c.category ?? 'general',
    summary: c.summary ?? '',
    tags: c.tags ?? [],
    version: c.version ?? '0.1.0',
    entity_url: entityUrl,
    public_key: formatKey(keyPair.publicKey),
    capability_summary: {
      capabilities: (c.capabilities ?? []).map(x => (typeof x === 'string' ? x : x.name)),
      ...(c.metadata ?? {})
    }
  }
  if (o.entityName) body.entity_name = o.entityName
  if (pricing) body.pricing_model = pricingModel(pricing)
  const proof =
    o.developerProof ??
    (o.developerKey && o.index !== undefined ? entityKeyFile(o.developerKey, o.index).file.developer_proof : undefined)
  if (proof) {
    body.developer_id = deriveId('developer', proof.developer_public_key)
    body.developer_proof = proof
  }
  body.signature = sign(keyPair, canonicalJson(body))
  return body
}

/** What an update may change, compared with the registered record. */
const UPDATABLE = [
  'name',
  'category',
  'summary',
  'tags',
  'version',
  'entity_url',
  'capability_summary',
  'pricing_model'
] as const

const FIRST_RETRY_MS = 1_000
const LAST_RETRY_MS = 30_000

async function untilReachable<T>(attempt: () => Promise<T>, retry: EntityOptions['retryUnreachable']): Promise<T> {
  for (let waitMs = FIRST_RETRY_MS; ; waitMs = Math.min(waitMs * 2, LAST_RETRY_MS)) {
    try {
      return await attempt()
    } catch (err) {
      if (!retry || !(err instanceof RegistryRequestError) || err.status !== 0) throw err
      retry.onRetry?.(err, waitMs)
      await new Promise(resolve => setTimeout(resolve, waitMs))
    }
  }
}

async function upsert(
  registry: RegistryClient,
  body: Record<string, unknown>,
  entityId: string,
  keyPair: KeyPair
): Promise<RegistrationOutcome> {
  const existing = await registry.getEntity(entityId)
  if (existing === null) {
    const created = await registry.register(body)
    if (created.status !== 409)
      return { action: 'registered', fqan: typeof created.body.fqan === 'string' ? created.body.fqan : null }
    if (created.body.error === 'entity_deregistered') {
      throw new RegistryRequestError(
        409,
        'entity_deregistered',
        `${entityId} was deregistered, and this registration is identical to one made before (the registry refuses it as a replay): change the card or the URL, or use another key.`
      )
    }
  }
  const current = existing ?? (await registry.getEntity(entityId))
  if (current === null)
    throw new RegistryRequestError(409, 'entity_exists', `${entityId} is registered but cannot be read back.`)
  const changed = UPDATABLE.filter(
    field => canonicalJson(current[field] ?? null) !== canonicalJson(body[field] ?? null)
  )
  const fqan = typeof current.fqan === 'string' ? current.fqan : null
  if (changed.length === 0) return { action: 'unchanged', fqan }
  const patch: Record<string, unknown> = {}
  for (const field of changed) patch[field] = body[field]
  patch.signature = sign(keyPair, canonicalJson(patch))
  const updated = await registry.update(entityId, patch)
  return { action: 'updated', fqan: typeof updated.fqan === 'string' ? updated.fqan : fqan }
}
