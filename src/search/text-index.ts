/**
 * BM25F over an inverted index of typed arrays. Each document occupies a slot; a posting holds
 * the slot and the term's frequency in each field, so field boosts apply at query time:
 *   tf' = Σ_f boost_f · tf_f / (1 − b + b · len_f / avglen_f)      score = idf · tf' · (k1 + 1) / (tf' + k1)
 * Each posting also keeps its saturated term weight tf' · (k1 + 1) / (tf' + k1), so a query costs
 * one multiply-add per posting; the weights are recomputed when an average field length drifts.
 * Deleting a document only marks its slot dead; postings of dead slots are skipped and dropped
 * when a term's list is next rebuilt (compaction), so writes never rewrite large arrays.
 */

export const FIELDS = ['name', 'tags', 'category', 'summary', 'capabilities'] as const
export type Field = (typeof FIELDS)[number]
export type FieldTokens = Record<Field, readonly string[]>

/** The spec's boosts (name 3.0, tags 2.0, category 1.5, summary 1.0) plus capability text at 1.0. */
export const FIELD_BOOSTS: Readonly<Record<Field, number>> = { name: 3.0, tags: 2.0, category: 1.5, summary: 1.0, capabilities: 1.0 }

const F = FIELDS.length
const K1 = 1.2
const B = 0.75
const MAX_TF = 255

class Postings {
  slots = new Uint32Array(4)
  tfs = new Uint8Array(4 * F)
  /** Saturated BM25F term weight of each posting (before idf). */
  weights = new Float32Array(4)
  length = 0
  /** Live documents holding the term (for idf). */
  df = 0

  add(slot: number, tf: Uint8Array, weight: number): void {
    if (this.length === this.slots.length) {
      const slots = new Uint32Array(this.slots.length * 2)
      slots.set(this.slots)
      this.slots = slots
      const tfs = new Uint8Array(this.tfs.length * 2)
      tfs.set(this.tfs)
      this.tfs = tfs
      const weights = new Float32Array(this.weights.length * 2)
      weights.set(this.weights)
      this.weights = weights
    }
    this.slots[this.length] = slot
    this.tfs.set(tf, this.length * F)
    this.weights[this.length] = weight
    this.length++
    this.df++
  }

  compact(alive: Uint8Array): void {
    let w = 0
    for (let r = 0; r < this.length; r++) {
      const slot = this.slots[r] as number
      if (!alive[slot]) continue
      if (w !== r) {
        this.slots[w] = slot
        this.tfs.copyWithin(w * F, r * F, r * F + F)
        this.weights[w] = this.weights[r] as number
      }
      w++
    }
    this.length = w
  }
}

export class TextIndex {
  private readonly postings = new Map<string, Postings>()
  /** Per slot and field: token count. */
  private lengths = new Uint16Array(1024 * F)
  /** Per slot: the analyzed tokens of each field, in order (for phrases and deletion). */
  private readonly tokens: (FieldTokens | undefined)[] = []
  alive = new Uint8Array(1024)
  private readonly lengthSums = new Float64Array(F)
  private liveCount = 0
  /** Per slot and field: boost / (1 − b + b · len / avglen), for the averages in `normAverages`. */
  private norms = new Float32Array(1024 * F)
  private readonly normAverages = new Float64Array(F).fill(1)

  get size(): number { return this.liveCount }

  /** Indexes a document into `slot` (which must be free). */
  add(slot: number, fields: FieldTokens): void {
    this.ensure(slot + 1)
    const counts = new Map<string, Uint8Array>()
    FIELDS.forEach((field, f) => {
      const tokens = fields[field]
      this.lengths[slot * F + f] = Math.min(tokens.length, 65_535)
      this.lengthSums[f] = (this.lengthSums[f] as number) + tokens.length
      for (const token of tokens) {
        let tf = counts.get(token)
        if (!tf) counts.set(token, (tf = new Uint8Array(F)))
        if ((tf[f] as number) < MAX_TF) tf[f] = (tf[f] as number) + 1
      }
    })
    this.tokens[slot] = fields
    this.alive[slot] = 1
    this.liveCount++
    this.computeNorms(slot)
    for (const [token, tf] of counts) {
      let list = this.postings.get(token)
      if (!list) this.postings.set(token, (list = new Postings()))
      list.add(slot, tf, this.termWeight(slot, tf, 0))
    }
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
  private refreshNorms(): void {
    const n = Math.max(1, this.liveCount)
    let drifted = false
    for (let f = 0; f < F; f++) {
      const avg = Math.max(1, (this.lengthSums[f] as number) / n)
      if (Math.abs(avg - (this.normAverages[f] as number)) > 0.02 * (this.normAverages[f] as number)) drifted = true
    }
    if (!drifted) return
    for (let f = 0; f < F; f++) this.normAverages[f] = Math.max(1, (this.lengthSums[f] as number) / n)
    for (let slot = 0; slot < this.tokens.length; slot++) if (this.alive[slot]) this.computeNorms(slot)
    for (const list of this.postings.values()) {
      for (let i = 0; i < list.length; i++) list.weights[i] = this.termWeight(list.slots[i] as number, list.tfs, i * F)
    }
  }

  remove(slot: number): void {
    const fields = this.tokens[slot]
    if (!fields || !this.alive[slot]) return
    this.alive[slot] = 0
    this.liveCount--
    this.tokens[slot] = undefined
    FIELDS.forEach((field, f) => { this.lengthSums[f] = (this.lengthSums[f] as number) - fields[field].length })
    for (const token of new Set(FIELDS.flatMap(f => fields[f]))) {
      const list = this.postings.get(token)
      if (!list) continue
      list.df--
      if (list.df === 0) this.postings.delete(token)
      else if (list.length > 64 && list.length > 2 * list.df) list.compact(this.alive)
    }
  }

  /** Documents holding `term`. */
  documentFrequency(term: string): number {
    return this.postings.get(term)?.df ?? 0
  }

  /**
   * Adds the BM25F score of every live document holding at least one term into `scores` (indexed
   * by slot; untouched slots must be 0) and appends each newly scored slot to `touched`. Terms are
   * weighted: 1 for the user's words, less for synonym expansions.
   */
  search(terms: readonly { term: string; weight: number }[], scores: Float32Array, touched: number[]): void {
    const n = Math.max(1, this.liveCount)
    this.refreshNorms()
    const alive = this.alive
    for (const { term, weight } of terms) {
      const list = this.postings.get(term)
      if (!list || list.df === 0) continue
      const idf = Math.log(1 + (n - list.df + 0.5) / (list.df + 0.5)) * weight
      const { slots, weights, length } = list
      for (let i = 0; i < length; i++) {
        const slot = slots[i] as number
        if (!alive[slot]) continue
        const previous = scores[slot] as number
        // Every contribution is positive (idf > 0, weight > 0), so 0 means "not yet scored".
        if (previous === 0) touched.push(slot)
        scores[slot] = previous + idf * (weights[i] as number)
      }
    }
  }

  /** Whether the document's fields hold the analyzed phrase as consecutive tokens. */
  hasPhrase(slot: number, phrase: readonly string[]): boolean {
    const fields = this.tokens[slot]
    if (!fields || phrase.length === 0) return false
    for (const field of FIELDS) {
      const tokens = fields[field]
      outer: for (let i = 0; i + phrase.length <= tokens.length; i++) {
        for (let j = 0; j < phrase.length; j++) if (tokens[i + j] !== phrase[j]) continue outer
        return true
      }
    }
    return false
  }

  private ensure(slots: number): void {
    if (slots <= this.alive.length) return
    let size = this.alive.length
    while (size < slots) size *= 2
    const grow = <T extends Uint8Array | Uint16Array | Float32Array>(a: T, per: number): T => {
      const next = new (a.constructor as new (n: number) => T)(size * per)
      next.set(a)
      return next
    }
    this.alive = grow(this.alive, 1)
    this.lengths = grow(this.lengths, F)
    this.norms = grow(this.norms, F)
  }
}
