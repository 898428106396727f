import test from 'ava'
import { ANALYZER_FINGERPRINT } from '../../src/search/analyzer.js'
import { dot, l2normalize } from '../../src/search/embedders/embedder.js'
import { hash32, HashEmbedder } from '../../src/search/embedders/hash-embedder.js'

const norm = (v: Float32Array): number => Math.sqrt(dot(v, v))
const nonZero = (v: Float32Array): string[] =>
  [...v].flatMap((x, i) => (x === 0 ? [] : [`${i}:${x > 0 ? '+' : '-'}${Math.abs(x).toFixed(4)}`]))

test('id and dimension', t => {
  t.is(new HashEmbedder().dimension, 256)
  t.is(new HashEmbedder().id, `hash-v1:256:${ANALYZER_FINGERPRINT}`)
  t.is(new HashEmbedder(1024).id, `hash-v1:1024:${ANALYZER_FINGERPRINT}`)
})

test('dimension must be a power of two from 64 to 4096', async t => {
  for (const bad of [0, 1, 32, 63, 100, 255, 8192, 64.5, Number.NaN, -64]) {
    t.throws(() => new HashEmbedder(bad), { instanceOf: RangeError }, String(bad))
  }
  for (const ok of [64, 128, 512, 4096]) {
    const [v] = await new HashEmbedder(ok).embed(['weather in Paris'])
    t.is(v!.length, ok)
  }
})

test('deterministic: same text, same vector, across instances and with fixed hashes', async t => {
  const texts = ['Translates documents between 40 languages', 'weather forecast', '']
  const a = await new HashEmbedder().embed(texts)
  const b = await new HashEmbedder().embed(texts)
  t.deepEqual(a, b)
  // pinned values: a change here changes every stored vector (bump the id's version)
  t.is(hash32(''), 2872998923)
  t.is(hash32('agent'), 1034671018)
  t.is(hash32('translat'), 2855197732)
  // translat 1 + its representative 0.5 = 1.5, document 1, bigram 0.5, representative pdf 0.5
  t.deepEqual(nonZero(new HashEmbedder(64).embedOne('Translate documents')), [
    '11:-0.5164',
    '15:+0.2582',
    '33:-0.2582',
    '36:-0.7746'
  ])
})

test('vectors are L2-normalised; text with nothing to embed gives a zero vector', async t => {
  const e = new HashEmbedder()
  const [a, b, empty, stop, punct] = await e.embed([
    'Doc Translator',
    'A very long summary '.repeat(50),
    '',
    'the of and to',
    '?!…'
  ])
  t.true(Math.abs(norm(a!) - 1) < 1e-6)
  t.true(Math.abs(norm(b!) - 1) < 1e-6)
  for (const z of [empty, stop, punct]) t.true(z!.every(x => x === 0))
  t.deepEqual(await e.embed([]), [])
})

test('l2normalize works in place, zero stays zero; dot checks lengths', t => {
  const v = new Float32Array([3, 4])
  t.is(l2normalize(v), v)
  t.deepEqual([...v], [0.6000000238418579, 0.800000011920929])
  const z = new Float32Array(4)
  t.deepEqual([...l2normalize(z)], [0, 0, 0, 0])
  t.is(dot(new Float32Array([1, 2, 3]), new Float32Array([4, 5, 6])), 32)
  t.throws(() => dot(new Float32Array(2), new Float32Array(3)), { instanceOf: RangeError })
})

test('paraphrases through synonyms are closer than unrelated texts', async t => {
  const e = new HashEmbedder()
  const cases: [string, string, string][] = [
    ['summary of documents', 'summarize PDFs', 'weather forecast for Paris'],
    ['photo editing tool', 'picture editing tool', 'flight booking tool'],
    ['chatbot for customer support', 'conversational assistant for customer support', 'stock trading bot'],
    ['LLM gateway', 'large language model gateway', 'payment gateway'],
    ['web crawler', 'scraping the web', 'email sender'],
    ['voice assistant', 'speech chatbot', 'image classifier']
  ]
  let margin = 0
  for (const [a, b, c] of cases) {
    const [va, vb, vc] = await e.embed([a, b, c])
    const para = dot(va!, vb!)
    const other = dot(va!, vc!)
    // per case only ">" : at 256 dimensions one hash collision moves a cosine by ~0.25
    // ("photo"/"book" and "edit"/"schedul" share slots and signs: 0.667 vs 0.645)
    t.true(para > other, `${a} ~ ${b}: ${para.toFixed(3)} vs ${c}: ${other.toFixed(3)}`)
    margin += (para - other) / cases.length
  }
  t.true(margin > 0.25, `mean margin ${margin.toFixed(3)}`)
  // with no word and no synonym in common only collisions remain: spread about 1/sqrt(dimension)
  const [x, y] = await e.embed(['summary of documents', 'weather forecast for Paris'])
  t.true(Math.abs(dot(x!, y!)) < 0.2)
})

test('unrelated texts: mean |cosine| stays near 1/sqrt(dimension)', async t => {
  const e = new HashEmbedder()
  const words =
    'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu'.split(
      ' '
    )
  // disjoint vocabularies: each text gets its own 5 words
  const texts = Array.from({ length: 40 }, (_, i) =>
    Array.from({ length: 5 }, (_, j) => `${words[(i * 5 + j) % words.length]}${i}`).join(' ')
  )
  const vs = await e.embed(texts)
  let sum = 0
  let n = 0
  for (let i = 0; i < vs.length; i++)
    for (let j = i + 1; j < vs.length; j++) {
      sum += Math.abs(dot(vs[i]!, vs[j]!))
      n++
    }
  t.true(sum / n < 0.1, `mean |cos| ${(sum / n).toFixed(3)}`)
})

test('bigrams make order count a little', async t => {
  const e = new HashEmbedder()
  const [a, b] = await e.embed(['machine translation service', 'service translation machine'])
  const c = dot(a!, b!)
  t.true(c < 0.999 && c > 0.5, String(c))
})

// How fast: hash_embed_rate in `npm run bench:search:engine` (scripts/bench/search.ts), not a time limit here.
test('a batch of 1,000 short texts gives each text its own vector, as one at a time', async t => {
  const e = new HashEmbedder()
  const words = [
    'agent',
    'translates',
    'legal',
    'documents',
    'weather',
    'forecast',
    'summarizes',
    'PDF',
    'files',
    'for',
    'the',
    'team',
    'crawler',
    'stock',
    'prices',
    'image'
  ]
  const texts = Array.from(
    { length: 1000 },
    (_, i) =>
      `${Array.from({ length: 12 }, (_, j) => words[(i * 7 + j * 3 + (i >> 3)) % words.length]).join(' ')} v${i}`
  )
  const vectors = await e.embed(texts)
  t.is(vectors.length, 1000)
  t.true(
    vectors.every(v => v.length === 256 && Math.abs(norm(v) - 1) < 1e-6),
    'L2-normalised, of the dimension'
  )
  const bytes = (v: Float32Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength)
  t.true(
    vectors.every((v, i) => bytes(v).equals(bytes(e.embedOne(texts[i]!)))),
    "each is its own text's vector, in order"
  )
})
