/**
 * The payments an entity has taken, kept durably (LMDB in the entity's data directory) until they
 * expire, so that neither a quote nonce nor an authorization `(chain, from, nonce)` is honoured
 * twice, also across restarts. `reserve` is the one gate: it claims every key of a payment at
 * once, synchronously against what is held and in flight, then makes the claim durable before
 * the payment goes further; of two requests carrying one payment, exactly one gets through.
 */
import '../../store/unsliced-strings.js'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { open, type RootDatabase } from 'lmdb'

export interface LedgerEntry {
  /** reserved: verified, the handler or the settlement is under way; settled: paid; failed: settlement failed (kept: the transfer may still land). */
  state: 'reserved' | 'settled' | 'failed'
  /** Epoch ms after which the entry is dropped (the quote and the authorization are both void by then). */
  expires_at: number
  transaction?: string
}

/** How often expired entries are swept. */
const SWEEP_INTERVAL_MS = 60_000

export class PaymentLedger {
  /** Key → expiry of every entry held or being written: the claim is decided here, synchronously. */
  private readonly claimed = new Map<string, number>()
  private timer: NodeJS.Timeout | null = null

  private constructor(private readonly db: RootDatabase<LedgerEntry, string>) {}

  static async open(dataDir: string): Promise<PaymentLedger> {
    await mkdir(dataDir, { recursive: true })
    const ledger = new PaymentLedger(
      open<LedgerEntry, string>({ path: join(dataDir, 'payments.lmdb'), compression: false })
    )
    for (const { key, value } of ledger.db.getRange()) ledger.claimed.set(key, value.expires_at)
    await ledger.sweep()
    ledger.timer = setInterval(() => {
      void ledger.sweep()
    }, SWEEP_INTERVAL_MS).unref()
    return ledger
  }

  /** Claims all `keys`; false (claiming none) when any is held or being claimed. */
  async reserve(keys: readonly string[], expiresAt: number, now = Date.now()): Promise<boolean> {
    if (keys.some(key => (this.claimed.get(key) ?? 0) > now)) return false
    for (const key of keys) this.claimed.set(key, expiresAt)
    try {
      await this.db.transaction(() => {
        for (const key of keys) void this.db.put(key, { state: 'reserved', expires_at: expiresAt })
      })
    } catch (err) {
      for (const key of keys) this.claimed.delete(key)
      throw err
    }
    return true
  }

  /** Gives the keys back: the payment was refused before anything reached the chain, or its handler failed. */
  async release(keys: readonly string[]): Promise<void> {
    await this.db.transaction(() => {
      for (const key of keys) void this.db.remove(key)
    })
    for (const key of keys) this.claimed.delete(key)
  }

  async mark(keys: readonly string[], state: 'settled' | 'failed', transaction?: string): Promise<void> {
    await this.db.transaction(() => {
      for (const key of keys) {
        const entry = this.db.get(key)
        if (entry) void this.db.put(key, { ...entry, state, ...(transaction ? { transaction } : {}) })
      }
    })
  }

  get(key: string): LedgerEntry | undefined {
    return this.db.get(key)
  }

  /** Drops expired entries; returns how many went. */
  async sweep(now = Date.now()): Promise<number> {
    const expired = [...this.claimed].filter(([, expiresAt]) => expiresAt <= now).map(([key]) => key)
    if (expired.length === 0) return 0
    // Re-read inside the transaction: a key may have been claimed again since.
    await this.db.transaction(() => {
      for (const key of expired) if ((this.db.get(key)?.expires_at ?? 0) <= now) void this.db.remove(key)
    })
    for (const key of expired) if ((this.claimed.get(key) ?? 0) <= now) this.claimed.delete(key)
    return expired.length
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    await this.db.close()
  }
}
