/**
 * The highest static score (w_trust · trust + w_freshness · freshness + w_availability ·
 * availability) any live document can have in a query until the next reading: what a document
 * the walk of common words (walked-rank.ts) has not read adds to its text bound.
 *
 * Exact, with no slack: each slot's bound is its trust six minutes after the reading (trust never
 * falls with time) and its freshness six minutes before (freshness only falls), which covers every
 * cached score a query reads until the next reading (a cached score is at most a minute old). A
 * document's trust steps up by a thousandth about every seven hours of its first 90 days (its age
 * term is rounded), so a few bounds are that step above the score. A slack would
 * swamp what separates the best matches of a quoted phrase or of a rare word beside a common one:
 * their common word's weight, a few ten-thousandths of a score, when many documents share the
 * highest static score.
 *
 * Read from every slot when five minutes old or for other weights; the slots changed in between
 * (written, or their developer's part set) are read alone, or all again past PENDING of them.
 */

/** A reading costs about 100 ms at a million documents (each one's trust computed). */
const READ_EVERY_MS = 5 * 60_000
/** The reading's age at most, plus the age of a cached score at most (SlotColumns' SIGNALS_CACHE_MS). */
const COVERED_MS = READ_EVERY_MS + 60_000
const PENDING = 65_536

/** What the ceiling needs of a query's signals (SlotColumns' Signals): when it runs. */
export interface QueryTime {
  readonly now: number
}

/** What the ceiling reads of the slot columns. */
export interface StaticScores<S extends QueryTime> {
  readonly slotCount: number
  isLive(slot: number): boolean
  /** At least the slot's static score for `signals` computed at any time from `from` to `until`. */
  staticBound(slot: number, signals: S, from: number, until: number): number
}

export class StaticCeiling {
  private ceiling = Number.NaN
  private readAt = 0
  private readFor: object | null = null
  /** Slots whose static score changed since the last reading. */
  private pending: number[] = []

  /** The slot's static score may have changed. */
  changed(slot: number): void {
    if (Number.isNaN(this.ceiling)) return
    if (this.pending.length < PENDING) this.pending.push(slot)
    else this.ceiling = Number.NaN
  }

  /** At least the static score of every live slot in a query with `signals` (whose cache key is `key`). */
  read<S extends QueryTime>(scores: StaticScores<S>, signals: S, key: object | null): number {
    if (Number.isNaN(this.ceiling) || this.readFor !== key || Math.abs(signals.now - this.readAt) >= READ_EVERY_MS) {
      this.ceiling = 0
      this.readAt = signals.now
      this.readFor = key
      this.pending = []
      for (let slot = 0; slot < scores.slotCount; slot++) this.include(scores, slot, signals)
    } else if (this.pending.length > 0) {
      for (const slot of this.pending) this.include(scores, slot, signals)
      this.pending = []
    }
    return this.ceiling
  }

  private include<S extends QueryTime>(scores: StaticScores<S>, slot: number, signals: S): void {
    if (!scores.isLive(slot)) return
    const bound = scores.staticBound(slot, signals, this.readAt - COVERED_MS, this.readAt + COVERED_MS)
    if (bound > this.ceiling) this.ceiling = bound
  }
}
