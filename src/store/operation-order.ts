/**
 * The order of operations behind last-writer-wins: by the time the home node accepted them, ties
 * broken by comparing signatures' text. Any total order would do, as long as every node computes
 * the same one, so this is the only place it is written; services (which fold and replace records
 * by it) and the mesh (which applies fetched batches in it) both import it.
 */
import type { Operation } from './records.js'

/** Negative when (at, tieBreak) comes first, positive when it comes later, 0 when both are equal. */
function compareStamps(at: string, tieBreak: string, thanAt: string, thanTieBreak: string): number {
  if (at !== thanAt) return at < thanAt ? -1 : 1
  return tieBreak < thanTieBreak ? -1 : tieBreak > thanTieBreak ? 1 : 0
}

/** Sort comparator of operations: accepted_at, then node_signature. */
export function compareOperations(a: Operation, b: Operation): number {
  return compareStamps(a.accepted_at, a.node_signature, b.accepted_at, b.node_signature)
}

/**
 * Whether a write stamped (at, tieBreak) wins over one stamped (thanAt, thanTieBreak). Records keep
 * a registration's time and signature fingerprint rather than its operation, hence the four values.
 */
export function isLater(at: string, tieBreak: string, thanAt: string, thanTieBreak: string): boolean {
  return compareStamps(at, tieBreak, thanAt, thanTieBreak) > 0
}
