import test from 'ava'
import { analyze, analyzeQuery } from '../../src/search/analyzer.js'
import { DEFAULT_EXPANSION, QueryExpander } from '../../src/search/query-expansion.js'
import type { FieldTokens } from '../../src/search/text-index.js'
import { wordVectors } from '../../src/search/word-vectors.js'

const fields = (summary: string): FieldTokens => ({
  name: [],
  tags: [],
  category: [],
  summary: analyze(summary),
  capabilities: []
})

const CATALOG = [
  'Summarizes research papers into a short abstract',
  'Condenses books and long reports into a brief digest',
  'Translates websites into many languages',
  'Transcribes audio recordings of meetings',
  'Books flights and hotels for business travel',
  'Forecasts rain and wind for your city',
  'Reviews pull requests and finds bugs in source code',
  'Answers questions about invoices and payments'
]

/** An expander that has seen the catalog, padded with empty records so that no stem passes 5 %. */
function expanderOf(summaries: readonly string[], padding = 200): QueryExpander {
  const x = new QueryExpander()
  for (const s of summaries) x.addDocument(fields(s))
  for (let i = 0; i < padding; i++) x.addDocument(fields(''))
  return x
}

const expansions = (x: QueryExpander, query: string) => {
  const analyzed = analyzeQuery(query)
  return x.expand(analyzed).terms.slice(analyzed.terms.length)
}

test('expansions are stems of indexed records near the query, weighted below the user words', t => {
  const x = expanderOf(CATALOG)
  const added = expansions(x, 'boil down a lengthy scientific article')
  const terms = added.map(e => e.term)
  t.true(terms.includes('paper') || terms.includes('research'), terms.join(' '))
  const vocabulary = new Set(CATALOG.flatMap(analyze))
  for (const e of added) {
    t.true(vocabulary.has(e.term), `${e.term} is in the records`)
    t.true(e.weight > 0 && e.weight <= DEFAULT_EXPANSION.weight, `${e.term}: ${e.weight}`)
    t.is(e.synonymOf, 'boil lengthi scientif articl')
  }
  // the query's own terms come first, unchanged
  const analyzed = analyzeQuery('boil down a lengthy scientific article')
  t.deepEqual(x.expand(analyzed).terms.slice(0, analyzed.terms.length), analyzed.terms)
  t.deepEqual(analyzed, analyzeQuery('boil down a lengthy scientific article'), 'the query itself is not changed')
})

test('the best expansions come first; never a user term or a synonym again', t => {
  const x = expanderOf([...CATALOG, 'Translation and translator tools, summary and summarization'])
  const analyzed = analyzeQuery('translate a summary')
  const added = x.expand(analyzed).terms.slice(analyzed.terms.length)
  const own = new Set(analyzed.terms.map(q => q.term))
  t.true(added.length > 0)
  for (const e of added) t.false(own.has(e.term), e.term)
  for (let i = 1; i < added.length; i++) t.true(added[i - 1]!.weight >= added[i]!.weight)
})

test('nothing is added without a vocabulary, for unknown words, or for stems in more than 5 % of the records', t => {
  const empty = new QueryExpander()
  const analyzed = analyzeQuery('summarize research papers')
  t.is(empty.expand(analyzed), analyzed, 'no records yet: the same query')
  const x = expanderOf(CATALOG)
  const unknown = analyzeQuery('xqzvw plkjh')
  t.is(x.expand(unknown), unknown, 'no word of the query in the table')
  // "paper" in every record but one: far above 5 %, never an expansion however close
  const common = new QueryExpander()
  for (let i = 0; i < 100; i++) common.addDocument(fields('paper'))
  common.addDocument(fields('research journal'))
  const terms = expansions(common, 'scientific article').map(e => e.term)
  t.false(terms.includes('paper'), terms.join(' '))
  t.true(terms.includes('journal'), terms.join(' '))
})

test('at most 5 expansions per known query word and 20 in all', t => {
  const many = Array.from({ length: 400 }, (_, i) =>
    [
      'summary abstract digest report paper research article journal book novel story essay',
      'translation language website audio meeting flight hotel travel rain wind city code bug invoice payment'
    ][i % 2]!.replace(/ /g, ` w${i} `)
  )
  const x = expanderOf(many, 20_000)
  t.is(expansions(x, 'summarize').length, 5)
  t.is(expansions(x, 'summarize research').length, 10)
  t.true(expansions(x, 'summarize research papers about weather travel payments').length <= 20)
  const known = [...new Set(many.flatMap(analyze))].filter(stem => wordVectors().row(stem) >= 0)
  t.is(x.vocabularyCount, known.length, 'the vocabulary: the stems of the records that the table knows')
})
