import test from 'ava'
import { Int8Matrix, quantize } from '../../src/search/int8-dot.js'
import { VectorIndex } from '../../src/search/vector-index.js'
import { l2normalize } from '../../src/search/embedders/embedder.js'
import { seededRandom } from '../../scripts/lib/random.js'

const random = seededRandom(7)
const randomVector = (dim: number) => l2normalize(Float32Array.from({ length: dim }, () => random() - 0.5))
const exactDot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * (b[i] as number), 0)

test('the WebAssembly SIMD kernel is available and agrees with the JavaScript loop', t => {
  // From about 1,000 dimensions the unrolled kernel has more than 127 locals (two-byte local indices).
  for (const dim of [8, 16, 100, 256, 384, 1536, 4096]) {
    const simd = new Int8Matrix(dim)
    const plain = new Int8Matrix(dim, { simd: false })
    t.true(simd.simd)
    t.false(plain.simd)
    for (let i = 0; i < 3000; i++) {
      const { values } = quantize(randomVector(dim))
      simd.set(i, values)
      plain.set(i, values)
    }
    const query = quantize(randomVector(dim)).values
    t.deepEqual([...simd.scan(query, 3000)], [...plain.scan(query, 3000)], `dimension ${dim}`)
    t.is(simd.dot(query, 17), plain.scan(query, 3000)[17] as number)
  }
})

test('similarities and the slots above a threshold: the kernel and the JavaScript loop agree, in one pass', t => {
  const dim = 256
  const simd = new Int8Matrix(dim)
  const plain = new Int8Matrix(dim, { simd: false })
  const vectors = Array.from({ length: 3000 }, () => randomVector(dim))
  vectors.forEach((v, i) => {
    const { values, scale } = quantize(v)
    simd.set(i, values, scale)
    plain.set(i, values, scale)
  })
  simd.clear(5)
  plain.clear(5)
  const query = randomVector(dim)
  const { values, scale } = quantize(query)
  const fast = simd.similar(values, scale, vectors.length, 0.05)
  const slow = plain.similar(values, scale, vectors.length, 0.05)
  t.deepEqual([...fast.similarities], [...slow.similarities])
  t.deepEqual([...fast.above], [...slow.above])
  t.is(fast.similarities[5], 0, 'a cleared slot')
  const expected = vectors.flatMap((_, i) => (i !== 5 && (fast.similarities[i] as number) >= 0.05 ? [i] : []))
  t.deepEqual([...fast.above], expected)
  t.true(Math.abs((fast.similarities[7] as number) - exactDot(vectors[7] as Float32Array, query)) < 0.01)
  t.is(simd.similar(values, scale, vectors.length, Number.POSITIVE_INFINITY).above.length, 0)
})

test('similarities of listed slots, in one call: the kernel, the JavaScript loop and the full pass agree', t => {
  for (const dim of [16, 128, 384]) {
    const simd = new Int8Matrix(dim)
    const plain = new Int8Matrix(dim, { simd: false })
    for (let i = 0; i < 3000; i++) {
      const { values, scale } = quantize(randomVector(dim))
      simd.set(i, values, scale)
      plain.set(i, values, scale)
    }
    simd.clear(11)
    plain.clear(11)
    const { values, scale } = quantize(randomVector(dim))
    const listed = Int32Array.from({ length: 500 }, (_, i) => (i * 7919) % 3000)
    listed[3] = 11
    const full = [...simd.similar(values, scale, 3000, 1).similarities]
    const fast = simd.similarSlots(values, scale, listed)
    const slow = plain.similarSlots(values, scale, Array.from(listed))
    for (const slot of listed) {
      t.is(fast[slot], slow[slot], `dimension ${dim}, slot ${slot}`)
      t.is(fast[slot], full[slot] as number, `dimension ${dim}, slot ${slot} against the full pass`)
    }
    t.true(fast[11] === 0, 'a cleared slot')
  }
})

test('vectors survive the memory growing', t => {
  const m = new Int8Matrix(32)
  const first = quantize(randomVector(32)).values.slice()
  m.set(0, first)
  for (let i = 1; i < 5000; i++) m.set(i, quantize(randomVector(32)).values)
  t.is(
    m.scan(first, 5000)[0],
    first.reduce((s, x) => s + x * x, 0)
  )
})

test('quantised cosine similarities are within 0.01 of the exact ones', t => {
  const dim = 256
  const index = new VectorIndex(dim)
  const vectors = Array.from({ length: 500 }, () => randomVector(dim))
  for (const [i, v] of vectors.entries()) index.set(i, v)
  const query = randomVector(dim)
  const similarities = index.scan(query, vectors.length)
  let worst = 0
  vectors.forEach((v, i) => {
    worst = Math.max(worst, Math.abs((similarities[i] as number) - exactDot(v, query)))
  })
  t.true(worst < 0.01, `worst error ${worst}`)
  t.true(Math.abs(index.similarity(3, query) - exactDot(vectors[3] as Float32Array, query)) < 0.01)
  t.true(Math.abs(index.similarity(3, vectors[3] as Float32Array) - 1) < 0.01)
})

test('a removed or never embedded slot has similarity 0', t => {
  const index = new VectorIndex(16)
  const v = randomVector(16)
  index.set(0, v)
  index.set(2, v)
  index.remove(2)
  const s = index.scan(v, 3)
  t.true((s[0] as number) > 0.99)
  t.is(s[1], 0)
  t.is(s[2], 0)
  t.is(index.similarity(5000, v), 0)
})

test('a vector of the wrong dimension is refused', t => {
  t.throws(() => new VectorIndex(16).set(0, new Float32Array(8)), { instanceOf: RangeError })
})

test('a zero vector quantises to zeros with scale 0', t => {
  const { values, scale } = quantize(new Float32Array(4))
  t.deepEqual([...values], [0, 0, 0, 0])
  t.is(scale, 0)
})
