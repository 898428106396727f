/**
 * Query expansion from static word vectors, restricted to the node's own vocabulary: a query's
 * words are averaged in the shipped GloVe table (src/search/word-vectors.ts, SIF weights, as the
 * hash embedder does), and the stems of the indexed records nearest that average are added to the
 * query as extra terms, weighted by their similarity. "boil down this lengthy scientific article"
 * then also looks for paper, research, summar, … when the records use those words, so text
 * relevance (BM25) can find records that share no word with the query.
 *
 *   - Only stems that occur in indexed records are candidates (`addDocument`): an expansion that
 *     matches nothing is noise, and the nearest words of the whole table are rarely in the records.
 *   - Stems in more than 5 % of the records are skipped: they carry little evidence
 *     (low idf), and each would add its whole posting list to the query's candidates. The
 *     expansions of one query together hold at most 25 % of the records' postings (summed document
 *     frequencies, best first): a bound on the work and on the extra matches they bring.
 *   - Only stems at a cosine of 0.3 or more: below that, a neighbour is as often noise as meaning.
 *   - At most 5 expansions per word of the query the table knows, 20 in all, so a two-word query is
 *     not drowned; each weighs 0.7 × its cosine (below the user's own words, 1, and usually below
 *     synonyms, 0.5). The user's words and their synonyms are never repeated.
 *
 * Document frequencies only grow between full builds of the index (an update counts its record
 * again, a removal does not subtract, a snapshot keeps them): the share is a guard, not a score.
 */
import type { AnalyzedQuery, QueryTerm } from './analyzer.js'
import { Int8Matrix, quantize } from './int8-dot.js'
import type { FieldTokens } from './text-index.js'
import { type WordVectors, wordVectors } from './word-vectors.js'
import type { SnapshotReader, SnapshotWriter } from '../util/snapshot-file.js'

export interface ExpansionSettings {
  /** Expansions per query, at most. */
  maxTerms: number
  /** Expansions per word of the query that the table knows, at most. */
  termsPerWord: number
  /** An expansion weighs this × its cosine with the query's averaged words. */
  weight: number
  /** Stems less similar than this to the query's averaged words are never added. */
  minSimilarity: number
  /** Stems in more than this share of the records are never added. */
  maxDocumentShare: number
  /** The document frequencies of one query's expansions add up to at most this share of the records. */
  maxPostingsShare: number
}

export const DEFAULT_EXPANSION: Readonly<ExpansionSettings> = Object.freeze({
  maxTerms: 20,
  termsPerWord: 5,
  weight: 0.7,
  minSimilarity: 0.3,
  maxDocumentShare: 0.05,
  maxPostingsShare: 0.25
})

export class QueryExpander {
  /** Per table row: records seen holding its stem. */
  private readonly df: Uint32Array
  /** Rows seen in at least one record, in order of first appearance, and their int8 coordinates. */
  private vocabulary = new Int32Array(1024)
  private vocabularySize = 0
  /**
   * By vocabulary position: the row's int8 coordinates, stored with its scale / its vector's length
   * as the row scale (cosine = dot × that × the query's scale / |query|).
   */
  private readonly matrix: Int8Matrix
  private documents = 0
  /** Scratch: rows already counted for the current record, or in the current query. */
  private readonly mark: Uint32Array
  private stamp = 0
  private readonly centroid: Float32Array
  private readonly query: Int8Array

  constructor(
    private readonly settings: ExpansionSettings = DEFAULT_EXPANSION,
    private readonly words: WordVectors = wordVectors()
  ) {
    this.df = new Uint32Array(words.rows)
    this.mark = new Uint32Array(words.rows)
    this.centroid = new Float32Array(words.dimension)
    this.query = new Int8Array(words.dimension)
    this.matrix = new Int8Matrix(words.dimension)
  }

  /** Stems of indexed records that the table knows. */
  get vocabularyCount(): number {
    return this.vocabularySize
  }

  /** Counts a record's analyzed terms (the ones the text index gets). */
  addDocument(fields: FieldTokens): void {
    const stamp = this.nextStamp()
    this.documents++
    for (const tokens of Object.values(fields) as (readonly string[])[])
      for (const token of tokens) {
        const row = this.words.row(token)
        if (row < 0 || this.mark[row] === stamp) continue
        this.mark[row] = stamp
        const seen = this.df[row] as number
        this.df[row] = seen + 1
        if (seen === 0) this.addToVocabulary(row)
      }
  }

  private addToVocabulary(row: number): void {
    const at = this.vocabularySize++
    if (at === this.vocabulary.length) {
      const rows = new Int32Array(at * 2)
      rows.set(this.vocabulary)
      this.vocabulary = rows
    }
    const { values, scale } = this.words.quantised(row)
    const norm = this.words.norm(row)
    this.vocabulary[at] = row
    this.matrix.set(at, values, norm > 0 ? scale / norm : 0)
  }

  /**
   * The query with its expansions appended (a new object; the query is not changed). Unchanged when
   * none of the user's words is in the table or no indexed stem is near them.
   */
  expand(query: AnalyzedQuery): AnalyzedQuery {
    const words = this.words
    const centroid = this.centroid.fill(0)
    const stamp = this.nextStamp()
    const users: string[] = []
    for (const { term, weight, synonymOf } of query.terms) {
      const row = words.row(term)
      if (row < 0) continue
      this.mark[row] = stamp
      if (weight === 1 && synonymOf === undefined) {
        words.addTo(centroid, 0, words.dimension, row, words.weight(row))
        users.push(term)
      }
    }
    let length = 0
    for (let i = 0; i < centroid.length; i++) length += (centroid[i] as number) ** 2
    length = Math.sqrt(length)
    if (length === 0 || this.vocabularySize === 0) return query
    // The best `maxTerms` rows by cosine, kept sorted (best first) in two short arrays.
    const k = Math.min(this.settings.maxTerms, this.settings.termsPerWord * users.length)
    const bestRows = new Int32Array(k)
    const bestSims = new Float64Array(k).fill(0)
    let found = 0
    const maxDf = Math.max(1, this.settings.maxDocumentShare * this.documents)
    // Cosines of the (int8) query with every vocabulary row, and the rows reaching the floor, in one
    // WebAssembly SIMD pass.
    const { scale } = quantize(centroid, this.query)
    const { similarities, above } = this.matrix.similar(
      this.query,
      scale / length,
      this.vocabularySize,
      this.settings.minSimilarity
    )
    for (let a = 0; a < above.length; a++) {
      const i = above[a] as number
      const sim = similarities[i] as number
      if (found === k && sim <= (bestSims[k - 1] as number)) continue
      const row = this.vocabulary[i] as number
      if (this.mark[row] === stamp || (this.df[row] as number) > maxDf) continue
      let at = found < k ? found++ : k - 1
      while (at > 0 && (bestSims[at - 1] as number) < sim) {
        bestSims[at] = bestSims[at - 1] as number
        bestRows[at] = bestRows[at - 1] as number
        at--
      }
      bestSims[at] = sim
      bestRows[at] = row
    }
    if (found === 0) return query
    const source = users.join(' ')
    const expansions: QueryTerm[] = []
    let postings = this.settings.maxPostingsShare * this.documents
    for (let i = 0; i < found; i++) {
      const row = bestRows[i] as number
      const df = this.df[row] as number
      if (df > postings) continue
      postings -= df
      expansions.push({
        term: words.stems[row] as string,
        weight: this.settings.weight * (bestSims[i] as number),
        synonymOf: source
      })
    }
    return expansions.length === 0 ? query : { ...query, terms: [...query.terms, ...expansions] }
  }

  /** Writes the counts and the vocabulary under `prefix` (the word table is the shipped one, named by its id). */
  save(out: SnapshotWriter, prefix: string): void {
    out.array(`${prefix}.df`, this.df)
    out.array(`${prefix}.vocabulary`, () => this.vocabulary.subarray(0, this.vocabularySize))
    out.json(`${prefix}.documents`, () => this.documents)
  }

  /** Takes what `save` wrote, into an expander of the same word table that has seen no record. */
  restore(input: SnapshotReader, prefix: string): void {
    if (this.documents > 0) throw new Error('restore() needs an expander that has seen no record')
    const df = input.array(`${prefix}.df`, Uint32Array)
    if (df.length !== this.df.length) throw new Error('the snapshot was made with another word table')
    this.df.set(df)
    for (const row of input.array(`${prefix}.vocabulary`, Int32Array)) this.addToVocabulary(row)
    this.documents = input.json<number>(`${prefix}.documents`)
  }

  /** The word table's id (a snapshot is taken with the same table only). */
  get wordsId(): string {
    return this.words.id
  }

  private nextStamp(): number {
    if (++this.stamp === 0xffffffff) {
      this.mark.fill(0)
      this.stamp = 1
    }
    return this.stamp
  }
}
