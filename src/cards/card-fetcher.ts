/**
 * Fetches an entity's live card from its entity_url, checks its signature against the entity's
 * registered key and caches it. Cards are fetched only over HTTPS, from the A2A path first
 * (`/.well-known/agent-card.json`) and then the older ones, and never from private, loopback,
 * link-local or metadata addresses (unless the operator allows them): the node resolves the host
 * itself, vets every address and connects to the vetted address only, so a DNS answer that changes
 * between the check and the connection (rebinding) cannot redirect the request. Redirects are
 * re-vetted the same way. The body is kept byte for byte: the node passes cards through unchanged.
 */
import { lookup as dnsLookup } from 'node:dns/promises'
import type { LookupAddress } from 'node:dns'
import { readFileSync } from 'node:fs'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls'
import { RegistryError } from '../errors.js'
import { verifyCard, type CardVerification } from '../identity/card-signature.js'
import { collectBoundedBody } from '../util/bounded-body.js'
import { isForbiddenAddress } from './address-guard.js'

export { verifyCard, type CardVerification }

export interface CardFetchSettings {
  /** Time limit of one whole fetch: DNS, connections, redirects, fallback paths and body. */
  timeoutMs: number
  /** Largest card body accepted. */
  maxBytes: number
  /** How long a fetched card is served from the cache (0: not cached). */
  cacheTtlMs: number
  /** Fetch from private, loopback and link-local addresses too (testnets only). */
  allowPrivateAddresses: boolean
  /** Fetch over plain http too (entities.allow_http_url: local testnets); otherwise HTTPS only. */
  allowHttp?: boolean
  /** Extra CA certificate (PEM file) trusted besides the default roots; '' for none. */
  caFile: string
}

export interface CardEntity {
  entity_id: string
  entity_url: string | null
  /** 'ed25519:<base64>' (the prefix is optional). */
  public_key: string
}

export interface FetchedCard {
  /** The card exactly as parsed from the body. */
  card: unknown
  /** The exact bytes received, served unchanged. */
  body: Buffer
  /** The URL the card was read from (after redirects). */
  source_url: string
  fetched_at: string
  verification: CardVerification
  /** Which signature verified, or why none did. */
  verification_note?: string
}

export type HostLookup = (hostname: string) => Promise<{ address: string; family: number }[]>

export interface CardFetcherOptions {
  /** DNS resolution (tests inject one); default: dns.promises.lookup with all: true. */
  lookup?: HostLookup
  /** Clock for the cache and fetched_at (ms since the epoch). */
  now?: () => number
  /** Upper bound of the bytes of cached card bodies; the oldest entries go first. Default 64 MiB. */
  maxCacheBytes?: number
  /** The address policy applied unless allowPrivateAddresses (tests); default isForbiddenAddress. */
  isForbidden?: (address: string) => boolean
}

/** The paths tried in order; the next one only when the previous answered 404. */
export const CARD_PATHS = [
  '/.well-known/agent-card.json',
  '/.well-known/zynd-agent.json',
  '/.well-known/agent.json'
] as const

export const MAX_REDIRECTS = 3
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
const USER_AGENT = 'registry-node (card fetcher)'
const DEFAULT_MAX_CACHE_BYTES = 64 * 1024 * 1024

interface CacheEntry {
  fetched: FetchedCard
  /** What the card was fetched and verified for: a changed record is a cache miss. */
  entityUrl: string
  publicKey: string
  expiresAt: number
  bytes: number
}

interface InFlight {
  promise: Promise<FetchedCard>
  entityUrl: string
  publicKey: string
}

interface Response {
  status: number
  location: string | undefined
  body: Buffer
}

const unavailable = (message: string): RegistryError => new RegistryError('card_unavailable', message)

/** A node error described by its code only: messages may carry internal addresses. */
function errorCode(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  return typeof code === 'string' && /^[A-Z0-9_]+$/.test(code) ? code : 'unknown error'
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Host name without the brackets of an IPv6 literal. */
const bareHost = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1')

export class CardFetcher {
  private readonly settings: CardFetchSettings
  private readonly lookupHost: HostLookup
  private readonly now: () => number
  private readonly maxCacheBytes: number
  private readonly isForbidden: (address: string) => boolean
  /** Built once: a `ca` list given per request is parsed again on every connection (the whole root store). */
  private readonly secureContext: SecureContext | undefined
  private readonly cache = new Map<string, CacheEntry>()
  private cacheBytes = 0
  private readonly inFlight = new Map<string, InFlight>()

  /** Throws when the CA file cannot be read (a configuration error, reported at start-up). */
  constructor(settings: CardFetchSettings, options: CardFetcherOptions = {}) {
    this.settings = settings
    this.lookupHost = options.lookup ?? (hostname => dnsLookup(hostname, { all: true }))
    this.now = options.now ?? Date.now
    this.maxCacheBytes = options.maxCacheBytes ?? DEFAULT_MAX_CACHE_BYTES
    this.isForbidden = options.isForbidden ?? isForbiddenAddress
    if (settings.caFile) {
      let extra: string
      try {
        extra = readFileSync(settings.caFile, 'utf8')
      } catch (err) {
        throw new Error(
          `cannot read cards.ca_file ${settings.caFile}: ${err instanceof Error ? err.message : String(err)}`
        )
      }
      this.secureContext = createSecureContext({ ca: [...rootCertificates, extra] })
    }
  }

  /**
   * The entity's card: from the cache while fresh (and fetched for the same entity_url and key),
   * else fetched. Concurrent calls for one entity share one fetch; failures are not cached.
   */
  get(entity: CardEntity): Promise<FetchedCard> {
    const id = entity.entity_id
    const url = entity.entity_url ?? ''
    const hit = this.fresh(id)
    if (hit && hit.entityUrl === url && hit.publicKey === entity.public_key) return Promise.resolve(hit.fetched)
    const running = this.inFlight.get(id)
    if (running && running.entityUrl === url && running.publicKey === entity.public_key) return running.promise
    const flight: InFlight = {
      entityUrl: url,
      publicKey: entity.public_key,
      promise: undefined as unknown as Promise<FetchedCard>
    }
    flight.promise = this.fetch(entity)
      .then(fetched => {
        // Stored only when nothing replaced or forgot this fetch meanwhile (the record changed).
        if (this.inFlight.get(id) === flight) this.store(id, flight, fetched)
        return fetched
      })
      .finally(() => {
        if (this.inFlight.get(id) === flight) this.inFlight.delete(id)
      })
    this.inFlight.set(id, flight)
    return flight.promise
  }

  /** The cached card while fresh; never fetches. */
  cached(entityId: string): FetchedCard | undefined {
    return this.fresh(entityId)?.fetched
  }

  /** Cards held in the cache (some may have expired and wait to be dropped). */
  get size(): number {
    return this.cache.size
  }

  /** Every fresh cached card, by entity ID (expired ones are dropped on the way). */
  *freshCards(): Generator<[string, FetchedCard]> {
    for (const id of [...this.cache.keys()]) {
      const entry = this.fresh(id)
      if (entry) yield [id, entry.fetched]
    }
  }

  /** Drops the cached card and disowns a running fetch (the entity changed or left). */
  forget(entityId: string): void {
    this.drop(entityId)
    this.inFlight.delete(entityId)
  }

  /** Seconds the card stays cached from now (for Cache-Control max-age); 0 when it is not cached. */
  remainingSeconds(fetched: FetchedCard): number {
    const expires = Date.parse(fetched.fetched_at) + this.settings.cacheTtlMs
    return Math.max(0, Math.ceil((expires - this.now()) / 1000))
  }

  private fresh(id: string): CacheEntry | undefined {
    const entry = this.cache.get(id)
    if (entry === undefined) return undefined
    if (this.now() < entry.expiresAt) return entry
    this.drop(id)
    return undefined
  }

  private drop(id: string): void {
    const entry = this.cache.get(id)
    if (entry === undefined) return
    this.cacheBytes -= entry.bytes
    this.cache.delete(id)
  }

  private store(id: string, flight: InFlight, fetched: FetchedCard): void {
    if (this.settings.cacheTtlMs <= 0) return
    const bytes = fetched.body.length
    if (bytes > this.maxCacheBytes) return
    this.drop(id)
    while (this.cacheBytes + bytes > this.maxCacheBytes && this.cache.size > 0) {
      this.drop(this.cache.keys().next().value as string)
    }
    const expiresAt = Date.parse(fetched.fetched_at) + this.settings.cacheTtlMs
    this.cache.set(id, { fetched, entityUrl: flight.entityUrl, publicKey: flight.publicKey, expiresAt, bytes })
    this.cacheBytes += bytes
  }

  /** One fetch of the card within timeoutMs: the paths in order, redirects followed, then verified. */
  private async fetch(entity: CardEntity): Promise<FetchedCard> {
    const base = this.baseUrl(entity)
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), this.settings.timeoutMs)
    try {
      const tried: string[] = []
      for (const path of CARD_PATHS) {
        const first = new URL(base + path)
        const { response, url } = await this.follow(first, controller.signal)
        if (response.status === 404) {
          tried.push(first.pathname)
          continue
        }
        if (response.status < 200 || response.status > 299) {
          throw unavailable(`The card request ${first.href} answered HTTP ${response.status}.`)
        }
        const card = this.parse(first, response.body)
        const { verification, note } = verifyCard(card, entity.public_key, response.body.toString('utf8'))
        const fetched: FetchedCard = {
          card,
          body: response.body,
          source_url: url.href,
          fetched_at: new Date(this.now()).toISOString(),
          verification
        }
        if (note !== undefined) fetched.verification_note = note
        return fetched
      }
      throw unavailable(`No card at ${base}: ${tried.join(', ')} all answered HTTP 404.`)
    } finally {
      clearTimeout(timer)
    }
  }

  private acceptedProtocol(url: URL): boolean {
    return url.protocol === 'https:' || (url.protocol === 'http:' && this.settings.allowHttp === true)
  }

  /** entity_url as an https URL without query, fragment, credentials or trailing slash. */
  private baseUrl(entity: CardEntity): string {
    const text = entity.entity_url
    if (text === null || text === '') throw unavailable(`${entity.entity_id} has no entity_url to fetch a card from.`)
    let url: URL
    try {
      url = new URL(text)
    } catch {
      throw unavailable(`The entity_url of ${entity.entity_id} is not a URL.`)
    }
    if (!this.acceptedProtocol(url))
      throw unavailable(
        `Cards are fetched over HTTPS only; the entity_url of ${entity.entity_id} is ${url.protocol.slice(0, -1)}.`
      )
    url.search = ''
    url.hash = ''
    url.username = ''
    url.password = ''
    return url.href.replace(/\/+$/, '')
  }

  /** GETs `start`, following up to MAX_REDIRECTS https redirects, each target vetted again. */
  private async follow(start: URL, signal: AbortSignal): Promise<{ response: Response; url: URL }> {
    let url = start
    for (let redirects = 0; ; redirects++) {
      const label =
        redirects === 0
          ? start.href
          : `${start.href} (after ${redirects === 1 ? 'a redirect' : `${redirects} redirects`})`
      const response = await this.getOnce(url, label, redirects > 0, signal)
      if (!REDIRECT_STATUSES.has(response.status)) return { response, url }
      if (response.location === undefined)
        throw unavailable(`The card request ${start.href} answered HTTP ${response.status} without a Location.`)
      if (redirects === MAX_REDIRECTS)
        throw unavailable(`The card request ${start.href} redirected more than ${MAX_REDIRECTS} times.`)
      let next: URL
      try {
        next = new URL(response.location, url)
      } catch {
        throw unavailable(`The card request ${start.href} redirected to an invalid URL.`)
      }
      if (!this.acceptedProtocol(next))
        throw unavailable(`The card request ${start.href} redirected to a non-HTTPS URL, which is refused.`)
      next.hash = ''
      next.username = ''
      next.password = ''
      url = next
    }
  }

  /**
   * The addresses `url`'s host may be reached at, all vetted. Messages name the host only when the
   * registrant gave it (not a redirect target) and never name the addresses it resolved to.
   */
  private async addresses(url: URL, redirected: boolean, signal: AbortSignal): Promise<LookupAddress[]> {
    const host = bareHost(url)
    const subject = redirected ? 'The host a redirect of the card request leads to' : host
    const family = isIP(host)
    let found: LookupAddress[]
    if (family !== 0) {
      found = [{ address: host, family }]
    } else {
      try {
        found = await abortable(this.lookupHost(host), signal)
      } catch (err) {
        if (signal.aborted) throw this.timedOut()
        throw unavailable(`${subject} could not be resolved (${errorCode(err)}).`)
      }
      found = found.filter(a => typeof a.address === 'string' && (a.family === 4 || a.family === 6))
      if (found.length === 0) throw unavailable(`${subject} has no addresses.`)
    }
    if (!this.settings.allowPrivateAddresses && found.some(a => this.isForbidden(a.address))) {
      const verb = family !== 0 ? 'is' : 'resolves to'
      throw new RegistryError(
        'card_address_refused',
        `${subject} ${verb} a private, loopback, link-local or metadata address; this node does not fetch cards from such addresses.`
      )
    }
    return found
  }

  private timedOut(): RegistryError {
    return unavailable(`The card could not be fetched within ${this.settings.timeoutMs} ms.`)
  }

  /** One GET connected to the vetted addresses only (SNI and Host stay the URL's host name). */
  private async getOnce(url: URL, label: string, redirected: boolean, signal: AbortSignal): Promise<Response> {
    if (signal.aborted) throw this.timedOut()
    const vetted = await this.addresses(url, redirected, signal)
    if (signal.aborted) throw this.timedOut()
    const host = bareHost(url)
    const first = vetted[0] as LookupAddress
    const pinned: LookupFunction = (_hostname, options, callback) => {
      if (options.all) callback(null, vetted)
      else callback(null, first.address, first.family)
    }
    const maxBytes = this.settings.maxBytes
    return new Promise<Response>((resolve, reject) => {
      let settled = false
      const finish = (err: RegistryError | null, response?: Response): void => {
        if (settled) return
        settled = true
        signal.removeEventListener('abort', onAbort)
        // The connection is never reused (agent: false): close it whatever happened.
        req.destroy()
        if (err) reject(err)
        else resolve(response as Response)
      }
      const onAbort = (): void => finish(this.timedOut())
      const tls = url.protocol === 'https:'
      const req = (tls ? httpsRequest : httpRequest)(
        {
          protocol: url.protocol,
          host,
          port: url.port === '' ? (tls ? 443 : 80) : Number(url.port),
          path: url.pathname + url.search,
          method: 'GET',
          headers: { Accept: 'application/json', 'User-Agent': USER_AGENT },
          lookup: pinned,
          agent: false, // no pooled sockets: each connection goes to an address vetted for it
          ...(tls && isIP(host) === 0 ? { servername: host } : {}),
          ...(tls && this.secureContext ? { secureContext: this.secureContext } : {})
        },
        (res: IncomingMessage) => {
          const status = res.statusCode ?? 0
          const location = typeof res.headers.location === 'string' ? res.headers.location : undefined
          res.on('error', () => {
            /* reported through finish(); the connection is destroyed on every outcome */
          })
          if (status < 200 || status > 299) {
            // Redirects and errors: the status is all that is read.
            finish(null, { status, location, body: Buffer.alloc(0) })
            return
          }
          const tooLarge = (): RegistryError =>
            unavailable(`The card at ${label} is larger than ${maxBytes} bytes, this node's limit.`)
          collectBoundedBody(res, maxBytes, {
            tooLarge: () => finish(tooLarge()),
            done: body => finish(null, { status, location, body })
          })
          res.once('error', err => finish(unavailable(`Reading the card from ${label} failed (${errorCode(err)}).`)))
          res.on('close', () => {
            if (!res.complete) finish(unavailable(`The card response from ${label} was cut short.`))
          })
        }
      )
      req.on('error', err => finish(unavailable(`The card request ${label} failed (${errorCode(err)}).`)))
      signal.addEventListener('abort', onAbort, { once: true })
      req.end()
    })
  }

  private parse(url: URL, body: Buffer): Record<string, unknown> {
    let text: string
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(body)
    } catch {
      throw unavailable(`The card at ${url.href} is not UTF-8 text.`)
    }
    let card: unknown
    try {
      card = JSON.parse(text)
    } catch {
      throw unavailable(`The card at ${url.href} is not valid JSON.`)
    }
    if (!isObject(card)) throw unavailable(`The card at ${url.href} is not a JSON object.`)
    return card
  }
}

/** Rejects when `signal` aborts first. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'))
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error('aborted'))
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      value => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(err)
      }
    )
  })
}
