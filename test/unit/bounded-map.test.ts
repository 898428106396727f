/**
 * BoundedMap: the evict-oldest policy the node's caches and bookkeeping maps share
 * (src/util/bounded-map.ts).
 */
import test from 'ava'
import { BoundedMap } from '../../src/util/bounded-map.js'

test('adding a key to a full map drops the entry inserted longest ago', t => {
  const map = new BoundedMap<string, number>(3)
  for (const [key, value] of [
    ['a', 1],
    ['b', 2],
    ['c', 3],
    ['d', 4]
  ] as const)
    map.set(key, value)
  t.is(map.size, 3)
  t.deepEqual([...map.keys()], ['b', 'c', 'd'])
})

test('updating a key of a full map drops nothing and keeps the key in its place', t => {
  const map = new BoundedMap<string, number>(2)
  map.set('a', 1).set('b', 2).set('a', 10)
  t.deepEqual(
    [...map],
    [
      ['a', 10],
      ['b', 2]
    ]
  )
  map.set('c', 3)
  t.deepEqual([...map.keys()], ['b', 'c'], 'a was still the oldest')
})

test('a key deleted and set again counts as the newest', t => {
  const map = new BoundedMap<string, number>(2)
  map.set('a', 1).set('b', 2)
  map.delete('a')
  map.set('a', 1)
  map.set('c', 3)
  t.deepEqual([...map.keys()], ['a', 'c'])
})
