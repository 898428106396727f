/**
 * Handles and names of other registries. An FQAN is `<host>/<handle>/<name>`: each host is its own
 * namespace, and its home node is the authority on it. This node keeps what the mesh tells it
 * about other hosts' namespaces so it can resolve their FQANs too, and keeps them apart from its
 * own handles and names (the same handle may belong to different developers on two hosts).
 *
 * The operation log is the truth: applying a `handle.*` or `name.*` operation verifies the owner's
 * signature (the developer's, over the claim, binding, update or release; a name bound by an entity
 * registration is vouched for by that registration, which this node holds verified), appends it to
 * the log, and folds the key's operations in time order into the directory held in memory; at
 * start the directory is folded again from the log.
 */
import { RegistryError } from '../../errors.js'
import { parsePublicKey, parseSignature } from '../../identity/encoding.js'
import { deriveId } from '../../identity/ids.js'
import {
  verifyDeletion,
  verifyHandleClaim,
  verifyNameBinding,
  verifyRelease,
  type SignedForm
} from '../../identity/verifiers.js'
import { compareOperations } from '../../store/operation-order.js'
import type { Operation } from '../../store/records.js'
import { authorizeDeveloperUpdate, deterministicReuse } from '../registry/authorize.js'
import type { ServiceComponents } from '../registry/components.js'
import { MissingDependency, StaleOperation, type WriteRequest } from '../registry/writes.js'
import { formatFqan } from '../registry/naming.js'
import { bodyOf } from '../registry/operations.js'
import type { RemoteName } from '../registry/ports.js'

export interface RemoteHandle {
  host: string
  handle: string
  developer_id: string
  verified: boolean
  claimed_at: string
}

const KINDS = new Set(['handle.claim', 'handle.verify', 'handle.release', 'name.bind', 'name.update', 'name.release'])

/** The subjects of those kinds (see parseSubject). */
const SUBJECT_PREFIXES = ['handle:', 'name:']

type Body = Record<string, unknown>

/** An operation's body as an object; {} when it has none (a release) or is not one, which the fold then ignores. */
const fieldsOf = (op: Operation): Body => {
  try {
    const parsed = bodyOf(op)
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Body) : {}
  } catch {
    return {}
  }
}

/** `handle:<handle>` or `name:<handle>/<name>` → its parts. */
function parseSubject(subject: string): { handle: string; name: string | null } | null {
  const handle = /^handle:([a-z0-9-]{3,32})$/.exec(subject)
  if (handle) return { handle: handle[1] as string, name: null }
  const name = /^name:([a-z0-9-]{3,32})\/([a-z0-9-]{1,64})$/.exec(subject)
  return name ? { handle: name[1] as string, name: name[2] as string } : null
}

export class NameDirectory {
  private readonly handles = new Map<string, RemoteHandle>()
  private readonly names = new Map<string, RemoteName>()
  /** Name keys bound to each entity, for the FQAN shown on its record. */
  private readonly namesOfEntity = new Map<string, Set<string>>()
  /** Name keys under each `host/handle`, whose standing follows the handle's holder. */
  private readonly namesOfHandle = new Map<string, Set<string>>()
  /** Each key's operations, to fold them again when one arrives out of order. */
  private readonly ops = new Map<string, Operation[]>()
  /** Called with each entity whose FQAN may have changed (the entity service drops its rendering). */
  onEntityChanged: (entityId: string) => void = () => {}

  constructor(private readonly c: Pick<ServiceComponents, 'store' | 'identity' | 'verifier' | 'writes'>) {}

  static handles(kind: string): boolean {
    return KINDS.has(kind)
  }

  /** Folds the other registries' handle and name operations from the log. */
  load(): number {
    let count = 0
    for (const prefix of SUBJECT_PREFIXES)
      for (const op of this.c.store.operationsOnSubjectsStartingWith(prefix)) {
        if (!KINDS.has(op.kind) || op.origin === this.c.identity.registryId) continue
        this.remember(op)
        count++
      }
    for (const key of this.ops.keys()) this.fold(key)
    return count
  }

  handle(host: string, handle: string): RemoteHandle | undefined {
    return this.handles.get(`${host}/${handle}`)
  }

  name(host: string, handle: string, name: string): RemoteName | undefined {
    const binding = this.names.get(`${host}/${handle}/${name}`)
    // A name lives only as long as its handle is held by the developer who bound it.
    return binding && this.handle(host, handle)?.developer_id === binding.developer_id ? binding : undefined
  }

  /** The entity's first-bound name in another registry's namespace that still stands, if any. */
  primaryOf(entityId: string): RemoteName | undefined {
    let first: RemoteName | undefined
    for (const key of this.namesOfEntity.get(entityId) ?? []) {
      const [host, handle, name] = key.split('/') as [string, string, string]
      const binding = this.name(host, handle, name)
      if (binding && (!first || binding.bound_at < first.bound_at)) first = binding
    }
    return first
  }

  /** Verifies an operation of another registry's namespace and applies it. */
  async apply(op: Operation, req: WriteRequest): Promise<void> {
    const subject = parseSubject(op.subject)
    const host = op.origin_host
    if (!subject || !host)
      throw new RegistryError(
        'operation_invalid',
        'handle and name operations name their handle (and name) in subject, and their host in origin_host.',
        'subject'
      )
    const releasedWith = await this.verifyOwner(op, req, host, subject.handle, subject.name)
    // A release signed in a form that never changes may end a later claim or binding (authorize.ts deterministicReuse).
    const since =
      subject.name === null
        ? this.handle(host, subject.handle)?.claimed_at
        : this.names.get(`${host}/${subject.handle}/${subject.name}`)?.bound_at
    const reuse =
      releasedWith && since ? deterministicReuse({ ...op.auth, form: releasedWith }, since, false) : undefined
    await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        tx.appendOperation(op, undefined, reuse)
      })
    )
    const key = subject.name === null ? `${host}/${subject.handle}` : `${host}/${subject.handle}/${subject.name}`
    this.remember(op)
    this.fold(key)
    // A handle's release ends the names under it: fold them again (name() also checks the holder).
    if (op.kind === 'handle.release') for (const k of this.ops.keys()) if (k.startsWith(`${key}/`)) this.fold(k)
  }

  /**
   * The owner's signature: the developer who holds (or claims) the handle. Returns the form a
   * release verified in (null for the other kinds).
   */
  private async verifyOwner(
    op: Operation,
    req: WriteRequest,
    host: string,
    handle: string,
    name: string | null
  ): Promise<SignedForm | null> {
    const body = (req.body as Body | null) ?? {}
    const signature = parseSignature(op.auth.signature)
    if (!signature) throw new RegistryError('signature_invalid', 'auth.signature is malformed.')
    if (op.kind === 'handle.claim') {
      // A claim (or a developer registration carrying `handle`), signed with the developer's own key.
      const key = typeof body.public_key === 'string' ? parsePublicKey(body.public_key) : null
      const developerId =
        typeof body.developer_id === 'string' ? body.developer_id : key ? deriveId('developer', key) : null
      if (!key || body.handle !== handle || developerId !== deriveId('developer', key))
        throw new RegistryError(
          'operation_invalid',
          "A handle claim names the handle of its subject and is signed with its developer's key."
        )
      if (!(await verifyHandleClaim(body, key, signature, this.c.verifier)))
        throw new RegistryError('signature_invalid', 'The handle claim is not signed by its developer.')
      return null
    }
    const holder = this.handle(host, handle)
    if (!holder) throw new MissingDependency(`handle:${handle}`)
    const developer = this.c.store.getDeveloper(holder.developer_id)
    if (!developer) throw new MissingDependency(holder.developer_id)
    const key = parsePublicKey(developer.public_key) as Buffer
    switch (op.kind) {
      case 'handle.verify':
      case 'name.update':
        await authorizeDeveloperUpdate(req, body, developer.public_key, this.c.verifier)
        return null
      case 'handle.release': {
        // Released by the developer (over release:<handle>), or with the developer's deregistration.
        const released =
          (await verifyRelease(handle, op.path ?? '', key, signature, this.c.verifier)) ??
          (await verifyDeletion(holder.developer_id, op.path ?? '', key, signature, this.c.verifier))
        if (!released)
          throw new RegistryError('signature_invalid', "The handle release is not signed by the handle's developer.")
        return released
      }
      case 'name.release': {
        const fqan = formatFqan(host, handle, name as string)
        const released = await verifyRelease(fqan, op.path ?? '', key, signature, this.c.verifier)
        if (!released)
          throw new RegistryError('signature_invalid', "The name release is not signed by the handle's developer.")
        return released
      }
      case 'name.bind': {
        if (op.auth.signer === 'self') {
          // Bound by an entity registration: the registration, verified when it was applied, vouches.
          const entityId = typeof body.public_key === 'string' ? this.entityOf(body) : null
          if (!entityId)
            throw new RegistryError('operation_invalid', 'A name bound by a registration carries that registration.')
          const entity = this.c.store.getEntity(entityId)
          if (!entity) throw new MissingDependency(entityId)
          if (
            entity.signature !== op.auth.signature &&
            !this.c.store.operationsOf(entity.entity_id).some(o => o.auth.signature === op.auth.signature)
          )
            throw new StaleOperation()
          if (entity.developer_id !== holder.developer_id)
            throw new RegistryError('operation_invalid', "The bound entity does not belong to the handle's developer.")
          return null
        }
        if (!(await verifyNameBinding(body, key, signature, this.c.verifier)))
          throw new RegistryError('signature_invalid', "The name binding is not signed by the handle's developer.")
        return null
      }
    }
    return null
  }

  private entityOf(body: Body): string | null {
    const key = parsePublicKey(body.public_key as string)
    if (!key) return null
    const type = body.type ?? body.entity_type
    return deriveId(type === 'service' ? 'service' : 'agent', key)
  }

  private remember(op: Operation): void {
    const subject = parseSubject(op.subject)
    if (!subject || !op.origin_host) return
    const key =
      subject.name === null
        ? `${op.origin_host}/${subject.handle}`
        : `${op.origin_host}/${subject.handle}/${subject.name}`
    const list = this.ops.get(key)
    if (list) list.push(op)
    else this.ops.set(key, [op])
  }

  /** A key's state from its operations in time order. */
  private fold(key: string): void {
    const ops = (this.ops.get(key) ?? []).sort(compareOperations)
    const parts = key.split('/')
    const [host, handle, name] = parts as [string, string, string | undefined]
    if (name === undefined) {
      let state: RemoteHandle | undefined
      for (const op of ops) {
        const body = fieldsOf(op)
        if (op.kind === 'handle.claim') {
          const developerId =
            typeof body.developer_id === 'string'
              ? body.developer_id
              : deriveId('developer', parsePublicKey(body.public_key as string) as Buffer)
          state = { host, handle, developer_id: developerId, verified: false, claimed_at: op.accepted_at }
        } else if (op.kind === 'handle.verify' && state) state = { ...state, verified: true }
        else if (op.kind === 'handle.release') state = undefined
      }
      if (state) this.handles.set(key, state)
      else this.handles.delete(key)
      // Whether the names under this handle stand depends on who holds it.
      for (const nameKey of this.namesOfHandle.get(key) ?? []) {
        const binding = this.names.get(nameKey)
        if (binding) this.onEntityChanged(binding.entity_id)
      }
      return
    }
    let state: RemoteName | undefined
    for (const op of ops) {
      const body = fieldsOf(op)
      if (op.kind === 'name.bind') {
        const holder = this.handles.get(`${host}/${handle}`)
        const entityId =
          op.auth.signer === 'self' ? this.entityOf(body) : typeof body.entity_id === 'string' ? body.entity_id : null
        if (!entityId) continue
        state = {
          host,
          handle,
          entity_name: name,
          entity_id: entityId,
          developer_id: holder?.developer_id ?? '',
          version: typeof body.version === 'string' && body.version !== '' ? body.version : null,
          capability_tags: Array.isArray(body.capability_tags)
            ? body.capability_tags.filter((t): t is string => typeof t === 'string')
            : [],
          bound_at: op.accepted_at,
          updated_at: op.accepted_at
        }
      } else if (op.kind === 'name.update' && state) {
        state = {
          ...state,
          version: typeof body.version === 'string' && body.version !== '' ? body.version : state.version,
          capability_tags: Array.isArray(body.capability_tags)
            ? body.capability_tags.filter((t): t is string => typeof t === 'string')
            : state.capability_tags,
          updated_at: op.accepted_at
        }
      } else if (op.kind === 'name.release') state = undefined
    }
    const previous = this.names.get(key)
    if (previous && previous.entity_id !== state?.entity_id) {
      this.namesOfEntity.get(previous.entity_id)?.delete(key)
      this.onEntityChanged(previous.entity_id)
    }
    const handleKey = `${host}/${handle}`
    if (state) {
      this.names.set(key, state)
      this.namesOfEntity.set(state.entity_id, (this.namesOfEntity.get(state.entity_id) ?? new Set<string>()).add(key))
      this.namesOfHandle.set(handleKey, (this.namesOfHandle.get(handleKey) ?? new Set<string>()).add(key))
      this.onEntityChanged(state.entity_id)
    } else {
      this.names.delete(key)
      this.namesOfHandle.get(handleKey)?.delete(key)
    }
  }
}
