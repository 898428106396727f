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

  preflight(origin: string | undefined): Record<string, string> {
    const base = this.headers(origin)
    if (!base['Access-Control-Allow-Origin']) return base
    return { ...base, 'Access-Control-Allow-Methods': ALLOWED_METHODS, 'Access-Control-Allow-Headers': ALLOWED_HEADERS, 'Access-Control-Max-Age': '86400' }
  }
}
