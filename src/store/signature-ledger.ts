/**
 * The client signatures that have authorized a write, by fingerprint. The deployed signing forms
 * carry no timestamp, so a captured request could be sent again: a signature is good for one
 * write only, except where SignatureReuse allows it.
 */
import { hash } from 'node:crypto'
import type { Database } from 'lmdb'
import { RegistryError } from '../errors.js'
import type { Operation } from './records.js'
import { scanInTurns, type UsedSignature } from './store-databases.js'

export type { UsedSignature } from './store-databases.js'

/**
 * A client signature that already authorized another write (a captured request sent again): the
 * deployed signing forms carry no timestamp, so a signature is good for one write only.
 */
export class SignatureReplayed extends RegistryError {
  constructor(
    readonly op: Operation,
    first: UsedSignature
  ) {
    super(
      'signature_replayed',
      `This signature already authorized a write (${first.kind} of ${first.subject} at ${first.accepted_at}); a signature is good for one write to each registration of its subject. Sign again (a timestamped deletion never repeats).`,
      'signature'
    )
  }
}

/**
 * A deletion or release signed in a form whose bytes are the same every time it is made (the
 * deployed clients sign only the ID): its signature, which verified for this very action, may
 * remove again a later incarnation of its subject, one that began (was registered, claimed or
 * bound) after the signature's first use.
 */
export interface SignatureReuse {
  /** When the subject's current incarnation began. */
  since: string
}

/** The key a signature is remembered under (also the registration fingerprint of tombstones). */
export function signatureFingerprint(signature: string): string {
  return hash('sha256', signature).slice(0, 32)
}

const firstUseOf = (op: Operation): UsedSignature => ({
  kind: op.kind,
  subject: op.subject,
  origin: op.origin,
  accepted_at: op.accepted_at
})

export class SignatureLedger {
  constructor(private readonly used: Database<UsedSignature, string>) {}

  /**
   * Inside a write transaction: remembers the client signature of an operation about to be
   * appended, or throws SignatureReplayed when another write used it first. The same operation
   * (same origin and time: a registration and the name it binds) may carry it again.
   */
  admit(op: Operation, reuse?: SignatureReuse): void {
    if (op.auth.carrier === 'node') return
    const key = signatureFingerprint(op.auth.signature)
    const first = this.used.get(key)
    if (
      first &&
      (first.origin !== op.origin || first.accepted_at !== op.accepted_at) &&
      !(reuse && first.accepted_at < reuse.since)
    )
      throw new SignatureReplayed(op, first)
    if (!first) void this.used.put(key, firstUseOf(op))
  }

  /** Remembers the client signature of an operation already in the log, unless it is remembered already. */
  rememberLogged(op: Operation): void {
    if (op.auth.carrier === 'node') return
    const key = signatureFingerprint(op.auth.signature)
    if (!this.used.doesExist(key)) void this.used.put(key, firstUseOf(op))
  }

  /** The fingerprints of signatures first used before `cutoff` (an ISO time), read a chunk per turn of the event loop. */
  async usedBefore(cutoff: string): Promise<string[]> {
    const forgotten: string[] = []
    for await (const { key, value } of scanInTurns(this.used)) if (value.accepted_at < cutoff) forgotten.push(key)
    return forgotten
  }

  /** Inside a write transaction: forgets a signature (past the retention, its subject's tombstone gone too). */
  forget(fingerprint: string): void {
    void this.used.remove(fingerprint)
  }
}
