/**
 * The entity side of the `registry-node` command line:
 *   entity init    derive an entity key at the developer's next free index and write entity.toml
 *   entity serve   run an entity from its entity.toml (echo handler or a handler module)
 *   entity register, update, deregister, status   signed writes and reads of a record (src/client/cli.ts)
 *   call           send a signed message to an entity and print the reply
 *   search         search a registry (a readable table, or --json)
 *   resolve        resolve an FQAN or entity ID (--json for scripts)
 * Errors are thrown as CliError (usage, exit 2) or left to the caller (exit 1).
 */
import { readdir, readFile, writeFile, access } from 'node:fs/promises'
import { basename, dirname, isAbsolute, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parse as parseToml } from 'smol-toml'
import type { ServerChoice } from '../http/front.js'
import { readKeyFile, writeKeyFile, entityKeyFile, type KeyFile } from '../identity/key-file.js'
import { deriveId } from '../identity/ids.js'
import { callEntity } from './call.js'
import type { CardInput } from './card.js'
import { createEntity, type EntityPaymentOptions, type EntityType } from './entity.js'
import { AUTH_MODES, type AuthMode } from './message-auth.js'
import { RegistryClient } from './registry-client.js'
import type { EntityHandler } from './webhooks.js'
import { PayingClient, PaymentClientError, readWalletFile } from './x402/payer.js'
import type { PricingInput } from './x402/pricing.js'
import { CliError, type CommandFlags, commandFlags } from '../util/argv.js'
import { entityClientCommand, registryUrl } from '../client/cli.js'

export { CliError }

const flags = (argv: readonly string[]): CommandFlags => commandFlags(argv, BOOLEAN_FLAGS)

const BOOLEAN_FLAGS = new Set(['echo', 'async', 'a2a', 'json', 'federated', 'deregister-on-stop', 'pay'])

function print(value: unknown): void {
  process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`)
}

// --- entity init -------------------------------------------------------------------------------

const ENTITY_FILE = 'entity.toml'
const KEY_FILE = 'entity-key.json'

async function entityInit(argv: string[]): Promise<void> {
  const f = flags(argv)
  const developerPath = f.get('developer') ?? usage('entity init needs --developer KEYFILE')
  const name = f.get('name') ?? usage('entity init needs --name NAME')
  const type = (f.get('type') ?? 'agent') as EntityType
  if (type !== 'agent' && type !== 'service') usage('--type must be agent or service')
  const { file: developerFile, keyPair: developer } = await readKeyFile(developerPath)
  if (developerFile.type !== 'developer') usage(`${developerPath} is not a developer key file`)
  const slug =
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 64) || 'entity'
  const out = f.get('out') ?? slug
  const index = f.has('index')
    ? parseIndex(f.get('index') as string)
    : await nextFreeIndex(
        developerFile.developer_id ?? '',
        out,
        f.has('registry') || process.env.REGISTRY_NODE_URL ? registryUrl(f) : null
      )
  const { file, keyPair } = entityKeyFile(developer, index)
  if (await exists(join(out, ENTITY_FILE))) usage(`${join(out, ENTITY_FILE)} exists; refusing to overwrite it`)
  await writeKeyFile(join(out, KEY_FILE), file)
  await writeFile(join(out, ENTITY_FILE), entityToml({ name, type, slug }))
  print({
    entity_id: deriveId(type, keyPair.publicKey),
    index,
    config: join(out, ENTITY_FILE),
    key_file: join(out, KEY_FILE),
    next: `registry-node entity serve --config ${join(out, ENTITY_FILE)} --echo`
  })
}

function parseIndex(text: string): number {
  const n = Number(text)
  if (!Number.isInteger(n) || n < 0 || n > 0xffff_ffff) usage('--index must be an unsigned 32-bit integer')
  return n
}

/**
 * The lowest index not yet taken by this developer: not in a key file beside `out` (its sibling
 * folders' entity-key.json) and, with a registry, not among the developer's registered entities.
 */
async function nextFreeIndex(developerId: string, out: string, registryUrl: string | null): Promise<number> {
  const used = new Set<number>()
  const parent = dirname(resolve(out))
  for (const entry of await readdir(parent, { withFileTypes: true }).catch(() => [])) {
    if (!entry.isDirectory()) continue
    const file = await readFile(join(parent, entry.name, KEY_FILE), 'utf8').then(
      t => JSON.parse(t) as KeyFile,
      () => null
    )
    if (file?.developer_id === developerId && typeof file.index === 'number') used.add(file.index)
  }
  if (registryUrl && developerId) {
    const res = await fetch(
      `${registryUrl.replace(/\/+$/, '')}/v1/developers/${encodeURIComponent(developerId)}/entities`
    ).catch(() => null)
    const body = res?.ok
      ? ((await res.json()) as { entities?: Array<{ entity_index?: number; developer_proof?: { index?: number } }> })
      : null
    for (const e of body?.entities ?? []) {
      const i = e.entity_index ?? e.developer_proof?.index
      if (typeof i === 'number') used.add(i)
    }
  }
  let index = 0
  while (used.has(index)) index++
  return index
}

function entityToml(e: { name: string; type: EntityType; slug: string }): string {
  return `# registry-node entity configuration (TOML). Run: registry-node entity serve --config <this file> --echo
[entity]
name = ${JSON.stringify(e.name)}
type = ${JSON.stringify(e.type)}
key_file = ${JSON.stringify(KEY_FILE)}
# strict: signed messages only; permissive: unsigned ones too (the handler is told signed: false).
auth_mode = "permissive"
# Bound as <host>/<handle>/<entity_name> when the developer holds a handle on the registry.
entity_name = ${JSON.stringify(e.slug)}

[card]
summary = ""
category = "general"
tags = []
version = "0.1.0"
capabilities = []

[card.metadata]
# framework = ""
# model = ""
# documentation = ""
# source_code = ""

# Charge for /webhook/sync with x402 (see docs/guide/payments.md): uncomment both
# tables. Callers pay in USDC; /webhook, /health and the card stay free.
# [pricing]
# model = "per-request"
# currency = "USDC"
# rates = { default = "0.01" }
# payment_methods = ["x402"]
# network = 84532                  # chain ID: 84532 Base Sepolia (default), 8453, 1, 11155111, 137, 42161, 10, 43114
#
# [payments]
# facilitator = "local"            # verify and settle in process; or a facilitator URL, e.g. "https://x402.org/facilitator"
# rpc_url = "http://127.0.0.1:8545"
# settlement_key_file = "../local-chain/settlement-key.txt"   # the key that pays settlement gas (npm run local-chain writes it; or REGISTRY_NODE_SETTLEMENT_KEY)
# pay_to = ""                      # an 0x address; empty: derived from the entity key, as the SDKs derive it
# data_dir = "data"                # used payments, kept across restarts
`
}

// --- entity serve ------------------------------------------------------------------------------

interface EntityFile {
  entity?: { name?: string; type?: string; key_file?: string; auth_mode?: string; entity_name?: string }
  card?: Partial<CardInput> & { metadata?: CardInput['metadata'] }
  pricing?: PricingInput
  payments?: {
    facilitator?: string
    rpc_url?: string
    settlement_key_file?: string
    pay_to?: string
    data_dir?: string
    max_timeout_seconds?: number
  }
}

/** entity.toml's [payments], with paths relative to the file; null without pricing. */
async function paymentsOf(config: EntityFile, configPath: string): Promise<EntityPaymentOptions | null> {
  if (!config.pricing) {
    if (config.payments)
      usage(`${configPath} has [payments] but no [pricing]: add the price (rates.default) or remove [payments]`)
    return null
  }
  const p =
    config.payments ??
    usage(
      `${configPath} has [pricing] but no [payments]: say how payments are settled (facilitator, rpc_url, settlement_key_file)`
    )
  const here = (path: string): string => (isAbsolute(path) ? path : join(dirname(configPath), path))
  const facilitator = p.facilitator ?? 'local'
  let settlementKey: `0x${string}` | undefined
  if (facilitator === 'local') {
    const fromEnv = process.env.REGISTRY_NODE_SETTLEMENT_KEY
    settlementKey = fromEnv
      ? ((fromEnv.startsWith('0x') ? fromEnv : `0x${fromEnv}`) as `0x${string}`)
      : p.settlement_key_file
        ? await readKey(here(p.settlement_key_file), `${configPath}: payments.settlement_key_file`)
        : usage(
            'payments.facilitator "local" needs settlement_key_file (or REGISTRY_NODE_SETTLEMENT_KEY): the key that pays settlement gas'
          )
  }
  return {
    facilitator,
    dataDir: here(p.data_dir ?? 'data'),
    ...(p.rpc_url ? { rpcUrl: p.rpc_url } : {}),
    ...(settlementKey ? { settlementKey } : {}),
    ...(p.pay_to ? { payTo: p.pay_to } : {}),
    ...(p.max_timeout_seconds ? { maxTimeoutSeconds: p.max_timeout_seconds } : {})
  }
}

/** A secp256k1 key file, or one line saying which setting names a file that is missing or not a key. */
async function readKey(path: string, setting: string): Promise<`0x${string}`> {
  try {
    return await readWalletFile(path)
  } catch (err) {
    const cause = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message
    throw new CliError(`${setting} ${path}: ${cause}`)
  }
}

async function entityServe(argv: string[]): Promise<void> {
  const f = flags(argv)
  const configPath = f.get('config') ?? usage('entity serve needs --config FILE (made by entity init)')
  let config: EntityFile
  try {
    config = parseToml(await readFile(configPath, 'utf8')) as EntityFile
  } catch (err) {
    throw new CliError(`cannot read ${configPath}: ${(err as Error).message}`)
  }
  const e = config.entity ?? {}
  const keyPath = e.key_file
    ? isAbsolute(e.key_file)
      ? e.key_file
      : join(dirname(configPath), e.key_file)
    : join(dirname(configPath), KEY_FILE)
  const { file, keyPair } = await readKeyFile(keyPath)
  const authMode = (f.get('auth-mode') ?? e.auth_mode ?? 'permissive') as AuthMode
  if (!AUTH_MODES.includes(authMode)) usage(`--auth-mode must be one of ${AUTH_MODES.join(', ')}`)
  const type = (e.type ?? 'agent') as EntityType
  if (type !== 'agent' && type !== 'service') usage(`entity.type in ${configPath} must be agent or service`)
  const handler = f.has('handler')
    ? await loadHandler(f.get('handler') as string)
    : f.has('echo')
      ? echoHandler
      : usage('entity serve needs --echo or --handler MODULE')
  const port = f.has('port') ? Number(f.get('port')) : 0
  const heartbeatSeconds = Number(f.get('heartbeat-seconds') ?? 30)
  const developerProof = file.developer_proof
  const payments = await paymentsOf(config, configPath)
  const entity = createEntity({
    key: keyPair,
    type,
    registry: registryUrl(f),
    handler,
    authMode,
    card: {
      name: e.name ?? basename(dirname(resolve(configPath))),
      ...config.card,
      ...(config.pricing ? { pricing: config.pricing } : {})
    },
    ...(payments ? { payments } : {}),
    ...(e.entity_name ? { entityName: e.entity_name } : {}),
    ...(developerProof ? { developerProof } : {}),
    host: f.get('host') ?? '127.0.0.1',
    port,
    ...(f.has('url') ? { url: f.get('url') as string } : {}),
    httpServer: (f.get('http-server') ?? 'auto') as ServerChoice,
    heartbeat: { intervalMs: heartbeatSeconds * 1000 },
    // A registry that is down at start is waited for, as the heartbeats wait for it once running.
    retryUnreachable: {
      onRetry: (err, waitMs) =>
        process.stderr.write(`registry-node: ${err.message}; trying again in ${waitMs / 1000} s\n`)
    }
  })
  const running = await entity.start()
  print(
    `entity ${running.entityId} serving on ${running.url} (server ${running.httpServer}, ${running.registration.action} at ${registryUrl(f)}${running.registration.fqan ? `, ${running.registration.fqan}` : ''}, auth_mode ${authMode})`
  )
  if (running.pricing)
    print(
      `priced: ${String(running.pricing.price)} USDC per /webhook/sync call on ${String(running.pricing.network)}, paid to ${String(running.pricing.pay_to)}`
    )
  let stopping = false
  const stop = (): void => {
    if (stopping) process.exit(130)
    stopping = true
    setTimeout(() => process.exit(1), 4_000).unref()
    running.stop({ deregister: f.has('deregister-on-stop') }).then(
      () => process.exit(0),
      err => {
        process.stderr.write(`registry-node: stop failed: ${(err as Error).message}\n`)
        process.exit(1)
      }
    )
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}

/** Answers with what it got: the message text. */
export const echoHandler: EntityHandler = input => input.content

async function loadHandler(path: string): Promise<EntityHandler> {
  const module = (await import(pathToFileURL(resolve(path)).href)) as { default?: unknown; handler?: unknown }
  const handler = module.default ?? module.handler
  if (typeof handler !== 'function')
    throw new CliError(`${path} exports no handler function (default export or "handler")`)
  return handler as EntityHandler
}

// --- call, search, resolve ---------------------------------------------------------------------

async function call(argv: string[]): Promise<void> {
  const f = flags(argv)
  const [target, ...words] = f.positionals
  if (!target || words.length === 0) usage('call needs TARGET and TEXT')
  const keyPath = f.get('key')
  const key = keyPath ? await readKeyFile(keyPath) : null
  const senderId = key
    ? ((key.file.type === 'entity' ? key.file.entity_ids?.agent : undefined) ??
      deriveId('agent', key.keyPair.publicKey))
    : undefined
  if (f.has('pay') && !f.has('wallet')) usage('--pay needs --wallet FILE (a secp256k1 private key holding USDC)')
  if (f.has('attest') && !key)
    usage('--attest needs --key FILE: the attestation is signed by the caller, a registered entity')
  const payer = f.has('pay')
    ? new PayingClient({
        privateKey: await readKey(f.get('wallet') as string, '--wallet'),
        maxUsd: f.get('max-usd') ?? 1
      })
    : undefined
  let result: Awaited<ReturnType<typeof callEntity>>
  try {
    result = await callEntity(target, words.join(' '), {
      registry: registryUrl(f),
      async: f.has('async'),
      a2a: f.has('a2a'),
      ...(key ? { key: key.keyPair } : {}),
      ...(senderId ? { senderId } : {}),
      ...(payer ? { payer } : {}),
      ...(f.has('attest') ? { attest: true } : {})
    })
  } catch (err) {
    if (!(err instanceof PaymentClientError)) throw err
    process.stderr.write(`registry-node: ${err.code}: ${err.message}\n`)
    if (f.has('json'))
      print({ error: err.code, message: err.message, status: err.status ?? null, body: err.body ?? null })
    process.exitCode = 1
    return
  }
  if (f.has('json')) return print(result)
  if (result.attestation_id) process.stderr.write(`attested: ${result.attestation_id}\n`)
  if (result.response === null) {
    const hint = result.status === 402 ? ' (a priced entity: pay with --pay --wallet FILE)' : ''
    process.stderr.write(`${result.url}: HTTP ${result.status}${hint} ${JSON.stringify(result.reply)}\n`)
    process.exitCode = 1
    return
  }
  process.stderr.write(`${result.entity_id ?? result.url} (card ${result.card_verification}):\n`)
  print(result.response)
  if (result.payment) process.stderr.write(`paid: ${JSON.stringify(result.payment)}\n`)
}

async function search(argv: string[]): Promise<void> {
  const f = flags(argv)
  const request: Record<string, unknown> = { query: f.positionals.join(' ') }
  if (f.has('type')) request.type = f.get('type')
  if (f.has('category')) request.category = f.get('category')
  if (f.all('tag').length) request.tags = f.all('tag')
  if (f.has('status')) request.status = f.get('status')
  if (f.has('limit')) request.max_results = Number(f.get('limit'))
  if (f.has('federated')) request.federated = true
  const result = await new RegistryClient(registryUrl(f)).search(request)
  if (f.has('json')) return print(result)
  const rows = (result.results as Array<Record<string, unknown>> | undefined) ?? []
  print(
    table(
      ['name', 'fqan or id', 'type', 'status', 'score'],
      rows.map(r => [
        String(r.name ?? ''),
        String(r.fqan ?? r.entity_id ?? ''),
        String(r.type ?? r.entity_type ?? ''),
        String(r.status ?? ''),
        typeof r.score === 'number' ? r.score.toFixed(3) : ''
      ])
    )
  )
  process.stderr.write(`${rows.length} of ${String(result.total_found ?? rows.length)} results\n`)
}

async function resolveCommand(argv: string[]): Promise<void> {
  const f = flags(argv)
  const target = f.positionals[0] ?? usage('resolve needs an FQAN or an entity ID')
  const registry = new RegistryClient(registryUrl(f))
  const record =
    target.startsWith('zns:') && !target.startsWith('zns://')
      ? await registry.resolveEntity(target)
      : await registry.resolveFqan(target)
  if (f.has('json')) return print(record)
  const fields = [
    'fqan',
    'entity_id',
    'name',
    'type',
    'status',
    'entity_url',
    'public_key',
    'home_registry',
    'last_heartbeat'
  ]
  print(
    fields
      .filter(k => record[k] !== undefined && record[k] !== null)
      .map(k => `${k.padEnd(15)} ${typeof record[k] === 'string' ? record[k] : JSON.stringify(record[k])}`)
      .join('\n')
  )
}

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.min(60, Math.max(h.length, ...rows.map(r => (r[i] ?? '').length))))
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.slice(0, widths[i]).padEnd(widths[i] as number))
      .join('  ')
      .trimEnd()
  return [line(head), ...rows.map(line)].join('\n')
}

function usage(message: string): never {
  throw new CliError(message)
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false
  )
}

export async function entityCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  if (sub === 'init') return entityInit(rest)
  if (sub === 'serve') return entityServe(rest)
  if (await entityClientCommand(sub, rest)) return
  usage(`unknown entity subcommand ${sub ?? ''}; see registry-node --help`)
}

export { call as callCommand, search as searchCommand, resolveCommand }
