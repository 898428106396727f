import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { ConfigError, defaultConfig } from '../../src/config/load.js'
import { createEmbedder } from '../../src/search/embedders/create.js'
import { dot } from '../../src/search/embedders/embedder.js'
import { OnnxEmbedder, OnnxEmbedderError } from '../../src/search/embedders/onnx-embedder.js'
import { buildTinyOnnxModel, CONCEPTS, expectedVector, TINY_DIM, type TinyModel } from '../helpers/tiny-onnx-model.js'

const close = (a: Float32Array, b: Float32Array, eps = 1e-5): boolean =>
  a.length === b.length && a.every((x, i) => Math.abs(x - (b[i] as number)) < eps)
const norm = (v: Float32Array): number => Math.hypot(...v)

let tiny: TinyModel
let embedder: OnnxEmbedder
const scratch: string[] = []

test.before(async () => {
  tiny = await buildTinyOnnxModel()
  scratch.push(join(tiny.dir, '..'))
  embedder = await OnnxEmbedder.load(tiny.dir)
})

test.after.always(async () => {
  await embedder?.close()
  for (const dir of scratch) await rm(dir, { recursive: true, force: true })
})

async function scratchDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'onnx-embedder-test-'))
  scratch.push(dir)
  return dir
}

test('the dimension comes from the model and the id names folder, dimension and model fingerprint', t => {
  t.is(embedder.dimension, TINY_DIM)
  t.regex(embedder.id, /^onnx:tiny-minilm:8:[0-9a-f]{12}$/)
})

test('vectors are the attention-weighted mean of the token states, L2-normalised', async t => {
  const [v, w] = await embedder.embed(['Weather forecast', 'The interpreter, for Documents.'])
  t.true(Math.abs(norm(v!) - 1) < 1e-6)
  t.true(Math.abs(norm(w!) - 1) < 1e-6)
  // Lowercased and WordPiece-tokenised by tokenizer.json, with [CLS] … [SEP] around.
  t.true(close(v!, expectedVector(tiny, ['[CLS]', 'weather', 'forecast', '[SEP]'])))
  t.true(close(w!, expectedVector(tiny, ['[CLS]', 'the', 'interpreter', ',', 'for', 'documents', '.', '[SEP]'])))
  const [unknown] = await embedder.embed(['zyzzyva'])
  t.true(close(unknown!, expectedVector(tiny, ['[CLS]', '[UNK]', '[SEP]'])), 'out-of-vocabulary words are [UNK]')
})

test('identical texts give identical vectors; related texts are nearer than unrelated ones', async t => {
  const [a, b, related, unrelated, paraphrase, other] = await embedder.embed([
    'weather forecast',
    'weather forecast',
    'rain forecast for the climate',
    'music and song',
    'interpreter',
    'translator service'
  ])
  t.deepEqual(a, b)
  t.true(dot(a!, related!) > dot(a!, unrelated!) + 0.3, `${dot(a!, related!)} vs ${dot(a!, unrelated!)}`)
  // No shared word, same concept: the model, not the text, brings them together.
  t.true(dot(paraphrase!, other!) > 0.5, `${dot(paraphrase!, other!)}`)
  t.true(dot(paraphrase!, other!) > dot(paraphrase!, a!) + 0.3)
})

test('padding never counts: a text alone and in a batch with a longer one give the same vector', async t => {
  const [alone] = await embedder.embed(['weather'])
  const [batched, long] = await embedder.embed([
    'weather',
    'the long long long text about code and payment and music and the weather'
  ])
  t.true(close(alone!, batched!, 1e-6))
  t.false(close(alone!, long!))
  // More texts than one model run takes (16): order kept, same vectors.
  const texts = Array.from({ length: 37 }, (_, i) => CONCEPTS[i % CONCEPTS.length]!.slice(0, 1 + (i % 3)).join(' '))
  const all = await embedder.embed(texts)
  t.is(all.length, 37)
  for (const [i, text] of texts.entries()) t.true(close(all[i]!, (await embedder.embed([text]))[0]!, 1e-6), text)
})

test('a blank text gives a zero vector; no texts, no vectors', async t => {
  const [blank, text] = await embedder.embed(['   ', 'weather'])
  t.true(blank!.every(x => x === 0))
  t.is(blank!.length, TINY_DIM)
  t.true(Math.abs(norm(text!) - 1) < 1e-6)
  t.deepEqual(await embedder.embed([]), [])
})

test('concurrent requests are answered in order of their own texts', async t => {
  const bulk = Array.from({ length: 50 }, (_, i) => (i % 2 ? 'music song' : 'pay invoice'))
  const [many, one] = await Promise.all([embedder.embed(bulk), embedder.embed(['weather'])])
  t.is(many.length, 50)
  const [music, pay] = await embedder.embed(['music song', 'pay invoice'])
  for (const [i, v] of many.entries()) t.true(close(v, i % 2 ? music! : pay!, 1e-6))
  t.true(close(one![0]!, expectedVector(tiny, ['[CLS]', 'weather', '[SEP]'])))
})

test('long texts are truncated to max tokens, keeping the closing [SEP]', async t => {
  const short = await OnnxEmbedder.load(tiny.dir, { maxTokens: 4 })
  try {
    const [v] = await short.embed(['weather forecast rain climate music'])
    t.true(close(v!, expectedVector(tiny, ['[CLS]', 'weather', 'forecast', '[SEP]'])))
    t.not(short.id, embedder.id, 'truncation shapes the vectors, so it is part of the id')
  } finally {
    await short.close()
  }
})

test('the id follows the model bytes: same bytes same id, other weights another id', async t => {
  const same = await buildTinyOnnxModel({ dir: join(await scratchDir(), 'tiny-minilm') })
  const other = await buildTinyOnnxModel({ dir: join(await scratchDir(), 'tiny-minilm'), seed: 2 })
  const a = await OnnxEmbedder.load(same.dir, { worker: false })
  const b = await OnnxEmbedder.load(other.dir, { worker: false })
  try {
    t.is(a.id, embedder.id)
    t.not(b.id, embedder.id)
    t.is(b.id.split(':').slice(0, 3).join(':'), 'onnx:tiny-minilm:8')
  } finally {
    await a.close()
    await b.close()
  }
})

test('in process and in the worker thread the vectors are the same', async t => {
  const inProcess = await OnnxEmbedder.load(tiny.dir, { worker: false })
  try {
    t.is(inProcess.id, embedder.id)
    const texts = ['weather forecast', 'interpreter', '', 'the long long text about code']
    const [x, y] = [await inProcess.embed(texts), await embedder.embed(texts)]
    for (const [i, v] of x.entries()) t.true(close(v, y[i]!, 1e-7))
  } finally {
    await inProcess.close()
  }
})

test('a model with an already pooled [batch, dim] output is used as is; token_type_ids are fed when declared', async t => {
  const pooled = await buildTinyOnnxModel({ dir: join(await scratchDir(), 'pooled'), pooled: true })
  const typed = await buildTinyOnnxModel({ dir: join(await scratchDir(), 'typed'), tokenTypeIds: true })
  const p = await OnnxEmbedder.load(pooled.dir)
  const q = await OnnxEmbedder.load(typed.dir)
  try {
    t.is(p.dimension, TINY_DIM)
    const [v] = await p.embed(['weather forecast'])
    t.true(close(v!, expectedVector(pooled, ['[CLS]', 'weather', 'forecast', '[SEP]'])))
    const [w] = await q.embed(['weather forecast'])
    t.true(close(w!, expectedVector(typed, ['[CLS]', 'weather', 'forecast', '[SEP]'])))
  } finally {
    await p.close()
    await q.close()
  }
})

test('a model run that fails is an error, and the embedder keeps working', async t => {
  // The table lacks the last vocabulary row (','), so a text with a comma makes Gather fail.
  const broken = await buildTinyOnnxModel({
    dir: join(await scratchDir(), 'broken'),
    tableRows: [...CONCEPTS.flat()].length + 3
  })
  for (const worker of [true, false]) {
    const e = await OnnxEmbedder.load(broken.dir, { worker })
    try {
      await t.throwsAsync(e.embed(['weather, rain']), { message: /onnx model run failed/ })
      const [v] = await e.embed(['weather'])
      t.true(close(v!, expectedVector(broken, ['[CLS]', 'weather', '[SEP]'])), `still works (worker: ${worker})`)
    } finally {
      await e.close()
    }
  }
})

test('missing or broken model folders are startup errors naming the path', async t => {
  const dir = await scratchDir()
  await t.throwsAsync(OnnxEmbedder.load(''), { instanceOf: OnnxEmbedderError, message: /search\.onnx_model_dir/ })
  const missing = join(dir, 'nowhere')
  await t.throwsAsync(OnnxEmbedder.load(missing), {
    instanceOf: OnnxEmbedderError,
    message: `onnx model folder not found: ${missing}`
  })
  const empty = join(dir, 'empty')
  await mkdir(empty)
  await t.throwsAsync(OnnxEmbedder.load(empty), {
    message: `onnx model file not found: ${join(empty, 'model.onnx')} or ${join(empty, 'onnx', 'model.onnx')}`
  })
  await writeFile(join(empty, 'model.onnx'), 'not a model')
  await t.throwsAsync(OnnxEmbedder.load(empty), {
    message: `onnx tokenizer file not found: ${join(empty, 'tokenizer.json')}`
  })
  await writeFile(join(empty, 'tokenizer.json'), JSON.stringify({}))
  await t.throwsAsync(OnnxEmbedder.load(empty), {
    message: new RegExp(`^cannot load the tokenizer ${join(empty, 'tokenizer.json')}`)
  })
  const corrupt = await buildTinyOnnxModel({ dir: join(dir, 'corrupt') })
  await writeFile(join(corrupt.dir, 'model.onnx'), 'not a model')
  for (const worker of [true, false]) {
    await t.throwsAsync(OnnxEmbedder.load(corrupt.dir, { worker }), {
      instanceOf: OnnxEmbedderError,
      message: new RegExp(`^cannot load the onnx model ${join(corrupt.dir, 'model.onnx')}`)
    })
  }
})

test('the Hugging Face layout (onnx/model.onnx) is found too', async t => {
  const dir = join(await scratchDir(), 'hf-layout')
  const built = await buildTinyOnnxModel({ dir })
  await mkdir(join(dir, 'onnx'))
  await rename(join(dir, 'model.onnx'), join(dir, 'onnx', 'model.onnx'))
  const e = await OnnxEmbedder.load(dir, { worker: false })
  try {
    const [v] = await e.embed(['weather'])
    t.true(close(v!, expectedVector(built, ['[CLS]', 'weather', '[SEP]'])))
  } finally {
    await e.close()
  }
})

test('createEmbedder builds the onnx embedder from the search settings', async t => {
  const search = { ...defaultConfig().search, embedder: 'onnx' as const, onnx_model_dir: tiny.dir, dimension: 256 }
  const e = await createEmbedder(search)
  try {
    t.true(e instanceof OnnxEmbedder)
    t.is(e.id, embedder.id)
    t.is(e.dimension, TINY_DIM, 'search.dimension does not apply to onnx')
  } finally {
    await (e as OnnxEmbedder).close()
  }
  const missing = join(tiny.dir, 'nowhere')
  await t.throwsAsync(createEmbedder({ ...search, onnx_model_dir: missing }), {
    instanceOf: ConfigError,
    message: `search.onnx_model_dir: onnx model folder not found: ${missing}`
  })
})
