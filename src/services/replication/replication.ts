/**
 * Applies operations other nodes accepted (received by gossip or sync): the one path by which the
 * mesh changes this node's records. Each operation is checked as a whole before anything changes:
 * its origin's key and node signature (so no relay can alter accepted_at, origin or the body), then
 * the owner's signature, by replaying it through the same service method a client's request takes
 * (`RemoteWrite`), which also applies last-writer-wins. Status changes are accepted only from the
 * entity's home node, signed by it.
 *
 * Outcomes: `applied` (something changed), `stale` (already held, or lost to a later write),
 * `deferred` (it needs a record this node does not have yet, e.g. an update before its
 * registration; sync delivers them in order), `unsupported` (a kind this version does not know),
 * `throttled` (its origin or developer is over its rate: a later sync brings it) and `refused`
 * (its origin is over its total of entities: not taken at all) (origin-quota.ts). A batch of
 * status changes (`entity.status.batch`) is applied to the entities held here and deferred for
 * each of the others. An invalid operation throws a RegistryError (gossip rejects it).
 */
import { RegistryError } from '../../errors.js'
import { parsePublicKey, parseSignature } from '../../identity/encoding.js'
import { deriveId } from '../../identity/ids.js'
import { verifyDeveloperProof, verifyHandleClaim } from '../../identity/verifiers.js'
import type { ApplyOutcome } from '../../mesh/gossip.js'
import { compareOperations } from '../../store/operation-order.js'
import type { EntityRecord, Operation, OperationAuth } from '../../store/records.js'
import { DuplicateOperation, SignatureReplayed } from '../../store/registry-store.js'
import { BoundedMap } from '../../util/bounded-map.js'
import { DeveloperProofInput } from '../../wire/entities.js'
import { validate } from '../../wire/validate.js'
import type { ServiceComponents } from '../registry/components.js'
import {
  MissingDependency,
  StaleOperation,
  type Credential,
  type RemoteWrite,
  type WriteRequest
} from '../registry/writes.js'
import type { AttestationService } from '../registry/attestations.js'
import type { DeveloperService } from '../registry/developers.js'
import type { EntityService } from '../registry/entities.js'
import type { NameDirectory } from './name-directory.js'
import { bodyOf, operationSigningBytes, parseDeveloperProof } from '../registry/operations.js'
import type { OriginQuota } from './origin-quota.js'

export interface ReplicationComponents extends Pick<ServiceComponents, 'identity' | 'store' | 'verifier'> {
  entities: EntityService
  attestations: AttestationService
  developers: DeveloperService
  directory: NameDirectory
  quota: OriginQuota
}

export type StaleReason = 'duplicate' | 'superseded' | 'replayed' | 'own'

export interface ApplyOptions {
  /** Whether the per-origin and per-developer rates apply (default true; an operator's import: false). */
  rates?: boolean
  /** Told why a write was found `stale` (superseded, a duplicate, a replayed signature): gossip charges replays to the relaying peer. */
  onStale?: (reason: StaleReason) => void
}

/** Deferred operations kept for a retry when what they build on arrives (beyond, sync repairs). */
const MAX_DEFERRED_SUBJECTS = 10_000
const MAX_DEFERRED_PER_SUBJECT = 16

export class ReplicationService {
  readonly counts: Record<ApplyOutcome | 'invalid', number> = {
    applied: 0,
    stale: 0,
    deferred: 0,
    unsupported: 0,
    throttled: 0,
    refused: 0,
    invalid: 0
  }
  /** Why operations were stale: already held, lost to a later write, a client signature used before, or this node's own. */
  readonly staleReasons: Record<StaleReason, number> = { duplicate: 0, superseded: 0, replayed: 0, own: 0 }
  /** Operations that arrived before the record they change (gossip takes many paths), by subject. */
  private readonly deferred = new BoundedMap<string, Operation[]>(MAX_DEFERRED_SUBJECTS)
  /** When each recently applied subject was applied (a sequence number), newest last. */
  private readonly appliedAt = new BoundedMap<string, number>(MAX_DEFERRED_SUBJECTS)
  private appliedSeq = 0

  constructor(private readonly c: ReplicationComponents) {}

  /**
   * Applies an operation; once it has, retries the operations that were waiting for its subject.
   * `rates: false` (an operator's import) leaves out the per-origin and per-developer rates, which
   * pace peers; the signatures, ownership, replay and the entity total per origin still hold.
   */
  async apply(op: Operation, options: ApplyOptions = {}): Promise<ApplyOutcome> {
    const outcome = await this.applyOne(op, options.rates ?? true, options.onStale)
    if (outcome === 'applied') {
      const waiting = this.deferred.get(op.subject)
      if (waiting) {
        this.deferred.delete(op.subject)
        for (const later of waiting.sort(compareOperations)) await this.apply(later).catch(() => 'invalid')
      }
    }
    return outcome
  }

  private defer(op: Operation, waitingFor: string): void {
    const list = this.deferred.get(waitingFor)
    if (list) {
      if (list.length < MAX_DEFERRED_PER_SUBJECT && !list.includes(op)) list.push(op)
      return
    }
    this.deferred.set(waitingFor, [op])
  }

  private async applyOne(
    op: Operation,
    rates: boolean,
    onStale?: (reason: StaleReason) => void
  ): Promise<ApplyOutcome> {
    for (let attempt = 1; ; attempt++) {
      const startedAt = this.appliedSeq
      let outcome: ApplyOutcome
      try {
        outcome = await this.applyChecked(op, rates)
      } catch (err) {
        const waitingFor = err instanceof MissingDependency ? err.subject : null
        // A replayed signature from the mesh: refused like any stale write, not held against the peer that relayed it.
        const stale =
          err instanceof StaleOperation
            ? 'superseded'
            : err instanceof DuplicateOperation
              ? 'duplicate'
              : err instanceof SignatureReplayed
                ? 'replayed'
                : null
        if (stale) {
          outcome = 'stale'
          this.staleReasons[stale]++
          onStale?.(stale)
        } else if (waitingFor !== null) {
          // What it waits for may have been applied while this one was being checked (gossip
          // handles messages concurrently); deferring it then would leave it waiting for sync.
          if (attempt < 3 && (this.appliedAt.get(waitingFor) ?? -1) > startedAt) continue
          outcome = 'deferred'
          this.defer(op, waitingFor)
        } else {
          this.counts.invalid++
          throw err
        }
      }
      if (outcome === 'applied') this.markApplied(op.subject)
      this.counts[outcome]++
      return outcome
    }
  }

  private markApplied(subject: string): void {
    // Deleted first so that it counts as the newest entry: the oldest are the ones dropped.
    this.appliedAt.delete(subject)
    this.appliedAt.set(subject, ++this.appliedSeq)
  }

  private async applyChecked(op: Operation, rates: boolean): Promise<ApplyOutcome> {
    if (op.origin === this.c.identity.registryId) {
      this.staleReasons.own++
      return 'stale'
    }
    if (rates && this.c.quota.exhausted(op.origin)) return 'throttled'
    await this.checkSeal(op)
    if (this.c.store.holds(op)) {
      this.staleReasons.duplicate++
      return 'stale'
    }
    const remote: RemoteWrite = { op, home: op.origin_host ?? op.origin }
    const req = requestOf(op)
    // Quotas before the owner's signatures are checked or anything is stored: a flood costs one seal check per operation.
    const held = op.kind.startsWith('entity.') ? this.c.store.getEntity(op.subject) : undefined
    const isNewEntity = op.kind === 'entity.register' && !held
    const refusal = this.c.quota.admit(op, developerOf(op, req.body, held?.developer_id), isNewEntity, rates)
    if (refusal) return refusal === 'origin_entities' ? 'refused' : 'throttled'
    let supported: boolean
    try {
      supported = await this.replay(op, req, remote, held)
    } catch (err) {
      if (isNewEntity) this.c.quota.count(op.origin, -1)
      throw err
    }
    if (!supported) return 'unsupported'
    if (op.kind === 'entity.deregister' && held?.home_registry_id) this.c.quota.count(held.home_registry_id, -1)
    return 'applied'
  }

  /** Replays an admitted operation through the service method its kind belongs to; false for a kind this version does not know. */
  private async replay(
    op: Operation,
    req: WriteRequest,
    remote: RemoteWrite,
    held: EntityRecord | undefined
  ): Promise<boolean> {
    switch (op.kind) {
      case 'entity.register':
        await this.c.entities.register(req, remote)
        break
      case 'entity.update':
        await this.c.entities.update(op.subject, req, remote)
        break
      case 'entity.deregister':
        await this.c.entities.deregister(op.subject, req, remote)
        break
      case 'entity.status':
        await this.c.entities.applyStatus(op, held)
        break
      case 'entity.status.batch': {
        // The changes of entities not here yet wait for them; the others stand.
        const { added, missing } = await this.c.entities.applyStatusBatch(op)
        for (const entityId of missing) this.defer(op, entityId)
        if (added === 0) throw missing.length > 0 ? new MissingDependency(missing[0] as string) : new StaleOperation()
        break
      }
      case 'developer.register':
        await this.c.developers.register(req, remote)
        break
      case 'developer.update':
        await this.c.developers.update(op.subject, req, remote)
        break
      case 'developer.deregister':
        await this.c.developers.deregister(op.subject, req, remote)
        break
      case 'developer.implicit':
        await this.applyImplicitDeveloper(op, req, remote)
        break
      case 'attestation.add':
        await this.c.attestations.add(req, remote)
        break
      case 'handle.claim':
      case 'handle.verify':
      case 'handle.release':
      case 'name.bind':
      case 'name.update':
      case 'name.release':
        // Other registries' namespaces: kept apart from this node's own handles and names.
        await this.c.directory.apply(op, req)
        break
      default:
        return false
    }
    return true
  }

  /** The origin's key must be the one its registry ID names, and its seal must verify. */
  private async checkSeal(op: Operation): Promise<void> {
    const key = op.origin_key ? parsePublicKey(op.origin_key) : null
    if (!key || deriveId('registry', key) !== op.origin)
      throw new RegistryError('operation_invalid', 'origin_key is missing or is not the key of origin.', 'origin_key')
    const seal = parseSignature(op.node_signature)
    const { node_signature: _seal, ...unsealed } = op
    if (!seal || (await this.c.verifier.firstVerifying(key, seal, [operationSigningBytes(unsealed)])) !== 0) {
      throw new RegistryError(
        'operation_invalid',
        'node_signature does not verify against origin_key.',
        'node_signature'
      )
    }
  }

  /**
   * A developer that came into being with an entity registration (the body is that registration:
   * the developer's proof over the entity key vouches for it) or with its first handle claim (the
   * claim, signed with the developer's key).
   */
  private async applyImplicitDeveloper(op: Operation, req: WriteRequest, remote: RemoteWrite): Promise<void> {
    const body = req.body as {
      public_key?: unknown
      developer_id?: unknown
      entity_index?: unknown
      developer_proof?: unknown
    } | null
    if (body && body.developer_proof === undefined) {
      const key = typeof body.public_key === 'string' ? parsePublicKey(body.public_key) : null
      const signature = parseSignature(op.auth.signature)
      if (!key || !signature || body.developer_id !== op.subject || deriveId('developer', key) !== op.subject) {
        throw new RegistryError(
          'operation_invalid',
          "A developer.implicit operation from a handle claim carries the claim, made with the developer's key."
        )
      }
      if (!(await verifyHandleClaim(body as Record<string, unknown>, key, signature, this.c.verifier)))
        throw new RegistryError('signature_invalid', 'The claim is not signed by the developer.')
      await this.c.developers.applyImplicit(op, key, remote)
      return
    }
    const notItsRegistration = (): RegistryError =>
      new RegistryError(
        'operation_invalid',
        'A developer.implicit operation carries the registration whose developer proof names its subject.'
      )
    const entityKey = typeof body?.public_key === 'string' ? parsePublicKey(body.public_key) : null
    if (!body || !entityKey || body.developer_proof === null) throw notItsRegistration()
    // The same checks as the registration passed at its home, which derived this operation from it.
    const proof = parseDeveloperProof(
      validate(DeveloperProofInput, body.developer_proof, 'operation_invalid'),
      entityKey,
      typeof body.developer_id === 'string' ? body.developer_id : null,
      typeof body.entity_index === 'number' ? body.entity_index : null
    )
    if (proof.developerId !== op.subject) throw notItsRegistration()
    const signature = parseSignature(proof.stored.signature) as Buffer
    if (!(await verifyDeveloperProof(proof.developerKey, entityKey, proof.stored.index, signature, this.c.verifier)))
      throw new RegistryError('developer_proof_invalid')
    await this.c.developers.applyImplicit(op, proof.developerKey, remote)
  }
}

/** The developer whose records an operation changes, when it names one (the quota per developer). */
function developerOf(op: Operation, body: unknown, heldDeveloper: string | null | undefined): string | undefined {
  // A status change is the home node's word on liveness, not a write of the developer's: a fleet
  // going silent together must not spend (or be held back by) its developer's rate.
  if (op.kind === 'entity.status' || op.kind === 'entity.status.batch') return undefined
  if (op.kind.startsWith('developer.')) return op.subject
  if (heldDeveloper) return heldDeveloper
  const named =
    body !== null && typeof body === 'object' ? (body as { developer_id?: unknown }).developer_id : undefined
  return typeof named === 'string' ? named : undefined
}

/** The request an operation replays: its body bytes, path, and the signature as the operation carries it. */
function requestOf(op: Operation): WriteRequest {
  return { raw: op.body ?? new Uint8Array(0), body: bodyOf(op), path: op.path ?? '', credential: credentialOf(op.auth) }
}

/** An operation's client signature as a credential, taken as it is stored (no header text made again). */
function credentialOf(auth: OperationAuth): Credential | null {
  const signature = parseSignature(auth.signature)
  switch (auth.carrier) {
    case 'authorization':
      return signature && auth.signer !== 'node'
        ? { carrier: 'authorization', role: auth.signer, signature }
        : { carrier: 'malformed', header: 'Authorization' }
    case 'x-signature':
      return signature
        ? { carrier: 'x-signature', signature, text: auth.signature }
        : { carrier: 'malformed', header: 'X-Signature' }
    case 'body':
      return { carrier: 'body', signature, text: auth.signature }
    default:
      return null
  }
}
