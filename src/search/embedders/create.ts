import type { NodeConfig } from '../../config.js'
import type { Embedder } from './embedder.js'
import { HashEmbedder } from './hash-embedder.js'
import { HttpEmbedder } from './http-embedder.js'

/** The embedder the configuration names (spec rule 7). */
export function createEmbedder(search: NodeConfig['search']): Embedder {
  if (search.embedder === 'http') {
    return new HttpEmbedder({
      url: search.http_url, model: search.http_model, style: search.http_style, dimension: search.dimension,
      timeoutMs: search.http_timeout_ms, batchSize: search.http_batch_size, ...(search.http_api_key ? { apiKey: search.http_api_key } : {})
    })
  }
  return new HashEmbedder(search.dimension)
}
