import test from 'ava'
import { pino } from 'pino'
import { HomeTermSummary } from '../../src/services/search/home-terms.js'
import type { FieldTokens } from '../../src/search/text-index.js'

const fields = (words: string): FieldTokens => ({
  name: words.split(' '),
  tags: [],
  category: [],
  summary: [],
  capabilities: []
})

test('home terms are counted per entity: updates release the words dropped, removals all of them, however many', t => {
  const home = new HomeTermSummary({
    registryId: 'zns:registry:r',
    host: 'h.test',
    falsePositiveRate: 0.01,
    rebuildIntervalMs: 1e9,
    logger: pino({ level: 'silent' })
  })
  t.teardown(() => home.stop())
  home.update({ entity_id: 'a', home_registry: 'h.test' }, fields('x y z'))
  home.update({ entity_id: 'b', home_registry: 'h.test' }, fields('y w'))
  t.is(home.termCount, 4)
  home.update({ entity_id: 'a', home_registry: 'h.test' }, fields('x q'))
  t.is(home.termCount, 4)
  home.update({ entity_id: 'elsewhere', home_registry: 'other.test' }, fields('v'))
  t.is(home.termCount, 4)
  home.remove('a')
  t.is(home.termCount, 2)
  // More term IDs than one spread of arguments could carry, and IDs above 65,535.
  home.update(
    { entity_id: 'c', home_registry: 'h.test' },
    fields(Array.from({ length: 70_000 }, (_, i) => `t${i}`).join(' '))
  )
  t.is(home.termCount, 70_002)
  home.remove('b')
  home.remove('c')
  t.is(home.termCount, 0)
  t.is(home.homeEntities, 0)
})
