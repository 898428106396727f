import test, { type ExecutionContext } from 'ava'
import { analyze, analyzeQuery } from '../../src/search/analyzer.js'
import { defaultConfig } from '../../src/config/load.js'
import { searchSettings } from '../../src/node-settings.js'
import { SearchEngine, type EngineQuery, type SearchDocument } from '../../src/search/search-engine.js'
import { RecentWalks, weighBySlot } from '../../src/search/impact-walk.js'
import { Postings } from '../../src/search/postings.js'
import { Signals, SlotColumns } from '../../src/search/slot-columns.js'
import { fastTrust } from '../../src/services/registry/trust.js'
import { lcg, searchDoc as doc, unit } from '../helpers/search-documents.js'

const WEIGHTS = searchSettings(defaultConfig()).weights
const DIMENSION = 32
const NOW = 90 * 86_400_000
/** Most documents hold the first words: their lists are walked by weight (from 64 postings), the last ones' are read whole. */
const WORDS = ['agent', 'data', 'common', 'tool', 'search', 'plain', 'other', 'rare', 'scarce', 'unique']
const CATEGORIES = ['tools', 'finance', 'travel', 'research', 'language', 'media', 'health', 'data']
/** Documents' and queries' vectors lie near these: similarities reach 0.9, so a bound's margin for them shows. */
const CENTRES = Array.from({ length: 3 }, (_, i) => {
  const random = lcg(100 + i)
  return unit(new Float32Array(DIMENSION).map(() => random() - 0.5))
})

function nearCentre(random: () => number): Float32Array {
  const centre = CENTRES[Math.floor(random() * CENTRES.length)] as Float32Array
  return unit(centre.map(x => x + (random() - 0.5) * 0.1))
}

function queryOf(text: string, over: Partial<EngineQuery>): EngineQuery {
  const analyzed = analyzeQuery(text)
  return {
    terms: analyzed.terms,
    phrases: analyzed.phrases,
    vector: null,
    type: null,
    active: null,
    filter: null,
    // Trust and freshness spread over the documents: scores rarely tie.
    trust: (_: number, __: number, uptime: number) => uptime,
    minTrust: 0,
    minSemantic: 0.3,
    weights: WEIGHTS,
    fusion: 'weighted',
    halfLifeDays: 30,
    now: NOW,
    offset: 0,
    limit: 10,
    ...over
  }
}

/**
 * Two engines given the same documents: one walks the long posting lists by weight, the other
 * never does (it scores every match). With the same similarity budget, both pages and totals match.
 */
function engines(): { walked: SearchEngine; scored: SearchEngine; put: (i: number, random: () => number) => void } {
  const options = { fullScanBelow: 0, semanticBudget: 64 }
  const walked = new SearchEngine(DIMENSION, { ...options, walkFrom: 64 })
  const scored = new SearchEngine(DIMENSION, { ...options, walkFrom: Number.POSITIVE_INFINITY })
  const put = (i: number, random: () => number): void => {
    const length = 2 + Math.floor(random() * 6)
    const words = Array.from({ length }, () => WORDS[Math.floor(random() ** 2.5 * WORDS.length)] as string)
    // A word of a short list (read whole, never walked), for phrases.
    if (random() < 0.008) words.splice(Math.floor(random() * length), 0, 'zephyr')
    const document: SearchDocument = doc(`e${String(i).padStart(5, '0')}`, {
      // An eighth of the documents each: a filter list shorter than the common words' lists.
      category: CATEGORIES[i % CATEGORIES.length] as string,
      lastChange: random() * NOW,
      active: random() < 0.6,
      uptime: random()
    })
    const vector = random() < 0.5 ? nearCentre(random) : unit(new Float32Array(DIMENSION).map(() => random() - 0.5))
    const fields = {
      name: analyze(random() < 0.2 ? (WORDS[Math.floor(random() * 3)] as string) : ''),
      tags: [],
      category: [],
      summary: analyze(words.join(' ')),
      capabilities: []
    }
    for (const engine of [walked, scored]) engine.upsert(document, fields, vector)
  }
  return { walked, scored, put }
}

const QUERIES = [
  // First: a phrase of one word twice is one term, whose weights by slot no walk has made yet.
  '"agent agent"',
  'agent',
  'data',
  'agent data',
  'common tool search',
  'agent agent',
  'rare agent',
  'scarce unique plain',
  // A phrase with a word of a short list is walked; one of common words only is not.
  '"zephyr agent"',
  'agent "agent zephyr"',
  '"zephyr agent" "agent zephyr" "zephyr"',
  '"agent data"'
]
const PAGES = [
  { offset: 0, limit: 10 },
  { offset: 7, limit: 5 },
  { offset: 0, limit: 80 }
]

function compare(t: ExecutionContext, walked: SearchEngine, scored: SearchEngine, stage: string): void {
  const random = lcg(3)
  for (const text of QUERIES)
    for (const page of PAGES)
      for (const withVector of ['none', 'random', 'near'] as const) {
        const vector =
          withVector === 'none'
            ? null
            : withVector === 'near'
              ? nearCentre(random)
              : unit(new Float32Array(DIMENSION).map(() => random() - 0.5))
        const q = queryOf(text, { ...page, vector })
        t.deepEqual(
          walked.search(q),
          scored.search(q),
          `${stage}: ${text} ${JSON.stringify(page)} vector ${withVector}`
        )
      }
}

test('a query walked by weight ranks and counts its matches exactly as one that scores them all', t => {
  const { walked, scored, put } = engines()
  const random = lcg(11)
  for (let i = 0; i < 3000; i++) put(i, random)
  compare(t, walked, scored, 'loaded')
  // Documents added since the walks' orders were built are read before them; many added rebuild the orders.
  for (let i = 3000; i < 3200; i++) put(i, random)
  compare(t, walked, scored, 'a few added')
  for (let i = 3200; i < 4000; i++) put(i, random)
  compare(t, walked, scored, 'many added')
  // Updates and removals: slots die, sweeps drop them from the lists and their orders, and are reused.
  for (let i = 0; i < 1500; i++) {
    const id = `e${String(Math.floor(random() * 4000)).padStart(5, '0')}`
    if (random() < 0.5) for (const engine of [walked, scored]) engine.remove(id)
    else put(Math.floor(random() * 4000), random)
  }
  compare(t, walked, scored, 'updated and removed')
  for (let i = 4000; i < 4600; i++) put(i, random)
  compare(t, walked, scored, 'slots reused')
})

test('a query with a filter, an activity or a trust bound is answered as before', t => {
  const { walked, scored, put } = engines()
  const random = lcg(5)
  for (let i = 0; i < 3000; i++) put(i, random)
  const q = queryOf('agent', {})
  const answer = walked.search(q)
  t.deepEqual(answer, scored.search(q))
  t.true(answer.total > 2000, 'most documents hold the word')
  // A filter, an activity or a trust bound: the same answers, found by scoring every match.
  for (const over of [{ type: 'service' as const }, { active: true }, { minTrust: 0.5 }, { tags: ['x'] }]) {
    const filtered = queryOf('agent data', over)
    t.deepEqual(walked.search(filtered), scored.search(filtered), JSON.stringify(over))
  }
})

test('a query with words and a filter list reads its long lists by slot for the list, as it reads their postings', t => {
  const { walked, scored, put } = engines()
  const random = lcg(7)
  const compareFiltered = (stage: string): void => {
    for (const text of ['agent', 'agent data', 'rare agent', 'common tool search'])
      for (const category of ['finance', 'data'])
        for (const page of PAGES)
          for (const withVector of [false, true]) {
            const vector = withVector ? unit(new Float32Array(DIMENSION).map(() => random() - 0.5)) : null
            const q = queryOf(text, { ...page, vector, category })
            t.deepEqual(walked.search(q), scored.search(q), `${stage}: ${text} ${category} ${JSON.stringify(page)}`)
          }
  }
  for (let i = 0; i < 3000; i++) put(i, random)
  compareFiltered('loaded')
  // Postings added after a list's weights by slot were made are read from them too.
  for (let i = 3000; i < 3400; i++) put(i, random)
  compareFiltered('added')
  for (let i = 0; i < 1500; i++) {
    const id = `e${String(Math.floor(random() * 3400)).padStart(5, '0')}`
    if (random() < 0.5) for (const engine of [walked, scored]) engine.remove(id)
    else put(Math.floor(random() * 3400), random)
  }
  compareFiltered('updated and removed')
  for (let i = 3400; i < 4000; i++) put(i, random)
  compareFiltered('slots reused')
})

test('weights by slot are the exact weights, numbered; a list with more distinct weights than numbers has none', t => {
  const list = new Postings('w')
  for (let slot = 0; slot < 300; slot++) list.add(slot * 2, new Uint8Array(5).fill(1), 0, 0.1 + (slot % 7) / 3)
  t.true(weighBySlot(list, 600))
  for (let slot = 0; slot < 300; slot++) t.is(list.bySlot?.at(slot * 2), Math.fround(0.1 + (slot % 7) / 3))
  t.is(list.bySlot?.at(1), 0)
  t.is(list.bySlot?.codes.BYTES_PER_ELEMENT, 2)
  // A new weight added later takes the next number; one the codes cannot number drops them.
  list.add(601, new Uint8Array(5).fill(1), 0, 1.5)
  t.is(list.bySlot?.at(601), Math.fround(1.5))
  const many = new Postings('many')
  for (let slot = 0; slot < 65_536; slot++) many.add(slot, new Uint8Array(5).fill(1), 0, 1 + slot / 65_536)
  t.false(weighBySlot(many, 65_536), 'more distinct weights than 16-bit numbers')
  t.is(many.bySlot, null)
  const full = new Postings('full')
  for (let slot = 0; slot < 65_535; slot++) full.add(slot, new Uint8Array(5).fill(1), 0, 1 + slot / 65_536)
  t.true(weighBySlot(full, 65_536))
  full.add(65_535, new Uint8Array(5).fill(1), 0, 2)
  t.is(full.bySlot, null, 'the next distinct weight does not fit: the list reads its postings again')
})

test('only the lists walked last keep their impact orders and weights by slot', t => {
  const recent = new RecentWalks(1)
  const a = new Postings('a')
  const b = new Postings('b')
  for (let slot = 0; slot < 10; slot++) {
    a.add(slot, new Uint8Array(5).fill(1), 0, slot / 10)
    b.add(slot, new Uint8Array(5).fill(1), 0, 1 - slot / 10)
  }
  recent.prepare(a, true, 16)
  t.deepEqual([...(a.impact ?? [])], [9, 8, 7, 6, 5, 4, 3, 2, 1, 0], 'highest weight first')
  t.is(a.bySlot?.at(3), Math.fround(0.3))
  // A document added after the order was built is in the list's tail, and in its weights by slot.
  a.add(10, new Uint8Array(5).fill(1), 0, 0.95)
  t.is(a.impactLength, 10)
  t.is(a.bySlot?.at(10), Math.fround(0.95))
  // Slots added past the weights by slot, in other lists only, read 0 at the next walk.
  recent.prepare(a, true, 64)
  t.is(a.bySlot?.length, 64)
  t.is(a.bySlot?.at(40), 0)
  recent.prepare(b, false, 16)
  t.is(a.impact, null, 'the list walked before gave its order up')
  t.is(a.bySlot, null)
  t.deepEqual([...(b.impact ?? [])], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
  // Lists read by slot only (for a filter list) are kept apart: they push out one another, never a walk.
  recent.prepareBySlot(a, 16)
  t.is(a.bySlot?.at(3), Math.fround(0.3))
  t.is(a.impact, null, 'no order is built for a read by slot')
  const c = new Postings('c')
  c.add(2, new Uint8Array(5).fill(1), 0, 0.5)
  recent.prepareBySlot(c, 16)
  t.is(a.bySlot, null, 'the list read by slot before gave its weights up')
  t.is(c.bySlot?.at(2), Math.fround(0.5))
  t.not(b.impact, null, 'the walked list kept its order')
  // A walked list read by slot stays with the walked ones.
  recent.prepareBySlot(b, 16)
  recent.prepareBySlot(c, 16)
  t.not(b.bySlot, null)
  t.not(b.impact, null)
})

test('the static ceiling bounds every score cached until its next reading, with no slack', t => {
  const columns = new SlotColumns()
  const random = lcg(9)
  const now = 400 * 86_400_000
  const minute = 60_000
  // Ages where trust's age term (rounded to thousandths) steps up within the next minutes, and
  // changes up to the query's time (freshness falls after them).
  for (let slot = 0; slot < 2000; slot++) {
    columns.ensure(slot + 1)
    const document = doc(`e${slot}`, {
      registeredAt: now - random() * 90 * 86_400_000,
      lastChange: now - random() * 8 * minute,
      uptime: random(),
      active: random() < 0.5
    })
    columns.docs.push(document)
    columns.write(slot, document)
  }
  const q = queryOf('agent', { trust: fastTrust, now })
  const signals = new Signals(q)
  columns.refreshSignals(q, signals)
  const ceiling = columns.staticCeiling(signals)
  let highest = 0
  // A query reads the ceiling for five minutes; its cached scores are at most a minute older than it.
  for (const offset of [-6 * minute, -minute, -1, 0, 1, 2.5 * minute, 5 * minute - 1]) {
    const later = new Signals({ ...q, now: now + offset })
    for (let slot = 0; slot < 2000; slot++) {
      columns.computeSignals(slot, later)
      highest = Math.max(highest, columns.staticScore[slot] as number)
    }
  }
  t.true(highest <= ceiling, `${highest} <= ${ceiling}`)
  t.true(ceiling - highest < 1e-3, 'no slack: the highest bound is within a trust step of the highest score')
  // One document, changed before the oldest cached score a query can read: that score is its highest.
  const one = new SlotColumns()
  const changed = doc('e0', { registeredAt: now - 86_400_000, lastChange: now - 7 * minute })
  one.docs.push(changed)
  one.write(0, changed)
  one.refreshSignals(q, signals)
  const alone = one.staticCeiling(signals)
  one.computeSignals(0, new Signals({ ...q, now: now - 6 * minute }))
  t.true((one.staticScore[0] as number) <= alone)
})

test('the phrase pairs are built ahead of a phrase when due, and again only for other common words', t => {
  const { walked, put } = engines()
  const random = lcg(13)
  t.false(walked.preparePhrasePairs(), 'no common word yet')
  for (let i = 0; i < 3000; i++) put(i, random)
  t.true(walked.preparePhrasePairs(), 'built for the common words')
  t.false(walked.preparePhrasePairs(), 'not again at once')
  // A tenth more documents of the same words: the same common words, not built again.
  for (let i = 3000; i < 3400; i++) put(i, random)
  t.false(walked.preparePhrasePairs())
  // A word that becomes common: built again once a tenth more documents came.
  const fields = (words: string) => ({ name: [], tags: [], category: [], summary: analyze(words), capabilities: [] })
  for (let i = 3400; i < 3800; i++)
    walked.upsert(doc(`e${i}`), fields('zephyr agent'), unit(new Float32Array(DIMENSION).fill(1)))
  t.true(walked.preparePhrasePairs(), 'built again for "zephyr"')
  const q = queryOf('"zephyr agent"', {})
  t.true(walked.search(q).total > 300)
})
