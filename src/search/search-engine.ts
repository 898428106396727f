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
  /** When the filters already name the only possible entities (an FQAN or ID), just these. */
  only?: readonly string[]
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
  /** Trust of the current query's candidates, by slot (reused between queries). */
  private trustOf = new Float32Array(1024)

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
    if (vector) this.setSlotVector(slot, vector)
  }

  setVector(entityId: string, vector: Float32Array): void {
    const slot = this.slots.get(entityId)
    if (slot !== undefined) this.setSlotVector(slot, vector)
  }

  private setSlotVector(slot: number, vector: Float32Array): void {
    this.vectors.set(slot, vector)
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

  /**
   * Ranks the matches of a query. A first, numeric pass scores every candidate into typed arrays
   * and keeps the best `offset + limit` in a heap; only those get a full breakdown.
   */
  search(q: EngineQuery): { hits: EngineHit[]; total: number } {
    const slotCount = this.docs.length
    if (this.trustOf.length < slotCount) this.trustOf = new Float32Array(Math.max(slotCount, this.trustOf.length * 2))
    const trustOf = this.trustOf
    const text = new Float32Array(slotCount)
    const textSlots: number[] = []
    if (q.terms.length > 0) {
      for (const hit of this.text.search(q.terms)) {
        let score = hit.score
        for (const phrase of q.phrases) if (this.text.hasPhrase(hit.slot, phrase)) score += PHRASE_BONUS
        text[hit.slot] = score
        textSlots.push(hit.slot)
      }
    }
    // Similarities are computed only for documents that pass the filters (they are the costly part).
    const semantic: Float32Array | null = q.vector ? new Float32Array(slotCount) : null
    const textQuery = q.terms.length > 0 || q.vector !== null
    // Candidates: documents matching the text or close enough in meaning (or every document for a filter-only query).
    const candidates: number[] = []
    let maxText = 0
    // Keyword-only queries visit their text hits; semantic and filter-only queries every slot.
    const only = q.only?.flatMap(id => { const slot = this.slots.get(id); return slot === undefined ? [] : [slot] })
    const visit = only ?? (q.vector === null && textQuery ? textSlots : null)
    const count = visit ? visit.length : slotCount
    for (let i = 0; i < count; i++) {
      const slot = visit ? (visit[i] as number) : i
      const doc = this.docs[slot]
      if (!doc || !q.filter(doc)) continue
      const t = text[slot] as number
      if (semantic && q.vector) semantic[slot] = this.vectors.similarity(slot, q.vector)
      if (textQuery && t === 0 && (semantic === null || (semantic[slot] as number) < q.minSemantic)) continue
      const trust = q.trust(doc)
      if (trust < q.minTrust) continue
      candidates.push(slot)
      trustOf[slot] = trust
      if (t > maxText) maxText = t
    }
    const w = q.weights
    const k = q.offset + q.limit
    const heap = new TopK(k)
    for (const slot of candidates) {
      const doc = this.docs[slot] as SearchDocument
      const score =
        w.text * (maxText > 0 ? (text[slot] as number) / maxText : 0) +
        w.semantic * Math.max(0, semantic ? (semantic[slot] as number) : 0) +
        w.trust * (trustOf[slot] as number) +
        w.freshness * freshness(doc.lastChange, q.now, q.halfLifeDays) +
        w.availability * (doc.active ? 1 : 0)
      heap.offer(slot, score, doc.entityId)
    }
    const hits: EngineHit[] = heap.sorted().slice(q.offset).map(({ slot }) => {
      const doc = this.docs[slot] as SearchDocument
      const breakdown: ScoreBreakdown = {
        text_relevance: round4(maxText > 0 ? (text[slot] as number) / maxText : 0),
        semantic_similarity: round4(Math.max(0, semantic ? (semantic[slot] as number) : 0)),
        trust_score: round4(trustOf[slot] as number),
        freshness: round4(freshness(doc.lastChange, q.now, q.halfLifeDays)),
        availability: doc.active ? 1 : 0
      }
      return { doc, score: round4(combine(breakdown, q.weights)), breakdown }
    })
    return { hits, total: candidates.length }
  }
}

/** The k best (score descending, entity ID ascending on ties) of a stream, in a binary min-heap. */
class TopK {
  private readonly items: { slot: number; score: number; id: string }[] = []
  constructor(private readonly k: number) {}

  private worse(a: { score: number; id: string }, b: { score: number; id: string }): boolean {
    return a.score < b.score || (a.score === b.score && a.id > b.id)
  }

  offer(slot: number, score: number, id: string): void {
    if (this.k <= 0) return
    const h = this.items
    const item = { slot, score, id }
    if (h.length < this.k) {
      h.push(item)
      let i = h.length - 1
      while (i > 0) {
        const p = (i - 1) >> 1
        if (!this.worse(h[i] as typeof item, h[p] as typeof item)) break
        ;[h[i], h[p]] = [h[p] as typeof item, h[i] as typeof item]
        i = p
      }
      return
    }
    if (!this.worse(h[0] as typeof item, item)) return
    h[0] = item
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = i
      if (l < h.length && this.worse(h[l] as typeof item, h[m] as typeof item)) m = l
      if (r < h.length && this.worse(h[r] as typeof item, h[m] as typeof item)) m = r
      if (m === i) break
      ;[h[i], h[m]] = [h[m] as typeof item, h[i] as typeof item]
      i = m
    }
  }

  sorted(): { slot: number; score: number; id: string }[] {
    return [...this.items].sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
  }
}
