/**
 * Builds a tiny sentence-embedding model folder for tests (no weights can be downloaded here):
 * `model.onnx`, written as protobuf by hand, and a BERT-style WordPiece `tokenizer.json`.
 *
 * The model is one Gather from an embedding table [vocab, 8] on `input_ids`, output
 * `last_hidden_state` [batch, tokens, 8]; it also declares `attention_mask` (and optionally
 * `token_type_ids`), which a real BERT export has. Words are grouped into "concepts": every word of
 * a group has its group's axis plus a little seeded noise, so words of one concept are near each
 * other (interpreter ~ translator) and other words are far: a model that is semantic by
 * construction. `pooled: true` adds a ReduceMean over the tokens and outputs `sentence_embedding`
 * [batch, 8] instead.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const TINY_DIM = 8

export const SPECIAL_TOKENS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]'] as const

/** Concept groups; group g lies along axis g. The last group holds generic words (with a shorter axis). */
export const CONCEPTS: readonly (readonly string[])[] = [
  ['translate', 'translation', 'translator', 'interpreter', 'language', 'multilingual'],
  ['weather', 'forecast', 'rain', 'climate', 'temperature'],
  ['image', 'picture', 'photo', 'vision', 'drawing'],
  ['code', 'program', 'software', 'developer', 'compiler'],
  ['pay', 'payment', 'invoice', 'billing', 'money'],
  ['music', 'song', 'audio', 'melody'],
  ['summary', 'summarize', 'digest', 'abstract'],
  [
    'the',
    'a',
    'of',
    'for',
    'and',
    'agent',
    'service',
    'tool',
    'helps',
    'documents',
    'text',
    'long',
    'about',
    '##s',
    '.',
    ','
  ]
]

export interface TinyModelOptions {
  /** Seeds the noise of the embedding table: another seed, other model bytes. */
  seed?: number
  /** Output `sentence_embedding` [batch, 8] (ReduceMean over tokens) instead of `last_hidden_state`. */
  pooled?: boolean
  /** Also declare a `token_type_ids` input (unused by the graph, as the model ignores segment ids). */
  tokenTypeIds?: boolean
  /** Build in this folder (created) instead of a fresh temp folder. */
  dir?: string
  /** Rows of the embedding table (default: the vocabulary size). Fewer puts the last words' ids out of
   *  range, so a model run that meets them fails (the tokenizer still knows them). */
  tableRows?: number
}

export interface TinyModel {
  dir: string
  vocab: Map<string, number>
  /** The embedding table, row-major [vocab, TINY_DIM]. */
  table: Float32Array
}

/** The vocabulary: special tokens first, then every concept word in order. */
export function tinyVocab(): Map<string, number> {
  const words = [...SPECIAL_TOKENS, ...CONCEPTS.flat()]
  return new Map(words.map((w, i) => [w, i]))
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export function tinyTable(seed: number): Float32Array {
  const random = mulberry32(seed)
  const vocab = tinyVocab()
  const table = new Float32Array(vocab.size * TINY_DIM)
  for (let i = 0; i < vocab.size; i++)
    for (let j = 0; j < TINY_DIM; j++) table[i * TINY_DIM + j] = (random() - 0.5) * 0.3
  CONCEPTS.forEach((words, g) => {
    const weight = g === CONCEPTS.length - 1 ? 0.4 : 1 // generic words say little
    for (const w of words) {
      const row = vocab.get(w) as number
      table[row * TINY_DIM + g] = (table[row * TINY_DIM + g] as number) + weight
    }
  })
  return table
}

// --- a minimal protobuf writer (proto2 wire format) ---

type Field = Uint8Array

function varint(n: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(n))
  const out: number[] = []
  do {
    let byte = Number(v & 0x7fn)
    v >>= 7n
    if (v > 0n) byte |= 0x80
    out.push(byte)
  } while (v > 0n)
  return out
}

const concat = (parts: readonly Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}
const int = (field: number, n: number | bigint): Field => Uint8Array.from([...varint(field << 3), ...varint(n)])
const bytes = (field: number, data: Uint8Array): Field =>
  concat([Uint8Array.from([...varint((field << 3) | 2), ...varint(data.length)]), data])
const str = (field: number, s: string): Field => bytes(field, new TextEncoder().encode(s))
const msg = (field: number, ...fields: Field[]): Field => bytes(field, concat(fields))

const FLOAT = 1
const INT64 = 7
const ATTR_INTS = 7

/** ValueInfoProto { name, type: TypeProto { tensor_type { elem_type, shape { dim* } } } } */
function valueInfo(field: number, name: string, elemType: number, dims: (string | number)[]): Field {
  const dimFields = dims.map(d => msg(1, typeof d === 'string' ? str(2, d) : int(1, d)))
  return msg(field, str(1, name), msg(2, msg(1, int(1, elemType), msg(2, ...dimFields))))
}

/** NodeProto { input*, output*, name, op_type, attribute* } */
function node(inputs: string[], outputs: string[], name: string, opType: string, ...attributes: Field[]): Field {
  return msg(
    1,
    ...inputs.map(i => str(1, i)),
    ...outputs.map(o => str(2, o)),
    str(3, name),
    str(4, opType),
    ...attributes
  )
}

/** The ModelProto bytes. */
export function tinyModelBytes(
  table: Float32Array,
  rows: number,
  options: Pick<TinyModelOptions, 'pooled' | 'tokenTypeIds'> = {}
): Uint8Array {
  const raw = new Uint8Array(table.buffer.slice(table.byteOffset, table.byteOffset + table.byteLength)) // little-endian on x64/arm64
  const initializer = msg(5, int(1, rows), int(1, TINY_DIM), int(2, FLOAT), str(8, 'embeddings'), bytes(9, raw))
  const nodes = [
    node(['embeddings', 'input_ids'], [options.pooled ? 'token_embeddings' : 'last_hidden_state'], 'embed', 'Gather')
  ]
  if (options.pooled) {
    // AttributeProto { name: 'axes', type: INTS, ints: [1] } and { name: 'keepdims', type: INT, i: 0 }
    nodes.push(
      node(
        ['token_embeddings'],
        ['sentence_embedding'],
        'pool',
        'ReduceMean',
        msg(5, str(1, 'axes'), int(20, ATTR_INTS), int(8, 1)),
        msg(5, str(1, 'keepdims'), int(20, 2), int(3, 0))
      )
    )
  }
  const inputs = [
    valueInfo(11, 'input_ids', INT64, ['batch', 'sequence']),
    valueInfo(11, 'attention_mask', INT64, ['batch', 'sequence']),
    ...(options.tokenTypeIds ? [valueInfo(11, 'token_type_ids', INT64, ['batch', 'sequence'])] : [])
  ]
  const output = options.pooled
    ? valueInfo(12, 'sentence_embedding', FLOAT, ['batch', TINY_DIM])
    : valueInfo(12, 'last_hidden_state', FLOAT, ['batch', 'sequence', TINY_DIM])
  const graph = msg(7, ...nodes, str(2, 'tiny-embedder'), initializer, ...inputs, output)
  // ModelProto { ir_version: 8, producer_name, graph, opset_import { domain: '', version: 17 } }
  return concat([int(1, 8), str(2, 'registry-node tests'), graph, msg(8, str(1, ''), int(2, 17))])
}

/** A BERT-style tokenizer.json: BertNormalizer (lowercase), BertPreTokenizer, WordPiece, [CLS] … [SEP]. */
export function tinyTokenizerJson(vocab: Map<string, number>): object {
  const id = (t: string) => vocab.get(t) as number
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_TOKENS.map(t => ({
      id: id(t),
      content: t,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true
    })),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } }
      ],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } }
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [id('[CLS]')], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [id('[SEP]')], tokens: ['[SEP]'] }
      }
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab)
    }
  }
}

/** Writes the model folder and returns where it is, with the vocabulary and table for expected values. */
export async function buildTinyOnnxModel(options: TinyModelOptions = {}): Promise<TinyModel> {
  const dir = options.dir ?? join(await mkdtemp(join(tmpdir(), 'tiny-onnx-')), 'tiny-minilm')
  await mkdir(dir, { recursive: true })
  const vocab = tinyVocab()
  const table = tinyTable(options.seed ?? 1)
  const rows = options.tableRows ?? vocab.size
  await writeFile(join(dir, 'model.onnx'), tinyModelBytes(table.subarray(0, rows * TINY_DIM), rows, options))
  await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(tinyTokenizerJson(vocab)))
  await writeFile(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({ do_lower_case: true, model_max_length: 512, tokenizer_class: 'BertTokenizer' })
  )
  return { dir, vocab, table }
}

/** The normalised mean of the table rows of `tokens` (what the embedder should give). */
export function expectedVector(model: TinyModel, tokens: readonly string[]): Float32Array {
  const v = new Float32Array(TINY_DIM)
  for (const t of tokens) {
    const row = model.vocab.get(t)
    if (row === undefined) throw new Error(`${t} is not in the tiny vocabulary`)
    for (let j = 0; j < TINY_DIM; j++)
      v[j] = (v[j] as number) + (model.table[row * TINY_DIM + j] as number) / tokens.length
  }
  const norm = Math.hypot(...v)
  return v.map(x => x / norm)
}
