/**
 * What an entity, and the `call`, `search` and `resolve` commands, ask of a registry node over its
 * `/v1` API: plain fetch with a deadline, JSON both ways, the node's `{error, message}` bodies
 * turned into RegistryRequestError.
 */
import { sign, type KeyPair } from '../identity/keys.js'

import { networkCause } from './network-cause.js'

export class RegistryRequestError extends Error {
  override name = 'RegistryRequestError'
  constructor(
    readonly status: number,
    readonly code: string,
    message: string
  ) {
    super(message)
  }
}

export type EntityView = Record<string, unknown> & {
  entity_id: string
  public_key: string
  entity_url?: string | null
  status?: string
}

const DEFAULT_TIMEOUT_MS = 10_000

export class RegistryClient {
  readonly baseUrl: string

  constructor(
    baseUrl: string,
    private readonly timeoutMs = DEFAULT_TIMEOUT_MS
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '')
  }

  /** The record, or null when the node answers 404. */
  async getEntity(id: string): Promise<EntityView | null> {
    const res = await this.request('GET', `/v1/entities/${encodeURIComponent(id)}`, undefined, {}, [404])
    return res.status === 404 ? null : (res.body as EntityView)
  }

  register(body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
    return this.request('POST', '/v1/entities', body, {}, [409])
  }

  async update(id: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return (await this.request('PUT', `/v1/entities/${encodeURIComponent(id)}`, body)).body
  }

  /** Deregisters with the deployed form: Authorization Bearer over the UTF-8 entity ID. */
  async deregister(id: string, keyPair: KeyPair): Promise<void> {
    await this.request('DELETE', `/v1/entities/${encodeURIComponent(id)}`, undefined, {
      Authorization: `Bearer ${sign(keyPair, id)}`
    })
  }

  async search(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    return (await this.request('POST', '/v1/search', request)).body
  }

  /** Resolves `[zns://]<host>/<handle>/<entity>[@version]` through GET /v1/resolve?fqan=. */
  async resolveFqan(fqan: string): Promise<Record<string, unknown>> {
    return (await this.request('GET', `/v1/resolve?fqan=${encodeURIComponent(fqan)}`)).body
  }

  async resolveEntity(id: string): Promise<Record<string, unknown>> {
    return (await this.request('GET', `/v1/resolve/agent/${encodeURIComponent(id)}`)).body
  }

  async info(): Promise<Record<string, unknown>> {
    return (await this.request('GET', '/v1/info')).body
  }

  private async request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    allowed: readonly number[] = []
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    let res: Response
    try {
      res = await fetch(this.baseUrl + path, {
        method,
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs)
      })
    } catch (err) {
      throw new RegistryRequestError(
        0,
        'registry_unreachable',
        `cannot reach the registry at ${this.baseUrl} (${method} ${path}: ${networkCause(err)}); is a node running there? Set --registry URL or REGISTRY_NODE_URL`
      )
    }
    const text = await res.text()
    let parsed: Record<string, unknown> = {}
    try {
      parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>)
    } catch {
      /* not JSON: reported below */
    }
    if (res.ok || allowed.includes(res.status)) return { status: res.status, body: parsed }
    const code = typeof parsed.error === 'string' ? parsed.error : `http_${res.status}`
    const message = typeof parsed.message === 'string' ? parsed.message : text.slice(0, 200)
    throw new RegistryRequestError(res.status, code, `${method} ${path}: ${res.status} ${code}: ${message}`)
  }
}
