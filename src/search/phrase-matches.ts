/**
 * The loops that find a quoted phrase's documents (see TextIndex.forEachPhraseMatch and
 * forEachCandidateMatch): each candidate's term sequence read for the phrase's term numbers in a
 * row, unless the candidates alone already hold the phrase.
 */
import { holdsPhrase } from './postings.js'

/** The documents' term sequences by slot, as the text index keeps them. */
export interface TermSequences {
  alive: Uint8Array
  sequences: Uint32Array
  starts: Uint32Array
  lengths: Uint32Array
}

/**
 * Calls `match` for each live slot of `slots[0, length)` (a posting list of one of the phrase's
 * words) whose `termMasks` entry has every bit of `want` and whose sequence holds `ids` in a row.
 */
export function matchPhraseInList(
  slots: Uint32Array,
  length: number,
  text: TermSequences,
  ids: Uint32Array,
  termMasks: Uint32Array,
  want: number,
  match: (slot: number) => void
): void {
  const { alive, sequences, starts, lengths } = text
  // A phrase of one word (the others were stopwords) is in every document of its list.
  const anywhere = ids.length === 1
  for (let i = 0; i < length; i++) {
    const slot = slots[i] as number
    if (!alive[slot] || ((termMasks[slot] as number) & want) !== want) continue
    if (anywhere) {
      match(slot)
      continue
    }
    const start = starts[slot] as number
    if (holdsPhrase(sequences, start, start + (lengths[slot] as number), ids)) match(slot)
  }
}

/**
 * Calls `match` for each live slot of a phrase's pair candidates (see phrase-pairs.ts) holding
 * `ids` in a row: a pair list holds exactly the documents of its two-word phrase; a longer one is checked.
 */
export function matchPhraseInCandidates(
  candidates: Uint32Array,
  text: TermSequences,
  ids: Uint32Array,
  match: (slot: number) => void
): void {
  const { alive, sequences, starts, lengths } = text
  const paired = ids.length === 2
  for (let i = 0; i < candidates.length; i++) {
    const slot = candidates[i] as number
    if (!alive[slot]) continue
    if (paired) {
      match(slot)
      continue
    }
    const start = starts[slot] as number
    if (holdsPhrase(sequences, start, start + (lengths[slot] as number), ids)) match(slot)
  }
}
