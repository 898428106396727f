#!/usr/bin/env node
/**
 * registry-node: the command line of the node, the keys, the entity runtime and testnets. `registry-node --help`
 * lists the commands (src/cli-help.ts); each command's own `--help` prints its flags.
 */
import './polyfills.js'
import { randomBytes } from 'node:crypto'
import { access, readFile, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { asksForHelp, commandHelp, commandOf, topLevelHelp } from './cli-help.js'
import { ConfigError, configTemplate, loadConfig, loadConfigWithSources, parseFlags } from './config/load.js'
import { profileWarnings } from './config/profiles.js'
import type { NodeConfig } from './config/settings.js'
import { PortInUse } from './http/port-in-use.js'
import { canonicalJson, withoutSignature } from './identity/canonical-json.js'
import { formatKey } from './identity/encoding.js'
import { deriveId } from './identity/ids.js'
import { ED25519_BACKEND, generateKeyPair, sign } from './identity/keys.js'
import { developerKeyFile, entityKeyFile, KeyFileError, readKeyFile, writeKeyFile } from './identity/key-file.js'
import { loadOrCreateNodeIdentity, NODE_KEY_FILE } from './identity/node-identity.js'
import type { RegistryNode } from './node.js'
import { TlsFileError } from './http/tls.js'
import { formatReport, verifyRegistry } from './verify-registry.js'
import { NODE_VERSION } from './version.js'

function print(value: unknown): void {
  process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`)
}

function fail(message: string): never {
  process.stderr.write(`registry-node: ${message}\n`)
  process.exit(2)
}

function flag(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`)
  if (i !== -1) return argv[i + 1]
  const inline = argv.find(a => a.startsWith(`--${name}=`))
  return inline?.slice(name.length + 3)
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false
  )
}

async function readInput(source: string): Promise<Buffer> {
  if (source !== '-') return readFile(source)
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

async function keys(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  switch (sub) {
    case 'new': {
      const out = flag(rest, 'out') ?? 'keys/developer.json'
      const file = developerKeyFile(generateKeyPair())
      await writeKeyFile(out, file)
      print({ key_file: out, developer_id: file.developer_id, public_key: file.public_key })
      return
    }
    case 'derive': {
      const developerPath = flag(rest, 'developer') ?? fail('keys derive needs --developer FILE')
      const indexText = flag(rest, 'index') ?? fail('keys derive needs --index N (never defaulted)')
      const index = Number(indexText)
      if (!Number.isInteger(index) || index < 0 || index > 0xffff_ffff)
        fail('--index must be an unsigned 32-bit integer')
      const { file: dev, keyPair: devKey } = await readKeyFile(developerPath)
      if (dev.type !== 'developer') fail(`${developerPath} is not a developer key file`)
      const type = flag(rest, 'type') ?? 'agent'
      if (type !== 'agent' && type !== 'service') fail('--type must be agent or service')
      const { file } = entityKeyFile(devKey, index)
      const proof = file.developer_proof
      const entityIds = file.entity_ids!
      const out = flag(rest, 'out')
      if (out) await writeKeyFile(out, file)
      print({
        ...(out ? { key_file: out } : {}),
        entity_id: entityIds[type],
        entity_ids: entityIds,
        public_key: file.public_key,
        developer_id: file.developer_id,
        developer_proof: proof
      })
      return
    }
    case 'show': {
      const { file, keyPair } = await readKeyFile(flag(rest, 'key') ?? fail('keys show needs --key FILE'))
      print({
        type: file.type,
        public_key: formatKey(keyPair.publicKey),
        developer_id: file.developer_id,
        ...(file.type === 'entity'
          ? {
              entity_ids: {
                agent: deriveId('agent', keyPair.publicKey),
                service: deriveId('service', keyPair.publicKey)
              },
              index: file.index
            }
          : {})
      })
      return
    }
    case 'sign': {
      const { file, keyPair } = await readKeyFile(flag(rest, 'key') ?? fail('keys sign needs --key FILE'))
      const message = flag(rest, 'message')
      const rawPath = flag(rest, 'raw')
      const bodyPath = flag(rest, 'body')
      if (message !== undefined) return print(sign(keyPair, message))
      if (rawPath !== undefined) return print(sign(keyPair, await readInput(rawPath)))
      if (bodyPath === undefined) fail('keys sign needs --body FILE|-, --message TEXT or --raw FILE')
      let body: Record<string, unknown>
      try {
        body = JSON.parse((await readInput(bodyPath)).toString('utf8')) as Record<string, unknown>
      } catch (err) {
        fail(`the body is not JSON: ${(err as Error).message}`)
      }
      body.public_key ??= formatKey(keyPair.publicKey)
      if (rest.includes('--with-proof')) {
        if (!file.developer_proof) fail('--with-proof needs an entity key file made by keys derive --out')
        body.developer_id ??= file.developer_id
        body.developer_proof ??= file.developer_proof
      }
      const unsigned = withoutSignature(body)
      print(canonicalJson({ ...unsigned, signature: sign(keyPair, canonicalJson(unsigned)) }))
      return
    }
    default:
      fail(`unknown keys subcommand ${sub ?? ''}; see registry-node --help`)
  }
}

/** The libp2p PeerId of an Ed25519 public key (loaded here: only init needs libp2p's key encoding). */
async function peerIdOf(publicKey: Uint8Array): Promise<string> {
  const [{ publicKeyFromRaw }, { peerIdFromPublicKey }] = await Promise.all([
    import('@libp2p/crypto/keys'),
    import('@libp2p/peer-id')
  ])
  return peerIdFromPublicKey(publicKeyFromRaw(publicKey)).toString()
}

async function init(argv: string[]): Promise<void> {
  const force = argv.includes('--force')
  const flags = argv.filter(a => a !== '--force')
  const configPath = parseFlags(flags).configFile ?? 'registry-node.toml'
  const written = !(await exists(configPath)) || force
  // --config names the file to create; it is read only when it already exists.
  const config = await loadConfig({ argv: written ? withoutConfigFlag(flags) : flags })
  const identity = await loadOrCreateNodeIdentity(join(config.data_dir, NODE_KEY_FILE))
  // What the command line says goes into the file, so `start --config` runs what `init` was told.
  const overrides: Record<string, string | number | boolean | readonly string[]> = { data_dir: config.data_dir }
  for (const [setting, value] of parseFlags(withoutConfigFlag(flags)).values) {
    overrides[setting.key] = value as string | number | boolean | readonly string[]
  }
  let webhookSecret: string | undefined
  if (config.onboarding.mode === 'restricted') {
    webhookSecret = config.onboarding.webhook_secret || `whsec_${randomBytes(32).toString('hex')}`
    Object.assign(overrides, { 'onboarding.mode': 'restricted', 'onboarding.webhook_secret': webhookSecret })
    if (config.onboarding.auth_url) overrides['onboarding.auth_url'] = config.onboarding.auth_url
  }
  if (written) await writeFile(configPath, configTemplate(overrides), { mode: webhookSecret ? 0o600 : 0o644 })
  print({
    registry_id: identity.registryId,
    public_key: identity.publicKey,
    // What peers name this node by in p2p.allow_peers and /p2p/ addresses: known before it first starts.
    peer_id: await peerIdOf(identity.keyPair.publicKey),
    node_key: resolve(config.data_dir, NODE_KEY_FILE),
    config_file: resolve(configPath),
    config_written: written,
    ...(!written && parseFlags(withoutConfigFlag(flags)).values.size > 0
      ? { flags_not_written: `${configPath} exists and was left as it is; --force writes a new one with these flags` }
      : {}),
    ...(webhookSecret && written
      ? {
          webhook_secret: webhookSecret,
          onboarding: 'give this secret to the operator site that calls POST /v1/admin/developers/approve'
        }
      : {}),
    next: `registry-node start --config ${configPath}`
  })
}

function withoutConfigFlag(argv: string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--config') {
      i++
      continue
    }
    if (!argv[i]!.startsWith('--config=')) out.push(argv[i]!)
  }
  return out
}

const SHUTDOWN_DEADLINE_MS = 4_000

/** A start that failed because a port is taken, as one line naming the setting to change; else null. */
function portClash(err: unknown, config: NodeConfig): string | null {
  if (err instanceof PortInUse) return `${err.message}; stop it or choose another --http-port (http.port)`
  const text = errorText(err)
  if (!/EADDRINUSE|address already in use/i.test(text)) return null
  const p2p = config.p2p.port
  const port = [p2p, p2p + 1].find(p => p !== 0 && text.includes(`:${p}`))
  return port === undefined
    ? `a p2p port is in use by another process; choose another --p2p-port (p2p.port): ${text.split('\n')[0]}`
    : `p2p port ${port} is in use by another process; stop it or choose another --p2p-port (p2p.port; the WebSocket transport takes the next port)`
}

/** An error's message with its causes and, for an AggregateError, its parts. */
function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  const parts = err instanceof AggregateError ? err.errors.map(errorText) : []
  return [err.message, ...(err.cause ? [errorText(err.cause)] : []), ...parts].join('\n')
}

/** How far each thread's old generation grows past what it held after its last full collection. */
const HEAP_GROWING_PERCENT = 30

async function start(argv: string[]): Promise<void> {
  // V8's memory reducer runs full collections whenever a heap looks idle, as a node between operations
  // at a low rate always does: in a 20-node mesh at 5 operations/s it cost about a tenth of the nodes'
  // CPU (docs/decisions.md). Process-wide, so the search worker is included.
  setFlagsFromString('--no-memory-reducer')
  // V8 lets an old generation grow to up to four times what it held after its last full collection,
  // and with the memory reducer off an idle heap keeps that garbage. At a million entities, 30 % kept
  // about 750 MB less resident after queries, queries/s within their spread (docs/decisions.md). A
  // flag given to node itself wins.
  if (!process.execArgv.some(flag => flag.startsWith('--heap-growing-percent')))
    setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
  const config = await loadConfig({ argv })
  // Taken from the start (a SIGHUP would otherwise end the process); one during start is applied once it has started.
  let hangUp: (() => void) | null = null
  let hungUpDuringStart = false
  process.on('SIGHUP', () => (hangUp ? hangUp() : (hungUpDuringStart = true)))
  // Loaded here, not at the top: the node's parts (libp2p, LMDB, the search index) are most of a
  // CLI start, and every other command does without them.
  const { startRegistryNode } = await import('./node.js')
  const node = await startRegistryNode(config).catch((err: unknown) => {
    const clash = portClash(err, config)
    if (clash) fail(clash)
    throw err
  })
  process.stdout.write(
    `registry-node ${NODE_VERSION} listening on ${node.url} (server ${node.httpServer}, Node.js ${process.versions.node}, Ed25519 by ${ED25519_BACKEND}, registry ${node.identity.registryId}, data ${resolve(config.data_dir)})\n`
  )
  if (node.mesh && config.host === 'localhost' && !config.dev) {
    process.stderr.write(
      'registry-node: warning: host is "localhost" with the mesh on: other nodes see this node\'s names as localhost/<handle>/<name> and cannot resolve them here; set --host to the name peers reach this node by\n'
    )
  }
  for (const warning of profileWarnings(config)) process.stderr.write(`registry-node: warning: ${warning}\n`)
  if (config.dev) {
    process.stdout.write(
      `registry-node: development mode (--dev): http:// entity URLs ${config.entities.allow_http_url ? 'accepted' : 'refused'}, private card addresses ${config.cards.allow_private_addresses ? 'accepted' : 'refused'}, rate limits ${config.rate_limit.enabled ? 'on' : 'off'}; not for a public mesh\n`
    )
  }
  if (config.replica_of) {
    process.stdout.write(
      `registry-node: read-only replica of ${config.replica_of} (host ${config.host}): writes, onboarding and heartbeats answer 503 read_only_replica${node.mesh ? '' : '; with the mesh off it never learns anything'}\n`
    )
  }
  // Testnets bootstrap other nodes from these addresses (--bootstrap <address>).
  process.stdout.write(
    node.mesh
      ? `registry-node p2p ${node.mesh.peerId} at ${node.mesh.addresses().join(' ')}\n`
      : 'registry-node p2p disabled\n'
  )
  let signals = 0
  const shutdown = (signal: string): void => {
    if (++signals > 1) process.exit(130)
    node.logger.info({ signal }, 'shutting down: draining in-flight writes')
    // Acknowledged writes are committed already, so a stop that hangs (a peer that never answers)
    // loses nothing when it is cut short: the process is gone within 5 s whatever happens.
    setTimeout(() => {
      process.stderr.write(`registry-node: shutdown took over ${SHUTDOWN_DEADLINE_MS} ms; exiting\n`)
      process.exit(1)
    }, SHUTDOWN_DEADLINE_MS).unref()
    node.stop().then(
      () => process.exit(0),
      err => {
        process.stderr.write(`registry-node: shutdown failed: ${(err as Error).message}\n`)
        process.exit(1)
      }
    )
  }
  process.on('SIGINT', () => shutdown('SIGINT'))
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  hangUp = () => {
    if (signals > 0) return
    void reloadConfig(node, argv)
  }
  if (hungUpDuringStart) hangUp()
}

/**
 * SIGHUP: the configuration read again as start read it (the file, the environment, the same flags,
 * which still win) and handed to the node, which logs what it applied and what needs a restart. A
 * configuration that does not load or cannot be served is one error line; the node keeps running on
 * what it had.
 */
async function reloadConfig(node: RegistryNode, argv: string[]): Promise<void> {
  node.logger.info({ signal: 'SIGHUP' }, 'reloading the configuration')
  try {
    await node.reload(await loadConfig({ argv }))
  } catch (err) {
    const message = errorText(err).split('\n')[0]
    node.logger.error({ error: message }, `reload refused, still running on the previous configuration: ${message}`)
  }
}

/** `config check` and `config show`: the settings start would run with, without starting. */
async function configCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  const json = rest.includes('--json')
  const { config, sources } = await loadConfigWithSources({ argv: rest.filter(a => a !== '--json') })
  if (sub === 'check') {
    const from = new Set([...sources.values()].filter(s => s !== 'default'))
    return print(
      `ok: ${sources.size} settings valid${from.size ? ` (set by ${[...from].join(', ')})` : ' (all defaults)'}`
    )
  }
  if (sub !== 'show') fail(`unknown config subcommand ${sub ?? ''}; see registry-node config show --help`)
  const effectiveValue = (key: string): unknown =>
    key.split('.').reduce<unknown>((at, part) => (at as Record<string, unknown>)[part], config)
  if (json) {
    return print(Object.fromEntries([...sources].map(([key, source]) => [key, { value: effectiveValue(key), source }])))
  }
  const width = Math.max(...[...sources.keys()].map(k => k.length))
  const secret = (key: string): boolean => /secret|token/.test(key)
  print(
    [...sources]
      .map(([key, source]) => {
        const value = secret(key) && effectiveValue(key) ? '"(set)"' : JSON.stringify(effectiveValue(key))
        return `${key.padEnd(width)} = ${value}${source === 'default' ? '' : `   # ${source}`}`
      })
      .join('\n')
  )
}

async function verifyRegistryCommand(argv: string[]): Promise<void> {
  const url =
    argv.find(a => !a.startsWith('--') && argv[argv.indexOf(a) - 1] !== '--ca') ?? fail('verify-registry needs a URL')
  const caFile = flag(argv, 'ca')
  const ca = caFile ? await readFile(caFile, 'utf8') : undefined
  try {
    const result = await verifyRegistry(url, ca ? { ca } : {})
    print(formatReport(result))
    process.exitCode = result.check.ok && result.tls !== 'mismatched' ? 0 : 1
  } catch (err) {
    print(`${(err as Error).message}\nFAILED`)
    process.exitCode = 1
  }
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv
  // Help is answered before anything else runs, so asking for it never acts.
  if (asksForHelp(argv)) {
    const known = commandOf(argv)
    return print(known ? commandHelp(known) : topLevelHelp())
  }
  switch (command) {
    case 'verify-registry':
      return verifyRegistryCommand(rest)
    case 'start':
      return start(rest)
    case 'init':
      return init(rest)
    case 'config':
      return configCommand(rest)
    // Loaded only when used, like the mesh.
    case 'testnet':
      return (await import('./testnet/commands.js')).testnetCommand(rest)
    case 'experiment':
      return (await import('./testnet/experiment-command.js')).experimentCommand(rest)
    case 'keys':
      return keys(rest)
    // The operator's data: the signed log out and in, backups of the data directory.
    case 'export':
      return (await import('./data-commands.js')).exportCommand(rest)
    case 'import':
      return (await import('./data-commands.js')).importCommand(rest)
    case 'backup':
      return (await import('./data-commands.js')).backupCommand(rest)
    case 'restore':
      return (await import('./data-commands.js')).restoreCommand(rest)
    // The entity runtime and its client commands, loaded only when used.
    case 'entity':
      return (await import('./entity/cli.js')).entityCommand(rest)
    case 'call':
      return (await import('./entity/cli.js')).callCommand(rest)
    case 'search':
      return (await import('./entity/cli.js')).searchCommand(rest)
    case 'resolve':
      return (await import('./entity/cli.js')).resolveCommand(rest)
    // The signed writes of developers, handles and names, through the typed client.
    case 'developer':
      return (await import('./client/cli.js')).developerCommand(rest)
    case 'handle':
      return (await import('./client/cli.js')).handleCommand(rest)
    case 'name':
      return (await import('./client/cli.js')).nameCommand(rest)
    // A running node's peers, through its admin routes.
    case 'peers':
      return (await import('./client/peers-cli.js')).peersCommand(rest)
    case undefined:
      return print(topLevelHelp())
    case 'help': {
      const known = commandOf(rest)
      return print(known ? commandHelp(known) : topLevelHelp())
    }
    case '--version':
    case 'version':
      return print(NODE_VERSION)
    default:
      fail(`unknown command ${command}; see registry-node --help`)
  }
}

// Failures a person can act on print one line; the stack of anything else only with --verbose.
const verbose = process.argv.includes('--verbose')
const REPORTED = new Set([
  'DataDirInUse',
  'BackupError',
  'NoStore',
  'StoreFormatError',
  'RegistryRequestError',
  'RegistryUnreachableError',
  'EntityUnreachableError',
  'PaymentClientError'
])

main(process.argv.slice(2).filter(arg => arg !== '--verbose')).catch(async err => {
  if (err instanceof ConfigError || err instanceof KeyFileError || err instanceof TlsFileError) fail(err.message)
  if (err instanceof Error && err.name === 'CliError') fail(err.message)
  if (err instanceof Error && REPORTED.has(err.name) && !verbose) {
    process.stderr.write(`registry-node: ${err.message}\n`)
    process.exit(1)
  }
  if (
    (process.argv[2] === 'testnet' || process.argv[2] === 'experiment') &&
    (await import('./testnet/commands.js')).isUsageError(err)
  )
    fail((err as Error).message)
  const error = err instanceof Error ? err : new Error(String(err))
  process.stderr.write(
    verbose
      ? `registry-node: ${error.stack ?? error.message}\n`
      : `registry-node: ${error.message} (--verbose prints where)\n`
  )
  process.exit(1)
})
