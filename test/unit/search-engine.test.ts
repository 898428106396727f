import test from 'ava'
import { analyze, analyzeQuery } from '../../src/search/analyzer.js'
import { defaultConfig } from '../../src/config/load.js'
import { searchSettings } from '../../src/node-settings.js'
import { SearchEngine, type EngineQuery, type KeptDocument } from '../../src/search/search-engine.js'
import type { FieldTokens } from '../../src/search/text-index.js'
import { lcg, searchDoc as doc, unit } from '../helpers/search-documents.js'

const DEFAULT_WEIGHTS = searchSettings(defaultConfig()).weights

function fields(summary: string, name = ''): FieldTokens {
  return { name: analyze(name), tags: [], category: [], summary: analyze(summary), capabilities: [] }
}

function query(text: string, over: Partial<EngineQuery> = {}): EngineQuery {
  const analyzed = analyzeQuery(text)
  return {
    terms: analyzed.terms,
    phrases: analyzed.phrases,
    vector: null,
    type: null,
    active: null,
    filter: null,
    trust: () => 0.5,
    minTrust: 0,
    minSemantic: 1,
    weights: DEFAULT_WEIGHTS,
    fusion: 'weighted',
    halfLifeDays: 30,
    now: 0,
    offset: 0,
    limit: 50,
    ...over
  }
}

const ids = (engine: SearchEngine, q: EngineQuery): string[] =>
  engine
    .search(q)
    .hits.map(h => h.doc.entityId)
    .sort()

test('an updated document no longer matches the words it lost, and is counted once for the words it kept', t => {
  const engine = new SearchEngine(64)
  engine.upsert(doc('a'), fields('alpha beta'), null)
  engine.upsert(doc('b'), fields('beta'), null)
  engine.upsert(doc('a'), fields('alpha gamma'), null)
  t.deepEqual(ids(engine, query('beta')), ['b'])
  t.deepEqual(ids(engine, query('gamma')), ['a'])
  const alpha = engine.search(query('alpha'))
  t.is(alpha.total, 1)
  // One document with the term once scores the same as a fresh index of it alone.
  const fresh = new SearchEngine(64)
  fresh.upsert(doc('a'), fields('alpha gamma'), null)
  fresh.upsert(doc('b'), fields('beta'), null)
  t.is(alpha.hits[0]?.breakdown.text_relevance, fresh.search(query('alpha')).hits[0]?.breakdown.text_relevance)
})

test('a patch ranks and filters a document as the document with the patched values would, and a last change only moves forward', t => {
  const trust = (developer: number, registeredAt: number, uptime: number, now: number, transitive: number) =>
    0.2 + 0.3 * uptime + 0.4 * transitive + developer * 0 + (now - registeredAt) * 0
  const patched = new SearchEngine(64)
  const fresh = new SearchEngine(64)
  for (let i = 0; i < 6; i++) {
    const before = doc(`e${i}`, { active: true, lastChange: 5 * 86_400_000, uptime: 1, transitive: 0.5 })
    patched.upsert(before, fields(`alpha word${i}`), null)
    const after =
      i % 2 === 0
        ? doc(`e${i}`, { active: false, lastChange: 5 * 86_400_000, uptime: 0.25, transitive: 0 })
        : { ...before, lastChange: 9 * 86_400_000 }
    fresh.upsert(after, fields(`alpha word${i}`), null)
  }
  for (let i = 0; i < 6; i++)
    patched.patch(
      `e${i}`,
      i % 2 === 0
        ? { active: false, lastChange: 86_400_000, uptime: 0.25, transitive: 0 }
        : { lastChange: 9 * 86_400_000 }
    )
  const now = 10 * 86_400_000
  for (const over of [{}, { active: true }, { active: false }] as Partial<EngineQuery>[]) {
    const q = query('alpha', { trust, now, ...over })
    const a = patched.search(q)
    const b = fresh.search(q)
    t.is(a.total, b.total)
    t.deepEqual(
      a.hits.map(h => [h.doc.entityId, h.active, h.score, h.breakdown]),
      b.hits.map(h => [h.doc.entityId, h.active, h.score, h.breakdown])
    )
  }
  t.is(patched.search(query('alpha', { active: false })).total, 3)
})

test('slots are reused only after a sweep, and sweeps keep every live document findable', t => {
  const engine = new SearchEngine(64)
  for (let round = 0; round < 4; round++) {
    for (let i = 0; i < 1500; i++)
      engine.upsert(
        doc(`e${i}`, { category: i % 2 ? 'odd' : 'even', tags: [`t${(i + round) % 3}`] }),
        fields(`word${(i + round) % 7} shared`),
        null
      )
  }
  t.is(engine.size, 1500)
  t.is(engine.search(query('shared')).total, 1500)
  t.is(engine.search(query('', { category: 'odd' })).total, 750)
  // Round 3 gave entity i the tag t((i + 3) mod 3) = t(i mod 3) and the word word((i + 3) mod 7).
  t.is(engine.search(query('', { tags: ['t0'] })).total, 500)
  t.is(
    engine.search(query('word3')).total,
    Array.from({ length: 1500 }, (_, i) => (i + 3) % 7 === 3).filter(Boolean).length
  )
  for (let i = 0; i < 1500; i++) engine.remove(`e${i}`)
  t.is(engine.search(query('shared')).total, 0)
  t.is(engine.search(query('', { category: 'odd' })).total, 0)
})

test('a quoted phrase adds its bonus only where its words stand together within one field', t => {
  const engine = new SearchEngine(64)
  engine.upsert(doc('together'), fields('fast image resize service'), null)
  engine.upsert(doc('apart'), fields('image tools that resize quickly'), null)
  engine.upsert(doc('across'), fields('resize things', 'image'), null)
  const { hits } = engine.search(query('"image resize"'))
  t.is(hits[0]?.doc.entityId, 'together')
  t.is(hits[0]?.breakdown.text_relevance, 1)
  // Without the bonus the other two score far below the phrase match.
  for (const hit of hits.slice(1)) t.true(hit.breakdown.text_relevance < 0.5)
})

test('a quoted phrase left with one word (the others stopwords) adds its bonus to every document holding it', t => {
  const engine = new SearchEngine(64)
  engine.upsert(doc('email-name'), fields('sends letters', 'email'), null)
  engine.upsert(doc('email-summary'), fields('an email relay service for teams'), null)
  engine.upsert(doc('mail'), fields('mail relay'), null)
  t.deepEqual(analyzeQuery('"we email"').phrases, [['email']])
  const relevance = (text: string): Record<string, number> =>
    Object.fromEntries(engine.search(query(text)).hits.map(h => [h.doc.entityId, h.breakdown.text_relevance]))
  // Unquoted, the synonym's holder ranks between the two; quoted, both holders of the word far above it.
  const plain = relevance('email')
  t.true((plain.mail as number) > (plain['email-summary'] as number))
  const quoted = relevance('"we email"')
  for (const id of ['email-name', 'email-summary']) t.true((quoted[id] as number) > 0.9, id)
  t.true((quoted.mail as number) < 0.2)
})

test('category, tag and developer filters list exactly the matching documents, with or without words', t => {
  const engine = new SearchEngine(64)
  for (let i = 0; i < 300; i++) {
    engine.upsert(
      doc(`e${i}`, {
        category: ['a', 'b', 'c'][i % 3] as string,
        tags: [`x${i % 4}`, `y${i % 5}`],
        developerId: i % 6 === 0 ? 'dev' : null
      }),
      fields(i % 2 ? 'odd words' : 'even words'),
      null
    )
  }
  const expect = (pred: (i: number) => boolean) =>
    Array.from({ length: 300 }, (_, i) => i)
      .filter(pred)
      .map(i => `e${i}`)
      .sort()
  t.deepEqual(
    ids(engine, query('', { category: 'b', limit: 300 })),
    expect(i => i % 3 === 1)
  )
  t.deepEqual(
    ids(engine, query('', { tags: ['x1', 'y2'], limit: 300 })),
    expect(i => i % 4 === 1 && i % 5 === 2)
  )
  t.deepEqual(ids(engine, query('odd', { category: 'a', developerId: 'dev', limit: 300 })), [])
  t.deepEqual(
    ids(engine, query('even', { category: 'a', developerId: 'dev', limit: 300 })),
    expect(i => i % 6 === 0)
  )
  t.deepEqual(ids(engine, query('', { tags: ['nope'], limit: 300 })), [])
})

/** A unit vector along `axis`, in 64 dimensions. */
function axis(i: number): Float32Array {
  const v = new Float32Array(64)
  v[i] = 1
  return v
}

test('a hybrid query counts and ranks its matches the same whether it lists them or visits every slot', t => {
  const engine = new SearchEngine(64)
  const n = 1000
  // Text: "common" in every other document, "rare" in one of 50. Similar to axis 0: one of 20.
  for (let i = 0; i < n; i++)
    engine.upsert(
      doc(`e${String(i).padStart(4, '0')}`),
      fields(`${i % 2 === 0 ? 'common' : 'other'} ${i % 50 === 0 ? 'rare' : 'plain'}`),
      axis(i % 20 === 0 ? 0 : 1)
    )
  const count = (pred: (i: number) => boolean): number => Array.from({ length: n }, (_, i) => i).filter(pred).length
  // Half the documents match: every slot is visited.
  const many = engine.search(query('common', { vector: axis(0), minSemantic: 0.5, limit: n }))
  t.is(
    many.total,
    count(i => i % 2 === 0 || i % 20 === 0)
  )
  // 5 % match: the matches are listed.
  const few = engine.search(query('rare', { vector: axis(0), minSemantic: 0.5, limit: n }))
  t.is(
    few.total,
    count(i => i % 50 === 0 || i % 20 === 0)
  )
  for (const { hits } of [many, few]) {
    t.is(hits.length, new Set(hits.map(h => h.doc.entityId)).size)
    for (let i = 1; i < hits.length; i++) t.true((hits[i - 1]?.score as number) >= (hits[i]?.score as number))
  }
  // Both words and similar: first in either way of visiting.
  t.is(few.hits[0]?.doc.entityId, 'e0000')
  t.is(many.hits[0]?.doc.entityId, 'e0000')
  t.is(few.hits[0]?.breakdown.semantic_similarity, 1)
})

test('cached trust expires a share of the documents per query, so none is older than a minute, and all of it after a longer pause', t => {
  const engine = new SearchEngine(64)
  const n = 100
  for (let i = 0; i < n; i++) engine.upsert(doc(`e${i}`), fields('word'), null)
  // Trust that tells the time it was computed at, in thousands of seconds.
  const clock = (_part: number, _registered: number, _uptime: number, now: number): number => now / 1e6
  const trustAt = (now: number): number[] =>
    engine.search(query('word', { trust: clock, now, limit: n })).hits.map(h => h.breakdown.trust_score)
  t.true(trustAt(0).every(trust => trust === 0))
  // Half a minute later, half the documents were recomputed.
  const half = trustAt(30_000)
  t.is(half.filter(trust => trust === 0.03).length, n / 2)
  t.is(half.filter(trust => trust === 0).length, n / 2)
  // A minute in, the other half: every value is at most 30 s old.
  const minute = trustAt(60_000)
  t.is(minute.filter(trust => trust === 0.06).length, n / 2)
  t.is(minute.filter(trust => trust === 0.03).length, n / 2)
  // After a longer pause, all of it.
  t.true(trustAt(600_000).every(trust => trust === 0.6))
})

test('a capability filter visited by its lists finds what the filter finds over every slot, cards included', t => {
  const engine = new SearchEngine(64)
  const skills = ['search', 'translate', 'summarize']
  for (let i = 0; i < 400; i++)
    engine.upsert(
      doc(`e${i}`, {
        type: i % 4 === 1 ? 'service' : 'agent',
        capabilities: {
          skills: i % 7 === 0 ? [] : [skills[i % 3] as string, 'search'],
          protocols: [],
          languages: [],
          models: []
        }
      }),
      fields(`agent number ${i} ${i % 2 === 0 ? 'weather' : 'travel'}`),
      null
    )
  // Removed and replaced documents leave dead entries in the lists until a sweep.
  for (let i = 0; i < 400; i += 5) engine.remove(`e${i}`)
  for (let i = 0; i < 400; i += 10)
    engine.upsert(
      doc(`e${i}`, { capabilities: { skills: ['translate'], protocols: [], languages: [], models: [] } }),
      fields('weather again'),
      null
    )
  // Cards declare `translate` for e3 (which lacks it), e4 (which holds it) and a removed entity.
  const declared = new Set(['e3', 'e4', 'e5'])
  // Two conditions (the filter checks both), and one (its list covers it, the filter is not run).
  for (const wanted of [['translate', 'search'], ['translate']]) {
    const filter = (d: { entityId: string; capabilities: { skills: readonly string[] } }) =>
      wanted.every(v => d.capabilities.skills.includes(v) || (v === 'translate' && declared.has(d.entityId)))
    const capabilityConditions = wanted.map(value => ({
      key: 'skills' as const,
      value,
      plus: value === 'translate' ? [...declared] : []
    }))
    for (const [text, over] of [
      ['weather', {}],
      ['', {}],
      ['travel', { type: 'agent' as const }],
      ['', { type: 'service' as const }]
    ] as const) {
      const all = engine.search(query(text, { ...over, filter }))
      const listed = engine.search(query(text, { ...over, filter, capabilityConditions }))
      t.true(all.total > 0, `${text} ${JSON.stringify(over)} ${wanted}`)
      t.is(listed.total, all.total, `${text} ${wanted}`)
      t.deepEqual(
        listed.hits.map(h => h.doc.entityId),
        all.hits.map(h => h.doc.entityId),
        `${text} ${wanted}`
      )
    }
  }
  const filter = (d: { entityId: string; capabilities: { skills: readonly string[] } }) =>
    d.capabilities.skills.includes('translate') || declared.has(d.entityId)
  const capabilityConditions = [{ key: 'skills' as const, value: 'translate', plus: [...declared] }]
  t.true(
    engine.search(query('', { filter, capabilityConditions, limit: 400 })).hits.some(h => h.doc.entityId === 'e3'),
    'declared by its card'
  )
})

test('text relevance is relative to the best match that passes the filters, whatever list the query visits', t => {
  const engine = new SearchEngine(64)
  // `best` holds the word most often, but is inactive, a service and in another category.
  engine.upsert(doc('best', { active: false, type: 'service', category: 'media' }), fields('zeta zeta zeta'), null)
  engine.upsert(doc('second'), fields('zeta zeta other words here'), null)
  engine.upsert(doc('third'), fields('zeta and many more other words in this one'), null)
  const relevance = (q: EngineQuery): Record<string, number> =>
    Object.fromEntries(engine.search(q).hits.map(h => [h.doc.entityId, h.breakdown.text_relevance]))
  const all = relevance(query('zeta'))
  t.is(all.best, 1)
  t.true((all.second as number) < 1)
  for (const over of [{ active: true }, { type: 'agent' as const }, { category: 'tools' }]) {
    const filtered = relevance(query('zeta', over))
    t.deepEqual(Object.keys(filtered).sort(), ['second', 'third'], JSON.stringify(over))
    t.is(filtered.second, 1, JSON.stringify(over))
    t.true((filtered.third as number) < 1)
  }
  // A phrase bonus can make another document the best.
  const phrase = relevance(query('"zeta many"'))
  t.is(phrase.third, 1)
})

test('min trust admits a document whose trust equals it, whichever way 32 bits round that score', t => {
  const engine = new SearchEngine(64)
  engine.upsert(doc('a'), fields('alpha'), null)
  let excluded = 0
  for (let thousandths = 1; thousandths <= 1000; thousandths++) {
    const score = thousandths / 1000
    const found = engine.search(query('alpha', { trust: () => score, minTrust: score, now: thousandths })).total
    if (found !== 1) excluded++
  }
  t.is(excluded, 0)
})

test('from fullScanBelow slots on, a text query with one capability condition ranks the same through its list as through the filter', t => {
  const engine = new SearchEngine(16, { fullScanBelow: 0 })
  const random = lcg(5)
  const skills = ['search', 'translate', 'summarize']
  for (let i = 0; i < 3000; i++) {
    const vector = unit(new Float32Array(16).map(() => random() - 0.5))
    const skill = skills[i % 3] as string
    engine.upsert(
      doc(`e${String(i).padStart(5, '0')}`, {
        type: i % 4 === 1 ? 'service' : 'agent',
        capabilities: { skills: i % 5 === 0 ? [] : [skill], protocols: [], languages: [], models: [] }
      }),
      fields(`agent ${random() < 0.5 ? 'weather' : 'travel'} ${random() < 0.2 ? 'rare' : 'plain'}`),
      vector
    )
  }
  const declared = new Set(['e00003', 'e00004'])
  const filter = (d: KeptDocument) => d.capabilities.skills.includes('translate') || declared.has(d.entityId)
  const capabilityConditions = [{ key: 'skills' as const, value: 'translate', plus: [...declared] }]
  const vector = unit(new Float32Array(16).fill(1))
  for (const text of ['agent', 'weather', 'rare', 'agent weather'])
    for (const over of [{}, { type: 'service' as const }, { limit: 50 }]) {
      const q = query(text, { ...over, vector, minSemantic: 0.3 })
      t.deepEqual(
        engine.search({ ...q, filter, capabilityConditions }),
        engine.search({ ...q, filter }),
        `${text} ${JSON.stringify(over)}`
      )
    }
})

test('from fullScanBelow slots on, a text query ranks its text matches exactly as a full comparison would, and still finds by similarity when they do not fill the page', t => {
  const dimension = 64
  const textFirst = new SearchEngine(dimension, { fullScanBelow: 0 })
  const full = new SearchEngine(dimension)
  const random = lcg(7)
  const words = ['common', 'agent', 'data', 'rare', 'plain', 'other', 'tool', 'search']
  for (let i = 0; i < 2000; i++) {
    const vector = unit(new Float32Array(dimension).map(() => random() - 0.5))
    const text = Array.from({ length: 4 }, () => words[Math.floor(random() ** 2 * words.length)]).join(' ')
    const document = doc(`e${String(i).padStart(5, '0')}`, {
      lastChange: Math.floor(random() * 90) * 86_400_000,
      active: random() < 0.7,
      uptime: random(),
      tags: [i % 2 === 0 ? 'even' : 'odd', ...(i % 10 === 0 ? ['tenth'] : [])]
    })
    for (const engine of [textFirst, full])
      engine.upsert(document, fields(text, i % 7 === 0 ? 'search tool' : ''), vector)
  }
  const trust = (_: number, __: number, uptime: number): number => uptime
  const now = 90 * 86_400_000
  const vector = (text: string): Float32Array => {
    const v = new Float32Array(dimension)
    for (const c of text) v[c.charCodeAt(0) % dimension] = (v[c.charCodeAt(0) % dimension] ?? 0) + 1
    return unit(v)
  }
  for (const text of ['common', 'agent data', 'rare', '"search tool"', 'plain other tool']) {
    for (const page of [
      { offset: 0, limit: 10 },
      { offset: 5, limit: 5 },
      { offset: 0, limit: 100 }
    ]) {
      // Filter lists of half and a tenth of the documents, read for their text matches.
      for (const tags of [[], ['even'], ['tenth']]) {
        const q = query(text, { vector: vector(text), trust, now, minSemantic: 0.3, tags, ...page })
        // The full comparison with a threshold no similarity reaches admits the text matches only;
        // text matches that do not fill the page have the list compared in full, as below fullScanBelow.
        const textOnly = full.search({ ...q, minSemantic: 2 })
        const want = textOnly.total >= page.offset + page.limit ? textOnly : full.search(q)
        t.deepEqual(textFirst.search(q), want, `${text} ${JSON.stringify(page)} ${tags}`)
      }
    }
  }
  // A word no document holds fills no page: every document is compared, as below fullScanBelow.
  const unknown = query('absent', { vector: vector('common'), trust, now, minSemantic: 0.1, limit: 20 })
  const found = textFirst.search(unknown)
  t.true(found.total > 0)
  t.deepEqual(found, full.search(unknown))
})

test("a query with words and a filter list scores the list's documents from their words exactly as from the posting lists", t => {
  const engine = new SearchEngine(64)
  const random = lcg(11)
  const words = ['common', 'agent', 'data', 'rare', 'plain', 'other', 'tool', 'search']
  for (let i = 0; i < 3000; i++) {
    const pick = (): string => words[Math.floor(random() ** 2 * words.length)] as string
    const text = Array.from({ length: 6 }, pick).join(' ')
    const document = doc(`e${String(i).padStart(5, '0')}`, {
      tags: i % 40 === 0 ? ['narrow'] : ['wide'],
      category: i % 3 === 0 ? 'finance' : 'tools',
      lastChange: Math.floor(random() * 90) * 86_400_000
    })
    engine.upsert(document, fields(text, i % 3 === 0 ? `${pick()} ${pick()}` : ''), null)
  }
  const narrow = (d: KeptDocument): boolean => d.tags.includes('narrow')
  const queries = ['common', 'agent data', '"search tool"', 'common "data agent" rare', 'absent']
  for (const text of queries) {
    const listed = engine.search(query(text, { tags: ['narrow'], limit: 20 }))
    // The same condition as a predicate: no list to read, the posting lists are scored.
    const posted = engine.search(query(text, { filter: narrow, limit: 20 }))
    t.deepEqual(listed, posted, text)
  }
  // Two filter lists: the shorter is visited, the other checked on marks by slot. The category
  // alone: a third of the documents, whose postings alone are scored.
  const finance = (d: KeptDocument): boolean => d.category === 'finance'
  for (const text of ['', 'common', 'agent data']) {
    for (const tags of [['narrow'], ['wide'], []]) {
      const listed = engine.search(query(text, { category: 'finance', tags, limit: 30 }))
      const posted = engine.search(
        query(text, { filter: d => finance(d) && tags.every(tag => d.tags.includes(tag)), limit: 30 })
      )
      t.deepEqual(listed, posted, `${text} finance ${tags}`)
      t.true(listed.total > 0)
    }
  }
  const expanded = query('common', { tags: ['narrow'] })
  const weighted = { ...expanded, terms: [...expanded.terms, { term: 'data', weight: 0.4 }] }
  t.deepEqual(engine.search(weighted), engine.search({ ...weighted, tags: [], filter: narrow }))
  t.true(engine.search(query('common', { tags: ['narrow'] })).total > 0)
})

test('warming fills the empty trust caches with what a query would compute, and ranks the same', t => {
  const warmed = new SearchEngine(64)
  const cold = new SearchEngine(64)
  const trust = (_: number, registeredAt: number): number => Math.min(1, registeredAt / 1e6)
  const q = query('alpha', { trust, now: 1e6, limit: 20 })
  t.is(warmed.warmSignals(100, 100), 0, 'nothing to warm before a first query')
  for (const engine of [warmed, cold]) {
    engine.upsert(doc('a', { registeredAt: 1 }), fields('alpha'), null)
    engine.search(q)
    for (let i = 0; i < 30; i++)
      engine.upsert(doc(`n${String(i).padStart(2, '0')}`, { registeredAt: 1000 * i }), fields('alpha beta'), null)
  }
  t.is(warmed.warmSignals(20, 1000), 20)
  t.is(warmed.warmSignals(100, 1000), 10)
  t.is(warmed.warmSignals(100, 1000), 0)
  t.deepEqual(warmed.search(q), cold.search(q))
})
