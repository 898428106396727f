import test from 'ava'
import { TrustIdIndex } from '../../src/services/registry/trust-id-index.js'
import { seededRandom } from '../../scripts/lib/random.js'

const hex = (random: () => number, digits: number) =>
  Array.from({ length: digits }, () => Math.floor(random() * 16).toString(16)).join('')

test('finds every ID by its number, of every kind, including IDs that share their first digits', t => {
  const random = seededRandom(7)
  const ids = new Set<string>()
  for (let i = 0; i < 20_000; i++) ids.add(`${['zns:', 'zns:svc:', 'zns:dev:'][i % 3]}${hex(random, 32)}`)
  // Same first 13 digits and kind, different rest: kept apart.
  const prefix = hex(random, 13)
  ids.add(`zns:${prefix}${'0'.repeat(19)}`)
  ids.add(`zns:${prefix}${'1'.repeat(19)}`)
  // The same digits under another kind are another key.
  ids.add(`zns:dev:${prefix}${'0'.repeat(19)}`)
  ids.add('not an id')
  ids.add(`zns:${'g'.repeat(32)}`)
  const sorted = [...ids].sort()
  const index = new TrustIdIndex(sorted)
  for (const [i, id] of sorted.entries()) t.is(index.get(id), i, id)
  t.is(index.get(`zns:${prefix}${'2'.repeat(19)}`), undefined, 'shares digits with two held IDs')
  t.is(index.get(`zns:svc:${prefix}${'0'.repeat(19)}`), undefined)
  t.is(index.get(`zns:${hex(random, 32)}`), undefined)
  t.is(index.get('zns:'), undefined)
  t.false(index.has('another'))
})

test('IDs that differ only in their last digits spread over the table (a build of 200,000 takes well under a second)', t => {
  const ids = Array.from({ length: 200_000 }, (_, i) => `zns:${i.toString(16).padStart(32, '0')}`)
  const started = performance.now()
  const index = new TrustIdIndex(ids)
  t.true(performance.now() - started < 2000)
  t.is(index.get(ids[123_456]!), 123_456)
  t.is(index.get(`zns:${(200_000).toString(16).padStart(32, '0')}`), undefined)
})
