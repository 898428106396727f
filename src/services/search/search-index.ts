/**
 * Where the search engine runs, behind one interface: on the HTTP thread (`LocalSearchIndex`) or
 * in a worker thread fed by the write stream (`WorkerSearchIndex`, src/services/search/search-worker-index.ts,
 * the default). Changes are fire-and-forget and applied in the order they were made; a query is
 * answered after every change made before it, so a search right after an acknowledged write sees it.
 *
 * What crosses the thread boundary is plain data (structured clone): documents and their text
 * (analyzed on the index's side, where the query expander and the home term summary are fed too),
 * vectors, queries whose trust formula and capability filter are named by data, not closures, and
 * back, each build of the home term filter.
 */
import { ANALYZER_FINGERPRINT, analyze } from '../../search/analyzer.js'
import { HashEmbedder } from '../../search/embedders/hash-embedder.js'
import { QueryExpander } from '../../search/query-expansion.js'
import type { ScoreBreakdown } from '../../search/ranking.js'
import {
  CAPABILITY_KEYS,
  type CapabilityCondition,
  type CapabilityKey,
  type DocumentPatch,
  type EngineQuery,
  type KeptDocument,
  SearchEngine,
  type SearchDocument
} from '../../search/search-engine.js'
import type { FieldTokens } from '../../search/text-index.js'
import type { TermFilterMessage } from '../../wire/federation.js'
import { type HomeFields, HomeTermSummary, type HomeTermsLogger } from './home-terms.js'
import { fastTrust } from '../registry/trust.js'
import { Interner } from '../../util/interner.js'
import { NODE_VERSION } from '../../version.js'
import { FRESH, SnapshotAborted, SnapshotReader, SnapshotUnreadable, SnapshotWriter } from '../../util/snapshot-file.js'

export { CAPABILITY_KEYS, type CapabilityKey }
export type CapabilityValues = Partial<Record<CapabilityKey, readonly string[]>>

/** A record's searchable text as stored: the index analyzes it, on its own thread. */
export interface DocumentText {
  name: string
  tags: readonly string[]
  category: string
  summary: string
  capabilities: readonly string[]
}

export function analyzeText(text: DocumentText): FieldTokens {
  return {
    name: analyze(text.name),
    tags: text.tags.flatMap(analyze),
    category: analyze(text.category),
    summary: analyze(text.summary),
    capabilities: text.capabilities.flatMap(analyze)
  }
}

/** What the embedder reads of a record: the same text the index analyses, as one string. */
export function embeddingText(t: DocumentText): string {
  return [t.name, t.category, t.tags.join(' '), t.summary, t.capabilities.join(' ')].join('. ')
}

/**
 * What analyze() makes of embeddingText(text), taken from the index's own analysis of the record
 * instead of analyzing the text a second time (the separators are not word characters, so the
 * tokens are the fields' tokens in that order).
 */
export function embeddingTokens(fields: FieldTokens): string[] {
  return [...fields.name, ...fields.category, ...fields.tags, ...fields.summary, ...fields.capabilities]
}

/** What an index is built with, on whichever thread it runs. */
export interface IndexOptions {
  dimension: number
  /**
   * 'hash': the index embeds each record itself with the hash embedder (a pure function of the text
   * it already analyzes), so no vector is made on the HTTP thread or copied to the worker; null:
   * vectors arrive as 'vector' changes from the node's embedder.
   */
  embedding: 'hash' | null
  /** Add the indexed records' words nearest a query's words to it (src/search/query-expansion.ts). */
  queryExpansion: boolean
  /** From this many entities on, text queries take their candidates from their text matches (SearchEngine). */
  fullScanBelow: number
  /** The summary of home terms peers route by: what makes a record home, and how its filter is built. */
  homeTerms: { registryId: string; host: string; falsePositiveRate: number; rebuildIntervalMs: number }
  /**
   * Whether this index summarizes the home terms and builds their filter (default true). A replica
   * that only answers queries (ReplicatedSearchIndex) does not.
   */
  summarizeHome?: boolean
}

/** One change to the index, in the order the store committed it. */
export type IndexChange =
  | { op: 'upsert'; doc: SearchDocument; text: DocumentText; home: HomeFields }
  | { op: 'vector'; entityId: string; vector: Float32Array }
  | { op: 'developer'; developerId: string; part: number }
  | { op: 'patch'; entityId: string; change: DocumentPatch }
  | { op: 'remove'; entityId: string }
  /**
   * A load of the whole store begins (at start, or after a lost worker): until 'home-filter',
   * records are indexed for text and filters only; their vectors and home terms follow.
   */
  | { op: 'bulk-load' }
  /**
   * Build the home term filter (after the initial load, once its deferred work is done); later
   * changes rebuild it on their own.
   */
  | { op: 'home-filter' }

/**
 * Capability filters: every wanted value must be held by the record's capability_summary or
 * declared by the entity's card (`declared`: what fresh cached cards declare of the wanted values,
 * by entity; the cards live on the HTTP thread).
 */
export interface CapabilityFilter {
  wanted: CapabilityValues
  declared: Record<string, CapabilityValues>
}

/** An engine query as data: trust is always the node's formula (fastTrust). */
export interface IndexQuery extends Omit<EngineQuery, 'trust' | 'filter' | 'capabilityConditions'> {
  capabilities: CapabilityFilter | null
}

export interface IndexHit {
  entityId: string
  active: boolean
  score: number
  breakdown: ScoreBreakdown
}

export interface IndexAnswer {
  hits: IndexHit[]
  total: number
}

export interface SearchIndex {
  /** Fire-and-forget; each build of the home term filter is handed to the index's `onFilter`. */
  apply(change: IndexChange): void
  search(query: IndexQuery): Promise<IndexAnswer>
  /** The number of documents, once every change made before the call is applied. */
  settled(): Promise<number>
  /**
   * Writes the index to a snapshot file (IndexedEngine.save), after the changes made before; its
   * size in bytes, or null when it was given up because the index changed meanwhile.
   */
  save(path: string, meta: SnapshotMeta): Promise<number | null>
  /** Fills the empty index from a snapshot file (IndexedEngine.restore); its documents. Rejects when it does not fit. */
  restore(path: string, meta: SnapshotMeta): Promise<number>
  /** After a restore, once the node has loaded: an index with several threads fills the others (ReplicatedSearchIndex). */
  restoreOthers?(): void
  /** Before a build that snapshots will follow: an index with several threads builds its first alone (ReplicatedSearchIndex). */
  buildFirstOnly?(): void
  close(): Promise<void>
}

/** Whether `list` holds every one of `values` (a loop: this runs once per candidate document). */
function holdsAll(list: readonly string[], values: readonly string[]): boolean {
  for (let i = 0; i < values.length; i++) if (!list.includes(values[i] as string)) return false
  return true
}

/**
 * Records of a bulk load completed per turn of the index's thread: about 25 µs each at 1M, so a
 * query waits at most about 12 ms behind them.
 */
const DEFERRED_PER_TURN = 500

/** Slots whose deferred work a snapshot notes in one turn. */
const WAITS_PER_STEP = 20_000

/**
 * The engine's trust and static score caches are filled this often, this many empty entries at a
 * time (reading at most WARM_SCAN_PER_TICK slots): about 5 ms a tick while a million are empty
 * after a start, a tenth of that once they are full.
 */
const WARM_EVERY_MS = 250
/**
 * The pairs of common words for quoted phrases are built when the index has had no query and no
 * change for this long, rather than at the first phrase that needs them (about 1 s at a million).
 */
const PAIRS_AFTER_QUIET_MS = 1000
const WARM_PER_TICK = 50_000
const WARM_SCAN_PER_TICK = 200_000

/**
 * The engine and what belongs with it on its thread: the analysis of each record, the query
 * expander and the home term summary (both fed by that analysis), one copy of each repeated
 * string, the last weights seen.
 */
export class IndexedEngine {
  readonly engine: SearchEngine
  private readonly expander: QueryExpander | null
  private readonly homeTerms: HomeTermSummary | null
  /** One copy of each filter value however many documents carry it (categories, tags and capabilities repeat a lot). */
  private readonly interned = new Interner()
  /**
   * The engine caches trust and the static score part per weights object (by identity); a query
   * that crossed threads carries a fresh copy, so equal weights are mapped back to the last object.
   */
  private weights: EngineQuery['weights'] | null = null
  private readonly embedder: HashEmbedder | null
  /** The vector of the record being indexed (the engine keeps a quantised copy). */
  private readonly vector: Float32Array
  /** While a bulk load runs ('bulk-load' until 'home-filter'). */
  private bulk = false
  /** Records still without their vector or home terms (a bulk load, a restored snapshot): entity → what they wait for. */
  private readonly deferred = new Map<string, number>()
  private completing: NodeJS.Immediate | null = null
  /** The snapshot being written: any change but a patch (which a restore applies again) spoils it. */
  private saving: { spoiled: boolean } | null = null
  private readonly registryId: string
  private readonly host: string
  /** Fills the engine's empty trust caches between queries (see SearchEngine.warmSignals), and builds the phrase pairs when quiet. */
  private readonly warming: NodeJS.Timeout
  /** When the last query or change came (performance.now()). */
  private lastActivity = 0

  constructor(options: IndexOptions, onFilter: (message: TermFilterMessage) => void, logger: HomeTermsLogger) {
    this.engine = new SearchEngine(options.dimension, { fullScanBelow: options.fullScanBelow })
    this.embedder = options.embedding === 'hash' ? new HashEmbedder(options.dimension) : null
    this.vector = new Float32Array(this.embedder ? options.dimension : 0)
    this.expander = options.queryExpansion ? new QueryExpander() : null
    this.homeTerms = options.summarizeHome === false ? null : new HomeTermSummary({ ...options.homeTerms, logger })
    this.registryId = options.homeTerms.registryId
    this.host = options.homeTerms.host
    this.warming = setInterval(() => {
      this.engine.warmSignals(WARM_PER_TICK, WARM_SCAN_PER_TICK)
      if (performance.now() - this.lastActivity >= PAIRS_AFTER_QUIET_MS && this.deferred.size === 0)
        this.engine.preparePhrasePairs()
    }, WARM_EVERY_MS)
    this.warming.unref()
    const { homeTerms } = this
    homeTerms?.subscribe(() => {
      const message = homeTerms.current()
      if (message) onFilter(message)
    })
  }

  apply(change: IndexChange): void {
    this.lastActivity = performance.now()
    const { engine } = this
    if (this.saving !== null && change.op !== 'patch') this.saving.spoiled = true
    switch (change.op) {
      case 'upsert': {
        const fields = analyzeText(change.text)
        this.expander?.addDocument(fields)
        const doc = this.internDocument(change.doc)
        if (this.bulk) {
          engine.upsert(doc, fields, null)
          this.deferred.set(doc.entityId, EMBED | (this.homeTerms?.isHome(change.home) ? HOME : 0))
          return
        }
        if (this.deferred.size > 0) this.deferred.delete(doc.entityId)
        engine.upsert(doc, fields, this.embedder?.embedTokens(embeddingTokens(fields), this.vector) ?? null)
        this.homeTerms?.update(change.home, fields)
        return
      }
      case 'vector':
        engine.setVector(change.entityId, change.vector)
        return
      case 'developer':
        engine.setDeveloperPart(this.interned.intern(change.developerId), change.part)
        return
      case 'patch':
        engine.patch(change.entityId, change.change)
        return
      case 'remove':
        this.deferred.delete(change.entityId)
        engine.remove(change.entityId)
        this.homeTerms?.remove(change.entityId)
        return
      case 'bulk-load':
        this.bulk = true
        return
      case 'home-filter':
        this.bulk = false
        // The loaded records moved the average field lengths: reweigh the postings now rather than
        // in the first query (about a second at a million records).
        this.engine.reweigh()
        // A completion under way builds the filter when it ends.
        if (!this.completing) this.completeDeferred()
    }
  }

  /**
   * Gives the records of a bulk load their vectors and home terms, DEFERRED_PER_TURN at a time with
   * turns between for queries and changes, then builds the home term filter. Their fields are read
   * back from the text index: analyzing the text again would cost as much as the work deferred.
   */
  private completeDeferred = (): void => {
    this.completing = null
    if (this.saving !== null) this.saving.spoiled = true
    let done = 0
    for (const [entityId, waits] of this.deferred) {
      this.deferred.delete(entityId)
      const fields = this.engine.fieldsOf(entityId)
      if (!fields) continue
      if (this.embedder && waits & EMBED)
        this.engine.setVector(entityId, this.embedder.embedTokens(embeddingTokens(fields), this.vector))
      if (waits & HOME) this.homeTerms?.updateHome(entityId, fields)
      if (++done === DEFERRED_PER_TURN) break
    }
    if (this.deferred.size > 0) this.completing = setImmediate(this.completeDeferred)
    else this.homeTerms?.rebuild()
  }

  /**
   * Writes the index to `path` (see src/services/search/search-snapshot.ts), with `meta` and what
   * the index itself was built with, a slice at a time between queries. A change other than a
   * patch (statuses and liveness, which a restore applies again from the store) meanwhile gives the
   * snapshot up (null): a later one is written instead. The home term summary is not
   * written: the restore marks the home records, whose terms are read back from the text index as
   * after a bulk load.
   */
  save(path: string, meta: SnapshotMeta): Promise<number | null> {
    if (this.saving !== null) return Promise.reject(new Error('a snapshot is already being written'))
    const saving = { spoiled: false }
    this.saving = saving
    const out = new SnapshotWriter()
    this.engine.save(out, 'engine')
    this.expander?.save(out, 'expander')
    // What each slot's record still waits for: its vector, or (a home record) its terms in the home term summary.
    const slots = this.engine.slotCount
    const waits = new Uint8Array(slots)
    for (let from = 0; from < slots; from += WAITS_PER_STEP)
      out.step(() => {
        for (let slot = from; slot < Math.min(slots, from + WAITS_PER_STEP); slot++) {
          const entityId = this.engine.entityAt(slot)
          if (entityId !== undefined)
            waits[slot] = (this.deferred.get(entityId) ?? 0) | (this.homeTerms?.has(entityId) ? HOME : 0)
        }
      })
    out.array('deferred', waits, FRESH)
    return out
      .finish(path, { ...meta, ...this.builtWith }, () => saving.spoiled)
      .catch((err: unknown) => {
        if (err instanceof SnapshotAborted) return null
        throw err
      })
      .finally(() => {
        this.saving = null
      })
  }

  /**
   * Fills this empty index from the snapshot at `path` when it was written with `meta` and this
   * index's settings (SnapshotUnreadable when not, or unreadable: the index is then unusable and
   * is replaced). Transitive trust starts at 0, as in a build: its scores are computed again.
   */
  restore(path: string, meta: SnapshotMeta): number {
    const input = new SnapshotReader(path)
    try {
      const expected = JSON.stringify({ ...meta, ...this.builtWith })
      if (JSON.stringify(input.meta) !== expected)
        throw new SnapshotUnreadable(`written for ${JSON.stringify(input.meta)}, not ${expected}`)
      this.engine.restore(input, 'engine', value => this.interned.intern(value))
      this.engine.clearTransitive()
      this.expander?.restore(input, 'expander')
      const waits = input.array('deferred', Uint8Array)
      this.engine.forEachEntity((entityId, slot) => {
        if (waits[slot]) this.deferred.set(entityId, waits[slot] as number)
      })
      return this.engine.size
    } finally {
      input.close()
    }
  }

  /** What a snapshot must have been written with besides the store's state. */
  private get builtWith(): Record<string, string | number | boolean | null> {
    return {
      // Another version may index differently (fields, weights, stems): its snapshot is built over.
      version: NODE_VERSION,
      analyzer: ANALYZER_FINGERPRINT,
      dimension: this.engine.dimension,
      embedding: this.embedder ? 'hash' : null,
      words: this.expander?.wordsId ?? null,
      registryId: this.registryId,
      host: this.host
    }
  }

  search(query: IndexQuery): IndexAnswer {
    this.lastActivity = performance.now()
    const { capabilities, ...rest } = query
    // Quotes ask for the exact words: a query with a quoted phrase is not expanded.
    const terms =
      this.expander && rest.phrases.length === 0
        ? this.expander.expand({ terms: [...rest.terms], phrases: [], raw: '' }).terms
        : rest.terms
    const { hits, total } = this.engine.search({
      ...rest,
      terms,
      weights: this.sameWeights(query.weights),
      trust: fastTrust,
      filter: capabilities ? capabilityPredicate(capabilities) : null,
      ...(capabilities ? { capabilityConditions: capabilityConditions(capabilities) } : {})
    })
    return {
      hits: hits.map(h => ({ entityId: h.doc.entityId, active: h.active, score: h.score, breakdown: h.breakdown })),
      total
    }
  }

  close(): void {
    clearInterval(this.warming)
    if (this.completing) clearImmediate(this.completing)
    this.homeTerms?.stop()
  }

  private sameWeights(weights: EngineQuery['weights']): EngineQuery['weights'] {
    const last = this.weights
    if (
      last !== null &&
      last.text === weights.text &&
      last.semantic === weights.semantic &&
      last.trust === weights.trust &&
      last.freshness === weights.freshness &&
      last.availability === weights.availability
    )
      return last
    this.weights = weights
    return weights
  }

  private internDocument(doc: SearchDocument): SearchDocument {
    const list = (values: readonly string[]): readonly string[] =>
      values.length === 0 ? NOTHING : values.map(v => this.interned.intern(v))
    const c = doc.capabilities
    return {
      ...doc,
      category: this.interned.intern(doc.category),
      tags: list(doc.tags),
      developerId: doc.developerId === null ? null : this.interned.intern(doc.developerId),
      capabilities: {
        skills: list(c.skills),
        protocols: list(c.protocols),
        languages: list(c.languages),
        models: list(c.models)
      }
    }
  }
}

const NOTHING: readonly string[] = Object.freeze([])
/** What a deferred record waits for (see IndexedEngine.deferred). */
const EMBED = 1
const HOME = 2

/** The store's state a snapshot was written at (and the embedder whose vectors it holds). */
export type SnapshotMeta = Record<string, string | number | boolean | null>

function capabilityPredicate({ wanted, declared }: CapabilityFilter): (doc: KeptDocument) => boolean {
  const checks = CAPABILITY_KEYS.flatMap(key => {
    const values = wanted[key]
    return values?.length ? [{ key, values }] : []
  })
  return doc => {
    for (const { key, values } of checks) {
      const own = doc.capabilities[key]
      if (holdsAll(own, values)) continue
      const card = declared[doc.entityId]?.[key]
      if (!card) return false
      for (const v of values) if (!own.includes(v) && !card.includes(v)) return false
    }
    return true
  }
}

/** The capability filter as conditions the engine can visit by list: each wanted value, with the entities whose cards declare it. */
function capabilityConditions({ wanted, declared }: CapabilityFilter): CapabilityCondition[] {
  return CAPABILITY_KEYS.flatMap(key =>
    (wanted[key] ?? []).map(value => ({
      key,
      value,
      plus: Object.keys(declared).filter(entityId => declared[entityId]?.[key]?.includes(value))
    }))
  )
}

/** The engine on the calling thread: a query costs that thread its whole time. */
export class LocalSearchIndex implements SearchIndex {
  private readonly indexed: IndexedEngine

  constructor(options: IndexOptions, onFilter: (message: TermFilterMessage) => void, logger: HomeTermsLogger) {
    this.indexed = new IndexedEngine(options, onFilter, logger)
  }

  apply(change: IndexChange): void {
    this.indexed.apply(change)
  }

  async search(query: IndexQuery): Promise<IndexAnswer> {
    return this.indexed.search(query)
  }

  /** The entity's vector as this index holds it (what a move to the worker copies instead of embedding again). */
  vectorOf(entityId: string): Float32Array | null {
    return this.indexed.engine.vectorOf(entityId)
  }

  async settled(): Promise<number> {
    return this.indexed.engine.size
  }

  save(path: string, meta: SnapshotMeta): Promise<number | null> {
    return this.indexed.save(path, meta)
  }

  async restore(path: string, meta: SnapshotMeta): Promise<number> {
    return this.indexed.restore(path, meta)
  }

  async close(): Promise<void> {
    this.indexed.close()
  }
}
