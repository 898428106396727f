/**
 * Embeddings from an HTTP service: OpenAI-style `POST <url>` with `{model, input: [...]}` answering
 * `{data: [{index, embedding}]}`, or Ollama-style `POST <url>` with `{model, input: [...]}` answering
 * `{embeddings: [[...]]}`. Texts go in batches, each request has a time limit, and any failure (status,
 * timeout, wrong shape or dimension) is an error, never a zero vector.
 */
import { l2normalize, type Embedder } from './embedder.js'

export interface HttpEmbedderOptions {
  url: string
  model: string
  style: 'openai' | 'ollama'
  dimension: number
  timeoutMs: number
  batchSize: number
  apiKey?: string
}

export class HttpEmbedderError extends Error {
  override name = 'HttpEmbedderError'
}

export class HttpEmbedder implements Embedder {
  readonly id: string
  readonly dimension: number

  constructor(private readonly o: HttpEmbedderOptions) {
    if (!/^https?:\/\//.test(o.url)) throw new RangeError(`embedder URL must be http(s): ${o.url}`)
    if (!o.model) throw new RangeError('the http embedder needs a model name')
    this.dimension = o.dimension
    this.id = `http-${o.style}:${o.model}:${o.dimension}`
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = []
    for (let i = 0; i < texts.length; i += this.o.batchSize)
      out.push(...(await this.batch(texts.slice(i, i + this.o.batchSize))))
    return out
  }

  private async batch(input: readonly string[]): Promise<Float32Array[]> {
    let res: Response
    try {
      res = await fetch(this.o.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {})
        },
        body: JSON.stringify({ model: this.o.model, input }),
        signal: AbortSignal.timeout(this.o.timeoutMs)
      })
    } catch (err) {
      throw new HttpEmbedderError(
        `${this.id}: ${(err as Error).name === 'TimeoutError' ? `no answer within ${this.o.timeoutMs} ms` : (err as Error).message}`
      )
    }
    if (!res.ok) throw new HttpEmbedderError(`${this.id}: status ${res.status}`)
    let body: unknown
    try {
      body = await res.json()
    } catch {
      throw new HttpEmbedderError(`${this.id}: the answer is not JSON`)
    }
    const vectors = this.o.style === 'openai' ? openaiVectors(body, input.length) : ollamaVectors(body)
    if (vectors.length !== input.length)
      throw new HttpEmbedderError(`${this.id}: ${vectors.length} embeddings for ${input.length} texts`)
    return vectors.map(v => {
      if (
        !Array.isArray(v) ||
        v.length !== this.dimension ||
        !v.every(x => typeof x === 'number' && Number.isFinite(x))
      ) {
        throw new HttpEmbedderError(
          `${this.id}: an embedding is not ${this.dimension} numbers (set search.dimension to the model's)`
        )
      }
      return l2normalize(Float32Array.from(v as number[]))
    })
  }
}

function openaiVectors(body: unknown, count: number): unknown[] {
  const data = (body as { data?: unknown }).data
  if (!Array.isArray(data)) throw new HttpEmbedderError('the answer has no data array')
  const out: unknown[] = new Array(count)
  data.forEach((item, i) => {
    const index = typeof (item as { index?: unknown }).index === 'number' ? (item as { index: number }).index : i
    out[index] = (item as { embedding?: unknown }).embedding
  })
  return out.filter(v => v !== undefined)
}

function ollamaVectors(body: unknown): unknown[] {
  const embeddings = (body as { embeddings?: unknown }).embeddings
  if (!Array.isArray(embeddings)) throw new HttpEmbedderError('the answer has no embeddings array')
  return embeddings
}
