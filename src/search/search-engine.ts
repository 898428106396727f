/**
 * The local search engine: BM25F text index, vector index and the documents' filter facets, kept
 * in step with the store, and the ranking of one query. It knows entities only as documents;
 * the search service turns requests into queries and hits into results.
 */
import type { QueryTerm } from './analyzer.js'
import { combine, freshness, PHRASE_BONUS, round4, type RankingWeights, type ScoreBreakdown } from './ranking.js'
import { TextIndex, type FieldTokens } from './text-index.js'
import { FlatVectorIndex } from './vector-index.js'

export interface CapabilitySets {
  skills: ReadonlySet<string>
  protocols: ReadonlySet<string>
  languages: ReadonlySet<string>
  models: ReadonlySet<string>
}

/** What filters and ranking need of an entity, all lowercased where compared. */
export interface SearchDocument {
  entityId: string
  type: 'agent' | 'service'
  category: string
  tags: ReadonlySet<string>
  developerId: string | null
  active: boolean
  /** Registration time, ms (trust counts record age). */
  registeredAt: number
  /** Later of updated_at and last_heartbeat, ms. */
  lastChange: number
  capabilities: CapabilitySets
}

export interface EngineQuery {
  terms: readonly QueryTerm[]
  phrases: readonly (readonly string[])[]
  vector: Float32Array | null
  filter: (doc: SearchDocument) => boolean
  trust: (doc: SearchDocument) => number
  minTrust: number
  /** A document without a text match counts as a match when its similarity reaches this. */
  minSemantic: number
  weights: RankingWeights
  halfLifeDays: number
  now: number
  offset: number
  limit: number
}

export interface EngineHit {
  doc: SearchDocument
  score: number
  breakdown: ScoreBreakdown
}

export class SearchEngine {
  private readonly text = new TextIndex()
  private readonly vectors: FlatVectorIndex
  private readonly docs: (SearchDocument | undefined)[] = []
  private readonly slots = new Map<string, number>()
  private readonly free: number[] = []

  constructor(readonly dimension: number) {
    this.vectors = new FlatVectorIndex(dimension)
  }

  get size(): number { return this.slots.size }

  has(entityId: string): boolean { return this.slots.has(entityId) }

  /** Adds or replaces a document; the vector may follow later (embedding runs off the write path). */
  upsert(doc: SearchDocument, fields: FieldTokens, vector: Float32Array | null): void {
    this.remove(doc.entityId)
    const slot = this.free.pop() ?? this.docs.length
    this.docs[slot] = doc
    this.slots.set(doc.entityId, slot)
    this.text.add(slot, fields)
    if (vector) this.vectors.set(slot, vector)
  }

  setVector(entityId: string, vector: Float32Array): void {
    const slot = this.slots.get(entityId)
    if (slot !== undefined) this.vectors.set(slot, vector)
  }

  /** Updates what filters and ranking see without re-indexing text (status changes, heartbeats). */
  patch(entityId: string, change: Partial<Pick<SearchDocument, 'active' | 'lastChange'>>): void {
    const slot = this.slots.get(entityId)
    const doc = slot === undefined ? undefined : this.docs[slot]
    if (doc && slot !== undefined) this.docs[slot] = { ...doc, ...change }
  }

  remove(entityId: string): void {
    const slot = this.slots.get(entityId)
    if (slot === undefined) return
    this.text.remove(slot)
    this.vectors.remove(slot)
    this.docs[slot] = undefined
    this.slots.delete(entityId)
    this.free.push(slot)
  }

  search(q: EngineQuery): { hits: EngineHit[]; total: number } {
    const textScores = new Map<number, number>()
    if (q.terms.length > 0) {
      for (const hit of this.text.search(q.terms)) {
        let score = hit.score
        for (const phrase of q.phrases) if (this.text.hasPhrase(hit.slot, phrase)) score += PHRASE_BONUS
        textScores.set(hit.slot, score)
      }
    }
    const textQuery = q.terms.length > 0 || q.vector !== null
    const candidates: { slot: number; doc: SearchDocument; text: number; semantic: number }[] = []
    let maxText = 0
    const consider = (slot: number, doc: SearchDocument, text: number): void => {
      const semantic = q.vector ? Math.max(0, this.vectors.similarity(slot, q.vector)) : 0
      if (textQuery && text === 0 && semantic < q.minSemantic) return
      if (!q.filter(doc)) return
      candidates.push({ slot, doc, text, semantic })
      if (text > maxText) maxText = text
    }
    if (q.vector !== null || !textQuery) {
      // Semantic or filter-only: every document is a candidate (exact scan).
      for (let slot = 0; slot < this.docs.length; slot++) {
        const doc = this.docs[slot]
        if (doc) consider(slot, doc, textScores.get(slot) ?? 0)
      }
    } else {
      for (const [slot, text] of textScores) {
        const doc = this.docs[slot]
        if (doc) consider(slot, doc, text)
      }
    }
    const hits: EngineHit[] = []
    for (const c of candidates) {
      const trust = q.trust(c.doc)
      if (trust < q.minTrust) continue
      const breakdown: ScoreBreakdown = {
        text_relevance: round4(maxText > 0 ? c.text / maxText : 0),
        semantic_similarity: round4(c.semantic),
        trust_score: round4(trust),
        freshness: round4(freshness(c.doc.lastChange, q.now, q.halfLifeDays)),
        availability: c.doc.active ? 1 : 0
      }
      hits.push({ doc: c.doc, score: round4(combine(breakdown, q.weights)), breakdown })
    }
    hits.sort((a, b) => b.score - a.score || (a.doc.entityId < b.doc.entityId ? -1 : 1))
    return { hits: hits.slice(q.offset, q.offset + q.limit), total: hits.length }
  }
}
