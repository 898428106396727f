/**
 * Settings rows of search: the embedder, ranking and federation. Split from the settings table
 * (settings.ts) only for size; rows keep the table's order.
 */
import type { Setting } from './setting.js'

export const SEARCH_SETTINGS = [
  {
    key: 'search.embedder',
    kind: 'string',
    default: 'hash',
    flag: 'embedder',
    choices: ['hash', 'http', 'onnx'],
    doc: 'Embedder for semantic search: hash (feature hashing, no model needed), http (an OpenAI- or Ollama-style embeddings service) or onnx (a local ONNX model folder, run in a worker thread).'
  },
  {
    key: 'search.dimension',
    kind: 'integer',
    default: 128,
    flag: 'embedding-dimension',
    min: 8,
    max: 8192,
    doc: "Embedding dimension: for hash a power of two from 64 to 4096; for http the model's output size; onnx ignores it and uses the model's."
  },
  {
    key: 'search.http_url',
    kind: 'string',
    default: '',
    flag: 'embedder-url',
    doc: 'http embedder endpoint, e.g. http://127.0.0.1:11434/api/embed (Ollama) or https://api.openai.com/v1/embeddings.'
  },
  { key: 'search.http_model', kind: 'string', default: '', flag: 'embedder-model', doc: 'http embedder model name.' },
  {
    key: 'search.http_style',
    kind: 'string',
    default: 'openai',
    flag: 'embedder-style',
    choices: ['openai', 'ollama'],
    doc: 'http embedder request and answer shape.'
  },
  {
    key: 'search.http_api_key',
    kind: 'string',
    default: '',
    flag: 'embedder-api-key',
    doc: 'Bearer key for the http embedder (prefer the environment variable).'
  },
  {
    key: 'search.http_timeout_ms',
    kind: 'integer',
    default: 10_000,
    flag: 'embedder-timeout-ms',
    min: 100,
    max: 120_000,
    doc: 'Time limit of one http embedder request.'
  },
  {
    key: 'search.http_batch_size',
    kind: 'integer',
    default: 32,
    flag: 'embedder-batch-size',
    min: 1,
    max: 2048,
    doc: 'Texts per http embedder request.'
  },
  {
    key: 'search.onnx_model_dir',
    kind: 'string',
    default: '',
    flag: 'embedder-model-dir',
    doc: 'onnx embedder model folder: model.onnx (or onnx/model.onnx) and tokenizer.json, e.g. an ONNX export of sentence-transformers/all-MiniLM-L6-v2. Nothing is downloaded.'
  },
  {
    key: 'search.onnx_max_tokens',
    kind: 'integer',
    default: 256,
    flag: 'embedder-max-tokens',
    min: 8,
    max: 8192,
    doc: 'onnx embedder: longer texts are truncated to this many tokens (special tokens included).'
  },
  {
    key: 'search.onnx_threads',
    kind: 'integer',
    default: 1,
    flag: 'embedder-threads',
    min: 0,
    max: 256,
    doc: 'onnx embedder: onnxruntime threads of its worker thread; 0 lets onnxruntime choose (one per core).'
  },
  {
    key: 'search.weight_text',
    kind: 'number',
    default: 0.3,
    min: 0,
    max: 1,
    flag: 'weight-text',
    doc: 'Ranking weight of text relevance (BM25).'
  },
  {
    key: 'search.weight_semantic',
    kind: 'number',
    default: 0.3,
    min: 0,
    max: 1,
    flag: 'weight-semantic',
    doc: 'Ranking weight of semantic similarity.'
  },
  {
    key: 'search.weight_trust',
    kind: 'number',
    default: 0.2,
    min: 0,
    max: 1,
    flag: 'weight-trust',
    doc: 'Ranking weight of the trust score.'
  },
  {
    key: 'search.weight_freshness',
    kind: 'number',
    default: 0.1,
    min: 0,
    max: 1,
    flag: 'weight-freshness',
    doc: 'Ranking weight of freshness.'
  },
  {
    key: 'search.weight_availability',
    kind: 'number',
    default: 0.1,
    min: 0,
    max: 1,
    flag: 'weight-availability',
    doc: 'Ranking weight of availability.'
  },
  {
    key: 'search.freshness_half_life_days',
    kind: 'integer',
    default: 30,
    flag: 'freshness-half-life-days',
    min: 1,
    max: 3650,
    doc: 'Freshness halves every this many days since the last update or heartbeat.'
  },
  {
    key: 'search.min_semantic_similarity',
    kind: 'number',
    default: 0.3,
    min: 0,
    max: 1,
    flag: 'min-semantic-similarity',
    doc: 'Cosine similarity at which an entity matches a query without sharing a word with it.'
  },
  {
    key: 'search.full_semantic_scan_below',
    kind: 'integer',
    default: 200_000,
    min: 0,
    max: 1_000_000_000,
    flag: 'full-semantic-scan-below',
    doc: "Below this many indexed entities a query's embedding is compared with every entity: one sharing no word with the query matches when similar enough, and total_found counts it. From this many on, a query with words ranks its text matches (comparing only those that can reach the page) and compares every entity only when they do not fill the page."
  },
  {
    key: 'search.fusion',
    kind: 'string',
    default: 'weighted',
    flag: 'fusion',
    choices: ['weighted', 'rrf'],
    doc: "How text and semantic relevance combine: weighted (the spec's weighted sum of normalised scores) or rrf (reciprocal rank fusion, k = 60); a request may override it."
  },
  {
    key: 'search.query_expansion',
    kind: 'boolean',
    default: true,
    flag: 'query-expansion',
    doc: "Add to a query the words of the indexed records nearest its own in the shipped word vectors (at most 20, weighted below the query's words), so a query worded differently from a record can still match it by text."
  },
  {
    key: 'search.worker',
    kind: 'boolean',
    default: true,
    flag: 'search-worker',
    doc: 'Run the search index in a worker thread fed by the write stream, so queries do not hold up the HTTP thread (--no-search-worker runs it on the HTTP thread: one thread and about 150–200 MiB less at 100k entities, but searches then share that thread with every other request).'
  },
  {
    key: 'search.worker_from_entities',
    kind: 'integer',
    default: 1000,
    flag: 'search-worker-from-entities',
    min: 0,
    max: 1_000_000_000,
    doc: 'With search.worker, the index runs on the HTTP thread until the store holds this many entities, then moves to its worker thread at the first second the HTTP thread is less than a quarter busy (or at 25,000 entities, busy or not); a store this large at start starts the worker at once. A small index answers in well under a millisecond, while the thread costs about 55 MiB per node and a wake-up per write. The move (the worker starts, the records and their vectors are copied to it while queries stay on the HTTP thread) costs a few hundred milliseconds of CPU, which is why it waits for a quiet second. 0 starts the worker with the node.'
  },
  {
    key: 'search.threads',
    kind: 'integer',
    default: 2,
    flag: 'search-threads',
    min: 1,
    max: 64,
    doc: 'With search.worker, the worker threads that answer searches, at most one per core: each holds a whole copy of the index (about 1.7 GiB at a million entities, 250 MiB at 100,000) and gets every change, and a search goes to the one with the fewest waiting. Two let both cores of a 2-core machine answer searches at once; 1 halves the index memory.'
  },
  {
    key: 'search.snapshot_from_entities',
    kind: 'integer',
    default: 50_000,
    flag: 'search-snapshot-from-entities',
    min: 0,
    max: 1_000_000_000,
    doc: "From this many entities on, the search index is written to search-index.snapshot in the data directory (about 0.8 GB at a million): at stop below 150,000 entities, otherwise by the search thread between queries, a slice at a time: tried every 30 s once the store has changed, at most every 10 minutes (a change to the index during the write makes it try again at the next check). The next start reads it instead of indexing every record again (at a million entities, searchable in about 50 s instead of about 140 s) and indexes again the entities changed since; a snapshot that does not match the store is built over. Set it above the store's size to never write one; 0 writes one at any size."
  },
  {
    key: 'search.federation_max_peers',
    kind: 'integer',
    default: 5,
    flag: 'federation-max-peers',
    min: 0,
    max: 100,
    doc: 'Most peers a federated search (federated: true) asks, chosen by their term filters; 0 keeps federated searches local.'
  },
  {
    key: 'search.federation_timeout_ms',
    kind: 'integer',
    default: 1500,
    flag: 'federation-timeout-ms',
    min: 10,
    max: 30_000,
    doc: 'Deadline of each peer in a federated search when the request gives no timeout_ms; a peer that misses it is reported as timed_out.'
  },
  {
    key: 'search.bloom_false_positive_rate',
    kind: 'number',
    default: 0.01,
    flag: 'bloom-false-positive-rate',
    min: 0.0001,
    max: 0.5,
    doc: 'False-positive rate the term filter of home records is sized for (a false positive costs a peer one needless request).'
  },
  {
    key: 'search.bloom_rebuild_interval_ms',
    kind: 'integer',
    default: 30_000,
    flag: 'bloom-rebuild-interval-ms',
    min: 10,
    max: 3_600_000,
    doc: 'The term filter of home records is rebuilt (and pushed to every peer, a stream each) at most this often after its terms change; every node also holds the records themselves, so a stale filter delays only which peers a federated query asks.'
  }
] as const satisfies readonly Setting[]
