/** Result of counting one request against a limit; `resetSeconds` is the time until the window ends. */
export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  resetSeconds: number
}

/**
 * Fixed one-minute windows per key (client IP or public key). Simple to reason about and to
 * advertise in X-RateLimit-* headers; idle keys are swept so memory stays bounded by active clients.
 */
export class FixedWindowLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>()

  constructor(
    /** Requests per window; a reload may change it, and the counts so far stay. */
    public limit: number,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now
  ) {}

  take(key: string): RateDecision {
    const now = this.now()
    let w = this.windows.get(key)
    if (!w || now - w.start >= this.windowMs) {
      w = { start: now, count: 0 }
      this.windows.set(key, w)
    }
    const resetSeconds = Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000))
    if (w.count >= this.limit) return { allowed: false, limit: this.limit, remaining: 0, resetSeconds }
    w.count++
    return { allowed: true, limit: this.limit, remaining: this.limit - w.count, resetSeconds }
  }

  sweep(): void {
    const now = this.now()
    for (const [key, w] of this.windows) if (now - w.start >= this.windowMs) this.windows.delete(key)
  }

  get size(): number {
    return this.windows.size
  }
}

export function rateLimitHeaders(d: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {
    'X-RateLimit-Limit': String(d.limit),
    'X-RateLimit-Remaining': String(d.remaining),
    'X-RateLimit-Reset': String(d.resetSeconds)
  }
  if (!d.allowed) headers['Retry-After'] = String(d.resetSeconds)
  return headers
}
