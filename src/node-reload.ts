/**
 * A running node takes a new configuration (SIGHUP): the settings the table marks `reloadable` are
 * applied to the parts that read them, the others are reported as waiting for a restart. What can
 * be refused (certificate files, proxy addresses, bootstrap addresses) is checked before anything
 * is applied, so a refused reload leaves the node as it was.
 */
import type { Logger } from 'pino'
import type { HeartbeatSocketLimits } from './api/sockets.js'
import type { Setting } from './config/setting.js'
import { type NodeConfig, SETTINGS } from './config/settings.js'
import { ClientIpResolver } from './http/client-ip.js'
import { Cors } from './http/cors.js'
import { FixedWindowLimiter } from './http/rate-limit.js'
import type { HttpServer, PerRequestSettings, RateLimiters } from './http/server.js'
import { readTlsCredentials, type TlsCredentials, tlsFiles } from './http/tls.js'
import { setLogLevel } from './logger.js'
import type { Mesh } from './mesh/mesh.js'
import { heartbeatSocketLimits } from './node-settings.js'
import type { RegistryProofProvider } from './services/registry/registry-proof-provider.js'

/** The running parts a reload reaches. */
export interface ReloadTargets {
  /** The configuration in force: the values a reload applies are written into it. */
  config: NodeConfig
  logger: Logger
  http: HttpServer
  mesh: Mesh | null
  proof: RegistryProofProvider
  /** Read by the heartbeat sockets at each frame. */
  socketLimits: HeartbeatSocketLimits
  /** Read by the list routes at each request. */
  listLimits: { maxListLimit: number }
  /** The certificate served now (null: plain HTTP). */
  tls: { current: TlsCredentials | null }
}

export interface ReloadReport {
  /** The settings applied, with their values before and after. */
  applied: Array<{ setting: string; from: unknown; to: unknown }>
  /** Set when the served certificate was read again (changed or not). */
  certificate?: { changed: boolean; subject: string; fingerprint: string; validTo: string }
  /** Settings whose new value waits for a restart. */
  restart: string[]
}

/** The socket limits read at each frame; the frame size and the entities per connection size the endpoint itself. */
const SOCKET_LIMITS = [
  'framesPerSecondPerEntity',
  'probationMs',
  'probationInFlight',
  'probationInFlightPerAddress'
] as const

/** Applies `next` to the running node and logs a line per setting applied and one for those that need a restart. */
export async function reloadNode(t: ReloadTargets, next: NodeConfig): Promise<ReloadReport> {
  const changed = SETTINGS.filter(s => !sameValue(valueAt(t.config, s.key), valueAt(next, s.key)))
  const restart = changed.filter(s => !s.reloadable).map(s => s.key)
  const apply = new Set(changed.filter(s => s.reloadable).map(s => s.key))

  // Checks: each may throw, and nothing has changed yet.
  const files = tlsFiles(next.tls.cert_file, next.tls.key_file)
  let credentials: TlsCredentials | null = null
  if (t.tls.current && files) credentials = readTlsCredentials(files)
  else if (t.tls.current || files) {
    // HTTPS on or off changes the listener and every URL the node gave out.
    for (const key of ['tls.cert_file', 'tls.key_file']) if (apply.delete(key)) restart.push(key)
  }
  // Read again even when its path did not change: a renewal replaces the file in place.
  const proofCertificate = credentials !== null || apply.has('tls.cert_file') || next.tls.cert_file !== ''
  const requestSettings = perRequestSettings(next, apply)
  const bootstrap = t.mesh && apply.has('p2p.bootstrap') ? await checkedBootstrap(next.p2p.bootstrap) : null

  // Applied from here on. Only the first step can still fail: the listener of a new certificate,
  // or, on a node without TLS, reading the certificate the proof names.
  const report: ReloadReport = { applied: [], restart }
  if (proofCertificate && !credentials) t.proof.useCertificate(next.tls.cert_file)
  if (credentials) {
    await t.http.useTls(credentials)
    report.certificate = {
      changed: credentials.fingerprint !== t.tls.current?.fingerprint,
      subject: credentials.subject,
      fingerprint: credentials.fingerprint,
      validTo: credentials.validTo.toISOString()
    }
    t.tls.current = credentials
  }
  // The files were read and checked just now.
  if (credentials) t.proof.useCertificate(next.tls.cert_file)
  // Logged under whichever of the two levels says more, so a reload that quietens the log still reports itself.
  const newLevel = next.log.level
  const louder = t.logger.levels.values[newLevel]! < t.logger.levels.values[t.config.log.level]!
  if (apply.has('log.level') && louder) setLogLevel(t.logger, newLevel)
  if ([...apply].some(key => key.startsWith('rate_limit.')))
    requestSettings.limiters = limitersFor(t.http.limiters, next)
  t.http.reconfigure(requestSettings)
  if (bootstrap) t.mesh?.useBootstrap(bootstrap)
  if (apply.has('limits.max_list_limit')) t.listLimits.maxListLimit = next.limits.max_list_limit
  const socketLimits = heartbeatSocketLimits(next)
  for (const key of SOCKET_LIMITS) t.socketLimits[key] = socketLimits[key]

  for (const key of apply) {
    const from = valueAt(t.config, key)
    const to = valueAt(next, key)
    report.applied.push({ setting: key, from, to })
    setValue(t.config, key, structuredClone(to))
    t.logger.info({ setting: key, from, to }, `setting applied: ${key}`)
  }
  if (report.certificate)
    t.logger.info(
      { ...report.certificate },
      report.certificate.changed ? 'tls certificate reloaded: a new certificate' : 'tls certificate reloaded: unchanged'
    )
  if (restart.length > 0)
    t.logger.warn({ settings: restart }, `settings changed that take a restart: ${restart.join(', ')}`)
  if (apply.has('log.level') && !louder) setLogLevel(t.logger, newLevel)
  return report
}

/** The per-request settings a reload replaces (built here, so a bad proxy address is refused before anything changes). */
function perRequestSettings(next: NodeConfig, apply: ReadonlySet<string>): Partial<PerRequestSettings> {
  const out: Partial<PerRequestSettings> = {}
  if (apply.has('http.cors_origins')) out.cors = new Cors(next.http.cors_origins)
  if (apply.has('http.trusted_proxies')) {
    try {
      out.clientIp = new ClientIpResolver(next.http.trusted_proxies)
    } catch (err) {
      throw new Error(`http.trusted_proxies: ${(err as Error).message}`)
    }
  }
  if (apply.has('http.body_limit_bytes')) out.bodyLimitBytes = next.http.body_limit_bytes
  return out
}

/** The limiters the new settings ask for; limiters kept keep their counts for the current minute. */
function limitersFor(current: RateLimiters | null, next: NodeConfig): RateLimiters | null {
  const rl = next.rate_limit
  if (!rl.enabled) return null
  const limits: Record<keyof RateLimiters, number> = {
    reads: rl.reads_per_minute,
    dashboardReads: rl.dashboard_reads_per_minute,
    writes: rl.writes_per_minute,
    writesPerIp: rl.writes_per_ip_per_minute
  }
  if (!current) {
    const fresh = {} as RateLimiters
    for (const [name, limit] of Object.entries(limits))
      fresh[name as keyof RateLimiters] = new FixedWindowLimiter(limit)
    return fresh
  }
  for (const [name, limit] of Object.entries(limits)) current[name as keyof RateLimiters].limit = limit
  return current
}

/** The addresses, once each is a multiaddr (the module is loaded only for a mesh node's reload). */
async function checkedBootstrap(addresses: readonly string[]): Promise<readonly string[]> {
  const { multiaddr } = await import('@multiformats/multiaddr')
  for (const address of addresses) {
    try {
      multiaddr(address)
    } catch (err) {
      throw new Error(`p2p.bootstrap: ${address} is not a multiaddr (${(err as Error).message})`)
    }
  }
  return addresses
}

function valueAt(config: NodeConfig, key: Setting['key']): unknown {
  return key.split('.').reduce<unknown>((at, part) => (at as Record<string, unknown>)[part], config)
}

function setValue(config: NodeConfig, key: Setting['key'], value: unknown): void {
  const parts = key.split('.')
  const section = parts
    .slice(0, -1)
    .reduce<Record<string, unknown>>(
      (at, part) => at[part] as Record<string, unknown>,
      config as unknown as Record<string, unknown>
    )
  section[parts[parts.length - 1] as string] = value
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}
