/**
 * Developers: registration (open mode), profile updates, deregistration and reads. Writes follow
 * the same verify → commit signed operation → acknowledge path as entities.
 */
import { RegistryError } from '../../errors.js'
import { formatKey, parsePublicKey } from '../../identity/encoding.js'
import { deriveId } from '../../identity/ids.js'
import { verifyDeveloperRegistration } from '../../identity/verifiers.js'
import { isLater } from '../../store/operation-order.js'
import type { WriteTransaction } from '../../store/registry-store.js'
import { SCHEMA_VERSION, type DeveloperRecord, type Operation } from '../../store/records.js'
import {
  DeveloperRegistrationRequest,
  DeveloperUpdateRequest,
  type DeveloperRecordView
} from '../../wire/developers.js'
import { validate } from '../../wire/validate.js'
import {
  appendUpdate,
  authorizeDeletion,
  authorizeDeveloperUpdate,
  deterministicReuse,
  developerSigner,
  edgeClock,
  requireBodySignature
} from './authorize.js'
import type { ServiceComponents } from './components.js'
import { MissingDependency, StaleOperation, type RemoteWrite, type WriteRequest } from './writes.js'
import { implicitDeveloper } from './developer-records.js'
import { blendTrust, developerTrustPart } from './trust.js'
import { verificationTier, type HandleService } from './handles.js'
import { acceptOperation, bodyOf, registrationOperation, sealOperation, signatureFingerprint } from './operations.js'
import { admitRegistration, bury } from './tombstones.js'
import { changedFields, checkUrl, requireSomethingToUpdate } from './validation.js'

export interface DeveloperServiceComponents extends ServiceComponents {
  handles: HandleService
  /** Transitive trust from attestations (transitive-trust.ts), which reaches a developer through its entities. */
  transitive?: { scoreOf(id: string): number }
}

const UPDATABLE_FIELDS = Object.keys(DeveloperUpdateRequest.properties).filter(field => field !== 'signature')

export class DeveloperService {
  private readonly now: () => Date
  private developerCount = 0

  constructor(private readonly c: DeveloperServiceComponents) {
    this.now = c.now ?? (() => new Date())
    for (const _ of c.store.allDevelopers()) this.developerCount++
    // Developers come into being in several services (proofs, claims, approvals); all say so on the bus.
    c.bus.subscribe(event => {
      if (event.type === 'developer_registered' && event.data.created === true) this.developerCount++
      else if (event.type === 'developer_deregistered') this.developerCount--
    })
  }

  get count(): number {
    return this.developerCount
  }

  require(id: string): DeveloperRecord {
    const record = this.c.store.getDeveloper(id)
    if (!record) throw new RegistryError('developer_not_found', `No developer ${id} is registered on this node.`)
    return record
  }

  /** The record a write changes; a replayed write that arrives before it waits for it (replication.ts defers it). */
  private requireFor(id: string, remote: RemoteWrite | undefined): DeveloperRecord {
    const record = this.c.store.getDeveloper(id)
    if (record) return record
    if (remote) throw new MissingDependency(id)
    return this.require(id)
  }

  view(record: DeveloperRecord): DeveloperRecordView {
    const handle = record.dev_handle ? this.c.store.getHandle(record.dev_handle) : undefined
    return {
      developer_id: record.developer_id,
      name: record.name,
      public_key: record.public_key,
      signature: record.signature,
      github: record.github,
      profile_url: record.profile_url,
      dev_handle: record.dev_handle,
      handle: record.dev_handle,
      dev_handle_verified: record.dev_handle_verified,
      verification_method: record.verification_method,
      verification_proof: record.verification_proof,
      verification_tier: verificationTier(handle),
      entity_count: this.c.catalog.countByDeveloper(record.developer_id),
      trust_score: blendTrust(developerTrustPart(record, handle), this.c.transitive?.scoreOf(record.developer_id) ?? 0),
      implicit: record.implicit,
      home_registry: record.home_registry,
      registered_at: record.registered_at,
      created_at: record.registered_at,
      updated_at: record.updated_at,
      schema_version: record.schema_version
    }
  }

  /** Registers a developer: from a client, or another node's registration replayed (`remote`, last writer wins). */
  async register(
    req: WriteRequest,
    remote?: RemoteWrite
  ): Promise<{ developer_id: string; message: string; name: string; public_key: string; handle: string | null }> {
    if (this.c.settings.mode === 'restricted' && !remote) {
      throw new RegistryError(
        'onboarding_required',
        'Developer self-registration is disabled on this node; ask its operator for approval at auth_url.',
        undefined,
        { auth_url: this.c.settings.authUrl || null }
      )
    }
    const body = validate(DeveloperRegistrationRequest, req.body)
    if (body.profile_url) checkUrl('profile_url', body.profile_url, false)
    const publicKey = parsePublicKey(body.public_key) as Buffer
    const form = await requireBodySignature(
      verifyDeveloperRegistration,
      body,
      publicKey,
      this.c.verifier,
      'The registration signature does not verify against public_key.'
    )
    const developerId = deriveId('developer', publicKey)
    const { op, acceptedAt: now } = registrationOperation(
      this.c.identity,
      'developer.register',
      developerId,
      req,
      { signature: body.signature, form },
      remote,
      this.now
    )
    const fingerprint = signatureFingerprint(body.signature)
    let created = false
    await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const existing = tx.getDeveloper(developerId)
        if (existing && !existing.implicit) {
          if (!remote)
            throw new RegistryError(
              'developer_exists',
              `${developerId} is already registered; update it with PUT /v1/developers/${developerId}.`
            )
          if (!isLater(now, fingerprint, existing.updated_at, existing.registration_signatures.at(-1) ?? ''))
            throw new StaleOperation()
        }
        const tombstone = remote ? tx.getTombstone(developerId) : undefined
        if (tombstone && tombstone.deleted_at >= now) throw new StaleOperation()
        let signatures: string[]
        try {
          signatures = admitRegistration(tx, developerId, fingerprint, 'developer_deregistered')
        } catch (err) {
          if (remote) throw new StaleOperation()
          throw err
        }
        created = !existing
        tx.appendOperation(op)
        tx.putDeveloper({
          developer_id: developerId,
          name: body.name,
          public_key: formatKey(publicKey),
          signature: body.signature,
          github: body.github || null,
          profile_url: body.profile_url || null,
          // An implicit developer completing its profile keeps the handle it already claimed.
          dev_handle: existing?.dev_handle ?? null,
          dev_handle_verified: existing?.dev_handle_verified ?? false,
          verification_method: existing?.verification_method ?? null,
          verification_proof: existing?.verification_proof ?? null,
          home_registry: remote?.home ?? this.c.settings.host,
          registered_at: existing?.registered_at ?? now,
          updated_at: now,
          schema_version: SCHEMA_VERSION,
          implicit: false,
          registration_signatures: [...(existing?.registration_signatures ?? []), ...signatures]
        })
        // A handle in the registration is claimed in the same write (the spec form signs it too);
        // a replayed one gets its handle from the handle.claim operation.
        if (body.handle && !remote)
          this.c.handles.claimInTx(
            tx,
            developerId,
            body.handle,
            body.signature,
            req,
            { carrier: 'body', signer: 'self', signature: body.signature, form },
            now
          )
      })
    )
    this.c.bus.publish('developer_registered', { developer_id: developerId, name: body.name, implicit: false, created })
    if (body.handle && !remote)
      this.c.bus.publish('handle_claimed', { handle: body.handle, developer_id: developerId, action: 'claim' })
    return {
      developer_id: developerId,
      message: 'developer registered',
      name: body.name,
      public_key: formatKey(publicKey),
      handle: body.handle ?? null
    }
  }

  /**
   * Updates a developer's profile (from a client, or replayed: `remote`). A replayed update older
   * than the profile changes only the fields no later update set, so arrival order does not matter.
   */
  async update(id: string, req: WriteRequest, remote?: RemoteWrite): Promise<DeveloperRecord & { changed: string[] }> {
    const existing = this.requireFor(id, remote)
    if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body))
      throw new RegistryError('validation_failed', 'body: must be a JSON object', 'body')
    const raw = req.body as Record<string, unknown>
    for (const field of ['developer_id', 'public_key'] as const) {
      if (
        raw[field] !== undefined &&
        raw[field] !== existing[field] &&
        formatKeyIfKey(raw[field]) !== existing[field]
      ) {
        throw new RegistryError('field_immutable', `${field} cannot be changed.`, field)
      }
    }
    const body = validate(DeveloperUpdateRequest, raw)
    if (!remote) requireSomethingToUpdate(raw, UPDATABLE_FIELDS)
    if (body.profile_url) checkUrl('profile_url', body.profile_url, false)
    const auth = await authorizeDeveloperUpdate(req, raw, existing.public_key, this.c.verifier)
    const now = remote?.op.accepted_at ?? this.now().toISOString()
    const patch = (
      current: DeveloperRecord,
      fields: {
        name?: string | null | undefined
        github?: string | null | undefined
        profile_url?: string | null | undefined
      }
    ): DeveloperRecord => {
      const next: DeveloperRecord = { ...current }
      if (fields.name != null) {
        next.name = fields.name
        next.implicit = false
      }
      if (fields.github != null) next.github = fields.github || null
      if (fields.profile_url != null) next.profile_url = fields.profile_url || null
      return next
    }
    const op = remote?.op ?? acceptOperation(this.c.identity, 'developer.update', id, req, auth, now)
    const next = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const current = tx.getDeveloper(id)
        if (!current) throw remote ? new MissingDependency(id) : new RegistryError('developer_not_found')
        let updated: DeveloperRecord
        if (remote && now <= current.updated_at) {
          const later = this.c.store
            .operationsOf(id)
            .filter(o => o.kind === 'developer.update' && o.body && o.accepted_at > now)
            .map(o => bodyOf(o) as Record<string, unknown>)
          const untouched = Object.fromEntries(
            (['name', 'github', 'profile_url'] as const)
              .filter(f => later.every(b => b[f] == null))
              .map(f => [f, body[f]])
          )
          updated = patch(current, untouched)
        } else {
          updated = { ...patch(current, body), updated_at: now, signature: auth.signature }
        }
        if (!appendUpdate(tx, op, current, updated, { remote: !!remote, strict: this.c.settings.strictReplay }))
          return { unchanged: current }
        tx.putDeveloper(updated)
        return updated
      })
    )
    if ('unchanged' in next) return { ...(next.unchanged as DeveloperRecord), changed: [] }
    this.c.bus.publish('developer_updated', { developer_id: id, name: next.name })
    return { ...next, changed: changedFields(existing, next) }
  }

  /** Deregisters a developer (from a client, or replayed: `remote`). */
  async deregister(
    id: string,
    req: Omit<WriteRequest, 'body' | 'raw'>,
    remote?: RemoteWrite
  ): Promise<{ developer_id: string; message: string }> {
    const existing = this.requireFor(id, remote)
    const auth = await authorizeDeletion(
      req.credential,
      developerSigner(existing.public_key),
      id,
      req.path,
      this.c.verifier,
      remote ? undefined : edgeClock(this.now(), this.c.settings)
    )
    const owned = this.c.catalog.countByDeveloper(id)
    // The home node checked this when it accepted the deregistration; entities may arrive in another order here.
    if (owned > 0 && !remote)
      throw new RegistryError(
        'developer_has_entities',
        `${id} still owns ${owned} registered entit${owned === 1 ? 'y' : 'ies'}; deregister them first.`
      )
    const now = remote ? new Date(remote.op.accepted_at) : this.now()
    const deletedAt = now.toISOString()
    const op =
      remote?.op ??
      acceptOperation(this.c.identity, 'developer.deregister', id, { raw: null, path: req.path }, auth, deletedAt)
    const expiresAt = new Date(now.getTime() + this.c.settings.tombstoneRetentionMs).toISOString()
    const released = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const current = tx.getDeveloper(id)
        if (!current) throw remote ? new MissingDependency(id) : new RegistryError('developer_not_found')
        if (remote && current.registered_at > deletedAt) throw new StaleOperation()
        // A replayed deregistration leaves the handle to its own handle.release operation.
        const handle = !remote && current.dev_handle && tx.getHandle(current.dev_handle) ? current.dev_handle : null
        const reuse = deterministicReuse(auth, current.registered_at, !remote && this.c.settings.strictReplay)
        if (handle) this.c.handles.releaseInTx(tx, handle, { raw: null, path: req.path }, auth, deletedAt, reuse)
        bury(tx, 'developer', id, current.registration_signatures, op, expiresAt, reuse)
        return handle
      })
    )
    if (released)
      this.c.bus.publish('handle_released', {
        handle: released,
        developer_id: id,
        action: 'release',
        reason: 'developer_deregistered'
      })
    this.c.bus.publish('developer_deregistered', { developer_id: id })
    return { developer_id: id, message: 'developer deregistered' }
  }

  /**
   * Inside an entity registration's transaction: the proof's developer must exist; in open mode
   * an unknown one comes into being, recorded as an operation derived from the registration.
   * Returns whether it was created (then call `implicitCommitted` after the commit).
   */
  ensureForProof(
    tx: WriteTransaction,
    proof: ProofSigner,
    registration: Operation,
    now: string,
    remote?: RemoteWrite
  ): boolean {
    if (tx.hasDeveloper(proof.developerId)) return false
    if (remote) {
      // The home node admitted it; its own developer.implicit operation follows on the mesh.
      tx.putDeveloper(implicitDeveloper(proof.developerId, proof.developerKey, remote.home, now))
      return true
    }
    if (tx.getTombstone(proof.developerId)) {
      throw new RegistryError(
        'developer_deregistered',
        `Developer ${proof.developerId} was deregistered; register the developer again (POST /v1/developers) first.`,
        'developer_id'
      )
    }
    if (this.c.settings.mode === 'restricted') {
      throw new RegistryError(
        'onboarding_required',
        `Developer ${proof.developerId} is not registered on this node, and this node only admits approved developers.`,
        'developer_id',
        { auth_url: this.c.settings.authUrl || null }
      )
    }
    tx.putDeveloper(implicitDeveloper(proof.developerId, proof.developerKey, this.c.settings.host, now))
    tx.appendOperation(
      sealOperation(this.c.identity, {
        ...registration,
        kind: 'developer.implicit',
        subject: proof.developerId,
        auth: { carrier: 'proof', signer: 'developer', signature: proof.signature, form: 'proof' }
      })
    )
    return true
  }

  /** Another node's `developer.implicit` operation, its proof verified by the caller. */
  async applyImplicit(op: Operation, developerKey: Buffer, remote: RemoteWrite): Promise<void> {
    const created = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const tombstone = tx.getTombstone(op.subject)
        if (tombstone && tombstone.deleted_at >= op.accepted_at) throw new StaleOperation()
        const absent = !tx.hasDeveloper(op.subject)
        if (absent) tx.putDeveloper(implicitDeveloper(op.subject, developerKey, remote.home, op.accepted_at))
        tx.appendOperation(op)
        return absent
      })
    )
    if (created) this.implicitCommitted(op.subject)
  }

  implicitCommitted(developerId: string): void {
    this.c.bus.publish('developer_registered', { developer_id: developerId, implicit: true, created: true })
  }
}

export interface ProofSigner {
  developerId: string
  developerKey: Buffer
  signature: string
}

function formatKeyIfKey(value: unknown): string | null {
  if (typeof value !== 'string') return null
  const raw = parsePublicKey(value)
  return raw ? formatKey(raw) : null
}
