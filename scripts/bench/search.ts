/**
 * G3 (first part): the search engine at 100k entities. Generates entities from a Zipf-distributed
 * VOCABULARY that includes this domain's frequent words (agent, ai, api, data, service), indexes
 * them with the same document builders the node uses, and measures keyword, semantic and hybrid
 * (with filters) query latency, plus build time and memory.
 *
 *   npm run bench:search:engine -- [--entities 100000] [--queries 200] [--transitive 0.3]
 *
 * This is the engine alone; `npm run bench:search` measures the same through a node's HTTP write
 * and search paths. Semantic similarity is computed on int8-quantised vectors, so this bench also
 * measures recall@10 of semantic queries against an exact float32 scan. `--transitive S` gives a
 * share S of the entities a transitive trust score (uniform on (0, 1], from its own seeded generator,
 * so the corpus and queries stay the same): the ranking with the signal on, to compare with S = 0.
 */
import { parseArgs } from 'node:util'
import { analyzeQuery } from '../../src/search/analyzer.js'
import { HashEmbedder } from '../../src/search/embedders/hash-embedder.js'
import { defaultConfig } from '../../src/config/load.js'
import { searchSettings } from '../../src/node-settings.js'
import { SearchEngine, type EngineQuery } from '../../src/search/search-engine.js'
import { documentFields, searchDocument } from '../../src/services/search/search-documents.js'
import { fastTrust } from '../../src/services/registry/trust.js'
import type { EntityRecord } from '../../src/store/records.js'
import { seededRandom } from '../lib/random.js'
import { percentile, report } from '../lib/report.js'
import { CATEGORIES, DOMAIN, VOCABULARY, zipfCorpus } from '../lib/corpus.js'

const DEFAULT_WEIGHTS = searchSettings(defaultConfig()).weights

const { values: args } = parseArgs({
  options: {
    entities: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '200' },
    transitive: { type: 'string', default: '0' }
  }
})
const N = Number(args.entities)
const Q = Number(args.queries)
const transitiveShare = Number(args.transitive)
const transitiveRandom = seededRandom(58)

const { random, word, words } = zipfCorpus(42)

function entity(i: number): EntityRecord {
  const now = new Date(Date.now() - Math.floor(random() * 200) * 86_400_000).toISOString()
  return {
    entity_id: `zns:${i.toString(16).padStart(32, '0')}`,
    type: random() < 0.8 ? 'agent' : 'service',
    name: words(3),
    category: CATEGORIES[i % CATEGORIES.length] as string,
    summary: words(20),
    version: '1.0.0',
    tags: [word(), word(), word()],
    public_key: '',
    signature: '',
    entity_url: null,
    service_endpoint: null,
    openapi_url: null,
    codebase_hash: null,
    developer_id: `zns:dev:${(i % 500).toString(16).padStart(32, '0')}`,
    entity_index: null,
    developer_proof: null,
    capability_summary: { skills: [word(), word()] },
    pricing_model: null,
    entity_name: null,
    ttl: 86400,
    status: random() < 0.9 ? 'active' : 'inactive',
    last_heartbeat: null,
    registered_at: now,
    updated_at: now,
    home_registry: 'bench',
    schema_version: '1.0',
    registration_signatures: []
  }
}

const embedder = new HashEmbedder(256)
const engine = new SearchEngine(embedder.dimension)
report('simd', new SearchEngine(8).simd ? 'yes' : 'no', '')
report('transitive_share', transitiveShare, '(entities with a transitive trust score)')
const exact = new Float32Array(N * embedder.dimension)
const summaries: string[] = []
const tagsOf: string[][] = []
const heap0 = process.memoryUsage().heapUsed
const t0 = performance.now()
for (let i = 0; i < N; i++) {
  const r = entity(i)
  const vector = embedder.embedOne([r.name, r.category, r.tags.join(' '), r.summary].join('. '))
  const transitive = transitiveRandom() < transitiveShare ? 1 - transitiveRandom() : 0
  engine.upsert(searchDocument(r, undefined, transitive), documentFields(r), vector)
  summaries.push(r.summary)
  tagsOf.push(r.tags)
  exact.set(vector, i * embedder.dimension)
}
const buildSeconds = (performance.now() - t0) / 1000
global.gc?.()
report('entities', N, '')
report('index_build', buildSeconds.toFixed(1), 's')
report('index_build_rate', (N / buildSeconds).toFixed(0), 'entities/s')
report('heap_used', ((process.memoryUsage().heapUsed - heap0) / 2 ** 20).toFixed(0), 'MiB')
report('rss', (process.memoryUsage().rss / 2 ** 20).toFixed(0), 'MiB')

const agentsActive = { type: 'agent', active: true, filter: null } as const

function run(name: string, make: (i: number) => Partial<EngineQuery> & { text: string }): void {
  const latencies: number[] = []
  let found = 0
  const started = performance.now()
  for (let i = 0; i < Q; i++) {
    const spec = make(i)
    const analyzed = analyzeQuery(spec.text)
    const t = performance.now()
    const vector = spec.vector === undefined ? embedder.embedOne(spec.text) : spec.vector
    const { total } = engine.search({
      terms: spec.terms ?? analyzed.terms,
      phrases: analyzed.phrases,
      vector,
      ...agentsActive,
      filter: spec.filter ?? null,
      category: spec.category ?? null,
      tags: spec.tags ?? [],
      trust: fastTrust,
      minTrust: 0,
      minSemantic: 0.3,
      weights: DEFAULT_WEIGHTS,
      fusion: 'weighted',
      halfLifeDays: 30,
      now: Date.now(),
      offset: 0,
      limit: 20
    })
    latencies.push(performance.now() - t)
    found += total
  }
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  report(`${name}_p50`, percentile(latencies, 0.5).toFixed(2), 'ms')
  report(`${name}_p95`, percentile(latencies, 0.95).toFixed(2), 'ms')
  report(`${name}_p99`, percentile(latencies, 0.99).toFixed(2), 'ms')
  report(`${name}_qps`, (Q / seconds).toFixed(0), 'queries/s')
  report(`${name}_mean_matches`, (found / Q).toFixed(0), 'entities')
}

run('keyword_common', i => ({ text: `${DOMAIN[i % 5]} ${DOMAIN[5 + (i % 20)]}`, vector: null }))
run('keyword_rare', i => ({ text: `${VOCABULARY[200 + i]} ${VOCABULARY[900 + i]}`, vector: null }))
run('semantic', () => ({ text: words(4), terms: [] }))
run('hybrid_filtered', i => ({
  text: `${DOMAIN[i % 10]} ${words(2)}`,
  category: CATEGORIES[i % CATEGORIES.length] as string
}))
const pick = (i: number): number => (i * 7919) % N
run('quoted_phrase', i => {
  const w = (summaries[pick(i)] as string).split(' ')
  const at = i % (w.length - 1)
  return { text: `"${w[at]} ${w[at + 1]}"` }
})
run('filter_only', i => {
  const tag = (tagsOf[pick(i)] as string[])[0] as string
  const filters =
    i % 3 === 0
      ? { category: CATEGORIES[i % CATEGORIES.length] as string }
      : i % 3 === 1
        ? { tags: [tag] }
        : { category: CATEGORIES[pick(i) % CATEGORIES.length] as string, tags: [tag] }
  return { text: '', vector: null, ...filters }
})
run('words_type_tag', i => {
  const w = (summaries[pick(i)] as string).split(' ')
  return { text: `${w[i % w.length]} ${w[(i + 7) % w.length]}`, tags: [(tagsOf[pick(i)] as string[])[0] as string] }
})

// Recall@10 of the quantised scan: the engine's ten nearest documents (similarity only, no filters)
// against the ten of an exact float32 scan.
let recalled = 0
const recallQueries = Math.min(Q, 100)
for (let i = 0; i < recallQueries; i++) {
  const vector = embedder.embedOne(words(4))
  const { hits } = engine.search({
    terms: [],
    phrases: [],
    vector,
    type: null,
    active: null,
    filter: null,
    trust: () => 0,
    minTrust: 0,
    minSemantic: -1,
    weights: { text: 0, semantic: 1, trust: 0, freshness: 0, availability: 0 },
    fusion: 'weighted',
    halfLifeDays: 30,
    now: Date.now(),
    offset: 0,
    limit: 10
  })
  const dim = embedder.dimension
  const scored: { id: number; s: number }[] = []
  for (let d = 0; d < N; d++) {
    let s = 0
    for (let j = 0; j < dim; j++) s += (exact[d * dim + j] as number) * (vector[j] as number)
    scored.push({ id: d, s })
  }
  scored.sort((a, b) => b.s - a.s)
  const truth = new Set(scored.slice(0, 10).map(x => `zns:${x.id.toString(16).padStart(32, '0')}`))
  recalled += hits.filter(h => truth.has(h.doc.entityId)).length / 10
}
report('semantic_recall10_vs_exact', (recalled / recallQueries).toFixed(3), '')

// The hash embedder alone, on short texts (a unit test used to hold it to a time limit). Last, so
// its draws from the seeded generator leave the queries above as they were.
const embedTexts = Array.from({ length: 10_000 }, () => words(12))
const embedStarted = performance.now()
for (const text of embedTexts) embedder.embedOne(text)
report('hash_embed_rate', (embedTexts.length / ((performance.now() - embedStarted) / 1000)).toFixed(0), 'texts/s')
