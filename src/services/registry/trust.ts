/**
 * Trust score in [0, 1] from signals that are costly to fake, each capped:
 *   0.40  the developer's handle is verified (DNS or GitHub)           → verification
 *   0.10  the developer registered a profile (not only implied by a proof) → developer_profile
 *   0.30  record age, linear up to 90 days                               → age
 *   0.20  heartbeat uptime observed by this node: the share of the time since the entity was
 *         registered here that it was active (for an entity whose home is another node, 1 while
 *         its home reports it active, else 0)                           → liveness
 * An entity with no developer can reach at most 0.50. Every signal costs time or control of a
 * domain to fake: a verified handle needs DNS or GitHub control, age needs waiting, uptime needs
 * signed heartbeats every 30 s for as long as it counts.
 */
import type { DeveloperRecord, HandleRecord } from '../../store/records.js'

export const TRUST_WEIGHTS = { verification: 0.4, developer_profile: 0.1, age: 0.3, liveness: 0.2 } as const
const AGE_FULL_DAYS = 90

export interface TrustInputs {
  /** When the entity was registered, ms since the epoch. */
  registeredAt: number
  /** Observed uptime in [0, 1]. */
  uptime: number
  developer: DeveloperRecord | undefined
  handle: HandleRecord | undefined
  now: number
}

export function trustSignals({
  registeredAt,
  uptime,
  developer,
  handle,
  now
}: TrustInputs): Record<keyof typeof TRUST_WEIGHTS, number> {
  const ageDays = Math.max(0, (now - registeredAt) / 86_400_000)
  return {
    verification: handle?.verified ? TRUST_WEIGHTS.verification : 0,
    developer_profile: developer && !developer.implicit ? TRUST_WEIGHTS.developer_profile : 0,
    age: round(TRUST_WEIGHTS.age * Math.min(1, ageDays / AGE_FULL_DAYS)),
    liveness: round(TRUST_WEIGHTS.liveness * uptime)
  }
}

/**
 * The same score as trustScore(trustSignals(…)) without allocating: the developer's part
 * (verification, profile) is computed once per developer, age and liveness per entity.
 */
export function fastTrust(
  developerPart: number,
  registeredAt: number,
  uptime: number,
  now: number,
  transitive = 0
): number {
  const ageDays = Math.max(0, (now - registeredAt) / 86_400_000)
  const local = round(
    developerPart +
      round(TRUST_WEIGHTS.age * Math.min(1, ageDays / AGE_FULL_DAYS)) +
      round(TRUST_WEIGHTS.liveness * uptime)
  )
  return transitive > 0 ? blendTrust(local, transitive) : local
}

export function developerTrustPart(developer: DeveloperRecord | undefined, handle: HandleRecord | undefined): number {
  return (
    (handle?.verified ? TRUST_WEIGHTS.verification : 0) +
    (developer && !developer.implicit ? TRUST_WEIGHTS.developer_profile : 0)
  )
}

/** How much of the room left above the local score transitive trust may fill. */
export const TRANSITIVE_WEIGHT = 0.5

/**
 * The trust score: the local score (the costly signals above) raised by transitive trust into the
 * room left above it, so an entity nothing trusted attests keeps exactly its local score.
 */
export function blendTrust(local: number, transitive: number): number {
  return round(local + (1 - local) * TRANSITIVE_WEIGHT * Math.min(1, Math.max(0, transitive)))
}

export function trustScore(signals: Record<string, number>): number {
  return round(Object.values(signals).reduce((a, b) => a + b, 0))
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000
}
