/**
 * Attestations: an entity or developer states its experience with an entity (src/wire/attestations.ts),
 * signed by its own registered key. Accepted from a client (its signature checked, `issued_at` within
 * the clock skew, quotas) or replayed from another node's operation (signature checked again, no
 * clock or quota of ours: the origin applied its own); kept once per ID, which is derived from the
 * signed bytes, so the same statement sent twice or by two paths is one attestation.
 */
import { createHash } from 'node:crypto'
import { invalidField, RegistryError } from '../../errors.js'
import { canonicalJson, withoutSignature } from '../../identity/canonical-json.js'
import { parsePublicKey, parseSignature } from '../../identity/encoding.js'
import { ID_PATTERNS } from '../../identity/ids.js'
import type { AttestationRecord, Operation, OperationAuth } from '../../store/records.js'
import { attestationWeight } from '../../trust/weights.js'
import { facts } from './attestation-facts.js'
import { AttestationRequest } from '../../wire/attestations.js'
import { validate } from '../../wire/validate.js'
import type { ServiceComponents } from './components.js'
import { acceptOperation } from './operations.js'
import type { TransitiveTrust } from './transitive-trust.js'
import { NO_EXPLANATION } from './trust-computation.js'
import type { PaymentChecker } from './payment-check.js'
import { MissingDependency, type RemoteWrite, StaleOperation, type WriteRequest } from './writes.js'

/** Per issuer: at most this many attestations an hour, and of one subject a day (the node's own clients). */
export const ATTESTATION_QUOTAS = { perIssuerPerHour: 100, perSubjectPerDay: 10 } as const
/** Issuers whose recent attestations are counted at once; beyond, the longest-counted is forgotten. */
const MAX_COUNTED_ISSUERS = 100_000
const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS

export function attestationId(body: Record<string, unknown>): string {
  return `zns:att:${createHash('sha256')
    .update(canonicalJson(withoutSignature(body)))
    .digest('hex')
    .slice(0, 32)}`
}

export class AttestationService {
  private readonly now: () => Date
  /** Acceptance times (ms) of each issuer's recent attestations, by subject. */
  private readonly recent = new Map<string, { at: number; subject: string }[]>()

  constructor(
    private readonly c: ServiceComponents,
    private readonly transitive?: TransitiveTrust,
    /** Checks payment evidence on chain (payment-check.ts); without it, payments stay unchecked. */
    private readonly payments?: PaymentChecker
  ) {
    this.now = c.now ?? (() => new Date())
  }

  /** Why an entity has its transitive trust: its score, its share of all trust, who gives it the most, what it received. */
  async explain(entityId: string) {
    if (!this.c.store.getEntity(entityId))
      throw new RegistryError('entity_not_found', `No entity ${entityId} is registered on this node.`)
    const received = { interaction_success: 0, interaction_failure: 0, endorsement: 0, dispute: 0 }
    let after: string | null = null
    for (;;) {
      const page = this.c.store.attestationsOf(entityId, { after, limit: 1000 })
      for (const r of page)
        if (r.kind === 'interaction')
          received[r.outcome === 'success' ? 'interaction_success' : 'interaction_failure']++
        else received[r.kind]++
      if (page.length < 1000) break
      after = page.at(-1)?.attestation_id ?? null
    }
    const explained = (await this.transitive?.explain(entityId)) ?? NO_EXPLANATION
    return { entity_id: entityId, ...explained, received }
  }

  get(id: string): AttestationRecord | undefined {
    return this.c.store.getAttestation(id)
  }

  require(id: string): AttestationRecord {
    const record = this.get(id)
    if (!record) throw new RegistryError('attestation_not_found', `No attestation ${id} is held on this node.`)
    return record
  }

  list(q: { subject?: string; issuer?: string; after: string | null; limit: number }): AttestationRecord[] {
    if (q.subject !== undefined) return this.c.store.attestationsOf(q.subject, q)
    if (q.issuer !== undefined) return this.c.store.attestationsBy(q.issuer, q)
    throw invalidField('subject', 'give subject or issuer')
  }

  view(record: AttestationRecord) {
    return {
      attestation_id: record.attestation_id,
      issuer: record.issuer,
      subject: record.subject,
      kind: record.kind,
      outcome: record.outcome,
      issued_at: record.issued_at,
      evidence: record.evidence,
      comment: record.comment,
      weight: Math.round(attestationWeight(facts(record), this.now().getTime()) * 1000) / 1000,
      payment_check: record.payment_check,
      accepted_at: record.accepted_at,
      home_registry: record.home_registry
    }
  }

  /** Accepts an attestation; the same one again changes nothing (`created: false`). */
  async add(req: WriteRequest, remote?: RemoteWrite): Promise<{ record: AttestationRecord; created: boolean }> {
    const body = validate(AttestationRequest, req.body)
    if (body.kind === 'interaction' && body.outcome === undefined)
      throw invalidField('outcome', 'an interaction states its outcome: success or failure')
    if (body.kind !== 'interaction' && body.outcome !== undefined)
      throw invalidField('outcome', 'only an interaction has an outcome')
    const id = attestationId(body)
    if (remote && remote.op.subject !== id)
      throw invalidField('subject', `the operation's subject is not ${id}, the ID of the attestation it carries`)
    const existing = this.get(id)
    if (existing) {
      if (remote) throw new StaleOperation()
      return { record: existing, created: false }
    }
    // From the mesh, a party not held yet is a dependency sync brings; from a client, an error.
    if (remote && !this.holdsParty(body.issuer)) throw new MissingDependency(body.issuer)
    const { key, developer } = this.issuerKey(body.issuer)
    const subject = this.c.store.getEntity(body.subject)
    if (!subject) {
      if (remote) throw new MissingDependency(body.subject)
      throw new RegistryError('entity_not_found', `The subject ${body.subject} is not registered here.`, 'subject')
    }
    if (body.issuer === body.subject || (developer !== null && developer === subject.developer_id))
      throw new RegistryError('self_attestation', undefined, 'subject')
    const signature = parseSignature(body.signature) as Buffer
    const message = Buffer.from(canonicalJson(withoutSignature(body)))
    if ((await this.c.verifier.firstVerifying(key, signature, [message])) !== 0)
      throw new RegistryError(
        'signature_invalid',
        "The signature does not verify against the issuer's key.",
        'signature'
      )
    const nowMs = this.now().getTime()
    if (!remote) {
      const issuedAt = Date.parse(body.issued_at)
      if (Math.abs(nowMs - issuedAt) > this.c.settings.maxClockSkewMs)
        throw new RegistryError(
          'clock_skew',
          `issued_at is ${Math.round((issuedAt - nowMs) / 1000)} s from the node clock; at most ${this.c.settings.maxClockSkewMs / 1000} s is accepted.`,
          'issued_at'
        )
      this.checkQuota(body.issuer, body.subject, nowMs)
    }
    // Checked once, before it is stored: the weight never changes under the scores computed from it.
    const payment = body.evidence?.payment
    const paymentCheck = payment ? ((await this.payments?.check(payment)) ?? 'unchecked') : 'none'
    const acceptedAt = remote ? remote.op.accepted_at : new Date(nowMs).toISOString()
    const auth: OperationAuth = { carrier: 'body', signer: 'self', signature: body.signature, form: 'spec' }
    const op: Operation = remote
      ? remote.op
      : acceptOperation(this.c.identity, 'attestation.add', id, req, auth, acceptedAt)
    const record: AttestationRecord = {
      attestation_id: id,
      issuer: body.issuer,
      subject: body.subject,
      kind: body.kind,
      outcome: body.outcome ?? null,
      issued_at: body.issued_at,
      nonce: body.nonce,
      evidence: body.evidence ?? null,
      comment: body.comment ?? null,
      signature: body.signature,
      accepted_at: acceptedAt,
      home_registry: remote?.home ?? this.c.settings.host,
      payment_check: paymentCheck
    }
    const created = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        if (tx.hasAttestation(id)) {
          if (remote) throw new StaleOperation()
          return false
        }
        tx.appendOperation(op)
        tx.putAttestation(record)
        return true
      })
    )
    if (created) {
      if (!remote) this.counted(body.issuer, body.subject, nowMs)
      this.c.bus.publish('attestation_added', {
        attestation_id: id,
        issuer: record.issuer,
        subject: record.subject,
        kind: record.kind,
        outcome: record.outcome
      })
    }
    return { record: created ? record : (this.get(id) ?? record), created }
  }

  private holdsParty(id: string): boolean {
    return ID_PATTERNS.developer.test(id)
      ? this.c.store.getDeveloper(id) !== undefined
      : this.c.store.getEntity(id) !== undefined
  }

  /** The issuer's registered key, and its developer (itself, or the entity's owner). */
  private issuerKey(issuer: string): { key: Buffer; developer: string | null } {
    if (ID_PATTERNS.developer.test(issuer)) {
      const developer = this.c.store.getDeveloper(issuer)
      if (developer) return { key: parsePublicKey(developer.public_key) as Buffer, developer: issuer }
    } else {
      const entity = this.c.store.getEntity(issuer)
      if (entity) return { key: parsePublicKey(entity.public_key) as Buffer, developer: entity.developer_id ?? null }
    }
    throw new RegistryError('issuer_not_found', `The issuer ${issuer} is not registered on this node.`, 'issuer')
  }

  private checkQuota(issuer: string, subject: string, nowMs: number): void {
    const list = (this.recent.get(issuer) ?? []).filter(r => nowMs - r.at < DAY_MS)
    const lastHour = list.filter(r => nowMs - r.at < HOUR_MS).length
    const ofSubject = list.filter(r => r.subject === subject).length
    if (lastHour >= ATTESTATION_QUOTAS.perIssuerPerHour || ofSubject >= ATTESTATION_QUOTAS.perSubjectPerDay)
      throw new RegistryError(
        'attestation_quota',
        lastHour >= ATTESTATION_QUOTAS.perIssuerPerHour
          ? `${issuer} made ${lastHour} attestations in the last hour; at most ${ATTESTATION_QUOTAS.perIssuerPerHour} are accepted.`
          : `${issuer} attested ${subject} ${ofSubject} times in the last day; at most ${ATTESTATION_QUOTAS.perSubjectPerDay} are accepted.`
      )
  }

  private counted(issuer: string, subject: string, nowMs: number): void {
    const list = (this.recent.get(issuer) ?? []).filter(r => nowMs - r.at < DAY_MS)
    list.push({ at: nowMs, subject })
    this.recent.delete(issuer)
    this.recent.set(issuer, list)
    if (this.recent.size > MAX_COUNTED_ISSUERS) this.recent.delete(this.recent.keys().next().value as string)
  }
}
