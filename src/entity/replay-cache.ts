/**
 * Remembers (sender, id) pairs until they expire, so a signed message or authorization block can
 * be used once within its validity window. Bounded: per sender and in all, the oldest entries go
 * first, which only lets a replay through after that many newer messages of the same sender.
 */
const MAX_PER_SENDER = 4096
const MAX_SENDERS = 100_000

export class ReplayCache {
  private readonly senders = new Map<string, Map<string, number>>()

  constructor(private readonly now: () => number = Date.now) {}

  /** True when (sender, id) was recorded and has not expired; records it otherwise. */
  seen(sender: string, id: string, expiresAt: number, now = this.now()): boolean {
    let ids = this.senders.get(sender)
    if (ids === undefined) {
      if (this.senders.size >= MAX_SENDERS) this.senders.delete(this.senders.keys().next().value as string)
      ids = new Map()
      this.senders.set(sender, ids)
    }
    const expiry = ids.get(id)
    if (expiry !== undefined && expiry >= now) return true
    if (ids.size >= MAX_PER_SENDER) {
      for (const [key, at] of ids) if (at < now) ids.delete(key)
      while (ids.size >= MAX_PER_SENDER) ids.delete(ids.keys().next().value as string)
    }
    ids.set(id, expiresAt)
    return false
  }
}
