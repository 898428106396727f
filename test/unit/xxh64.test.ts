import test from 'ava'
import bf from 'bloom-filters'
import { TERM_FILTER_SEED } from '../../src/search/term-filter.js'
import { xxh64Low32 } from '../../src/search/xxh64.js'

test('xxh64Low32 equals xxhashjs through bloom-filters for short, long and non-ASCII strings', t => {
  const hashing = new bf.Hashing()
  const texts = ['', 'a', 'translat', 'weather-agent', 'é', '漢字', '😀 emoji', 'x'.repeat(31), 'y'.repeat(32)]
  for (let i = 0; i < 3000; i++) {
    let s = ''
    for (let j = 0; j < i % 90; j++) s += String.fromCharCode(32 + ((i * 31 + j * 17) % 95))
    texts.push(i % 7 === 0 ? `${s}ü€𝄞` : s)
  }
  // (bloom-filters replaces a seed of 0 by its default, so 0 is not compared.)
  for (const seed of [TERM_FILTER_SEED + 1, TERM_FILTER_SEED + 2, 1, 0x9e3779b1, 0xffffffff])
    for (const text of texts)
      if (xxh64Low32(text, seed) !== hashing.serialize(text, seed))
        return t.fail(`${JSON.stringify(text)}, seed ${seed}`)
  t.pass()
})
