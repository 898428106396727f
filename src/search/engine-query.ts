/**
 * What the search engine is given and gives back: the document it knows an entity as, the query
 * it ranks (filters, ranking weights, paging) and its hits. Re-exported by search-engine.ts.
 */
import type { QueryTerm } from './analyzer.js'
import type { Fusion, RankingWeights, ScoreBreakdown } from './ranking.js'

export const CAPABILITY_KEYS = ['skills', 'protocols', 'languages', 'models'] as const
export type CapabilityKey = (typeof CAPABILITY_KEYS)[number]

/** Lowercased capability words (short lists: arrays cost far less memory than sets, per document). */
export type CapabilitySets = Record<CapabilityKey, readonly string[]>

/** What filters and ranking need of an entity, all lowercased where compared. */
export interface SearchDocument {
  entityId: string
  type: 'agent' | 'service'
  category: string
  tags: readonly string[]
  developerId: string | null
  active: boolean
  /** Registration time, ms (trust counts record age). */
  registeredAt: number
  /** Later of updated_at and last_heartbeat, ms. */
  lastChange: number
  /** Share of the observed time the entity was active, in [0, 1] (trust counts it). */
  uptime: number
  /** Transitive trust from attestations, in [0, 1] (absent: 0). */
  transitive?: number
  capabilities: CapabilitySets
}

/**
 * What the engine keeps of a document in its slot: the entity and the values filters compare. Its
 * kind, activity and ranking inputs are held in typed columns only (slot-columns.ts): at a million
 * documents, each search thread's copy of them as object fields cost about 100 MiB.
 */
export type KeptDocument = Pick<SearchDocument, 'entityId' | 'category' | 'tags' | 'developerId' | 'capabilities'>

/** The kept part of a document, every one in the same shape. */
export function keptDocument({ entityId, category, tags, developerId, capabilities }: KeptDocument): KeptDocument {
  return { entityId, category, tags, developerId, capabilities }
}

/** The fields a patch may change without a new document (status changes, heartbeats, trust). */
export type DocumentPatch = Partial<Pick<SearchDocument, 'active' | 'lastChange' | 'uptime' | 'transitive'>>

/**
 * The trust score from its inputs: the developer's part (see setDeveloperPart) and the entity's
 * own. Never lower at a later `now` (the static order bounds the scores of the next minute by it).
 */
export type TrustFormula = (
  developerPart: number,
  registeredAt: number,
  uptime: number,
  now: number,
  transitive: number
) => number

export interface EngineQuery {
  terms: readonly QueryTerm[]
  phrases: readonly (readonly string[])[]
  vector: Float32Array | null
  /** null: any kind. */
  type: 'agent' | 'service' | null
  /** true: active only, false: inactive only, null: both. */
  active: boolean | null
  /** Exact (lowercased) category, tags (all required) and developer; absent: any. */
  category?: string | null
  tags?: readonly string[]
  developerId?: string | null
  /** The other filters, or null when there are none. */
  filter: ((doc: KeptDocument) => boolean) | null
  trust: TrustFormula
  minTrust: number
  /** A document without a text match counts as a match when its similarity reaches this. */
  minSemantic: number
  weights: RankingWeights
  fusion: Fusion
  halfLifeDays: number
  now: number
  offset: number
  limit: number
  /** When the filters already name the only possible entities (an FQAN or ID), just these. */
  only?: readonly string[]
  /**
   * What `filter` requires, as lists the engine keeps (given, they are the whole of `filter`): a
   * match holds `value` under `key`, or is one of `plus` (entities whose cards declare it). The
   * shortest can be the visit; a visit by the only one needs no `filter`.
   */
  capabilityConditions?: readonly CapabilityCondition[]
}

export interface CapabilityCondition {
  key: CapabilityKey
  value: string
  plus: readonly string[]
}

export interface EngineHit {
  doc: KeptDocument
  active: boolean
  score: number
  breakdown: ScoreBreakdown
}
