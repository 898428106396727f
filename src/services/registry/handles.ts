/**
 * Handles: claim (signed by the developer's own registered key), lookup, availability, ownership
 * verification (DNS or GitHub, signed by the owner) and release (which also releases every name
 * bound under the handle, so a later claimant inherits nothing). One handle per developer.
 */
import { RegistryError } from '../../errors.js'
import { parsePublicKey } from '../../identity/encoding.js'
import { deriveId } from '../../identity/ids.js'
import { verifyHandleClaim } from '../../identity/verifiers.js'
import type { SignatureReuse, WriteTransaction } from '../../store/registry-store.js'
import type { DeveloperRecord, HandleRecord, OperationAuth } from '../../store/records.js'
import { HandleClaimRequest, HandleVerifyRequest } from '../../wire/names.js'
import { validate } from '../../wire/validate.js'
import {
  authorizeDeveloperUpdate,
  authorizeRelease,
  deterministicReuse,
  edgeClock,
  requireBodySignature,
  requireTarget
} from './authorize.js'
import type { ServiceComponents } from './components.js'
import type { WriteRequest } from './writes.js'
import { formatFqan, handleProblem } from './naming.js'
import { implicitDeveloper } from './developer-records.js'
import { acceptOperation } from './operations.js'

/** Checks that a domain or GitHub account publishes a developer key (src/services/registry/ownership-verification.ts). */
export interface OwnershipCheck {
  verify(method: string, proof: string, publicKey: string): Promise<{ method: string; proof: string }>
}

export interface HandleServiceComponents extends ServiceComponents {
  ownership: OwnershipCheck
}

export type VerificationTier = 'dns-verified' | 'github-verified' | 'self-claimed' | 'unclaimed'

export function verificationTier(handle: HandleRecord | undefined): VerificationTier {
  if (!handle) return 'unclaimed'
  if (!handle.verified) return 'self-claimed'
  return handle.verification_method === 'github' ? 'github-verified' : 'dns-verified'
}

export class HandleService {
  private readonly now: () => Date

  constructor(private readonly c: HandleServiceComponents) {
    this.now = c.now ?? (() => new Date())
  }

  get(handle: string): HandleRecord | undefined {
    return this.c.store.getHandle(handle)
  }

  require(handle: string): HandleRecord {
    const record = this.c.store.getHandle(handle)
    if (!record) throw new RegistryError('handle_not_found', `Handle ${handle} is not claimed on this node.`, 'handle')
    return record
  }

  view(record: HandleRecord) {
    return {
      handle: record.handle,
      developer_id: record.developer_id,
      developer_name: this.c.store.getDeveloper(record.developer_id)?.name ?? null,
      verified: record.verified,
      verification_method: record.verification_method,
      verification_proof: record.verification_proof,
      verification_tier: verificationTier(record),
      claimed_at: record.claimed_at,
      verified_at: record.verified_at
    }
  }

  availability(handle: string): { handle: string; available: boolean; reason?: string } {
    const problem = handleProblem(handle)
    if (problem) return { handle, available: false, reason: problem }
    return this.c.store.getHandle(handle)
      ? { handle, available: false, reason: 'claimed' }
      : { handle, available: true }
  }

  /** Claims a handle; re-claiming one's own handle changes nothing (`created: false`). */
  async claim(req: WriteRequest): Promise<{ record: HandleRecord; created: boolean }> {
    const body = validate(HandleClaimRequest, req.body)
    checkHandle(body.handle)
    const bodyKey = parsePublicKey(body.public_key) as Buffer
    const developer = this.c.store.getDeveloper(body.developer_id)
    // In open mode a developer may come into being with its first claim (the spec's implicit developer).
    const implicit =
      !developer && this.c.settings.mode === 'open' && deriveId('developer', bodyKey) === body.developer_id
    if (!developer && !implicit) {
      if (this.c.settings.mode === 'restricted')
        throw new RegistryError(
          'onboarding_required',
          `Developer ${body.developer_id} is not registered on this node.`,
          'developer_id',
          { auth_url: this.c.settings.authUrl || null }
        )
      throw new RegistryError(
        'developer_not_found',
        `No developer ${body.developer_id} is registered on this node, and it is not the ID of public_key.`,
        'developer_id'
      )
    }
    const key = developer ? (parsePublicKey(developer.public_key) as Buffer) : bodyKey
    if (!bodyKey.equals(key)) {
      throw new RegistryError(
        'signature_invalid',
        "public_key is not the registered key of developer_id: a handle is claimed with the developer's own key.",
        'public_key'
      )
    }
    const form = await requireBodySignature(
      verifyHandleClaim,
      body,
      key,
      this.c.verifier,
      "The claim signature does not verify against the developer's key."
    )
    const now = this.now().toISOString()
    const auth: OperationAuth = { carrier: 'body', signer: 'developer', signature: body.signature, form }
    const result = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const existing = tx.getHandle(body.handle)
        if (existing && existing.developer_id === body.developer_id) return { record: existing, created: false }
        if (implicit && !tx.getDeveloper(body.developer_id)) {
          if (tx.getTombstone(body.developer_id))
            throw new RegistryError(
              'developer_deregistered',
              `Developer ${body.developer_id} was deregistered; register the developer again first.`,
              'developer_id'
            )
          tx.putDeveloper(implicitDeveloper(body.developer_id, bodyKey, this.c.settings.host, now))
          tx.appendOperation(acceptOperation(this.c.identity, 'developer.implicit', body.developer_id, req, auth, now))
        }
        return {
          record: this.claimInTx(tx, body.developer_id, body.handle, body.signature, req, auth, now),
          created: true
        }
      })
    )
    if (!result.created) return result
    if (implicit)
      this.c.bus.publish('developer_registered', { developer_id: body.developer_id, implicit: true, created: true })
    this.c.bus.publish('handle_claimed', { handle: body.handle, developer_id: body.developer_id, action: 'claim' })
    return result
  }

  /**
   * Inside a transaction (a claim, or a developer registration carrying `handle`): claims the
   * handle for the developer and mirrors it on the developer record.
   */
  claimInTx(
    tx: WriteTransaction,
    developerId: string,
    handle: string,
    signature: string,
    req: WriteRequest,
    auth: OperationAuth,
    now: string
  ): HandleRecord {
    checkHandle(handle)
    const developer = tx.getDeveloper(developerId)
    if (!developer) throw new RegistryError('developer_not_found', undefined, 'developer_id')
    const existing = tx.getHandle(handle)
    if (existing && existing.developer_id !== developerId)
      throw new RegistryError('handle_claimed', `Handle ${handle} is claimed by another developer.`, 'handle')
    if (existing) return existing
    if (developer.dev_handle)
      throw new RegistryError(
        'developer_has_handle',
        `${developerId} already holds the handle ${developer.dev_handle}; release it first.`,
        'handle'
      )
    const record: HandleRecord = {
      handle,
      developer_id: developerId,
      claimed_at: now,
      signature,
      verified: false,
      verification_method: null,
      verification_proof: null,
      verified_at: null
    }
    tx.putHandle(record)
    tx.putDeveloper({
      ...developer,
      dev_handle: handle,
      dev_handle_verified: false,
      verification_method: null,
      verification_proof: null,
      updated_at: now
    })
    tx.appendOperation(acceptOperation(this.c.identity, 'handle.claim', `handle:${handle}`, req, auth, now))
    return record
  }

  async verify(handle: string, req: WriteRequest): Promise<HandleRecord> {
    const record = this.require(handle)
    const developer = this.developerOf(record)
    if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body))
      throw new RegistryError('validation_failed', 'body: must be a JSON object', 'body')
    const body = validate(HandleVerifyRequest, req.body)
    requireTarget(req.body as Record<string, unknown>, { handle })
    const auth = await authorizeDeveloperUpdate(
      req,
      req.body as Record<string, unknown>,
      developer.public_key,
      this.c.verifier
    )
    const outcome = await this.c.ownership.verify(body.method, body.proof, developer.public_key)
    const now = this.now().toISOString()
    const updated = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const current = tx.getHandle(handle)
        if (!current || current.developer_id !== record.developer_id)
          throw new RegistryError('handle_not_found', `Handle ${handle} was released meanwhile.`, 'handle')
        const next: HandleRecord = {
          ...current,
          verified: true,
          verification_method: outcome.method,
          verification_proof: outcome.proof,
          verified_at: now
        }
        tx.putHandle(next)
        const dev = tx.getDeveloper(current.developer_id)
        if (dev)
          tx.putDeveloper({
            ...dev,
            dev_handle_verified: true,
            verification_method: outcome.method,
            verification_proof: outcome.proof,
            updated_at: now
          })
        tx.appendOperation(
          acceptOperation(
            this.c.identity,
            'handle.verify',
            `handle:${handle}`,
            req,
            { ...auth, signer: 'developer' },
            now
          )
        )
        return next
      })
    )
    this.c.bus.publish('handle_verified', {
      handle,
      developer_id: updated.developer_id,
      method: outcome.method,
      action: 'verify'
    })
    return updated
  }

  /** DELETE /v1/handles/{handle}: Authorization (Bearer or Bearer-Dev) over `release:<handle>` by the owner. */
  async release(
    handle: string,
    req: Omit<WriteRequest, 'body' | 'raw'>
  ): Promise<{ handle: string; message: string; names_released: string[] }> {
    const record = this.require(handle)
    const developer = this.developerOf(record)
    const auth = await authorizeRelease(
      req.credential,
      handle,
      req.path,
      developer.public_key,
      'handle',
      this.c.verifier,
      edgeClock(this.now(), this.c.settings)
    )
    const now = this.now().toISOString()
    const reuse = deterministicReuse(auth, record.claimed_at, this.c.settings.strictReplay)
    const released = await this.c.writes.run(() =>
      this.c.store.commit(tx => this.releaseInTx(tx, handle, { raw: null, path: req.path }, auth, now, reuse))
    )
    for (const binding of released)
      this.c.bus.publish('name_released', {
        fqan: formatFqan(this.c.settings.host, handle, binding.name),
        entity_id: binding.entityId,
        developer_id: record.developer_id,
        action: 'release',
        reason: 'handle_released'
      })
    this.c.bus.publish('handle_released', {
      handle,
      developer_id: record.developer_id,
      action: 'release',
      names_released: released.length
    })
    return {
      handle,
      message: 'handle released',
      names_released: released.map(b => formatFqan(this.c.settings.host, handle, b.name))
    }
  }

  /** Inside a transaction: frees the handle, its name bindings and the developer's mirror of it. */
  releaseInTx(
    tx: WriteTransaction,
    handle: string,
    req: { raw: Uint8Array | null; path: string },
    auth: OperationAuth,
    now: string,
    reuse?: SignatureReuse
  ): { name: string; entityId: string }[] {
    const current = tx.getHandle(handle)
    if (!current) throw new RegistryError('handle_not_found', undefined, 'handle')
    const names = tx.namesOfHandle(handle)
    for (const binding of names) tx.deleteName(handle, binding.entity_name)
    tx.deleteHandle(handle)
    const dev = tx.getDeveloper(current.developer_id)
    if (dev)
      tx.putDeveloper({
        ...dev,
        dev_handle: null,
        dev_handle_verified: false,
        verification_method: null,
        verification_proof: null,
        updated_at: now
      })
    tx.appendOperation(
      acceptOperation(this.c.identity, 'handle.release', `handle:${handle}`, req, auth, now),
      undefined,
      reuse
    )
    return names.map(b => ({ name: b.entity_name, entityId: b.entity_id }))
  }

  private developerOf(record: HandleRecord): DeveloperRecord {
    const developer = this.c.store.getDeveloper(record.developer_id)
    if (!developer) throw new RegistryError('developer_not_found', `The developer of handle ${record.handle} is gone.`)
    return developer
  }
}

function checkHandle(handle: string): void {
  const problem = handleProblem(handle)
  if (problem === 'reserved') throw new RegistryError('handle_reserved', `The handle ${handle} is reserved.`, 'handle')
  if (problem) throw new RegistryError('handle_invalid', undefined, 'handle')
}
