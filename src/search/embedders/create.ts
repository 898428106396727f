import { ConfigError } from '../../config/load.js'
import type { NodeConfig } from '../../config/settings.js'
import type { Embedder } from './embedder.js'
import { HashEmbedder } from './hash-embedder.js'
import { HttpEmbedder } from './http-embedder.js'

/**
 * The embedder the configuration names (spec rule 7). Async because the onnx embedder loads its
 * model (and learns its dimension) before the search engine is built. A model folder that cannot be
 * loaded is a ConfigError, so the CLI prints its message and exits.
 */
export async function createEmbedder(search: NodeConfig['search']): Promise<Embedder> {
  if (search.embedder === 'http') {
    return new HttpEmbedder({
      url: search.http_url,
      model: search.http_model,
      style: search.http_style,
      dimension: search.dimension,
      timeoutMs: search.http_timeout_ms,
      batchSize: search.http_batch_size,
      ...(search.http_api_key ? { apiKey: search.http_api_key } : {})
    })
  }
  if (search.embedder === 'onnx') {
    // Imported here so that nodes without it never load onnxruntime (about 15 MB resident).
    const { OnnxEmbedder, OnnxEmbedderError } = await import('./onnx-embedder.js')
    try {
      return await OnnxEmbedder.load(search.onnx_model_dir, {
        maxTokens: search.onnx_max_tokens,
        threads: search.onnx_threads
      })
    } catch (err) {
      if (err instanceof OnnxEmbedderError)
        throw new ConfigError(`search.onnx_model_dir: ${err.message}`, { cause: err })
      throw err
    }
  }
  return new HashEmbedder(search.dimension)
}
