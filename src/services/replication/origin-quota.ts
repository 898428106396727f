/**
 * Quotas on what other registries originate. Any node may sign unlimited valid registrations from
 * fresh keys, and every other node would store and index them; so operations from one origin (a
 * registry ID) and for one developer (its own writes, not its entities' status changes, which the
 * home node signs) are admitted up to a rate (token buckets), and entities homed
 * at one origin up to a total. An operation over quota is refused before its owner's signatures
 * are checked or anything is stored. Over a rate, gossip ignores the message and a later sync brings
 * the operation; over the entity total, gossip rejects it (a score penalty for the peer that relayed
 * it) and sync remembers the subject so that it is not offered again (mesh/sync.ts).
 */
import type { EntityViewFields } from '../../store/entity-views.js'
import type { Operation } from '../../store/records.js'
import { BoundedMap } from '../../util/bounded-map.js'

export interface OriginQuotaSettings {
  /** Operations per second admitted from one origin registry (bursts of 10 × this). 0: no limit. */
  opsPerSecondPerOrigin: number
  /** Operations per second admitted for one developer's records (bursts of 10 × this). 0: no limit. */
  opsPerSecondPerDeveloper: number
  /** Entities homed at one other registry this node keeps. 0: no limit. */
  maxEntitiesPerOrigin: number
}

export type QuotaRefusal = 'origin_rate' | 'developer_rate' | 'origin_entities'

interface Bucket {
  tokens: number
  at: number
}

const MAX_BUCKETS = 100_000

export class OriginQuota {
  readonly refused: Record<QuotaRefusal, number> = { origin_rate: 0, developer_rate: 0, origin_entities: 0 }
  private readonly origins = new BoundedMap<string, Bucket>(MAX_BUCKETS)
  private readonly developers = new BoundedMap<string, Bucket>(MAX_BUCKETS)
  private readonly entitiesByOrigin = new Map<string, number>()

  constructor(
    private readonly settings: OriginQuotaSettings,
    private readonly now: () => number = () => performance.now()
  ) {}

  /** One stored entity at start: counted against its origin. */
  loadRecord(record: EntityViewFields): void {
    if (record.home_registry_id) this.count(record.home_registry_id, 1)
  }

  /**
   * Whether `origin` is over its rate now, without taking a token: checked before an operation's
   * seal is verified, so that a flood costs no signature work, while a forged origin field (not yet
   * verified) cannot spend the real origin's tokens.
   */
  exhausted(origin: string): boolean {
    const bucket = this.bucket(this.origins, origin, this.settings.opsPerSecondPerOrigin)
    return bucket !== null && bucket.tokens < 1 && this.refuse('origin_rate') !== null
  }

  /**
   * Whether an operation from another registry may be applied now: null, or why not. `developerId`
   * is the developer its record belongs to, when it names one. Admitted, it takes its tokens, and a
   * new entity its place in the origin's total (give it back with `count(origin, -1)` when the
   * operation is not applied after all). With `rates` false only the entity total is checked.
   */
  admit(op: Operation, developerId: string | undefined, isNewEntity: boolean, rates = true): QuotaRefusal | null {
    const { opsPerSecondPerOrigin, opsPerSecondPerDeveloper, maxEntitiesPerOrigin } = this.settings
    if (isNewEntity && maxEntitiesPerOrigin > 0 && this.entitiesOf(op.origin) >= maxEntitiesPerOrigin)
      return this.refuse('origin_entities')
    if (!rates) {
      if (isNewEntity) this.count(op.origin, 1)
      return null
    }
    const origin = this.bucket(this.origins, op.origin, opsPerSecondPerOrigin)
    const developer =
      developerId === undefined ? null : this.bucket(this.developers, developerId, opsPerSecondPerDeveloper)
    if (origin && origin.tokens < 1) return this.refuse('origin_rate')
    if (developer && developer.tokens < 1) return this.refuse('developer_rate')
    if (origin) origin.tokens--
    if (developer) developer.tokens--
    if (isNewEntity) this.count(op.origin, 1)
    return null
  }

  /** An entity homed at `origin` was stored (+1) or removed (-1). */
  count(origin: string, delta: 1 | -1): void {
    const n = (this.entitiesByOrigin.get(origin) ?? 0) + delta
    if (n > 0) this.entitiesByOrigin.set(origin, n)
    else this.entitiesByOrigin.delete(origin)
  }

  entitiesOf(origin: string): number {
    return this.entitiesByOrigin.get(origin) ?? 0
  }

  private refuse(why: QuotaRefusal): QuotaRefusal {
    this.refused[why]++
    return why
  }

  /** The refilled bucket of `key`, or null when that rate is unlimited. */
  private bucket(buckets: Map<string, Bucket>, key: string, perSecond: number): Bucket | null {
    if (perSecond <= 0) return null
    const now = this.now()
    const burst = perSecond * 10
    const bucket = buckets.get(key) ?? { tokens: burst, at: now }
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * perSecond)
    bucket.at = now
    if (!buckets.has(key)) buckets.set(key, bucket)
    return bucket
  }
}
