import test from 'ava'
import {
  agent,
  deployedRegistration,
  developer,
  developerRegistration,
  signSpec,
  specRegistration
} from '../helpers/identities.js'
import { http, startTestNode, type TestNode } from '../helpers/node.js'

const dev = developer(31)
const other = developer(32)
let n: TestNode

const entities: [number, Record<string, unknown>][] = [
  [
    1,
    {
      name: 'Doc Translator',
      category: 'language',
      tags: ['translation', 'documents'],
      summary: 'Translates documents between forty languages',
      capability_summary: { skills: ['translate'], protocols: ['a2a'], languages: ['en', 'fr'] }
    }
  ],
  [
    2,
    {
      name: 'Meeting Summarizer',
      category: 'productivity',
      tags: ['summary', 'meetings'],
      summary: 'Summarises meeting transcripts into action items',
      capability_summary: { skills: ['summarize'], protocols: ['mcp'] }
    }
  ],
  [
    3,
    {
      name: 'Code Reviewer',
      category: 'developer-tools',
      tags: ['code', 'review'],
      summary: 'Reviews pull requests for bugs and style',
      capability_summary: { skills: ['code-review'], models: ['gpt-4o'] }
    }
  ],
  [
    4,
    { name: 'Weather Now', category: 'data', tags: ['weather'], summary: 'Current weather and forecasts for any city' }
  ],
  [
    5,
    {
      name: 'Invoice Parser',
      category: 'finance',
      tags: ['invoice', 'pdf'],
      summary: 'Extracts line items from PDF invoices'
    }
  ]
]

test.before(async () => {
  n = await startTestNode()
  for (const [i, fields] of entities) {
    const res = await http(n.url, 'POST', '/v1/entities', { body: specRegistration(dev, agent(dev, i), fields) })
    if (res.status !== 201) throw new Error(JSON.stringify(res.body))
  }
  await http(n.url, 'POST', '/v1/entities', {
    body: deployedRegistration(other, agent(other, 1), {
      entity_type: 'service',
      name: 'Translation API',
      category: 'language',
      tags: ['translation'],
      summary: 'Machine translation as a service',
      service_endpoint: 'https://mt.example.com',
      entity_url: ''
    })
  })
  await n.node.search.idle()
})
test.after.always(async () => {
  await n.stop()
})

const search = (body: Record<string, unknown>) => http(n.url, 'POST', '/v1/search', { body })

test('a keyword query ranks the best text match first, with a full score breakdown', async t => {
  const res = await search({ query: 'translate documents' })
  t.is(res.status, 200, JSON.stringify(res.body))
  t.is(res.body.results[0].name, 'Doc Translator')
  const top = res.body.results[0]
  t.is(typeof top.score, 'number')
  t.deepEqual(Object.keys(top.score_breakdown).sort(), [
    'availability',
    'freshness',
    'semantic_similarity',
    'text_relevance',
    'trust_score'
  ])
  t.is(top.score_breakdown.text_relevance, 1)
  t.like(top, { type: 'agent', entity_type: 'agent', status: 'active', entity_url: 'https://agent1.example.com' })
  t.deepEqual(top.tags, ['translation', 'documents'])
  t.like(res.body.search_stats, { federated_results: 0, peers_queried: 0 })
  t.is(typeof res.body.search_stats.latency_ms, 'number')
  t.is(
    res.body.results.every((r: { card?: unknown }) => r.card === undefined),
    true,
    'no card without enrich'
  )
})

test('synonyms and stemming bridge wording: "translator" finds the translation agent; no type means every type', async t => {
  const res = await search({ query: 'translator', type: 'agent' })
  t.true(res.body.results.some((r: { name: string }) => r.name === 'Doc Translator'))
  t.false(res.body.results.some((r: { type: string }) => r.type === 'service'))
  const any = await search({ query: 'translation', type: 'any' })
  t.true(any.body.results.some((r: { name: string }) => r.name === 'Translation API'))
  const untyped = await search({ query: 'translation' })
  t.deepEqual(
    untyped.body.results.map((r: { name: string }) => r.name).sort(),
    any.body.results.map((r: { name: string }) => r.name).sort(),
    'as the origin registry and the deployed clients have it'
  )
  const services = await search({ query: 'translation', entity_type: 'service' })
  t.deepEqual(
    services.body.results.map((r: { name: string }) => r.name),
    ['Translation API']
  )
})

test('filters combine with AND; an empty query with filters lists by trust, availability and freshness', async t => {
  const byCategory = await search({ category: 'Language', type: 'agent' })
  t.deepEqual(
    byCategory.body.results.map((r: { name: string }) => r.name),
    ['Doc Translator']
  )
  const byTags = await search({ tags: ['invoice', 'pdf'] })
  t.deepEqual(
    byTags.body.results.map((r: { name: string }) => r.name),
    ['Invoice Parser']
  )
  t.is((await search({ tags: ['invoice', 'weather'] })).body.total_found, 0)
  const bySkill = await search({ skills: ['Summarize'] })
  t.deepEqual(
    bySkill.body.results.map((r: { name: string }) => r.name),
    ['Meeting Summarizer']
  )
  t.is((await search({ protocols: ['a2a'], languages: ['fr'] })).body.results[0].name, 'Doc Translator')
  t.is((await search({ models: ['gpt-4o'] })).body.results[0].name, 'Code Reviewer')
  const byDev = await search({ developer_id: dev.id })
  t.is(byDev.body.total_found, 5)
  t.is((await search({ developer_id: other.id, type: 'any' })).body.total_found, 1)
  const byId = await search({ fqan: agent(dev, 4).agentId })
  t.deepEqual(
    byId.body.results.map((r: { name: string }) => r.name),
    ['Weather Now']
  )
})

test('paging: max_results, offset, exact total_found and has_more', async t => {
  const first = await search({ developer_id: dev.id, max_results: 2 })
  t.like(first.body, { total_found: 5, has_more: true, offset: 0, max_results: 2 })
  t.is(first.body.results.length, 2)
  const last = await search({ developer_id: dev.id, max_results: 2, offset: 4 })
  t.like(last.body, { total_found: 5, has_more: false })
  t.is(last.body.results.length, 1)
})

test('status: inactive entities are hidden unless status any; min_trust_score filters', async t => {
  t.is((await search({ developer_id: dev.id, status: 'offline' })).body.total_found, 0)
  t.is((await search({ developer_id: dev.id, status: 'any' })).body.total_found, 5)
  t.is((await search({ developer_id: dev.id, status: 'online' })).body.total_found, 5)
  t.is((await search({ developer_id: dev.id, min_trust_score: 0.9 })).body.total_found, 0)
  t.is((await search({ developer_id: dev.id, min_trust_score: 0.1 })).body.total_found, 5)
})

test('a quoted phrase adds its bonus to exact matches', async t => {
  const res = await search({ query: '"action items" meeting' })
  t.is(res.body.results[0].name, 'Meeting Summarizer')
})

test('bad requests get 400 with the field', async t => {
  for (const [body, field] of [
    [{ max_results: 'ten' }, 'max_results'],
    [{ status: 'sleepy' }, 'status'],
    [{ type: 'robot' }, 'type'],
    [{ min_trust_score: 2 }, 'min_trust_score'],
    [{ tags: 'x' }, 'tags']
  ] as const) {
    const res = await search(body)
    t.is(res.status, 400, JSON.stringify(body))
    t.is(res.body.field, field)
  }
  // Paging beyond its bounds is clamped, not refused; the reply says what applied.
  t.like((await search({ max_results: 5000, offset: -2 })).body, { max_results: 100, offset: 0 })
  const fqan = await search({ fqan: 'not an fqan' })
  t.like(fqan.body, { error: 'fqan_invalid' })
})

test('updates and deregistrations reach the index', async t => {
  const loner = developer(33)
  const a = agent(loner, 50)
  await http(n.url, 'POST', '/v1/entities', {
    body: specRegistration(loner, a, {
      name: 'Quasar Mapper',
      summary: 'Maps quasars',
      tags: ['space'],
      category: 'astronomy'
    })
  })
  await n.node.search.idle()
  t.is((await search({ query: 'quasar' })).body.total_found, 1)
  await http(n.url, 'PUT', `/v1/entities/${a.agentId}`, {
    body: signSpec(a.keyPair, { summary: 'Charts nebulae instead' })
  })
  await n.node.search.idle()
  t.is((await search({ query: 'nebulae' })).body.results[0].name, 'Quasar Mapper')
  const { sign } = await import('../../src/identity/keys.js')
  await http(n.url, 'DELETE', `/v1/entities/${a.agentId}`, {
    headers: { authorization: `Bearer ${sign(a.keyPair, a.agentId)}` }
  })
  t.is((await search({ query: 'nebulae' })).body.total_found, 0)
})

test('GET /v1/categories and /v1/tags: names as the origin registry answers, counts with ?counts=true, most used first', async t => {
  const categories = await http(n.url, 'GET', '/v1/categories?counts=true')
  t.deepEqual(
    categories.body.find((c: { name: string }) => c.name === 'language'),
    { name: 'language', count: 2 }
  )
  // The deployed clients read {categories: [names]} (other tests of this file register meanwhile).
  const names = await http(n.url, 'GET', '/v1/categories')
  t.deepEqual(Object.keys(names.body), ['categories'])
  t.true(names.body.categories.every((c: unknown) => typeof c === 'string'))
  t.true(names.body.categories.includes('language'))
  const tags = await http(n.url, 'GET', '/v1/tags?counts=true')
  t.deepEqual(tags.body[0], { tag: 'translation', count: 2 })
  for (let i = 1; i < tags.body.length; i++) t.true(tags.body[i - 1].count >= tags.body[i].count)
  const tagNames = (await http(n.url, 'GET', '/v1/tags')).body
  t.deepEqual(Object.keys(tagNames), ['tags'])
  t.is(tagNames.tags[0], 'translation')
  t.is((await http(n.url, 'GET', '/v1/tags?counts=maybe')).body.error, 'invalid_query')
})

test('fusion: rrf ranks by reciprocal rank fusion on request; an unknown fusion is a 400', async t => {
  const res = await search({ query: 'translate documents', fusion: 'rrf' })
  t.is(res.status, 200, JSON.stringify(res.body))
  t.is(res.body.results[0].name, 'Doc Translator')
  const weighted = await search({ query: 'translate documents' })
  t.notDeepEqual(
    res.body.results.map((r: { score: number }) => r.score),
    weighted.body.results.map((r: { score: number }) => r.score)
  )
  t.deepEqual(
    res.body.results[0].score_breakdown,
    weighted.body.results[0].score_breakdown,
    'the breakdown shows the raw signals either way'
  )
  const bad = await search({ query: 'x', fusion: 'borda' })
  t.is(bad.status, 400)
  t.is(bad.body.field, 'fusion')
})

test.serial('trust follows the developer: registering a profile raises every entity of theirs at once', async t => {
  const newcomer = developer(33)
  const registered = await http(n.url, 'POST', '/v1/entities', {
    body: specRegistration(newcomer, agent(newcomer, 1), {
      name: 'Tide Tables',
      category: 'data',
      tags: ['tides'],
      summary: 'Tide tables for harbours'
    })
  })
  t.is(registered.status, 201, JSON.stringify(registered.body))
  const before = (await search({ query: 'tide tables' })).body.results[0].score_breakdown.trust_score
  const profile = await http(n.url, 'POST', '/v1/developers', {
    body: developerRegistration(newcomer, { name: 'Harbour Labs' })
  })
  t.is(profile.status, 201, JSON.stringify(profile.body))
  const after = (await search({ query: 'tide tables' })).body.results[0].score_breakdown.trust_score
  t.is(Math.round((after - before) * 1000) / 1000, 0.1)
})
