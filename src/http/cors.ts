const ALLOWED_HEADERS = 'Content-Type, Authorization, X-Signature'
const EXPOSED_HEADERS = 'X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After'
const ALLOWED_METHODS = 'GET, POST, PUT, DELETE, OPTIONS'

/** CORS for configured origins: "*" allows any; otherwise the request's Origin is echoed when listed. */
export class Cors {
  private readonly anyOrigin: boolean
  private readonly origins: Set<string>

  constructor(origins: readonly string[]) {
    this.anyOrigin = origins.includes('*')
    this.origins = new Set(origins)
  }

  headers(origin: string | undefined): Record<string, string> {
    if (!origin) return {}
    if (this.anyOrigin) return { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': EXPOSED_HEADERS }
    if (!this.origins.has(origin)) return {}
    return { 'Access-Control-Allow-Origin': origin, Vary: 'Origin', 'Access-Control-Expose-Headers': EXPOSED_HEADERS }
  }

  /** What a preflight adds to `headers(origin)` (which every response carries). */
  preflight(origin: string | undefined): Record<string, string> {
    if (!this.headers(origin)['Access-Control-Allow-Origin']) return {}
    return {
      'Access-Control-Allow-Methods': ALLOWED_METHODS,
      'Access-Control-Allow-Headers': ALLOWED_HEADERS,
      'Access-Control-Max-Age': '86400'
    }
  }
}
