import test from 'ava'
import {
  analyze,
  analyzeQuery,
  ANALYZER_FINGERPRINT,
  EXTRA_STOPWORDS,
  isStopword,
  MAX_TOKEN_LENGTH,
  SYNONYM_GROUPS,
  SYNONYM_WEIGHT,
  synonymRepresentatives,
  synonymsOf,
  tokenize,
  type AnalyzedQuery
} from '../../src/search/analyzer.js'

const termMap = (q: AnalyzedQuery): Record<string, number> => Object.fromEntries(q.terms.map(t => [t.term, t.weight]))

test('tokenize: lowercase, split on everything but letters and digits, no empty tokens', t => {
  t.deepEqual(tokenize('Hello, World! job_scraper-v2 (beta)... e-mail@example.com'), [
    'hello',
    'world',
    'job',
    'scraper',
    'v2',
    'beta',
    'e',
    'mail',
    'example',
    'com'
  ])
  t.deepEqual(tokenize(''), [])
  t.deepEqual(tokenize('  --- !!! ... '), [])
  t.deepEqual(tokenize("agent's don't"), ['agent', 's', 'don', 't'])
})

test('tokenize: digits stay, inside and outside words', t => {
  t.deepEqual(tokenize('GPT-4o costs $3.50 for 1,000 calls; web3 v2'), [
    'gpt',
    '4o',
    'costs',
    '3',
    '50',
    'for',
    '1',
    '000',
    'calls',
    'web3',
    'v2'
  ])
})

test('tokenize: Unicode letters, case, marks and compatibility forms', t => {
  t.deepEqual(tokenize('Café NAÏVE Übersetzung ΣΟΦΊΑ'), ['café', 'naïve', 'übersetzung', 'σοφία'])
  // a decomposed accent (e + U+0301) is one word, composed by NFKC
  t.deepEqual(tokenize('Cafe\u0301 au lait'), ['café', 'au', 'lait'])
  // Devanagari vowel signs and virama are combining marks: the word must not be cut
  t.deepEqual(tokenize('हिन्दी अनुवाद'), ['हिन्दी', 'अनुवाद'])
  // CJK has no spaces: a run is one token
  t.deepEqual(tokenize('翻译服务, 日本語'), ['翻译服务', '日本語'])
  // ligatures and full-width forms fold to ASCII
  t.deepEqual(tokenize('ﬁnance ＧＰＴ４'), ['finance', 'gpt4'])
})

test('analyze: stopwords out, single letters out, digits in, order kept', t => {
  t.deepEqual(analyze('The agent translates a document into 3 languages'), [
    'agent',
    'translat',
    'document',
    '3',
    'languag'
  ])
  t.deepEqual(analyze("I don't want the agent's data"), ['want', 'agent', 'data'])
  t.deepEqual(analyze('the of and to is was'), [])
  t.deepEqual(analyze(''), [])
  // registry words are not stopwords: idf discounts them
  t.deepEqual(analyze('Agent service'), ['agent', 'servic'])
})

test('stopwords: the English list plus our contraction fragments and filler', t => {
  for (const w of ['the', 'and', 'of', 'not', 'very', 'you']) t.true(isStopword(w), w)
  for (const w of EXTRA_STOPWORDS) t.true(isStopword(w), w)
  for (const w of ['agent', 'service', 'data', 'search', 'code']) t.false(isStopword(w), w)
  t.deepEqual(analyze('also etc via please'), [])
})

test('analyze: long tokens are cut at 64 characters', t => {
  const long = '7'.repeat(200)
  t.deepEqual(analyze(long), ['7'.repeat(MAX_TOKEN_LENGTH)])
  // a surrogate pair straddling the cut is not split
  const emoji = '\u{1d400}' // MATHEMATICAL BOLD CAPITAL A, a letter outside the BMP (NFKC folds it to "a")
  t.deepEqual(analyze('x'.repeat(63) + emoji), [`${'x'.repeat(63)}a`])
  const han = '\u{20000}' // CJK Ext. B, a letter outside the BMP that NFKC keeps
  const [cut] = analyze(`${'z'.repeat(63) + han}zzz`)
  t.is(cut, 'z'.repeat(63))
})

test('stemming: what the Porter stemmer does, and where the synonym table bridges', t => {
  // the stemmer alone already unites the translate family
  t.deepEqual(analyze('translate translation translator translating translates'), Array(5).fill('translat'))
  t.deepEqual(analyze('agents running searches'), ['agent', 'run', 'search'])
  // but not the summarize family, nor extract/extraction, classify/classification
  t.deepEqual(analyze('summarize summarise summary summarization'), ['summar', 'summaris', 'summari', 'summar'])
  t.deepEqual(analyze('extract extraction classify classification'), ['extract', 'extrac', 'classifi', 'classif'])
  // the table bridges them
  const q = termMap(analyzeQuery('summary'))
  t.is(q.summari, 1)
  t.is(q.summar, SYNONYM_WEIGHT)
  t.is(q.summaris, SYNONYM_WEIGHT)
  t.is(termMap(analyzeQuery('extraction')).extract, SYNONYM_WEIGHT)
  t.is(termMap(analyzeQuery('classification')).classifi, SYNONYM_WEIGHT)
  // expansions are stemmed like index terms (the Go tokenizer's "development" never met "develop")
  t.is(termMap(analyzeQuery('code')).develop, SYNONYM_WEIGHT)
  t.deepEqual(analyze('development developers'), ['develop', 'develop'])
})

test('query: user terms weigh 1, in order, once each; expansions weigh 0.5 with their source', t => {
  const q = analyzeQuery('LLM llm for weather')
  t.is(q.raw, 'LLM llm for weather')
  t.deepEqual(q.terms, [
    { term: 'llm', weight: 1 },
    { term: 'weather', weight: 1 },
    { term: 'gpt', weight: 0.5, synonymOf: 'llm' },
    { term: 'forecast', weight: 0.5, synonymOf: 'weather' }
  ])
  t.deepEqual(q.phrases, [])
})

test('query: an expansion that is also a user term keeps weight 1, and appears once', t => {
  const q = analyzeQuery('gpt llm')
  t.deepEqual(q.terms, [
    { term: 'gpt', weight: 1 },
    { term: 'llm', weight: 1 }
  ])
  const p = analyzeQuery('photo picture image editing')
  t.deepEqual(termMap(p), { photo: 1, pictur: 1, imag: 1, edit: 1, vision: 0.5 })
  t.is(new Set(p.terms.map(x => x.term)).size, p.terms.length)
})

test('query: multi-word entries trigger their group as a run (spaced or hyphenated), never expand into parts', t => {
  for (const text of ['large language model', 'large-language-model', 'Large Language Models']) {
    const q = analyzeQuery(text)
    t.deepEqual(
      q.terms.filter(x => x.weight < 1),
      [
        { term: 'llm', weight: 0.5, synonymOf: 'larg languag model' },
        { term: 'gpt', weight: 0.5, synonymOf: 'larg languag model' }
      ],
      text
    )
  }
  // runs are over analyzed tokens: stopwords between do not break them, other words do
  t.is(termMap(analyzeQuery('language of the model')).llm, 0.5)
  t.deepEqual(termMap(analyzeQuery('language for 3d model')), { languag: 1, '3d': 1, model: 1 })
  // the longest entry wins and covers the shorter one inside it
  t.deepEqual(
    analyzeQuery('large language model')
      .terms.filter(x => x.weight < 1)
      .map(x => x.synonymOf),
    ['larg languag model', 'larg languag model']
  )
  // "llm" does not drag in "model"
  t.deepEqual(termMap(analyzeQuery('llm')), { llm: 1, gpt: 0.5 })
})

test('query: overlapping groups give the union of their expansions', t => {
  const q = termMap(analyzeQuery('stt'))
  for (const term of ['speech', 'voic', 'audio', 'tt', 'transcrib', 'transcript']) t.is(q[term], 0.5, term)
})

test('query: quoted phrases (straight and typographic), analyzed; unterminated quotes are text', t => {
  const q = analyzeQuery('"Doc Translator" for the “legal documents” and "unterminated bit')
  t.deepEqual(q.phrases, [
    ['doc', 'translat'],
    ['legal', 'document']
  ])
  // phrase words are terms too, and the unterminated part is plain text
  t.deepEqual(
    q.terms.filter(x => x.weight === 1).map(x => x.term),
    ['doc', 'translat', 'legal', 'document', 'untermin', 'bit']
  )
  t.deepEqual(analyzeQuery('"the of" "" "x"').phrases, [])
  t.deepEqual(analyzeQuery('"web scraper" and "Web Scrapers"').phrases, [['web', 'scraper']])
  t.deepEqual(analyzeQuery('just "one').phrases, [])
  t.deepEqual(analyzeQuery('"pdf"').phrases, [['pdf']])
})

test('query: only stopwords or punctuation gives no terms and no phrases', t => {
  for (const text of ['the and of', '"the" a an', '', '   ', '?!', "I'm not"]) {
    const q = analyzeQuery(text)
    t.deepEqual(q.terms, [], text)
    t.deepEqual(q.phrases, [], text)
  }
})

test('synonym table: the required groups, single-word representatives, all entries analyzable', t => {
  const required = [
    'translate translation translator translating',
    'summarize summarise summary summarization summariser',
    'code coding programming developer software',
    'llm language-model large-language-model gpt',
    'search retrieval lookup find',
    'image picture photo vision',
    'speech voice audio tts stt',
    'chat chatbot conversation assistant',
    'data dataset database',
    'weather forecast',
    'payment pay billing invoice',
    'email mail',
    'schedule calendar booking appointment',
    'pdf document doc',
    'scrape scraping crawler crawl',
    'sentiment emotion',
    'finance financial stock trading',
    'travel flight hotel',
    'recommend recommendation',
    'classify classification categorize',
    'extract extraction parse',
    'generate generation create',
    'test testing qa',
    'security vulnerability audit',
    'map geocode location'
  ]
  for (const words of required) {
    const list = words.split(' ')
    t.true(
      SYNONYM_GROUPS.some(g => list.every(w => g.includes(w))),
      words
    )
  }
  for (const group of SYNONYM_GROUPS) {
    t.is(analyze(group[0]!).length, 1, group[0])
    for (const entry of group) t.true(analyze(entry).length > 0, entry)
  }
  t.true(Object.isFrozen(SYNONYM_GROUPS) && Object.isFrozen(SYNONYM_GROUPS[0]))
  t.regex(ANALYZER_FINGERPRINT, /^[0-9a-f]{8}$/)
})

test('synonymsOf and synonymRepresentatives: stemmed lookups', t => {
  t.deepEqual([...synonymsOf('weather')], ['forecast'])
  t.deepEqual([...synonymsOf('nothing')], [])
  t.deepEqual(synonymRepresentatives(analyze('summary of documents')), ['summar', 'pdf'])
  t.deepEqual(synonymRepresentatives(analyze('a large language model')), ['llm'])
  t.deepEqual(synonymRepresentatives(analyze('stt')), ['speech', 'transcrib'])
  // a multi-word entry covers the single entries inside it
  t.deepEqual(synonymRepresentatives(analyze('speech to text')), ['speech', 'transcrib'])
  t.deepEqual(synonymRepresentatives(analyze('speech')), ['speech'])
  t.deepEqual(synonymRepresentatives(analyze('banana bread')), [])
})
