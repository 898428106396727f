import test from 'ava'
import { addListedScores, addPostingScores, type ScoringRun } from '../../src/search/posting-scores.js'
import { SlotWeights } from '../../src/search/slot-weights.js'
import { lcg } from '../helpers/search-documents.js'

const SLOTS = 4000

/** A term held by about `share` of the slots, with weights from a few distinct values as BM25F gives. */
function termList(random: () => number, share: number): { slots: Uint32Array; weights: Float32Array } {
  const slots: number[] = []
  const weights: number[] = []
  for (let slot = 0; slot < SLOTS; slot++)
    if (random() < share) {
      slots.push(slot)
      weights.push(Math.fround(0.5 + Math.floor(random() * 40) / 17))
    }
  return { slots: Uint32Array.from(slots), weights: Float32Array.from(weights) }
}

test('listed documents get the scores, matches and best that adding their terms one at a time gives, for 1 to 7 terms', t => {
  const random = lcg(7)
  const alive = new Uint8Array(SLOTS).map(() => (random() < 0.95 ? 1 : 0))
  const listed = Int32Array.from({ length: SLOTS }, (_, slot) => slot).filter(() => random() < 0.3)
  const only = new Uint8Array(SLOTS)
  for (const slot of listed) only[slot] = 1
  for (let terms = 1; terms <= 7; terms++) {
    const lists = Array.from({ length: terms }, (_, i) => termList(random, 0.2 + 0.1 * i))
    const idfs = lists.map(() => 0.3 + random() * 3)
    const run = (): ScoringRun => ({ count: 0, bestScore: 0, bestSlot: -1 })

    const oneAtATime = { scores: new Float32Array(SLOTS), touched: new Int32Array(SLOTS), run: run() }
    lists.forEach(({ slots, weights }, i) => {
      const postings = { slots, weights, length: slots.length } as Parameters<typeof addPostingScores>[0]
      addPostingScores(postings, idfs[i] as number, alive, only, oneAtATime.scores, oneAtATime.touched, oneAtATime.run)
    })

    const bySlots = lists.map(
      ({ slots, weights }) => SlotWeights.build(slots, weights, slots.length, SLOTS) as SlotWeights
    )
    const listedAtOnce = { scores: new Float32Array(SLOTS), touched: new Int32Array(SLOTS), run: run() }
    addListedScores(bySlots, idfs, listed, alive, listedAtOnce.scores, listedAtOnce.touched, listedAtOnce.run)

    t.deepEqual(listedAtOnce.scores, oneAtATime.scores, `${terms} terms: the same float32 sums`)
    const matched = (r: typeof oneAtATime): number[] => [...r.touched.subarray(0, r.run.count)].sort((a, b) => a - b)
    t.deepEqual(matched(listedAtOnce), matched(oneAtATime), `${terms} terms: the same matches`)
    t.is(listedAtOnce.run.bestScore, oneAtATime.run.bestScore, `${terms} terms: the same best score`)
    t.is(listedAtOnce.scores[listedAtOnce.run.bestSlot], oneAtATime.run.bestScore)
  }
})
