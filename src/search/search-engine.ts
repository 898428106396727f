/**
 * The local search engine: BM25F text index, vector index and the documents' filter facets, kept
 * in step with the store, and the ranking of one query. It knows entities only as documents;
 * the search service turns requests into queries and hits into results.
 *
 * What every query reads per candidate lives in typed columns by slot (src/search/slot-columns.ts),
 * so the common filters and the ranking signals cost array reads, not object lookups. Category,
 * tag and developer filters also list their slots (src/search/candidate-slots.ts), so a filtered
 * query visits the shortest such list instead of every document; the rarer filters (capabilities)
 * run as a predicate. The ranking of the candidates is in src/search/rank-pass.ts.
 *
 * A removed document's slot is not reused until a sweep has dropped it from the postings and
 * lists (updates take a new slot), so no index ever attributes an old document's words to a new one.
 */
import { type Facet, FacetLists, union } from './candidate-slots.js'
import {
  type DocumentPatch,
  type EngineHit,
  type EngineQuery,
  keptDocument,
  type SearchDocument
} from './engine-query.js'
import { PHRASE_BONUS } from './ranking.js'
import { type LazySimilarity, rank } from './rank-pass.js'
import { SlotColumns } from './slot-columns.js'
import { TextIndex, type FieldTokens, type TextBest } from './text-index.js'
import { idOrder } from './top-k.js'
import { VectorIndex } from './vector-index.js'
import { type PhraseMatches, rankByImpact } from './walked-rank.js'
import { RecentWalks, type WalkedTerm } from './impact-walk.js'
import type { Postings } from './postings.js'
import { FRESH, type SnapshotReader, type SnapshotWriter } from '../util/snapshot-file.js'

export {
  CAPABILITY_KEYS,
  type CapabilityCondition,
  type CapabilityKey,
  type CapabilitySets,
  type DocumentPatch,
  type EngineHit,
  type EngineQuery,
  type KeptDocument,
  type SearchDocument,
  type TrustFormula
} from './engine-query.js'

/** Removed slots wait for a sweep until they are this many, or this share of the documents. */
const SWEEP_AT = 1024
const SWEEP_SHARE = 8
/**
 * A query without a shorter list visits every slot in order, rather than a list of its matches,
 * when they are more than this share of the slots: sequential reads beat building the list.
 */
const LISTED_SHARE = 1 / 8
/** Below this many slots a query's vector is compared with every document (see `search`). */
const FULL_SCAN_BELOW = 200_000
/**
 * A query reads its filter list's documents' words rather than its terms' posting lists when the
 * list's documents hold fewer words than this many times the postings: reading a document's word
 * costs more than skipping a posting outside the list (see SCORE_LISTED_BELOW). At a million
 * documents 0.5 beat 2 (a category and three common words: 60 ms against 17) and 0.25.
 */
const READ_DOCUMENTS_BELOW = 0.5
/**
 * The filter lists a visit does not cover are checked on marks by slot when they hold fewer slots
 * than this many times the visit: marking a slot costs far less than reading a document's tags.
 */
const MARK_BELOW = 20
/**
 * A query with a filter list scores its terms' postings for the list's documents only (marked by
 * slot) when the list holds fewer documents than this share of the postings: a mark costs two
 * writes, a posting left out saves its score's write, its listing and its reset.
 */
const SCORE_LISTED_BELOW = 1 / 2
/** How many text matches past the first page a query compares with its embedding, at most (about). */
const SEMANTIC_BUDGET = 4096
/**
 * A query without filters walks its posting lists by weight (see walked-rank.ts) from this many
 * postings on: below, scoring them all costs about a millisecond or less.
 */
const WALK_FROM = 32_768
/**
 * With three long lists or more, a walk's longest list must hold this many times the others'
 * postings: the bound of three common words falls slowly (at a million documents "ai service
 * code" walked took twice the time of scoring every match). Two long lists are always walked
 * unless the query quotes a phrase: over 20 pairs of common words at a million, a walk took 0.2–1.0
 * of the time of scoring every match, but 1.3 for one pair ("ai chat"); with a phrase's bonus
 * some pairs took 4 to 10 times as long ("api finance" quoted).
 */
const DOMINANT = 8
/**
 * A query with an embedding whose every phrase has its documents listed by pair of common words is
 * walked once they are this share of the similarity budget or more, however many lists are long:
 * at a million documents, pairs of 2,127–4,052 documents took 0.14–0.35 of the time of scoring
 * every match, one of 393 documents 1.4.
 */
const PAIRED_SHARE = 1 / 4
/** How many posting lists keep what a walk reads for the next one (see RecentWalks). */
const KEEP_WALKED = 16
/** How many posting lists keep their weights by slot for the next filtered query (4 MB each at a million). */
const KEEP_READ_BY_SLOT = 16

export class SearchEngine {
  private readonly text = new TextIndex()
  private readonly vectors: VectorIndex
  /** The documents, their columns and the query scratch space, by slot. */
  private readonly columns = new SlotColumns()
  private readonly facets = new FacetLists()
  private readonly slots = new Map<string, number>()
  private readonly free: number[] = []
  /** Removed slots, reusable after the next sweep. */
  private released: number[] = []
  private readonly recentWalks = new RecentWalks(KEEP_WALKED, KEEP_READ_BY_SLOT)

  /** From this many slots on, text queries take their candidates from the text matches only. */
  private readonly fullScanBelow: number
  private readonly semanticBudget: number
  private readonly walkFrom: number

  constructor(
    readonly dimension: number,
    options: { simd?: boolean; fullScanBelow?: number; semanticBudget?: number; walkFrom?: number } = {}
  ) {
    this.vectors = new VectorIndex(dimension, options)
    this.fullScanBelow = options.fullScanBelow ?? FULL_SCAN_BELOW
    this.semanticBudget = options.semanticBudget ?? SEMANTIC_BUDGET
    this.walkFrom = options.walkFrom ?? WALK_FROM
  }

  get size(): number {
    return this.slots.size
  }

  /** Whether the vector scan runs on WebAssembly SIMD. */
  get simd(): boolean {
    return this.vectors.simd
  }

  has(entityId: string): boolean {
    return this.slots.has(entityId)
  }

  /** Adds or replaces a document; the vector may follow later (embedding runs off the write path). */
  upsert(doc: SearchDocument, fields: FieldTokens, vector: Float32Array | null): void {
    this.remove(doc.entityId)
    const columns = this.columns
    const slot = this.free.pop() ?? columns.docs.length
    columns.ensure(slot + 1)
    columns.docs[slot] = keptDocument(doc)
    this.slots.set(doc.entityId, slot)
    columns.idKeys[slot] = idOrder(doc.entityId)
    columns.write(slot, doc)
    this.text.add(slot, fields)
    this.facets.add(slot, doc)
    if (vector) this.vectors.set(slot, vector)
  }

  setVector(entityId: string, vector: Float32Array): void {
    const slot = this.slots.get(entityId)
    if (slot !== undefined) this.vectors.set(slot, vector)
  }

  /** The document's vector as the index holds it (quantised), or null before it is embedded. */
  vectorOf(entityId: string): Float32Array | null {
    const slot = this.slots.get(entityId)
    return slot === undefined ? null : this.vectors.get(slot)
  }

  /** The document's analyzed fields as indexed (null: no such document). */
  fieldsOf(entityId: string): FieldTokens | null {
    const slot = this.slots.get(entityId)
    return slot === undefined ? null : this.text.fieldsOf(slot)
  }

  /** Whether the developer's part was set (or a document of theirs indexed). */
  knowsDeveloper(developerId: string): boolean {
    return this.columns.knowsDeveloper(developerId)
  }

  /** The part of trust that depends on the developer only (verified handle, profile), for all their documents. */
  setDeveloperPart(developerId: string, part: number): void {
    this.columns.setDeveloperPart(developerId, part, this.facets.byDeveloper)
  }

  /** Updates what filters and ranking see without re-indexing text (status changes, heartbeats). */
  patch(entityId: string, change: DocumentPatch): void {
    const slot = this.slots.get(entityId)
    if (slot !== undefined) this.columns.patch(slot, change)
  }

  remove(entityId: string): void {
    const slot = this.slots.get(entityId)
    if (slot === undefined) return
    this.text.remove(slot)
    this.vectors.remove(slot)
    this.columns.docs[slot] = undefined
    this.columns.flags[slot] = 0
    this.slots.delete(entityId)
    this.released.push(slot)
    if (this.released.length >= Math.max(SWEEP_AT, this.slots.size / SWEEP_SHARE)) this.sweep()
  }

  /** Fills up to `count` empty entries of the trust and static score caches (see SlotColumns.warm). */
  warmSignals(count: number, scan: number): number {
    return this.columns.warm(count, scan)
  }

  /** Builds the pairs of common words for quoted phrases now, when they are due (see TextIndex.preparePairs). */
  preparePhrasePairs(): boolean {
    return this.text.preparePairs(this.walkFrom)
  }

  /** How many times the pairs of common words were built. */
  get phrasePairBuilds(): number {
    return this.text.pairBuilds
  }

  /** Brings the text index's term weights up to date with the average field lengths (see TextIndex.refreshNorms). */
  reweigh(): void {
    this.text.refreshNorms()
  }

  /** Writes the engine (its documents, text and vector indexes, filter lists) under `prefix`. */
  save(out: SnapshotWriter, prefix: string): void {
    const slotCount = this.columns.docs.length
    this.columns.save(out, `${prefix}.columns`)
    this.text.save(out, `${prefix}.text`)
    this.vectors.save(out, `${prefix}.vectors`, slotCount)
    this.facets.save(out, `${prefix}.facets`)
    out.array(`${prefix}.free`, () => Uint32Array.from(this.free), FRESH)
    out.array(`${prefix}.released`, () => Uint32Array.from(this.released), FRESH)
  }

  /** Takes what `save` wrote under `prefix`, into an empty engine of the same dimension. */
  restore(input: SnapshotReader, prefix: string, intern: (value: string) => string): void {
    if (this.slots.size > 0 || this.columns.docs.length > 0) throw new Error('restore() needs an empty engine')
    this.columns.restore(input, `${prefix}.columns`, intern)
    const { docs } = this.columns
    for (let slot = 0; slot < docs.length; slot++) {
      const doc = docs[slot]
      if (doc) this.slots.set(doc.entityId, slot)
    }
    this.text.restore(input, `${prefix}.text`)
    this.vectors.restore(input, `${prefix}.vectors`)
    this.facets.restore(input, `${prefix}.facets`)
    // A loop, not push(...array): a million freed slots would overflow the stack as arguments.
    for (const slot of input.array(`${prefix}.free`, Uint32Array)) this.free.push(slot)
    this.released = [...input.array(`${prefix}.released`, Uint32Array)]
  }

  /** Calls `visit` with each document's entity and slot. */
  forEachEntity(visit: (entityId: string, slot: number) => void): void {
    for (const [entityId, slot] of this.slots) visit(entityId, slot)
  }

  /** The entity whose document is at `slot`, if any. */
  entityAt(slot: number): string | undefined {
    return this.columns.docs[slot]?.entityId
  }

  /** Slots in use or freed so far (a slot-indexed array this long covers every document). */
  get slotCount(): number {
    return this.columns.docs.length
  }

  /** Sets every document's transitive trust to 0 (before the scores are computed again). */
  clearTransitive(): void {
    const { docs, transitive } = this.columns
    for (let slot = 0; slot < docs.length; slot++)
      if (transitive[slot] !== 0 && docs[slot] !== undefined) this.columns.patch(slot, { transitive: 0 })
  }

  /** Drops removed documents from the postings and slot lists, which frees their slots. */
  private sweep(): void {
    this.text.sweep()
    this.facets.sweep(this.columns.docs)
    for (const slot of this.released) this.free.push(slot)
    this.released = []
  }

  /**
   * Ranks the matches of a query. A first pass visits the candidate slots (the text hits of a
   * keyword-only query; every slot when there is a vector or no text), applies the filters and
   * computes trust; a second scores the survivors and keeps the best `offset + limit` in a heap.
   * Only the returned page gets a full breakdown.
   *
   * From `fullScanBelow` slots on, a query with words and a vector (weighted fusion) does not
   * compare the vector with every document: its candidates are its text matches (read through the
   * filter list when that is shorter), and only those that can reach the page are compared, within
   * a budget (the full comparison cost 8 ms at a million documents, whatever the words). It still
   * compares every document when its text matches do not fill the page, so a query that shares few
   * words with the index finds documents by similarity alone.
   *
   * A query without filters whose words fill long posting lists (see walkedTerms) reads neither
   * every match nor every slot: its lists are walked from their highest weights down until no
   * document left can reach the page (src/search/walked-rank.ts).
   */
  search(q: EngineQuery): { hits: EngineHit[]; total: number } {
    const columns = this.columns
    const slotCount = columns.docs.length
    const { textScores, termMasks } = columns
    let touched = columns.touched.subarray(0, 0)
    const best: TextBest = { slot: -1, score: 0 }
    // Whether only the filter list's documents were scored: every text match is then one of them,
    // and holds what the list covers.
    let inList = false
    try {
      const walked = this.walkedTerms(q, slotCount)
      if (walked !== null) {
        const similarity = q.vector === null ? null : this.lazySimilarity(q.vector, slotCount)
        const { terms, candidates } = walked
        const phraseMatches: PhraseMatches | null =
          q.phrases.length === 0
            ? null
            : match => {
                q.phrases.forEach((phrase, p) => {
                  const listed = candidates[p]
                  if (listed) this.text.forEachCandidateMatch(phrase, listed, match)
                  else this.text.forEachPhraseMatch(phrase, match, termMasks, 0)
                })
              }
        const { hits, total, walk } = rankByImpact(columns, q, terms, this.text.alive, similarity, phraseMatches)
        touched = walk.visited.subarray(0, walk.count)
        return { hits, total }
      }
      // A query with words and a filter list: reading the words of the list's documents can cost
      // less than reading the terms' posting lists (a common word and a tag).
      const facetFirst = q.terms.length > 0 ? this.facets.slotsToVisit(q, null, this.slots, columns.docs) : null
      const postings = facetFirst?.visit != null ? this.text.postingsOf(q.terms) : 0
      const readDocuments =
        facetFirst?.visit != null &&
        facetFirst.visit.length * this.text.averageSequence < READ_DOCUMENTS_BELOW * postings
      const phraseBonus = (slot: number): void => {
        if (textScores[slot] === 0) return
        textScores[slot] = (textScores[slot] as number) + PHRASE_BONUS
        if ((textScores[slot] as number) > best.score) {
          best.slot = slot
          best.score = textScores[slot] as number
        }
      }
      if (readDocuments) {
        const { visit } = facetFirst as { visit: ArrayLike<number> }
        const scored = this.text.searchListed(q.terms, visit, textScores, columns.touched, best, q.phrases, phraseBonus)
        touched = columns.touched.subarray(0, scored)
        inList = true
      } else if (q.terms.length > 0) {
        // A phrase of common words has its documents listed by pair (see phraseCandidates); another
        // reads its rarest word's list, checked first on the term masks.
        const phraseLists = q.phrases.map(phrase => this.text.phraseCandidates(phrase, this.walkFrom))
        const masks = phraseLists.includes(null) ? termMasks : null
        // Only the filter list's documents can match: the others are not scored (nor cleared after).
        const only =
          masks === null && facetFirst?.visit != null && facetFirst.visit.length < postings * SCORE_LISTED_BELOW
            ? facetFirst.visit
            : null
        inList = only !== null
        const marks = columns.facetMarks
        if (only !== null) {
          // A list much longer than the filter list is read at the list's slots (posting-scores.ts).
          for (let i = 0; i < only.length; i++) marks[only[i] as number] = 1
          for (const list of this.text.listsWeighedBySlot(q.terms, only.length, this.walkFrom))
            this.recentWalks.prepareBySlot(list, this.text.slotCapacity)
        }
        try {
          const scored = this.text.search(q.terms, textScores, columns.touched, best, masks, only && marks, only)
          touched = columns.touched.subarray(0, scored)
        } finally {
          if (only !== null) for (let i = 0; i < only.length; i++) marks[only[i] as number] = 0
        }
        // Every phrase word is a query term, so a match is already scored (> 0).
        q.phrases.forEach((phrase, p) => {
          const listed = phraseLists[p]
          if (listed) this.text.forEachCandidateMatch(phrase, listed, phraseBonus)
          else this.text.forEachPhraseMatch(phrase, phraseBonus, termMasks, phraseBits(q.terms, phrase))
        })
      }
      const listed =
        inList && facetFirst !== null ? facetFirst : this.facets.slotsToVisit(q, touched, this.slots, columns.docs)
      const covered = listed.covered
      let visit = listed.visit
      const vector = q.vector
      if (vector === null) return this.rank(q, best, touched, inList ? touched : visit, covered, null)
      const page = q.offset + q.limit
      // Before a filter list is compared in full: at a million documents a list of a tenth of them
      // cost 5–10 ms of comparisons, where the page needs those of a few hundred text matches.
      if (slotCount >= this.fullScanBelow && q.fusion === 'weighted' && touched.length >= page) {
        const similarity = this.lazySimilarity(vector, slotCount)
        // Only text matches are admitted: the text matches, or the filter list when shorter.
        const textFirst =
          visit === null || touched.length < visit.length
            ? this.rank(q, best, touched, touched, inList ? covered : null, null, similarity)
            : this.rank(q, best, touched, visit, covered, null, similarity)
        if (textFirst.total >= page) return textFirst
      }
      if (visit !== null && visit.length * 4 < slotCount)
        return this.rank(q, best, touched, visit, covered, this.vectors.scanSlots(vector, visit, slotCount))
      const scanned = this.vectors.scanAbove(vector, slotCount, q.minSemantic)
      // No shorter list: the candidates are the text matches and the documents similar enough,
      // listed when they are few.
      if (visit === null && touched.length + scanned.above.length < slotCount * LISTED_SHARE)
        visit = union(touched, scanned.above, textScores, columns.visitBuffer)
      return this.rank(q, best, touched, visit, covered, scanned.similarities)
    } finally {
      for (let i = 0; i < touched.length; i++) textScores[touched[i] as number] = 0
      if (q.phrases.length > 0) for (let i = 0; i < touched.length; i++) termMasks[touched[i] as number] = 0
    }
  }

  /** The query's similarities with the documents, compared on demand (see rank-pass.ts). */
  private lazySimilarity(vector: Float32Array, slotCount: number): LazySimilarity {
    return { of: slots => this.vectors.scanSlots(vector, slots, slotCount), budget: this.semanticBudget }
  }

  /**
   * The terms of a query ranked by a walk of its long posting lists (see walked-rank.ts): one with
   * words, no filter and no trust bound (every match then counts in the total), an embedding
   * compared with its text matches only (see `search`) or none, a list of `walkFrom` postings or
   * more, at most two such lists or one that is most of their postings (see DOMINANT) unless its
   * phrases' documents fill the page or budget, and for each quoted phrase (a match adds a bonus
   * the walk's bound does not hold) a word of a shorter list or its documents listed by pair of
   * common words (`candidates`, by phrase; null for the former). Null: no walk.
   */
  private walkedTerms(
    q: EngineQuery,
    slotCount: number
  ): { terms: WalkedTerm[]; candidates: (Uint32Array | null)[] } | null {
    const plain =
      q.terms.length > 0 &&
      !q.only &&
      q.type === null &&
      q.active === null &&
      q.category == null &&
      !q.tags?.length &&
      q.developerId == null &&
      q.filter === null &&
      !q.capabilityConditions?.length &&
      q.minTrust <= 0 &&
      (q.vector === null || (q.fusion === 'weighted' && slotCount >= this.fullScanBelow)) &&
      this.text.postingsOf(q.terms) >= this.walkFrom
    if (!plain) return null
    const terms = this.text.impactTerms(q.terms, this.walkFrom)
    const long = terms.filter(term => term.long).map(({ list }) => list)
    let longest = long[0]
    for (const list of long) if (list.length > (longest as Postings).length) longest = list
    if (longest === undefined || longest.df < q.offset + q.limit) return null
    // The first page must be full of text matches (above), or an embedding finds the rest (see `search`).
    let others = 0
    for (const list of long) if (list !== longest) others += list.length
    // A phrase's matches are met before the walk: through its word of a short list (its documents read
    // whole), or the documents listed under its pairs of common words.
    const candidates: (Uint32Array | null)[] = []
    let phraseDocuments = 0
    for (const phrase of q.phrases) {
      if (this.text.shortestList(phrase) < this.walkFrom) {
        candidates.push(null)
        continue
      }
      const listed = this.text.phraseCandidates(phrase, this.walkFrom)
      if (listed === null) return null
      candidates.push(listed)
      phraseDocuments += listed.length
    }
    // Beside a phrase's bonus the other matches' text scores are nearly 0: when its documents fill the
    // page, or the similarity budget, the walk stops at once, however many lists are long. With an
    // embedding, a good share of the budget already makes a page no other document can reach
    // (see pageReach in walked-rank.ts).
    const needed = q.vector === null ? q.offset + q.limit : this.semanticBudget + 1
    const phrasesFill =
      phraseDocuments >= needed ||
      (q.vector !== null && !candidates.includes(null) && phraseDocuments >= needed * PAIRED_SHARE)
    const fewLists = long.length <= 2 && q.phrases.length === 0
    if (!phrasesFill && !fewLists && others * DOMINANT > longest.length) return null
    // Weights by slot: for the documents met before the walk, and those a walk of several lists meets.
    const bySlot = terms.length > 1 || q.phrases.length > 0
    for (const list of long) if (!this.recentWalks.prepare(list, bySlot, this.text.slotCapacity)) return null
    return { terms, candidates }
  }

  /**
   * rank(), with the filter lists the visit does not cover checked on marks by slot (each of their
   * slots counted in `facetMarks`) when marking them costs less than reading the visited documents.
   */
  private rank(
    q: EngineQuery,
    best: TextBest,
    touched: Int32Array,
    visit: ArrayLike<number> | null,
    covered: Facet | null,
    semantic: Float32Array | null,
    similarity: LazySimilarity | null = null
  ): { hits: EngineHit[]; total: number } {
    const columns = this.columns
    const lists = this.facets.uncovered(q, covered)
    let listed = 0
    for (const list of lists) listed += list.length
    const visited = visit?.length ?? columns.docs.length
    if (lists.length === 0 || lists.length > 255 || listed > MARK_BELOW * visited)
      return rank(columns, q, best, touched, visit, covered, semantic, similarity)
    const marks = columns.facetMarks
    for (const list of lists)
      for (let i = 0; i < list.length; i++) {
        const slot = list[i] as number
        marks[slot] = (marks[slot] as number) + 1
      }
    const need = lists.length
    try {
      return rank(columns, q, best, touched, visit, covered, semantic, similarity, slot => marks[slot] === need)
    } finally {
      for (const list of lists) for (let i = 0; i < list.length; i++) marks[list[i] as number] = 0
    }
  }
}

/** The term-mask bits (see TextIndex.search) a document holding every word of `phrase` has. */
function phraseBits(terms: EngineQuery['terms'], phrase: readonly string[]): number {
  let bits = 0
  for (const word of phrase) {
    const j = terms.findIndex(({ term }) => term === word)
    if (j >= 0 && j < 32) bits |= 1 << j
  }
  return bits
}
