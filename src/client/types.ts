/**
 * What the client sends and gets, as the node's own schemas (src/wire/) state it: types only, so
 * the client carries no schema code. Answers may hold members a newer node adds.
 */
import type { Static, TSchema } from '@sinclair/typebox'
import type { Message } from '../wire/common.js'
import type {
  DeveloperEntities,
  DeveloperRecordView,
  DeveloperRegistrationRequest,
  DeveloperRegistrationResponse,
  DeveloperUpdateRequest
} from '../wire/developers.js'
import type {
  DeregistrationResponse,
  EntityList,
  EntityRecordView,
  RegistrationRequest,
  RegistrationResponse,
  UpdateRequest
} from '../wire/entities.js'
import type {
  ApprovalRequest,
  ApprovalResponse,
  HandleAvailability,
  HandleView,
  NameAvailability,
  NameBindRequest,
  NameUpdateRequest,
  NameVersionView,
  NameView,
  ResolveResponse
} from '../wire/names.js'
import type {
  MeshFaultsRequest,
  MeshFaultsView,
  NetworkStats,
  NetworkStatus,
  PeerBan as PeerBanSchema,
  PeerUnbanned as PeerUnbannedSchema,
  PeerView,
  RemovedPeer as RemovedPeerSchema
} from '../wire/network.js'
import type { NodeInfo } from '../wire/node.js'
import type { RegistryProofSchema } from '../wire/registry-proof.js'
import type { SearchRequest, SearchResponse } from '../wire/search.js'

/** An answer as its schema describes it, open to members it does not name. */
type Answer<S extends TSchema> = Static<S> & { [member: string]: unknown }

/** A request body before signing: the client adds `public_key` where it belongs, and `signature`. */
type Unsigned<T> = Omit<T, 'signature' | 'public_key'>

export type EntityRecord = Answer<typeof EntityRecordView>
export type EntityUpdated = EntityRecord & { changed: string[] }
export type EntityRegistration = Unsigned<RegistrationRequest> & { public_key?: string }
export type EntityRegistered = Answer<typeof RegistrationResponse>
export type EntityChanges = Omit<UpdateRequest, 'signature'>
export type EntityDeregistered = Answer<typeof DeregistrationResponse>
export type EntityPage = Answer<typeof EntityList>
export interface EntityListQuery {
  type?: 'agent' | 'service' | 'all'
  category?: string
  developer_id?: string
  limit?: number
  offset?: number
}
/** A live card as its entity serves it, and whether its signature verifies against the registered key. */
export interface EntityCard {
  card: Record<string, unknown>
  verification: 'verified' | 'invalid' | 'unsigned' | null
  source: string | null
}

export type DeveloperRecord = Answer<typeof DeveloperRecordView>
export type DeveloperUpdated = DeveloperRecord & { changed: string[] }
export type DeveloperProfile = Unsigned<DeveloperRegistrationRequest>
export type DeveloperRegistered = Answer<typeof DeveloperRegistrationResponse>
export type DeveloperChanges = Omit<DeveloperUpdateRequest, 'signature'>
export type DeveloperEntityPage = Answer<typeof DeveloperEntities>

export type Handle = Answer<typeof HandleView>
export type HandleClaimed = Handle & { message?: string }
export type HandleVerified = Handle & { message: string }
export type HandleAvailable = Answer<typeof HandleAvailability>
export interface HandleProof {
  method: 'dns' | 'github'
  /** dns: the domain whose `_zns-verify` TXT record holds the key; github: the user with a gist holding it. */
  proof: string
}

export type NameBinding = Answer<typeof NameView>
export type NameBound = NameBinding & { message?: string }
export type NameRequest = Omit<NameBindRequest, 'signature'>
export type NameChanges = Omit<NameUpdateRequest, 'signature'>
export type NameVersion = Answer<typeof NameVersionView>
export type NameAvailable = Answer<typeof NameAvailability>
export type NameReleased = { fqan: string; message: string } & { [member: string]: unknown }

export type Resolution = Answer<typeof ResolveResponse>

export type Search = SearchRequest
export type SearchAnswer = Answer<typeof SearchResponse>

export type NodeInfoAnswer = Answer<typeof NodeInfo>
export type RegistryProof = Answer<typeof RegistryProofSchema>
export type Peer = Answer<typeof PeerView>
export type PeerList = { peers: Peer[]; count: number }
export type RemovedPeer = Answer<typeof RemovedPeerSchema>
export type PeerBan = Answer<typeof PeerBanSchema>
export type PeerBanList = { bans: PeerBan[]; count: number }
export type PeerUnbanned = Answer<typeof PeerUnbannedSchema>
export type NetworkStatusAnswer = Answer<typeof NetworkStatus>
export type NetworkStatsAnswer = Answer<typeof NetworkStats>
export type MeshFaults = Answer<typeof MeshFaultsView>
export type MeshFaultChanges = Static<typeof MeshFaultsRequest>

export type Approval = ApprovalRequest
export type Approved = Answer<typeof ApprovalResponse>

export type MessageAnswer = Answer<typeof Message>
