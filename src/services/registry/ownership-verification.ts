/**
 * Ownership verification of a developer handle: the developer proves control of a domain (a DNS
 * TXT record at `_zns-verify.<domain>`) or of a GitHub account (a public gist) by publishing the
 * developer's public key there. DNS goes through a node:dns Resolver (configurable servers);
 * GitHub through node:https so that an extra CA (GitHub Enterprise behind a private CA) is trusted.
 */
import { readFileSync } from 'node:fs'
import { Resolver } from 'node:dns/promises'
import type { IncomingMessage } from 'node:http'
import { Agent, request } from 'node:https'
import { rootCertificates } from 'node:tls'
import { domainToASCII } from 'node:url'
import { invalidField, RegistryError } from '../../errors.js'
import { KEY_PREFIX, parsePublicKey } from '../../identity/encoding.js'
import { collectBoundedBody } from '../../util/bounded-body.js'

export interface TxtResolver {
  resolveTxt(hostname: string): Promise<string[][]>
}

export interface VerificationSettings {
  /** DNS servers (ip or ip:port); empty: the system resolvers. */
  dnsServers: readonly string[]
  /** GitHub API base URL, e.g. https://api.github.com or https://ghe.example/api/v3. */
  githubApiUrl: string
  /** Extra CA certificate (PEM file) trusted for the GitHub API besides the default roots; '' for none. */
  githubCaFile: string
  /** Time limit of each DNS or GitHub request. */
  timeoutMs: number
}

export type VerificationMethod = 'dns' | 'github'

export interface VerifiedOwnership {
  method: VerificationMethod
  proof: string
}

/** The DNS name holding the TXT proof is this label followed by the domain. */
export const DNS_PROOF_LABEL = '_zns-verify'

const MAX_BODY_BYTES = 1024 * 1024
const MAX_GISTS = 10
const GISTS_PER_PAGE = 30
const GIST_RAW_HOST = 'gist.githubusercontent.com'
const USER_AGENT = 'registry-node'
const GITHUB_ACCEPT = 'application/vnd.github+json'

const GITHUB_USER = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,38}$/i
const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/

/** DNS error codes meaning "the name or its TXT records do not exist": a failed proof, not an outage. */
const DNS_ABSENT = new Set(['ENOTFOUND', 'ENODATA'])

interface HttpResult {
  status: number
  body: Buffer
}

interface GistFile {
  content?: unknown
  truncated?: unknown
  raw_url?: unknown
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Lowercased ASCII host name with at least two labels, or null. */
export function normalizeDomain(text: string): string | null {
  let domain = text.trim().toLowerCase()
  if (domain.endsWith('.')) domain = domain.slice(0, -1)
  if (/[^\x00-\x7f]/.test(domain)) domain = domainToASCII(domain)
  // The TXT name adds `_zns-verify.` in front; the whole name must stay within 253 characters.
  if (domain === '' || domain.length > 253 - DNS_PROOF_LABEL.length - 1) return null
  const labels = domain.split('.')
  if (labels.length < 2 || !labels.every(label => DNS_LABEL.test(label))) return null
  if (/^[0-9]+$/.test(labels[labels.length - 1] as string)) return null // an IP address, not a domain
  return domain
}

/** Lowercased GitHub user name (a leading `@` is tolerated), or null when it breaks GitHub's rules. */
export function normalizeGithubUser(text: string): string | null {
  const user = text.trim().replace(/^@/, '').toLowerCase()
  return GITHUB_USER.test(user) ? user : null
}

/**
 * Whether one TXT record (its chunks already joined) publishes the key: the bare base64, the
 * `ed25519:`-prefixed form, or `v=zns1; k=ed25519; p=<base64>` (keys in any order and any case,
 * whitespace around `;` and `=` tolerated, unknown keys ignored, a repeated key invalidates the record).
 */
export function txtRecordHoldsKey(record: string, keyBase64: string): boolean {
  const value = record.trim()
  if (value === keyBase64 || value === KEY_PREFIX + keyBase64) return true
  const fields = new Map<string, string>()
  for (const part of value.split(';')) {
    if (part.trim() === '') continue
    const eq = part.indexOf('=')
    if (eq === -1) return false
    const name = part.slice(0, eq).trim().toLowerCase()
    if (fields.has(name)) return false
    fields.set(name, part.slice(eq + 1).trim())
  }
  const p = fields.get('p')
  return (
    fields.get('v')?.toLowerCase() === 'zns1' &&
    fields.get('k')?.toLowerCase() === 'ed25519' &&
    (p === keyBase64 || p === KEY_PREFIX + keyBase64)
  )
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code
    return code && !err.message.includes(code) ? `${err.message} (${code})` : err.message
  }
  return String(err)
}

export class OwnershipVerifier {
  private readonly resolver: TxtResolver
  private readonly timeoutMs: number
  private readonly apiBase: URL
  /** The API base URL without its trailing slash; API paths are appended to it. */
  private readonly apiPrefix: string
  private readonly agent: Agent | undefined

  /**
   * Without `resolver`, DNS goes through a node:dns Resolver using `dnsServers` (when given) with
   * one try of `timeoutMs` per server. Throws when a DNS server address is invalid, `githubApiUrl`
   * is not an https URL or the CA file cannot be read (configuration errors, reported at start-up).
   */
  constructor(settings: VerificationSettings, resolver?: TxtResolver) {
    this.timeoutMs = settings.timeoutMs
    if (resolver) {
      this.resolver = resolver
    } else {
      const dns = new Resolver({ timeout: settings.timeoutMs, tries: 1 })
      try {
        if (settings.dnsServers.length > 0) dns.setServers([...settings.dnsServers])
      } catch (err) {
        throw new Error(`verification.dns_servers is invalid (${settings.dnsServers.join(', ')}): ${errorText(err)}`)
      }
      this.resolver = dns
    }
    let base: URL
    try {
      base = new URL(settings.githubApiUrl)
    } catch {
      throw new Error(`verification.github_api_url is not a URL: ${settings.githubApiUrl}`)
    }
    if (base.protocol !== 'https:')
      throw new Error(`verification.github_api_url must be an https URL: ${settings.githubApiUrl}`)
    base.search = ''
    base.hash = ''
    this.apiBase = base
    this.apiPrefix = base.href.replace(/\/+$/, '')
    if (settings.githubCaFile) {
      let extraCa: string
      try {
        extraCa = readFileSync(settings.githubCaFile, 'utf8')
      } catch (err) {
        throw new Error(`cannot read verification.github_ca_file ${settings.githubCaFile}: ${errorText(err)}`)
      }
      this.agent = new Agent({ ca: [...rootCertificates, extraCa] })
    }
  }

  /**
   * Checks that `proof` (a domain for dns, a GitHub user name for github) publishes `publicKey`
   * (wire form 'ed25519:<base64>' or bare base64). Returns the normalised method and proof.
   */
  async verify(method: string, proof: string, publicKey: string): Promise<VerifiedOwnership> {
    const normalizedMethod = typeof method === 'string' ? method.trim().toLowerCase() : ''
    if (normalizedMethod !== 'dns' && normalizedMethod !== 'github')
      throw invalidField('method', 'must be "dns" or "github"')
    const raw = typeof publicKey === 'string' ? parsePublicKey(publicKey) : null
    if (!raw) throw invalidField('public_key', 'must be an Ed25519 public key: ed25519:<base64>')
    const keyBase64 = raw.toString('base64')
    const text = typeof proof === 'string' ? proof : ''
    if (normalizedMethod === 'dns') {
      const domain = normalizeDomain(text)
      if (!domain) throw invalidField('proof', 'must be a domain name such as example.com')
      await this.verifyDns(domain, keyBase64)
      return { method: 'dns', proof: domain }
    }
    const user = normalizeGithubUser(text)
    if (!user)
      throw invalidField(
        'proof',
        'must be a GitHub user name: 1 to 39 letters, digits and single hyphens, not starting or ending with a hyphen'
      )
    await this.verifyGithub(user, keyBase64)
    return { method: 'github', proof: user }
  }

  private async verifyDns(domain: string, keyBase64: string): Promise<void> {
    const name = `${DNS_PROOF_LABEL}.${domain}`
    let records: string[][]
    let timer: NodeJS.Timeout | undefined
    try {
      records = await Promise.race([
        this.resolver.resolveTxt(name),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(Object.assign(new Error(`timed out after ${this.timeoutMs} ms`), { code: 'ETIMEOUT' })),
            this.timeoutMs
          )
        })
      ])
    } catch (err) {
      const code = (err as NodeJS.ErrnoException | undefined)?.code
      if (code !== undefined && DNS_ABSENT.has(code)) {
        const why = code === 'ENOTFOUND' ? 'the name does not exist' : 'the name has no TXT records'
        throw new RegistryError('verification_failed', `no TXT record at ${name}: ${why}`)
      }
      throw new RegistryError('verification_unavailable', `DNS lookup of TXT ${name} failed: ${errorText(err)}`)
    } finally {
      clearTimeout(timer)
    }
    if (records.some(chunks => txtRecordHoldsKey(chunks.join(''), keyBase64))) return
    const count = records.length === 1 ? '1 TXT record' : `${records.length} TXT records`
    throw new RegistryError('verification_failed', `no TXT record at ${name} holds this developer key (found ${count})`)
  }

  private async verifyGithub(user: string, keyBase64: string): Promise<void> {
    const listUrl = this.apiUrl(`/users/${user}/gists?per_page=${GISTS_PER_PAGE}`)
    const list = await this.get(listUrl)
    if (list.status === 404) throw new RegistryError('verification_failed', `GitHub user ${user} not found`)
    const gists = this.json(listUrl, this.expectOk(listUrl, list))
    if (!Array.isArray(gists))
      throw new RegistryError('verification_unavailable', `GitHub API ${listUrl} did not answer with a list of gists`)
    const checked = gists.slice(0, MAX_GISTS).filter(isObject)
    for (const gist of checked) {
      if (await this.gistHoldsKey(gist, keyBase64)) return
    }
    if (checked.length === 0)
      throw new RegistryError(
        'verification_failed',
        `GitHub user ${user} has no public gists, so none holds this developer key`
      )
    const scope = checked.length === 1 ? 'their only public gist' : `the ${checked.length} most recent`
    throw new RegistryError(
      'verification_failed',
      `no public gist of GitHub user ${user} holds this developer key (checked ${scope})`
    )
  }

  /** Files listed with their content are read as they are; otherwise the gist is fetched once. */
  private async gistHoldsKey(gist: Record<string, unknown>, keyBase64: string): Promise<boolean> {
    const listed = isObject(gist.files) ? Object.values(gist.files).filter(isObject) : []
    let needsDetail = false
    for (const file of listed) {
      if (typeof file.content === 'string') {
        if (await this.fileHoldsKey(file, keyBase64)) return true
      } else {
        needsDetail = true
      }
    }
    if (!needsDetail || typeof gist.id !== 'string' || gist.id === '') return false
    const url = this.apiUrl(`/gists/${encodeURIComponent(gist.id)}`)
    const detail = await this.get(url)
    if (detail.status === 404) return false // deleted since it was listed
    const body = this.json(url, this.expectOk(url, detail))
    if (!isObject(body) || !isObject(body.files)) return false
    for (const file of Object.values(body.files).filter(isObject)) {
      if (await this.fileHoldsKey(file, keyBase64)) return true
    }
    return false
  }

  private async fileHoldsKey(file: GistFile, keyBase64: string): Promise<boolean> {
    if (typeof file.content === 'string' && file.content.includes(keyBase64)) return true
    if (file.truncated !== true || typeof file.raw_url !== 'string') return false
    let rawUrl: URL
    try {
      rawUrl = new URL(file.raw_url)
    } catch {
      return false
    }
    const allowed =
      rawUrl.origin === this.apiBase.origin || (rawUrl.protocol === 'https:' && rawUrl.hostname === GIST_RAW_HOST)
    if (!allowed) return false
    const raw = await this.get(rawUrl)
    if (raw.status === 404) return false
    return this.expectOk(rawUrl, raw).toString('utf8').includes(keyBase64)
  }

  private apiUrl(pathAndQuery: string): URL {
    return new URL(this.apiPrefix + pathAndQuery)
  }

  private expectOk(url: URL, result: HttpResult): Buffer {
    if (result.status >= 200 && result.status < 300) return result.body
    throw new RegistryError('verification_unavailable', `GitHub API ${url.href} answered HTTP ${result.status}`)
  }

  private json(url: URL, body: Buffer): unknown {
    try {
      return JSON.parse(body.toString('utf8'))
    } catch {
      throw new RegistryError('verification_unavailable', `GitHub API ${url.href} did not answer with JSON`)
    }
  }

  /** One GET within `timeoutMs` (connection, TLS, headers and body), the body capped at 1 MiB. */
  private get(url: URL): Promise<HttpResult> {
    return new Promise<HttpResult>((resolve, reject) => {
      const fail = (why: string): void => {
        clearTimeout(timer)
        reject(new RegistryError('verification_unavailable', `GitHub API request to ${url.href} failed: ${why}`))
      }
      const req = request(
        url,
        {
          method: 'GET',
          headers: { 'User-Agent': USER_AGENT, Accept: GITHUB_ACCEPT },
          ...(this.agent ? { agent: this.agent } : {})
        },
        (res: IncomingMessage) => {
          collectBoundedBody(res, MAX_BODY_BYTES, {
            tooLarge: () => {
              req.destroy()
              fail(`the response exceeds ${MAX_BODY_BYTES} bytes`)
            },
            done: body => {
              clearTimeout(timer)
              resolve({ status: res.statusCode ?? 0, body })
            }
          })
          res.on('error', err => fail(errorText(err)))
          res.on('close', () => {
            if (!res.complete) fail('the response was cut short')
          })
        }
      )
      const timer = setTimeout(() => {
        req.destroy()
        fail(`timed out after ${this.timeoutMs} ms`)
      }, this.timeoutMs)
      req.on('error', err => fail(errorText(err)))
      req.end()
    })
  }
}
