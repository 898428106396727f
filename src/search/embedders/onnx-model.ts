/**
 * The core of the `onnx` embedder: a local model folder run with onnxruntime-node, tokenised with
 * @huggingface/tokenizers (the pure-JS tokenizers Transformers.js uses), nothing fetched.
 *
 * The folder holds `model.onnx` (or `onnx/model.onnx`, the Hugging Face export layout) and
 * `tokenizer.json` (plus `tokenizer_config.json` when there is one). The model is fed the inputs it
 * declares: `input_ids` and `attention_mask`, and `token_type_ids` (zeros for a single text) or
 * `position_ids` only when it asks for them. Its output is `last_hidden_state` (or
 * `token_embeddings`, else the first output): a [batch, tokens, dim] output is mean-pooled over the
 * real tokens (weighted by the attention mask, so padding never counts); a [batch, dim] output is
 * taken as already pooled. Every vector is L2-normalised.
 *
 * Texts go in batches padded to the longest text of the batch, each truncated to `maxTokens`
 * (keeping the closing special tokens such as [SEP]).
 *
 * onnxruntime-node runs a session synchronously on the calling thread, so OnnxEmbedder runs this
 * class in a worker thread (onnx-worker.ts); it also runs in process.
 */
import { createHash } from 'node:crypto'
import { createReadStream, existsSync, statSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
import { Tokenizer } from '@huggingface/tokenizers'
import { InferenceSession, Tensor } from 'onnxruntime-node'
import { l2normalize } from './embedder.js'

export interface OnnxModelOptions {
  /** Longest token sequence fed to the model, special tokens included. */
  maxTokens: number
  /** onnxruntime intra-op threads; 0 lets onnxruntime choose (one per core). */
  threads: number
  /** Texts per model run. */
  batchSize: number
}

export const ONNX_DEFAULTS: OnnxModelOptions = { maxTokens: 256, threads: 1, batchSize: 16 }

export class OnnxEmbedderError extends Error {
  override name = 'OnnxEmbedderError'
}

export interface OnnxModelFiles {
  dir: string
  model: string
  tokenizer: string
  tokenizerConfig: string | null
}

/** Finds the model's files in `dir`; a missing folder or file is an error naming the path. */
export function modelFiles(dir: string): OnnxModelFiles {
  if (!dir)
    throw new OnnxEmbedderError('the onnx embedder needs a model folder (search.onnx_model_dir, --embedder-model-dir)')
  const abs = resolve(dir)
  if (!existsSync(abs) || !statSync(abs).isDirectory())
    throw new OnnxEmbedderError(`onnx model folder not found: ${abs}`)
  const candidates = [join(abs, 'model.onnx'), join(abs, 'onnx', 'model.onnx')]
  const model = candidates.find(p => existsSync(p))
  if (!model) throw new OnnxEmbedderError(`onnx model file not found: ${candidates.join(' or ')}`)
  const tokenizer = join(abs, 'tokenizer.json')
  if (!existsSync(tokenizer)) throw new OnnxEmbedderError(`onnx tokenizer file not found: ${tokenizer}`)
  const tokenizerConfig = join(abs, 'tokenizer_config.json')
  return { dir: abs, model, tokenizer, tokenizerConfig: existsSync(tokenizerConfig) ? tokenizerConfig : null }
}

/** SHA-256 (first 12 hex digits) over the model bytes, the tokenizer files and maxTokens: whatever shapes the vectors. */
export async function modelFingerprint(files: OnnxModelFiles, maxTokens: number): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(files.model)) hash.update(chunk as Buffer)
  hash.update(await readFile(files.tokenizer))
  if (files.tokenizerConfig) hash.update(await readFile(files.tokenizerConfig))
  hash.update(`maxTokens=${maxTokens}`)
  return hash.digest('hex').slice(0, 12)
}

/** `onnx:<folder name>:<dimension>:<fingerprint>`; another model, tokenizer or truncation gives another id. */
export function onnxEmbedderId(files: OnnxModelFiles, dimension: number, fingerprint: string): string {
  return `onnx:${basename(files.dir)}:${dimension}:${fingerprint}`
}

interface TokenizerJson {
  added_tokens?: { id: number; content: string; special?: boolean }[]
  padding?: { pad_id?: number } | null
}

const KNOWN_INPUTS = new Set(['input_ids', 'attention_mask', 'token_type_ids', 'position_ids'])
const PREFERRED_OUTPUTS = ['last_hidden_state', 'token_embeddings']

export class OnnxModel {
  /** Set by load() from a probe run. */
  dimension = 0

  private constructor(
    readonly files: OnnxModelFiles,
    private readonly options: OnnxModelOptions,
    private readonly session: InferenceSession,
    private readonly tokenizer: Tokenizer,
    private readonly specialIds: ReadonlySet<number>,
    private readonly padId: number,
    private readonly output: string,
    private readonly int32Inputs: ReadonlySet<string>
  ) {}

  static async load(dir: string, options: Partial<OnnxModelOptions> = {}): Promise<OnnxModel> {
    const o = { ...ONNX_DEFAULTS, ...options }
    if (!Number.isInteger(o.maxTokens) || o.maxTokens < 2)
      throw new RangeError(`onnx maxTokens must be an integer ≥ 2, got ${o.maxTokens}`)
    if (!Number.isInteger(o.batchSize) || o.batchSize < 1)
      throw new RangeError(`onnx batchSize must be a positive integer, got ${o.batchSize}`)
    const files = modelFiles(dir)

    let tokenizerJson: TokenizerJson
    let tokenizer: Tokenizer
    try {
      tokenizerJson = JSON.parse(await readFile(files.tokenizer, 'utf8')) as TokenizerJson
      const config = files.tokenizerConfig ? (JSON.parse(await readFile(files.tokenizerConfig, 'utf8')) as object) : {}
      tokenizer = new Tokenizer(tokenizerJson, config)
    } catch (err) {
      throw new OnnxEmbedderError(`cannot load the tokenizer ${files.tokenizer}: ${(err as Error).message}`)
    }
    const specialIds = new Set((tokenizerJson.added_tokens ?? []).filter(t => t.special).map(t => t.id))
    const padId = tokenizerJson.padding?.pad_id ?? tokenizer.token_to_id('[PAD]') ?? tokenizer.token_to_id('<pad>') ?? 0

    let session: InferenceSession
    try {
      session = await InferenceSession.create(files.model, {
        executionProviders: ['cpu'],
        graphOptimizationLevel: 'all',
        logSeverityLevel: 4, // onnxruntime would print to stderr; its messages reach the node's log in the errors thrown
        ...(o.threads > 0 ? { intraOpNumThreads: o.threads, interOpNumThreads: 1 } : {})
      })
    } catch (err) {
      throw new OnnxEmbedderError(`cannot load the onnx model ${files.model}: ${(err as Error).message}`)
    }
    const unknown = session.inputNames.filter(n => !KNOWN_INPUTS.has(n))
    if (unknown.length > 0 || !session.inputNames.includes('input_ids')) {
      throw new OnnxEmbedderError(
        `${files.model}: expected inputs input_ids[, attention_mask, token_type_ids, position_ids], the model has ${session.inputNames.join(', ')}`
      )
    }
    const output = PREFERRED_OUTPUTS.find(n => session.outputNames.includes(n)) ?? session.outputNames[0]
    if (output === undefined) throw new OnnxEmbedderError(`${files.model}: the model has no output`)
    const int32Inputs = new Set(session.inputMetadata.filter(m => m.isTensor && m.type === 'int32').map(m => m.name))

    const model = new OnnxModel(files, o, session, tokenizer, specialIds, padId, output, int32Inputs)
    const [probe] = await model.embed(['dimension probe'])
    if (!probe || probe.length === 0) throw new OnnxEmbedderError(`${files.model}: the output ${output} is empty`)
    model.dimension = probe.length
    return model
  }

  /** One L2-normalised vector per text; a blank text gives a zero vector without a model run. */
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = []
    for (let i = 0; i < texts.length; i += this.options.batchSize)
      out.push(...(await this.batch(texts.slice(i, i + this.options.batchSize))))
    return out
  }

  /** Token ids of a text as fed to the model (special tokens added, truncated to maxTokens). */
  encode(text: string): number[] {
    const ids = this.tokenizer.encode(text).ids
    const max = this.options.maxTokens
    if (ids.length <= max) return ids
    let tail = 0
    while (tail < 2 && this.specialIds.has(ids[ids.length - 1 - tail] as number)) tail++
    return [...ids.slice(0, max - tail), ...ids.slice(ids.length - tail)]
  }

  async release(): Promise<void> {
    await this.session.release()
  }

  private async batch(texts: readonly string[]): Promise<Float32Array[]> {
    const results: Float32Array[] = texts.map(() => new Float32Array(this.dimension))
    const live = texts.flatMap((text, i) => (text.trim() === '' ? [] : [i]))
    if (live.length === 0) return results
    const encoded = live.map(i => this.encode(texts[i] as string))
    const rows = encoded.length
    const cols = Math.max(1, ...encoded.map(ids => ids.length))
    const ids = new BigInt64Array(rows * cols).fill(BigInt(this.padId))
    const mask = new BigInt64Array(rows * cols)
    encoded.forEach((row, r) => {
      for (const [c, id] of row.entries()) {
        ids[r * cols + c] = BigInt(id)
        mask[r * cols + c] = 1n
      }
    })

    const feeds: Record<string, Tensor> = {}
    for (const name of this.session.inputNames) {
      let data: BigInt64Array
      if (name === 'input_ids') data = ids
      else if (name === 'attention_mask') data = mask
      else if (name === 'token_type_ids') data = new BigInt64Array(rows * cols)
      else {
        // position_ids
        data = new BigInt64Array(rows * cols)
        for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) data[r * cols + c] = BigInt(c)
      }
      feeds[name] = this.int32Inputs.has(name)
        ? new Tensor('int32', Int32Array.from(data, Number), [rows, cols])
        : new Tensor('int64', data, [rows, cols])
    }

    let result: InferenceSession.ReturnType
    try {
      result = await this.session.run(feeds, [this.output])
    } catch (err) {
      throw new OnnxEmbedderError(
        `onnx model run failed (${rows} texts of up to ${cols} tokens): ${(err as Error).message}`
      )
    }
    const tensor = result[this.output]
    if (!tensor) throw new OnnxEmbedderError(`the model gave no ${this.output}`)
    if (tensor.type !== 'float32')
      throw new OnnxEmbedderError(`the model's ${this.output} is ${tensor.type}, expected float32`)
    const data = tensor.data as Float32Array
    const dims = tensor.dims
    let vectors: Float32Array[]
    if (dims.length === 3 && dims[0] === rows && dims[1] === cols) {
      const dim = dims[2] as number
      vectors = encoded.map((row, r) => {
        const v = new Float32Array(dim)
        for (let c = 0; c < row.length; c++) {
          // mask is 1 exactly on the first row.length positions
          const base = (r * cols + c) * dim
          for (let j = 0; j < dim; j++) v[j] = (v[j] as number) + (data[base + j] as number)
        }
        for (let j = 0; j < dim; j++) v[j] = (v[j] as number) / row.length
        return v
      })
    } else if (dims.length === 2 && dims[0] === rows) {
      const dim = dims[1] as number
      vectors = encoded.map((_, r) => data.slice(r * dim, (r + 1) * dim))
    } else {
      throw new OnnxEmbedderError(
        `the model's ${this.output} has shape [${dims.join(', ')}], expected [${rows}, ${cols}, dim] or [${rows}, dim]`
      )
    }
    if (this.dimension > 0 && vectors.some(v => v.length !== this.dimension)) {
      throw new OnnxEmbedderError(`the model's ${this.output} changed dimension from ${this.dimension}`)
    }
    if (vectors.some(v => !v.every(Number.isFinite)))
      throw new OnnxEmbedderError(`the model's ${this.output} holds NaN or infinite values`)
    live.forEach((i, k) => {
      results[i] = l2normalize(vectors[k] as Float32Array)
    })
    return results
  }
}
