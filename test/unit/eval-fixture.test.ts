import { readFileSync } from 'node:fs'
import test from 'ava'

interface Entity {
  id: string
  name: string
  category: string
  summary: string
  tags: string[]
  capability_summary: { skills: string[] }
  type: string
}
interface Query {
  id: string
  query: string
  kind: string
  relevance: Record<string, number>
}

const load = <T>(name: string): T =>
  JSON.parse(readFileSync(new URL(`../fixtures/eval/${name}`, import.meta.url), 'utf8')) as T
const entities = load<Entity[]>('entities.json')
const queries = load<Query[]>('queries.json')

test('entities: at least 500, unique ids and names, well formed', t => {
  t.true(entities.length >= 500, `${entities.length} entities`)
  t.is(new Set(entities.map(e => e.id)).size, entities.length, 'ids are unique')
  t.is(new Set(entities.map(e => e.name)).size, entities.length, 'names are unique')
  for (const e of entities) {
    t.regex(e.id, /^zns:[0-9a-f]{32}$/, e.id)
    t.true(e.name.length > 0 && e.category.length > 0 && e.summary.length > 0, e.id)
    t.true(e.type === 'agent' || e.type === 'service', e.id)
    t.true(e.tags.length >= 2 && e.tags.length <= 5, `${e.id}: ${e.tags.length} tags`)
    t.true(Array.isArray(e.capability_summary.skills) && e.capability_summary.skills.length > 0, e.id)
  }
})

test('queries: at least 150, a third paraphrases, unique ids, graded judgments of existing entities', t => {
  t.true(queries.length >= 150, `${queries.length} queries`)
  t.is(new Set(queries.map(q => q.id)).size, queries.length, 'ids are unique')
  t.true(queries.filter(q => q.kind === 'paraphrase').length * 3 >= queries.length, 'at least a third are paraphrases')
  const ids = new Set(entities.map(e => e.id))
  for (const q of queries) {
    t.true(['keyword', 'natural', 'paraphrase'].includes(q.kind), q.id)
    t.true(q.query.trim().length > 0, q.id)
    const judged = Object.entries(q.relevance)
    t.true(judged.length > 0, `${q.id} has a relevant entity`)
    t.true(
      judged.some(([, g]) => g >= 2),
      `${q.id} has a good or exact match`
    )
    for (const [id, grade] of judged) {
      t.true(ids.has(id), `${q.id}: ${id} exists`)
      t.true(grade === 1 || grade === 2 || grade === 3, `${q.id}: grade ${grade}`)
    }
  }
})
