/**
 * `RegistryClient`: every HTTP route of a registry node's `/v1` API as a typed method, with the
 * writes signed here from a key (src/client/signing.ts) in the spec's form or, where the node
 * accepts it, the deployed clients' (`form: 'deployed'`). A refused request throws
 * RegistryRequestError with the node's code; a node that does not answer, RegistryUnreachableError.
 * The WebSocket endpoints (heartbeats, the activity stream) are not here: the entity runtime's
 * heartbeat client (src/entity/heartbeat-client.ts) speaks the heartbeat protocol.
 */
import {
  deployedDeveloperSignable,
  deployedHandleClaimSignable,
  deployedNameBindingSignable,
  deployedRegistrationSignable
} from '../identity/verifiers.js'
import { DEFAULT_TIMEOUT_MS, type HttpAnswer, type RequestOptions, Transport } from './request.js'
import {
  type DeletionOptions,
  publicKeyOf,
  type SignedForm,
  type SigningKey,
  signBody,
  signDeletion,
  signerOf,
  signUpdate
} from './signing.js'
import type {
  Approval,
  Approved,
  DeveloperChanges,
  DeveloperEntityPage,
  DeveloperProfile,
  DeveloperRecord,
  DeveloperRegistered,
  DeveloperUpdated,
  EntityCard,
  EntityChanges,
  EntityDeregistered,
  EntityListQuery,
  EntityPage,
  EntityRecord,
  EntityRegistered,
  EntityRegistration,
  EntityUpdated,
  Handle,
  HandleAvailable,
  HandleClaimed,
  HandleProof,
  HandleVerified,
  MeshFaultChanges,
  MeshFaults,
  MessageAnswer,
  NameAvailable,
  NameBinding,
  NameBound,
  NameChanges,
  NameReleased,
  NameRequest,
  NameVersion,
  NetworkStatsAnswer,
  NetworkStatusAnswer,
  NodeInfoAnswer,
  Peer,
  PeerBan,
  PeerBanList,
  PeerList,
  PeerUnbanned,
  RegistryProof,
  RemovedPeer,
  Resolution,
  Search,
  SearchAnswer
} from './types.js'

export interface WriteOptions {
  /** Which signed form to send (default `spec`). */
  form?: SignedForm
}

export interface RegistrationOptions extends WriteOptions {
  /** `/v1/services` is an alias of `/v1/entities` that some clients call. */
  route?: '/v1/entities' | '/v1/services'
}

const enc = encodeURIComponent
const namePath = (handle: string, name: string): string => `/v1/names/${enc(handle)}/${enc(name)}`
const admin = (secret: string): Record<string, string> => ({ Authorization: `Bearer ${secret}` })

export class RegistryClient {
  protected readonly http: Transport

  constructor(baseUrl: string, timeoutMs = DEFAULT_TIMEOUT_MS) {
    this.http = new Transport(baseUrl, timeoutMs)
  }

  get baseUrl(): string {
    return this.http.baseUrl
  }

  protected async send<T>(method: string, path: string, o?: RequestOptions): Promise<T> {
    return (await this.http.request<T>(method, path, o)).body
  }

  protected answer<T>(method: string, path: string, o?: RequestOptions): Promise<HttpAnswer<T>> {
    return this.http.request<T>(method, path, o)
  }

  // --- node ----------------------------------------------------------------------------------------

  health(): Promise<{ status: string }> {
    return this.send('GET', '/health')
  }

  info(): Promise<NodeInfoAnswer> {
    return this.send('GET', '/v1/info')
  }

  /** The node's registry identity proof (`registry-node verify-registry` checks it). */
  registryProof(): Promise<RegistryProof> {
    return this.send('GET', '/.well-known/node-registry.json')
  }

  // --- entities ------------------------------------------------------------------------------------

  /**
   * Registers an agent or service signed by its own key. `public_key` is the key's; an HD entity
   * key (readSigner) adds its `developer_id` and `developer_proof` unless the body has them.
   */
  registerEntity(body: EntityRegistration, key: SigningKey, o: RegistrationOptions = {}): Promise<EntityRegistered> {
    const signer = signerOf(key)
    const full: Record<string, unknown> = {
      ...body,
      public_key: body.public_key ?? publicKeyOf(signer),
      ...(body.developer_id === undefined && signer.developerId ? { developer_id: signer.developerId } : {}),
      ...(body.developer_proof === undefined && signer.developerProof ? { developer_proof: signer.developerProof } : {})
    }
    const signed = signBody(full, signer, o.form ?? 'spec', b => deployedRegistrationSignable(b))
    return this.send('POST', o.route ?? '/v1/entities', { body: signed })
  }

  listEntities(query: EntityListQuery = {}): Promise<EntityPage> {
    const params = new URLSearchParams()
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v))
    const text = params.toString()
    return this.send('GET', `/v1/entities${text ? `?${text}` : ''}`)
  }

  /**
   * The record, or null when the node holds none (never registered, or deregistered); with
   * `missing: 'throw'`, the node's entity_not_found instead, which says when a tombstone was left.
   */
  getEntity(id: string): Promise<EntityRecord | null>
  getEntity(id: string, o: { missing: 'throw' }): Promise<EntityRecord>
  async getEntity(id: string, o: { missing?: 'null' | 'throw' } = {}): Promise<EntityRecord | null> {
    const path = `/v1/entities/${enc(id)}`
    if (o.missing === 'throw') return this.send('GET', path)
    const res = await this.answer<EntityRecord>('GET', path, { allow: [404] })
    return res.status === 404 ? null : res.body
  }

  /** Changes the fields given, signed by the entity key or (a developer Signer) its owning developer's. */
  updateEntity(id: string, changes: EntityChanges, key: SigningKey, o: WriteOptions = {}): Promise<EntityUpdated> {
    return this.send('PUT', `/v1/entities/${enc(id)}`, signUpdate(changes, key, o.form ?? 'spec'))
  }

  /** Deregisters, by default in the replay-proof form (the path with `?timestamp=`, good once). */
  deregisterEntity(id: string, key: SigningKey, o: DeletionOptions = {}): Promise<EntityDeregistered> {
    const signed = signDeletion(`/v1/entities/${enc(id)}`, key, {
      ...o,
      deployedMessage: id,
      bareSpec: 'x-signature-path'
    })
    return this.send('DELETE', signed.path, { headers: signed.headers })
  }

  /** The entity's live card, fetched by the node from its entity_url and checked against its key. */
  async entityCard(id: string): Promise<EntityCard> {
    const res = await this.answer<Record<string, unknown>>('GET', `/v1/entities/${enc(id)}/card`)
    const verification = res.headers.get('x-card-verification')
    return {
      card: res.body,
      verification:
        verification === 'verified' || verification === 'invalid' || verification === 'unsigned' ? verification : null,
      source: res.headers.get('x-card-source')
    }
  }

  // --- developers ----------------------------------------------------------------------------------

  /** Registers a developer (open mode); with `handle`, claims it in the same write. */
  registerDeveloper(profile: DeveloperProfile, key: SigningKey, o: WriteOptions = {}): Promise<DeveloperRegistered> {
    const body = { ...profile, public_key: publicKeyOf(key) }
    return this.send('POST', '/v1/developers', {
      body: signBody(body, key, o.form ?? 'spec', deployedDeveloperSignable)
    })
  }

  getDeveloper(id: string): Promise<DeveloperRecord> {
    return this.send('GET', `/v1/developers/${enc(id)}`)
  }

  updateDeveloper(
    id: string,
    changes: DeveloperChanges,
    key: SigningKey,
    o: WriteOptions = {}
  ): Promise<DeveloperUpdated> {
    const self = { keyPair: signerOf(key).keyPair }
    return this.send('PUT', `/v1/developers/${enc(id)}`, signUpdate(changes, self, o.form ?? 'spec'))
  }

  /** Deregisters a developer that owns no entity any more; its handle is released with it. */
  deregisterDeveloper(id: string, key: SigningKey, o: DeletionOptions = {}): Promise<MessageAnswer> {
    const self = { keyPair: signerOf(key).keyPair }
    const signed = signDeletion(`/v1/developers/${enc(id)}`, self, {
      ...o,
      deployedMessage: id,
      bareSpec: 'x-signature-path'
    })
    return this.send('DELETE', signed.path, { headers: signed.headers })
  }

  developerEntities(id: string, page: { limit?: number; offset?: number } = {}): Promise<DeveloperEntityPage> {
    const params = new URLSearchParams()
    if (page.limit !== undefined) params.set('limit', String(page.limit))
    if (page.offset !== undefined) params.set('offset', String(page.offset))
    const text = params.toString()
    return this.send('GET', `/v1/developers/${enc(id)}/entities${text ? `?${text}` : ''}`)
  }

  // --- handles -------------------------------------------------------------------------------------

  /** Claims a handle for the developer whose key signs (one handle per developer). */
  claimHandle(handle: string, developerId: string, key: SigningKey, o: WriteOptions = {}): Promise<HandleClaimed> {
    const body = { developer_id: developerId, handle, public_key: publicKeyOf(key) }
    return this.send('POST', '/v1/handles', {
      body: signBody(body, key, o.form ?? 'spec', deployedHandleClaimSignable)
    })
  }

  getHandle(handle: string): Promise<Handle> {
    return this.send('GET', `/v1/handles/${enc(handle)}`)
  }

  handleAvailable(handle: string): Promise<HandleAvailable> {
    return this.send('GET', `/v1/handles/${enc(handle)}/available`)
  }

  /** Every name bound under a handle. */
  handleNames(handle: string): Promise<NameBinding[]> {
    return this.send('GET', `/v1/handles/${enc(handle)}/entities`)
  }

  /** Proves the handle's ownership by DNS TXT or a GitHub gist; the body names the handle, so the signature holds for it alone. */
  verifyHandle(handle: string, proof: HandleProof, key: SigningKey, o: WriteOptions = {}): Promise<HandleVerified> {
    const body = { handle, method: proof.method, proof: proof.proof }
    return this.send('POST', `/v1/handles/${enc(handle)}/verify`, signUpdate(body, key, o.form ?? 'spec'))
  }

  /** Releases a handle and every name under it. */
  releaseHandle(
    handle: string,
    key: SigningKey,
    o: DeletionOptions = {}
  ): Promise<MessageAnswer & { names_released?: string[] }> {
    const signed = signDeletion(`/v1/handles/${enc(handle)}`, key, {
      ...o,
      deployedMessage: `release:${handle}`,
      bareSpec: 'authorization-message'
    })
    return this.send('DELETE', signed.path, { headers: signed.headers })
  }

  // --- names ---------------------------------------------------------------------------------------

  /** Binds `<handle>/<entity_name>` to an entity of the handle's developer, signed by that developer. */
  bindName(request: NameRequest, key: SigningKey, o: WriteOptions = {}): Promise<NameBound> {
    return this.send('POST', '/v1/names', {
      body: signBody({ ...request }, key, o.form ?? 'spec', deployedNameBindingSignable)
    })
  }

  getName(handle: string, name: string): Promise<NameBinding> {
    return this.send('GET', namePath(handle, name))
  }

  /** A new version and/or capability tags (the history keeps the old ones); the body names its target. */
  updateName(
    handle: string,
    name: string,
    changes: NameChanges,
    key: SigningKey,
    o: WriteOptions = {}
  ): Promise<NameBinding> {
    const body = { developer_handle: handle, entity_name: name, ...changes }
    return this.send('PUT', namePath(handle, name), signUpdate(body, key, o.form ?? 'spec'))
  }

  /**
   * Releases a name. The untimestamped forms sign `release:<fqan>`, whose host only the node knows:
   * it is read from the binding first.
   */
  async releaseName(handle: string, name: string, key: SigningKey, o: DeletionOptions = {}): Promise<NameReleased> {
    const timestamped = (o.form ?? 'spec') === 'spec' && o.timestamp !== false
    const fqan = timestamped ? '' : (await this.getName(handle, name)).fqan
    const signed = signDeletion(namePath(handle, name), key, {
      ...o,
      deployedMessage: `release:${fqan}`,
      bareSpec: 'authorization-message'
    })
    return this.send('DELETE', signed.path, { headers: signed.headers })
  }

  nameAvailable(handle: string, name: string): Promise<NameAvailable> {
    return this.send('GET', `${namePath(handle, name)}/available`)
  }

  /** The binding's versions, newest first. */
  nameVersions(handle: string, name: string): Promise<NameVersion[]> {
    return this.send('GET', `${namePath(handle, name)}/versions`)
  }

  // --- resolution and search -----------------------------------------------------------------------

  /** Resolves `<handle>/<name>[@version]` on this node. */
  resolveName(handle: string, name: string): Promise<Resolution> {
    return this.send('GET', `/v1/resolve/${enc(handle)}/${enc(name)}`)
  }

  /** Resolves `[zns://]<host>/<handle>/<entity>[@version]`. */
  resolveFqan(fqan: string): Promise<Resolution> {
    return this.send('GET', `/v1/resolve?fqan=${enc(fqan)}`)
  }

  resolveEntity(id: string): Promise<Resolution> {
    return this.send('GET', `/v1/resolve/agent/${enc(id)}`)
  }

  search(request: Search): Promise<SearchAnswer> {
    return this.send('POST', '/v1/search', { body: request })
  }

  /** Categories in use, most used first; with `counts`, each with its count. */
  categories(): Promise<{ categories: string[] }>
  categories(o: { counts: true }): Promise<{ name: string; count: number }[]>
  categories(o: { counts?: boolean } = {}): Promise<{ categories: string[] } | { name: string; count: number }[]> {
    return this.send('GET', `/v1/categories${o.counts ? '?counts=true' : ''}`)
  }

  /** Tags in use, most used first; with `counts`, each with its count. */
  tags(): Promise<{ tags: string[] }>
  tags(o: { counts: true }): Promise<{ tag: string; count: number }[]>
  tags(o: { counts?: boolean } = {}): Promise<{ tags: string[] } | { tag: string; count: number }[]> {
    return this.send('GET', `/v1/tags${o.counts ? '?counts=true' : ''}`)
  }

  // --- network and administration ------------------------------------------------------------------

  /** Connected peers; `all` adds the known ones that disconnected. */
  peers(o: { all?: boolean } = {}): Promise<PeerList> {
    return this.send('GET', `/v1/network/peers${o.all ? '?all=true' : ''}`)
  }

  networkStatus(): Promise<NetworkStatusAnswer> {
    return this.send('GET', '/v1/network/status')
  }

  networkStats(): Promise<NetworkStatsAnswer> {
    return this.send('GET', '/v1/network/stats')
  }

  /** Admin (the webhook secret): dials a peer now. */
  addPeer(address: string, adminSecret: string): Promise<Peer> {
    return this.send('POST', '/v1/network/peers', { body: { address }, headers: admin(adminSecret) })
  }

  /** Admin: hangs up on a peer and stops re-dialling its addresses (it may come back unless banned). */
  removePeer(peerId: string, adminSecret: string): Promise<RemovedPeer> {
    return this.send('DELETE', `/v1/network/peers/${enc(peerId)}`, { headers: admin(adminSecret) })
  }

  /** Admin: the banned peers. */
  peerBans(adminSecret: string): Promise<PeerBanList> {
    return this.send('GET', '/v1/network/bans', { headers: admin(adminSecret) })
  }

  /** Admin: bans a peer by PeerId (kept across restarts); banning again replaces the reason. */
  banPeer(peerId: string, adminSecret: string, o: { reason?: string } = {}): Promise<PeerBan> {
    return this.send('POST', '/v1/network/bans', {
      body: { peer_id: peerId, ...(o.reason !== undefined ? { reason: o.reason } : {}) },
      headers: admin(adminSecret)
    })
  }

  /** Admin: lifts a ban. */
  unbanPeer(peerId: string, adminSecret: string): Promise<PeerUnbanned> {
    return this.send('DELETE', `/v1/network/bans/${enc(peerId)}`, { headers: admin(adminSecret) })
  }

  /** Admin: the mesh faults injected in this node (testnets). */
  meshFaults(adminSecret: string): Promise<MeshFaults> {
    return this.send('GET', '/v1/admin/mesh/faults', { headers: admin(adminSecret) })
  }

  setMeshFaults(faults: MeshFaultChanges, adminSecret: string): Promise<MeshFaults> {
    return this.send('PUT', '/v1/admin/mesh/faults', { body: faults, headers: admin(adminSecret) })
  }

  /** Admin, restricted mode: approves a developer (`/v1/onboarding/approve` is the same route for operator webhooks). */
  approveDeveloper(
    approval: Approval,
    adminSecret: string,
    o: { route?: '/v1/admin/developers/approve' | '/v1/onboarding/approve' } = {}
  ): Promise<Approved> {
    return this.send('POST', o.route ?? '/v1/admin/developers/approve', {
      body: approval,
      headers: admin(adminSecret)
    })
  }

  /** Restricted mode: where to send a person to onboard (the node answers 303 to its auth_url). */
  async onboardingRequest(params: Record<string, string | number>): Promise<{ location: string }> {
    return (await this.answer<{ location: string }>('POST', '/v1/onboarding/request', { body: params, allow: [303] }))
      .body
  }
}
