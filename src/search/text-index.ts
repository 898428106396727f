/**
 * BM25F over an inverted index of typed arrays. Each document occupies a slot; a posting holds
 * the slot and the term's frequency in each field, so field boosts apply at query time:
 *   tf' = Σ_f boost_f · tf_f / (1 − b + b · len_f / avglen_f)      score = idf · tf' · (k1 + 1) / (tf' + k1)
 * Each posting also keeps its saturated term weight tf' · (k1 + 1) / (tf' + k1), so a query costs
 * one multiply-add per posting; the weights are recomputed when an average field length drifts.
 *
 * Terms are numbered, and each document keeps its fields as one sequence of term numbers (fields
 * separated by a marker), in one shared array: phrases are checked on those integers, and removal
 * finds the document's terms there. Removing a document only marks its slot dead; its postings are
 * skipped until `sweep()` drops them, and the owner must not reuse a slot before that sweep (a
 * reused slot would inherit the old document's postings).
 */
import { FRESH, type SnapshotReader, type SnapshotWriter } from '../util/snapshot-file.js'
import { widened } from '../util/typed-arrays.js'
import type { WalkedTerm } from './impact-walk.js'
import { KeptPairs } from './kept-pairs.js'
import { addListedScores, addPostingScores, idfOf, type ScoringRun, scoredBySlot } from './posting-scores.js'
import { column, holds, holdsPhrase, markTerm, Postings } from './postings.js'
import type { SlotWeights } from './slot-weights.js'
import { matchPhraseInCandidates, matchPhraseInList, type TermSequences } from './phrase-matches.js'
import { F, FIELD_BOOSTS, FIELD_BREAK, FIELDS, MAX_TF, type Field, type FieldTokens } from './text-fields.js'

export { FIELD_BOOSTS, FIELDS, type Field, type FieldTokens } from './text-fields.js'

const K1 = 1.2
const B = 0.75

/** The best text score of a query and its slot (-1: no text match). */
export interface TextBest {
  slot: number
  score: number
}

export class TextIndex {
  private readonly termIds = new Map<string, number>()
  /** By term number; undefined for a number free for reuse. */
  private readonly postings: (Postings | undefined)[] = []
  private readonly freeTermIds: number[] = []
  /** Per slot and field: token count. */
  private lengths = new Uint16Array(1024 * F)
  /** Per slot: where its term sequence starts in `sequences`, and its length. */
  private sequenceStart = new Uint32Array(1024)
  private sequenceLength = new Uint32Array(1024)
  private sequences = new Uint32Array(16_384)
  private sequencesEnd = 0
  /** Entries of `sequences` that belong to removed documents. */
  private sequencesGarbage = 0
  alive = new Uint8Array(1024)
  private readonly lengthSums = new Float64Array(F)
  private liveCount = 0
  /** Per slot and field: boost / (1 − b + b · len / avglen), for the averages in `normAverages`. */
  private norms = new Float32Array(1024 * F)
  private readonly normAverages = new Float64Array(F).fill(1)
  private capacity = 1024
  // Scratch for add(): per term number, the add that last saw it and its row in `addCounts`.
  private seenBy = new Int32Array(1024)
  private rowOf = new Int32Array(1024)
  private addCounts = new Uint8Array(64 * F)
  /** Scratch for searchListed(): per term number, its row of counts (-1: not a query term). */
  private termRows = new Int32Array(0)
  private adds = 0
  /** Slots below this have been seen (norm refreshes stop there). */
  private slotsUsed = 0
  /** Documents by pair of adjacent common words, built when quiet or on a phrase's demand. */
  private readonly kept = new KeptPairs({
    postings: () => this.postings,
    adds: () => this.adds,
    liveCount: () => this.liveCount,
    live: () => ({ slots: this.slotsUsed, ...this.termSequences() })
  })

  get size(): number {
    return this.liveCount
  }

  /** Indexes a document into `slot`, which must never have been used or have been swept since its removal. */
  add(slot: number, fields: FieldTokens): void {
    this.ensure(slot + 1)
    this.slotsUsed = Math.max(this.slotsUsed, slot + 1)
    let total = F - 1
    for (const field of FIELDS) total += fields[field].length
    const start = this.reserveSequence(total)
    // Distinct terms in order of first appearance, their field counts in rows of `addCounts`.
    const add = ++this.adds
    const distinct: number[] = []
    if (this.addCounts.length < total * F) this.addCounts = new Uint8Array(total * F)
    const counts = this.addCounts
    let at = start
    FIELDS.forEach((field, f) => {
      const tokens = fields[field]
      if (f > 0) this.sequences[at++] = FIELD_BREAK
      this.lengths[slot * F + f] = Math.min(tokens.length, 65_535)
      this.lengthSums[f] = (this.lengthSums[f] as number) + tokens.length
      for (const token of tokens) {
        const id = this.termId(token)
        this.sequences[at++] = id
        if (this.seenBy[id] !== add) {
          this.seenBy[id] = add
          this.rowOf[id] = distinct.length
          counts.fill(0, distinct.length * F, distinct.length * F + F)
          distinct.push(id)
        }
        const cell = (this.rowOf[id] as number) * F + f
        if ((counts[cell] as number) < MAX_TF) counts[cell] = (counts[cell] as number) + 1
      }
    })
    this.sequenceStart[slot] = start
    this.sequenceLength[slot] = total
    this.alive[slot] = 1
    this.liveCount++
    this.computeNorms(slot)
    distinct.forEach((id, row) => {
      ;(this.postings[id] as Postings).add(slot, counts, row * F, this.termWeight(slot, counts, row * F))
    })
    this.kept.pairs?.add(slot, this.sequences, start, start + total)
  }

  /** The document's analyzed fields as `add` got them, read back from its term sequence. */
  fieldsOf(slot: number): FieldTokens {
    const fields: string[][] = FIELDS.map(() => [])
    const start = this.sequenceStart[slot] as number
    const end = start + (this.sequenceLength[slot] as number)
    let f = 0
    for (let i = start; i < end; i++) {
      const id = this.sequences[i] as number
      if (id === FIELD_BREAK) f++
      else (fields[f] as string[]).push((this.postings[id] as Postings).term)
    }
    const [name, tags, category, summary, capabilities] = fields as [string[], string[], string[], string[], string[]]
    return { name, tags, category, summary, capabilities }
  }

  private termId(term: string): number {
    let id = this.termIds.get(term)
    if (id === undefined) {
      id = this.freeTermIds.pop() ?? this.postings.length
      this.termIds.set(term, id)
      this.postings[id] = new Postings(term)
      if (id >= this.seenBy.length) {
        this.seenBy = widened(this.seenBy, this.seenBy.length * 2)
        this.rowOf = widened(this.rowOf, this.rowOf.length * 2)
      }
    }
    return id
  }

  private reserveSequence(length: number): number {
    if (this.sequencesEnd + length > this.sequences.length) {
      if (this.sequencesGarbage > this.sequencesEnd >> 1) this.compactSequences()
      let size = this.sequences.length
      while (this.sequencesEnd + length > size) size *= 2
      if (size !== this.sequences.length) this.sequences = widened(this.sequences, size)
    }
    const start = this.sequencesEnd
    this.sequencesEnd += length
    return start
  }

  /** Rewrites the live documents' sequences contiguously, in slot order. */
  private compactSequences(): void {
    const next = new Uint32Array(this.sequences.length)
    let end = 0
    for (let slot = 0; slot < this.slotsUsed; slot++) {
      if (!this.alive[slot]) continue
      const start = this.sequenceStart[slot] as number
      const length = this.sequenceLength[slot] as number
      next.set(this.sequences.subarray(start, start + length), end)
      this.sequenceStart[slot] = end
      end += length
    }
    this.sequences = next
    this.sequencesEnd = end
    this.sequencesGarbage = 0
  }

  /** tf' = Σ_f norm_f · tf_f, saturated: tf' · (k1 + 1) / (tf' + k1). `tfs` holds F counts from `at`. */
  private termWeight(slot: number, tfs: Uint8Array, at: number): number {
    let tf = 0
    const ns = slot * F
    for (let f = 0; f < F; f++) {
      const count = tfs[at + f] as number
      if (count !== 0) tf += (this.norms[ns + f] as number) * count
    }
    return (tf * (K1 + 1)) / (tf + K1)
  }

  private computeNorms(slot: number): void {
    for (let f = 0; f < F; f++) {
      const norm = 1 - B + (B * (this.lengths[slot * F + f] as number)) / (this.normAverages[f] as number)
      this.norms[slot * F + f] = FIELD_BOOSTS[FIELDS[f] as Field] / norm
    }
  }

  /** Recomputes every slot's norms when an average field length has drifted more than 2 %. */
  refreshNorms(): void {
    const n = Math.max(1, this.liveCount)
    let drifted = false
    for (let f = 0; f < F; f++) {
      const avg = Math.max(1, (this.lengthSums[f] as number) / n)
      if (Math.abs(avg - (this.normAverages[f] as number)) > 0.02 * (this.normAverages[f] as number)) drifted = true
    }
    if (!drifted) return
    for (let f = 0; f < F; f++) this.normAverages[f] = Math.max(1, (this.lengthSums[f] as number) / n)
    for (let slot = 0; slot < this.slotsUsed; slot++) if (this.alive[slot]) this.computeNorms(slot)
    for (const list of this.postings) {
      if (!list) continue
      for (let i = 0; i < list.length; i++) list.weights[i] = this.termWeight(list.slots[i] as number, list.tfs, i * F)
      list.dropWalk()
    }
  }

  remove(slot: number): void {
    if (slot >= this.capacity || !this.alive[slot]) return
    this.alive[slot] = 0
    this.liveCount--
    for (let f = 0; f < F; f++)
      this.lengthSums[f] = (this.lengthSums[f] as number) - (this.lengths[slot * F + f] as number)
    const start = this.sequenceStart[slot] as number
    const length = this.sequenceLength[slot] as number
    const seen = new Set<number>()
    for (let i = start; i < start + length; i++) {
      const id = this.sequences[i] as number
      if (id === FIELD_BREAK || seen.has(id)) continue
      seen.add(id)
      const list = this.postings[id] as Postings
      if (--list.df > 0) continue
      // The last holder is gone: the term and its number are free (no live sequence refers to it).
      this.termIds.delete(list.term)
      this.postings[id] = undefined
      this.freeTermIds.push(id)
    }
    this.sequencesGarbage += length
  }

  /** Drops the postings of every dead slot; afterwards the dead slots may be reused. */
  sweep(): void {
    for (const list of this.postings) if (list && list.length > list.df) list.compact(this.alive)
    this.kept.pairs?.sweep(this.alive)
    if (this.sequencesGarbage > 0) this.compactSequences()
  }

  /**
   * Adds the BM25F score of every live document holding at least one term into `scores` (indexed
   * by slot; untouched slots must be 0) and writes each newly scored slot into `touched` (as long
   * as the slot capacity); returns how many. Terms are weighted: 1 for the user's words, less for
   * synonym expansions. Sets `best` to the highest score and its slot. With `termMasks` (indexed by
   * slot, untouched slots 0), sets bit j of a slot's entry when it holds term j (for j < 32).
   * With `only` (indexed by slot), scores only the documents whose entry is not 0; with `listed`
   * too (those slots), a long list with weights by slot is read for them instead (posting-scores.ts).
   */
  search(
    terms: readonly { term: string; weight: number }[],
    scores: Float32Array,
    touched: Int32Array,
    best: TextBest,
    termMasks: Uint32Array | null = null,
    only: Uint8Array | null = null,
    listed: ArrayLike<number> | null = null
  ): number {
    const run: ScoringRun = { count: 0, bestScore: 0, bestSlot: -1 }
    const n = Math.max(1, this.liveCount)
    this.refreshNorms()
    const alive = this.alive
    // Terms read by slot one after another are read together: each listed document once.
    const bySlots: SlotWeights[] = []
    const idfs: number[] = []
    const addListed = (): void => {
      if (bySlots.length === 0 || listed === null) return
      addListedScores(bySlots, idfs, listed, alive, scores, touched, run)
      bySlots.length = 0
      idfs.length = 0
    }
    for (let j = 0; j < terms.length; j++) {
      const { term, weight } = terms[j] as { term: string; weight: number }
      const id = this.termIds.get(term)
      if (id === undefined) continue
      const list = this.postings[id] as Postings
      if (termMasks !== null && j < 32) markTerm(list, alive, termMasks, 1 << j)
      const idf = idfOf(list, n, weight)
      const bySlot = listed !== null && scoredBySlot(list, listed.length) ? list.bySlot : null
      if (bySlot !== null && bySlot.length >= this.capacity) {
        bySlots.push(bySlot)
        idfs.push(idf)
        continue
      }
      addListed()
      addPostingScores(list, idf, alive, only, scores, touched, run)
    }
    addListed()
    best.slot = run.bestSlot
    best.score = run.bestScore
    return run.count
  }

  /**
   * Each indexed term's posting list and idf (times the term's weight), as `search` scores them,
   * and whether it is long enough to be walked by weight (`walkFrom` postings or more).
   */
  impactTerms(terms: readonly { term: string; weight: number }[], walkFrom: number): WalkedTerm[] {
    this.refreshNorms()
    const n = Math.max(1, this.liveCount)
    const walked: WalkedTerm[] = []
    for (const { term, weight } of terms) {
      const id = this.termIds.get(term)
      if (id === undefined) continue
      const list = this.postings[id] as Postings
      const long = list.length >= walkFrom
      walked.push({ list, idf: idfOf(list, n, weight), long })
    }
    return walked
  }

  /**
   * The lists of the terms that `search` scores through their weights by slot, for `listed`
   * documents from a filter list (lists of at least `from` postings: a shorter one is read whole at
   * less than its weights by slot cost to build).
   */
  listsWeighedBySlot(terms: readonly { term: string }[], listed: number, from: number): Postings[] {
    const lists: Postings[] = []
    for (const { term } of terms) {
      const id = this.termIds.get(term)
      if (id === undefined) continue
      const list = this.postings[id] as Postings
      if (list.length >= from && scoredBySlot(list, listed)) lists.push(list)
    }
    return lists
  }

  /** Slots below this can be held (a slot-indexed array this long covers every document). */
  get slotCapacity(): number {
    return this.capacity
  }

  /** The fewest postings among the words' lists (0 when a word has none). */
  shortestList(words: readonly string[]): number {
    let fewest = Number.POSITIVE_INFINITY
    for (const word of words) {
      const id = this.termIds.get(word)
      fewest = Math.min(fewest, id === undefined ? 0 : (this.postings[id] as Postings).length)
    }
    return fewest
  }

  /** What scoring the terms over their posting lists reads: their live documents' postings, summed. */
  postingsOf(terms: readonly { term: string }[]): number {
    let total = 0
    for (const { term } of terms) {
      const id = this.termIds.get(term)
      if (id !== undefined) total += (this.postings[id] as Postings).length
    }
    return total
  }

  /** The average length of a document's term sequence (what scoring a listed document reads). */
  get averageSequence(): number {
    return (this.sequencesEnd - this.sequencesGarbage) / Math.max(1, this.liveCount)
  }

  /**
   * `search` over the listed slots only, a document at a time: each listed live document's term
   * sequence is read for the query's terms, so the cost follows the list, not the posting lists.
   * Scores are the same as `search` gives those documents (the same weights, added in the same
   * order); `best` is kept the best among them as they are scored. Calls `phraseMatch(slot, p)`
   * for each listed document holding `phrases[p]`, after its score is written.
   */
  searchListed(
    terms: readonly { term: string; weight: number }[],
    listed: ArrayLike<number>,
    scores: Float32Array,
    touched: Int32Array,
    best: TextBest,
    phrases: readonly (readonly string[])[],
    phraseMatch: (slot: number, phrase: number) => void
  ): number {
    this.refreshNorms()
    const n = Math.max(1, this.liveCount)
    // Each distinct query term gets a row of field counts; termRows maps a term number to its row.
    if (this.termRows.length < this.postings.length) this.termRows = new Int32Array(this.postings.length * 2).fill(-1)
    const termRows = this.termRows
    const rowIds: number[] = []
    const termRow = new Int32Array(terms.length).fill(-1)
    const idfs = new Float64Array(terms.length)
    terms.forEach(({ term, weight }, j) => {
      const id = this.termIds.get(term)
      if (id === undefined) return
      if (termRows[id] === -1) {
        termRows[id] = rowIds.length
        rowIds.push(id)
      }
      termRow[j] = termRows[id] as number
      idfs[j] = idfOf(this.postings[id] as Postings, n, weight)
    })
    // A phrase with a word no document holds matches nowhere.
    const phraseIds = phrases.map(phrase => this.phraseIds(phrase))
    const counts = new Uint8Array(Math.max(1, rowIds.length) * F)
    const { alive, sequences, sequenceStart, sequenceLength } = this
    let count = 0
    best.slot = -1
    best.score = 0
    try {
      for (let i = 0; i < listed.length; i++) {
        const slot = listed[i] as number
        if (!alive[slot]) continue
        counts.fill(0)
        const start = sequenceStart[slot] as number
        const end = start + (sequenceLength[slot] as number)
        let field = 0
        let held = false
        for (let at = start; at < end; at++) {
          const id = sequences[at] as number
          if (id === FIELD_BREAK) {
            field++
            continue
          }
          const row = id < termRows.length ? (termRows[id] as number) : -1
          if (row === -1) continue
          const cell = row * F + field
          if ((counts[cell] as number) < MAX_TF) counts[cell] = (counts[cell] as number) + 1
          held = true
        }
        if (!held) continue
        let score = 0
        for (let j = 0; j < terms.length; j++) {
          const row = termRow[j] as number
          if (row === -1 || !holds(counts, row)) continue
          score = Math.fround(score + (idfs[j] as number) * Math.fround(this.termWeight(slot, counts, row * F)))
        }
        scores[slot] = score
        touched[count++] = slot
        if (score > best.score) {
          best.slot = slot
          best.score = score
        }
        for (let p = 0; p < phraseIds.length; p++) {
          const ids = phraseIds[p]
          if (ids && holdsPhrase(sequences, start, end, ids)) phraseMatch(slot, p)
        }
      }
    } finally {
      for (const id of rowIds) termRows[id] = -1
    }
    return count
  }

  /**
   * Calls `match` for every live document whose fields hold the analyzed phrase as consecutive
   * tokens. Only the documents of the phrase's rarest term are read, and of those only the ones
   * whose `termMasks` entry (see `search`) has every bit of `want` have their terms checked.
   */
  forEachPhraseMatch(
    phrase: readonly string[],
    match: (slot: number) => void,
    termMasks: Uint32Array,
    want: number
  ): void {
    const ids = phrase.length === 0 ? null : this.phraseIds(phrase)
    if (ids === null) return
    let rarest = this.postings[ids[0] as number] as Postings
    for (const id of ids) if ((this.postings[id] as Postings).df < rarest.df) rarest = this.postings[id] as Postings
    matchPhraseInList(rarest.slots, rarest.length, this.termSequences(), ids, termMasks, want, match)
  }

  /**
   * The documents that may hold the phrase, from the phrase pairs (see phrase-pairs.ts): those of
   * its adjacent pair listing fewest, removed ones included. Null when a pair is not of common
   * words (posting lists of `walkFrom` or more) listed there (built first when due: kept-pairs.ts).
   */
  phraseCandidates(phrase: readonly string[], walkFrom: number): Uint32Array | null {
    if (phrase.length < 2) return null
    const ids = this.phraseIds(phrase)
    if (ids === null) return null
    for (const id of ids) if ((this.postings[id] as Postings).length < walkFrom) return null
    return this.kept.candidates(ids, walkFrom)
  }

  /** Calls `match` for every live document of `candidates` (see phraseCandidates) holding the phrase. */
  forEachCandidateMatch(phrase: readonly string[], candidates: Uint32Array, match: (slot: number) => void): void {
    matchPhraseInCandidates(candidates, this.termSequences(), this.phraseIds(phrase) as Uint32Array, match)
  }

  private termSequences(): TermSequences {
    return { alive: this.alive, sequences: this.sequences, starts: this.sequenceStart, lengths: this.sequenceLength }
  }

  /** The phrase's term numbers, or null when a word is in no document. */
  private phraseIds(phrase: readonly string[]): Uint32Array | null {
    const ids = new Uint32Array(phrase.length)
    for (let j = 0; j < phrase.length; j++) {
      const id = this.termIds.get(phrase[j] as string)
      if (id === undefined) return null
      ids[j] = id
    }
    return ids
  }

  /** Builds the phrase pairs ahead of a phrase, when due (see kept-pairs.ts); true when built. */
  preparePairs(walkFrom: number): boolean {
    return this.kept.prepare(walkFrom)
  }

  /** How many times the phrase pairs were built (for tests and logs). */
  get pairBuilds(): number {
    return this.kept.builds
  }

  /** Plans the index's parts (its scratch space aside) under `prefix`; see `restore`. */
  save(out: SnapshotWriter, prefix: string): void {
    out.strings(`${prefix}.terms`, () => this.postings.map(list => list?.term ?? ''))
    out.array(`${prefix}.postingLengths`, () => Uint32Array.from(this.postings, list => list?.length ?? 0), FRESH)
    out.array(`${prefix}.dfs`, () => Uint32Array.from(this.postings, list => list?.df ?? 0), FRESH)
    out.arraySlices(`${prefix}.slots`, 'Uint32Array', () => column(this.postings, 1, list => list.slots))
    out.arraySlices(`${prefix}.tfs`, 'Uint8Array', () => column(this.postings, F, list => list.tfs))
    out.arraySlices(`${prefix}.weights`, 'Float32Array', () => column(this.postings, 1, list => list.weights))
    out.array(`${prefix}.freeTermIds`, () => Uint32Array.from(this.freeTermIds), FRESH)
    out.array(`${prefix}.lengths`, () => this.lengths)
    out.array(`${prefix}.sequenceStart`, () => this.sequenceStart)
    out.array(`${prefix}.sequenceLength`, () => this.sequenceLength)
    out.array(`${prefix}.sequences`, () => this.sequences.subarray(0, this.sequencesEnd))
    out.array(`${prefix}.alive`, () => this.alive)
    out.array(`${prefix}.lengthSums`, () => this.lengthSums)
    out.array(`${prefix}.norms`, () => this.norms)
    out.array(`${prefix}.normAverages`, () => this.normAverages)
    out.json(`${prefix}.counts`, () => ({
      sequencesEnd: this.sequencesEnd,
      sequencesGarbage: this.sequencesGarbage,
      liveCount: this.liveCount,
      capacity: this.capacity,
      slotsUsed: this.slotsUsed
    }))
  }

  /** Takes the state `save` wrote under `prefix`, into a new (empty) index. */
  restore(input: SnapshotReader, prefix: string): void {
    if (this.postings.length > 0 || this.liveCount > 0) throw new Error('restore() needs an empty text index')
    const terms = input.strings(`${prefix}.terms`)
    const lengths = input.array(`${prefix}.postingLengths`, Uint32Array)
    const dfs = input.array(`${prefix}.dfs`, Uint32Array)
    const slots = input.array(`${prefix}.slots`, Uint32Array)
    const tfs = input.array(`${prefix}.tfs`, Uint8Array)
    const weights = input.array(`${prefix}.weights`, Float32Array)
    let at = 0
    terms.forEach((term, id) => {
      const length = lengths[id] as number
      if (term === '') this.postings.push(undefined)
      else {
        const end = at + length
        const list = slots.subarray(at, end)
        this.postings.push(
          Postings.restored(term, list, tfs.subarray(at * F, end * F), weights.subarray(at, end), dfs[id] as number)
        )
        this.termIds.set(term, id)
      }
      at += length
    })
    for (const id of input.array(`${prefix}.freeTermIds`, Uint32Array)) this.freeTermIds.push(id)
    this.lengths = input.array(`${prefix}.lengths`, Uint16Array)
    this.sequenceStart = input.array(`${prefix}.sequenceStart`, Uint32Array)
    this.sequenceLength = input.array(`${prefix}.sequenceLength`, Uint32Array)
    // Read with room for the documents added next, so the first of them does not double the array.
    this.sequences = input.array(`${prefix}.sequences`, Uint32Array, length => Math.max(16_384, length + (length >> 3)))
    this.alive = input.array(`${prefix}.alive`, Uint8Array)
    this.lengthSums.set(input.array(`${prefix}.lengthSums`, Float64Array))
    this.norms = input.array(`${prefix}.norms`, Float32Array)
    this.normAverages.set(input.array(`${prefix}.normAverages`, Float64Array))
    const counts = input.json<{
      sequencesEnd: number
      sequencesGarbage: number
      liveCount: number
      capacity: number
      slotsUsed: number
    }>(`${prefix}.counts`)
    this.sequencesEnd = counts.sequencesEnd
    this.sequencesGarbage = counts.sequencesGarbage
    this.liveCount = counts.liveCount
    this.capacity = counts.capacity
    this.slotsUsed = counts.slotsUsed
    const scratch = Math.max(1024, this.postings.length)
    this.seenBy = new Int32Array(scratch)
    this.rowOf = new Int32Array(scratch)
  }

  private ensure(slots: number): void {
    if (slots <= this.capacity) return
    let size = this.capacity
    while (size < slots) size *= 2
    this.capacity = size
    this.alive = widened(this.alive, size)
    this.lengths = widened(this.lengths, size * F)
    this.norms = widened(this.norms, size * F)
    this.sequenceStart = widened(this.sequenceStart, size)
    this.sequenceLength = widened(this.sequenceLength, size)
  }
}
