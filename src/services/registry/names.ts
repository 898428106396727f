/**
 * Name bindings: <host>/<handle>/<entity-name> → an entity of the handle's developer. Bind and
 * update are signed by the handle's developer, release by a signature over `release:<fqan>`;
 * every bind and update adds to the binding's version history.
 */
import { RegistryError, invalidField } from '../../errors.js'
import { parsePublicKey } from '../../identity/encoding.js'
import { verifyNameBinding } from '../../identity/verifiers.js'
import type { WriteTransaction } from '../../store/registry-store.js'
import type { NameBinding, NameVersion, Operation } from '../../store/records.js'
import { NameBindRequest, NameUpdateRequest } from '../../wire/names.js'
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
import { formatFqan, handleProblem, isValidName } from './naming.js'
import { acceptOperation, sealOperation } from './operations.js'

export type BindingFailure = 'no_handle' | 'invalid_name' | 'name_taken'

export class NameService {
  private readonly now: () => Date

  constructor(private readonly c: ServiceComponents) {
    this.now = c.now ?? (() => new Date())
  }

  fqan(handle: string, name: string): string {
    return formatFqan(this.c.settings.host, handle, name)
  }

  get(handle: string, name: string): NameBinding | undefined {
    return this.c.store.getName(handle, name)
  }

  require(handle: string, name: string): NameBinding {
    const binding = this.c.store.getName(handle, name)
    if (!binding) throw new RegistryError('name_not_found', `${this.fqan(handle, name)} is not bound on this node.`)
    return binding
  }

  /** The binding an entity is known by (the earliest bound), for records and search results. */
  primaryOf(entityId: string): NameBinding | undefined {
    let first: NameBinding | undefined
    for (const b of this.c.store.namesOfEntity(entityId)) if (!first || b.bound_at < first.bound_at) first = b
    return first
  }

  ofHandle(handle: string): NameBinding[] {
    return this.c.store.namesOfHandle(handle)
  }

  history(handle: string, name: string): NameVersion[] {
    this.require(handle, name)
    return this.c.store.nameHistory(handle, name)
  }

  view(b: NameBinding) {
    return {
      fqan: this.fqan(b.handle, b.entity_name),
      entity_name: b.entity_name,
      developer_handle: b.handle,
      registry_host: this.c.settings.host,
      entity_id: b.entity_id,
      developer_id: b.developer_id,
      version: b.version,
      current_version: b.version,
      capability_tags: b.capability_tags,
      bound_at: b.bound_at,
      registered_at: b.bound_at,
      updated_at: b.updated_at,
      signature: b.signature
    }
  }

  availability(
    handle: string,
    name: string
  ): { developer: string; entity_name: string; available: boolean; reason?: string; existing_entity_id?: string } {
    const base = { developer: handle, entity_name: name }
    if (handleProblem(handle) === 'invalid' || !isValidName(name))
      return { ...base, available: false, reason: 'invalid' }
    if (!this.c.store.getHandle(handle)) return { ...base, available: false, reason: 'handle_unclaimed' }
    const existing = this.c.store.getName(handle, name)
    return existing
      ? { ...base, available: false, reason: 'taken', existing_entity_id: existing.entity_id }
      : { ...base, available: true }
  }

  async bind(req: WriteRequest): Promise<{ binding: NameBinding; created: boolean }> {
    const body = validate(NameBindRequest, req.body)
    if (!isValidName(body.entity_name)) throw new RegistryError('name_invalid', undefined, 'entity_name')
    const handle = this.c.store.getHandle(body.developer_handle)
    if (!handle)
      throw new RegistryError(
        'handle_not_found',
        `Handle ${body.developer_handle} is not claimed on this node.`,
        'developer_handle'
      )
    const developer = this.c.store.getDeveloper(handle.developer_id)
    if (!developer) throw new RegistryError('developer_not_found', undefined, 'developer_handle')
    const form = await requireBodySignature(
      verifyNameBinding,
      body,
      parsePublicKey(developer.public_key) as Buffer,
      this.c.verifier,
      `The binding signature does not verify against the key of ${handle.developer_id}, who holds ${handle.handle}.`
    )
    const entity = this.c.store.getEntity(body.entity_id)
    if (!entity)
      throw new RegistryError(
        'entity_not_found',
        `No entity ${body.entity_id} is registered on this node.`,
        'entity_id'
      )
    if (entity.developer_id !== handle.developer_id)
      throw new RegistryError(
        'entity_not_owned',
        `${body.entity_id} does not belong to ${handle.developer_id}, who holds ${handle.handle}.`,
        'entity_id'
      )
    const now = this.now().toISOString()
    const op = acceptOperation(
      this.c.identity,
      'name.bind',
      `name:${handle.handle}/${body.entity_name}`,
      req,
      { carrier: 'body', signer: 'developer', signature: body.signature, form },
      now
    )
    const result = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const current = tx.getHandle(handle.handle)
        if (!current || current.developer_id !== handle.developer_id)
          throw new RegistryError('handle_not_found', undefined, 'developer_handle')
        const existing = tx.getName(handle.handle, body.entity_name)
        if (existing && existing.entity_id !== body.entity_id)
          throw new RegistryError(
            'name_taken',
            `${this.fqan(handle.handle, body.entity_name)} is bound to ${existing.entity_id}.`,
            'entity_name'
          )
        if (existing) return { binding: existing, created: false }
        return {
          binding: this.bindInTx(
            tx,
            handle.handle,
            body.entity_name,
            body.entity_id,
            handle.developer_id,
            body.version || null,
            body.capability_tags ?? [],
            body.signature,
            op
          ),
          created: true
        }
      })
    )
    if (result.created) this.published(result.binding, 'name_registered', 'register')
    return result
  }

  /**
   * Inside a registration's transaction: binds `entity_name` when the developer holds a handle and
   * the name is valid and free (or already this entity's). Never throws for those three cases.
   */
  bindForRegistration(
    tx: WriteTransaction,
    developerId: string | null,
    entityId: string,
    name: string,
    version: string,
    registration: Operation
  ): NameBinding | BindingFailure {
    const handle = developerId ? (tx.getDeveloper(developerId)?.dev_handle ?? null) : null
    if (!developerId || !handle) return 'no_handle'
    if (!isValidName(name)) return 'invalid_name'
    const existing = tx.getName(handle, name)
    if (existing) return existing.entity_id === entityId ? existing : 'name_taken'
    const { node_signature: _, ...unsealed } = registration
    const op = sealOperation(this.c.identity, { ...unsealed, kind: 'name.bind', subject: `name:${handle}/${name}` })
    return this.bindInTx(tx, handle, name, entityId, developerId, version, [], registration.auth.signature, op)
  }

  async update(handle: string, name: string, req: WriteRequest): Promise<NameBinding> {
    const binding = this.require(handle, name)
    const developer = this.c.store.getDeveloper(binding.developer_id)
    if (!developer) throw new RegistryError('developer_not_found')
    if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body))
      throw invalidField('body', 'must be a JSON object')
    const body = validate(NameUpdateRequest, req.body)
    requireTarget(req.body as Record<string, unknown>, {
      developer_handle: handle,
      entity_name: name,
      fqan: this.fqan(handle, name)
    })
    const auth = await authorizeDeveloperUpdate(
      req,
      req.body as Record<string, unknown>,
      developer.public_key,
      this.c.verifier
    )
    const now = this.now().toISOString()
    const op = acceptOperation(
      this.c.identity,
      'name.update',
      `name:${handle}/${name}`,
      req,
      { ...auth, signer: 'developer' },
      now
    )
    const updated = await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        const current = tx.getName(handle, name)
        if (!current || current.developer_id !== binding.developer_id) throw new RegistryError('name_not_found')
        const next: NameBinding = {
          ...current,
          version: body.version || current.version,
          capability_tags: body.capability_tags ?? current.capability_tags,
          updated_at: now,
          signature: auth.signature
        }
        tx.putName(next, {
          version: next.version,
          entity_id: next.entity_id,
          capability_tags: next.capability_tags,
          bound_at: now,
          signature: auth.signature
        })
        tx.appendOperation(op)
        return next
      })
    )
    this.published(updated, 'name_updated', 'update')
    return updated
  }

  /** DELETE: Authorization (Bearer or Bearer-Dev) over `release:<fqan>` by the handle's developer. */
  async release(
    handle: string,
    name: string,
    req: Omit<WriteRequest, 'body' | 'raw'>
  ): Promise<{ fqan: string; message: string }> {
    const binding = this.require(handle, name)
    const developer = this.c.store.getDeveloper(binding.developer_id)
    if (!developer) throw new RegistryError('developer_not_found')
    const fqan = this.fqan(handle, name)
    const auth = await authorizeRelease(
      req.credential,
      fqan,
      req.path,
      developer.public_key,
      'name',
      this.c.verifier,
      edgeClock(this.now(), this.c.settings)
    )
    const reuse = deterministicReuse(auth, binding.bound_at, this.c.settings.strictReplay)
    const now = this.now().toISOString()
    const op = acceptOperation(
      this.c.identity,
      'name.release',
      `name:${handle}/${name}`,
      { raw: null, path: req.path },
      auth,
      now
    )
    await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        if (!tx.getName(handle, name)) throw new RegistryError('name_not_found')
        tx.deleteName(handle, name)
        tx.appendOperation(op, undefined, reuse)
      })
    )
    this.published(binding, 'name_released', 'release')
    return { fqan, message: 'name released' }
  }

  /** Inside a transaction: releases every name bound to an entity (its deregistration). */
  releaseEntityInTx(tx: WriteTransaction, entityId: string): NameBinding[] {
    const bindings = tx.namesOfEntity(entityId)
    for (const b of bindings) tx.deleteName(b.handle, b.entity_name)
    return bindings
  }

  published(
    binding: NameBinding,
    type: 'name_registered' | 'name_updated' | 'name_released',
    action: string,
    extra: Record<string, unknown> = {}
  ): void {
    this.c.bus.publish(type, {
      fqan: this.fqan(binding.handle, binding.entity_name),
      developer_id: binding.developer_id,
      entity_id: binding.entity_id,
      version: binding.version,
      action,
      ...extra
    })
  }

  private bindInTx(
    tx: WriteTransaction,
    handle: string,
    name: string,
    entityId: string,
    developerId: string,
    version: string | null,
    tags: string[],
    signature: string,
    op: Operation
  ): NameBinding {
    const now = op.accepted_at
    const binding: NameBinding = {
      handle,
      entity_name: name,
      entity_id: entityId,
      developer_id: developerId,
      version,
      capability_tags: tags,
      bound_at: now,
      updated_at: now,
      signature
    }
    tx.putName(binding, { version, entity_id: entityId, capability_tags: tags, bound_at: now, signature })
    tx.appendOperation(op)
    return binding
  }
}
