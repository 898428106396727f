import test from 'ava'
import { EntityCatalog, ascendingOrder } from '../../src/services/registry/catalog.js'
import type { EntityRecord } from '../../src/store/records.js'

/** What a comparator sort gives: ascending times, equal ones in their given order. */
const byComparator = (times: readonly number[]) =>
  times.map((_, i) => i).sort((a, b) => (times[a] as number) - (times[b] as number) || a - b)

test('the order by registration time is the comparator sort, ties kept in their order, over a short or a long span', t => {
  let seed = 7
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
    return seed / 2 ** 31
  }
  const now = Date.parse('2026-11-26T00:00:00.000Z')
  // A day of registrations with many equal times: packed into doubles and sorted natively.
  const day = Array.from({ length: 5_000 }, () => now + Math.floor(random() * 1_000) * 86_400)
  t.deepEqual([...ascendingOrder(day)], byComparator(day))
  t.true(ascendingOrder(day) instanceof Uint32Array)
  // Times since 1970 and far ahead: too long a span to pack, sorted with the comparator.
  const wide = [now, 0, 4e15, now, 0, -1e12]
  t.deepEqual([...ascendingOrder(wide)], byComparator(wide))
  t.deepEqual([...ascendingOrder([])], [])
  t.deepEqual([...ascendingOrder([now])], [0])
})

const record = (id: string, registeredAt: string, tags: string[]): EntityRecord =>
  ({
    entity_id: id,
    type: 'agent',
    category: 'Tools',
    developer_id: null,
    tags,
    registered_at: registeredAt
  }) as unknown as EntityRecord

test('records loaded in any order list in registration order; tags are counted through updates and removals', t => {
  const catalog = new EntityCatalog()
  catalog.loadRecord(record('b', '2026-01-02T00:00:00.000Z', ['Translation', 'pdf']))
  catalog.loadRecord(record('c', '2026-01-03T00:00:00Z', ['translation']))
  catalog.loadRecord(record('a', '2026-01-01T00:00:00.000Z', ['translation']))
  catalog.loaded()
  t.deepEqual(catalog.list({ offset: 0, limit: 10 }).ids, ['a', 'b', 'c'])
  t.deepEqual(catalog.list({ category: 'tools', offset: 1, limit: 1 }), { ids: ['b'], total: 3 })
  t.deepEqual(catalog.tagCounts(), [
    { tag: 'translation', count: 3 },
    { tag: 'pdf', count: 1 }
  ])
  catalog.upsert(record('b', '2026-01-02T00:00:00.000Z', ['summary']))
  catalog.remove('c')
  t.deepEqual(catalog.tagCounts(), [
    { tag: 'summary', count: 1 },
    { tag: 'translation', count: 1 }
  ])
  t.is(catalog.count('agent'), 2)
})

test('tags of any characters are counted and uncounted exactly, and an entity without tags counts none', t => {
  const catalog = new EntityCatalog()
  const odd = ['a,b', '"quoted"', 'nul\u0000inside', '[x]', 'ÉTÉ']
  catalog.upsert(record('a', '2026-01-01T00:00:00.000Z', odd))
  catalog.upsert(record('b', '2026-01-02T00:00:00.000Z', []))
  t.deepEqual(
    catalog
      .tagCounts()
      .map(c => c.tag)
      .sort(),
    ['"quoted"', '[x]', 'a,b', 'nul\u0000inside', 'été'].sort()
  )
  catalog.upsert(record('a', '2026-01-01T00:00:00.000Z', ['plain']))
  t.deepEqual(catalog.tagCounts(), [{ tag: 'plain', count: 1 }])
  catalog.remove('a')
  catalog.remove('b')
  t.deepEqual(catalog.tagCounts(), [])
  t.is(catalog.count('agent'), 0)
})
