import test from 'ava'
import { pino } from 'pino'
import { defaultConfig } from '../../src/config/load.js'
import { searchSettings } from '../../src/node-settings.js'
import { analyze, analyzeQuery } from '../../src/search/analyzer.js'
import { HashEmbedder } from '../../src/search/embedders/hash-embedder.js'
import {
  IndexedEngine,
  type IndexChange,
  type IndexOptions,
  type IndexQuery,
  LocalSearchIndex,
  type SearchIndex,
  embeddingText
} from '../../src/services/search/search-index.js'
import { WorkerSearchIndex } from '../../src/services/search/search-worker-index.js'
import type { TermFilterMessage } from '../../src/wire/federation.js'
import { searchDoc as doc } from '../helpers/search-documents.js'

const REGISTRY = 'zns:registry:0123456789abcdef0123456789abcdef'
const options = (queryExpansion: boolean, embedding: IndexOptions['embedding'] = null): IndexOptions => ({
  dimension: 64,
  embedding,
  queryExpansion,
  fullScanBelow: 200_000,
  homeTerms: { registryId: REGISTRY, host: 'home.test', falsePositiveRate: 0.01, rebuildIntervalMs: 1e9 }
})

/** A record's text as stored; home here unless `elsewhere`. */
const upsert = (entityId: string, summary: string, elsewhere = false): IndexChange => ({
  op: 'upsert',
  doc: doc(entityId),
  text: { name: '', tags: [], category: '', summary, capabilities: [] },
  home: elsewhere
    ? { entity_id: entityId, home_registry: 'other.test', home_registry_id: 'zns:registry:other' }
    : { entity_id: entityId, home_registry: 'home.test', home_registry_id: REGISTRY }
})

const query = (text: string): IndexQuery => {
  const { terms, phrases } = analyzeQuery(text)
  return {
    terms,
    phrases,
    vector: null,
    type: null,
    active: null,
    capabilities: null,
    minTrust: 0,
    minSemantic: 1,
    weights: searchSettings(defaultConfig()).weights,
    fusion: 'weighted',
    halfLifeDays: 30,
    now: 0,
    offset: 0,
    limit: 10
  }
}

const HOME = [
  'Summarizes research papers into a short abstract',
  'Books flights and hotels for business travel'
] as const

const KINDS = {
  'on the calling thread': (o: IndexOptions, onFilter: (m: TermFilterMessage) => void): SearchIndex =>
    new LocalSearchIndex(o, onFilter, pino({ level: 'silent' })),
  'in its worker': (o: IndexOptions, onFilter: (m: TermFilterMessage) => void): SearchIndex =>
    new WorkerSearchIndex(o, () => {}, onFilter)
}

for (const [where, make] of Object.entries(KINDS)) {
  test(`${where}, the index analyzes the text it is sent, expands queries by the words of its records and builds the home term filter`, async t => {
    const filters: TermFilterMessage[] = []
    const expanding = make(options(true), m => filters.push(m))
    const literal = make(options(false), () => {})
    t.teardown(() => Promise.all([expanding.close(), literal.close()]))
    const changes = [
      upsert('papers', HOME[0]),
      upsert('flights', HOME[1]),
      upsert('weather', 'Forecasts rain and wind for your city', true),
      // Padding, so that no stem of the records is in more than 5 % of them (those are never expansions).
      ...Array.from({ length: 200 }, (_, i) => upsert(`empty-${i}`, '', true))
    ]
    for (const change of changes) {
      expanding.apply(change)
      literal.apply(change)
    }
    expanding.apply({ op: 'home-filter' })
    t.is(await expanding.settled(), 203)

    // None of these words is in a record; their nearest stems in the records are.
    const paraphrase = query('boil down a lengthy scientific article')
    t.deepEqual((await literal.search(paraphrase)).hits, [])
    t.is((await expanding.search(paraphrase)).hits[0]?.entityId, 'papers')
    t.deepEqual(
      (await expanding.search(query('"research papers"'))).hits.map(h => h.entityId),
      ['papers'],
      'a quoted phrase matches as written'
    )

    // The filter holds the stems of the two home records (the weather one is homed elsewhere).
    t.is(filters.length, 1)
    const [filter] = filters as [TermFilterMessage]
    t.is(filter.registry_id, REGISTRY)
    t.is(filter.items, new Set([...analyze(HOME[0]), ...analyze(HOME[1])]).size)
  })
}

for (const [where, make] of Object.entries(KINDS)) {
  test(`${where}, an index with the hash embedding embeds each record itself, as the embedder would`, async t => {
    const embedding = make(options(false, 'hash'), () => {})
    const without = make(options(false), () => {})
    t.teardown(() => Promise.all([embedding.close(), without.close()]))
    for (const change of [upsert('papers', HOME[0]), upsert('flights', HOME[1])]) {
      embedding.apply(change)
      without.apply(change)
    }
    const text = { name: '', tags: [], category: '', summary: HOME[1], capabilities: [] }
    // No word of the query is in a record: only the vector can find one.
    const byVector = { ...query('zzyzx'), vector: new HashEmbedder(64).embedOne(embeddingText(text)), minSemantic: 0.5 }
    const [hit, ...others] = (await embedding.search(byVector)).hits
    t.is(hit?.entityId, 'flights')
    t.true((hit?.breakdown.semantic_similarity ?? 0) > 0.99, 'the same vector, but for int8 quantisation')
    t.deepEqual(others, [])
    t.deepEqual((await without.search(byVector)).hits, [], 'vectors come from outside the index otherwise')
  })
}

for (const [where, make] of Object.entries(KINDS)) {
  test(`${where}, a bulk load indexes text first, then gives the records their vectors and home terms`, async t => {
    const filters: TermFilterMessage[] = []
    const bulk = make(options(false, 'hash'), m => filters.push(m))
    const direct = make(options(false, 'hash'), () => {})
    t.teardown(() => Promise.all([bulk.close(), direct.close()]))
    const records = [
      upsert('papers', HOME[0]),
      upsert('flights', HOME[1]),
      upsert('weather', 'Forecasts rain and wind for your city', true),
      upsert('gone', 'Translates contracts between languages')
    ]
    bulk.apply({ op: 'bulk-load' })
    for (const change of records) {
      bulk.apply(change)
      direct.apply(change)
    }
    bulk.apply({ op: 'remove', entityId: 'gone' })
    direct.apply({ op: 'remove', entityId: 'gone' })
    const text = { name: '', tags: [], category: '', summary: HOME[1], capabilities: [] }
    const byVector = { ...query('zzyzx'), vector: new HashEmbedder(64).embedOne(embeddingText(text)), minSemantic: 0.5 }
    t.is(await bulk.settled(), 3)
    t.deepEqual(
      (await bulk.search(query('flights'))).hits.map(h => h.entityId),
      ['flights'],
      'searchable by text during the load'
    )
    t.deepEqual((await bulk.search(byVector)).hits, [], 'no vector yet')

    bulk.apply({ op: 'home-filter' })
    while (filters.length === 0) await new Promise(resolve => setTimeout(resolve, 5))
    const [after] = (await bulk.search(byVector)).hits
    const [expected] = (await direct.search(byVector)).hits
    t.is(after?.entityId, 'flights')
    t.is(after?.score, expected?.score, 'the vector made from the fields read back is the one made at once')
    const [filter] = filters as [TermFilterMessage]
    t.is(
      filter.items,
      new Set([...analyze(HOME[0]), ...analyze(HOME[1])]).size,
      'the home terms, without the removed record'
    )
  })
}

test('the pairs of common words for quoted phrases are built once the index is quiet, not at the first phrase', async t => {
  const indexed = new IndexedEngine(options(false), () => {}, pino({ level: 'silent' }))
  t.teardown(() => indexed.close())
  // Common words: lists of 32,768 postings or more.
  for (let i = 0; i < 33_000; i++) indexed.apply(upsert(`e${i}`, i % 2 === 0 ? 'agent data tool' : 'data agent'))
  t.is(indexed.engine.phrasePairBuilds, 0, 'not while changes come')
  const quietBy = performance.now() + 3000
  while (indexed.engine.phrasePairBuilds === 0 && performance.now() < quietBy)
    await new Promise(resolve => setTimeout(resolve, 100))
  t.is(indexed.engine.phrasePairBuilds, 1, 'built after a quiet second')
  const answer = indexed.search(query('"agent data"'))
  t.is(answer.total, 33_000)
  t.is(indexed.engine.phrasePairBuilds, 1, 'the phrase found them built')
  await new Promise(resolve => setTimeout(resolve, 1500))
  t.is(indexed.engine.phrasePairBuilds, 1, 'the same common words: not built again')
})
