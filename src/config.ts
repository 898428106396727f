/**
 * Node configuration. One table of settings drives the defaults, the config file (TOML),
 * environment variables, command-line flags, the commented file `init` writes and docs/reference/configuration.md.
 * Precedence: defaults < config file < environment < flags.
 */
import { readFile } from 'node:fs/promises'
import { parse as parseToml } from 'smol-toml'
import { DEFAULT_INLINE_MAX_RATE } from './identity/verify-pool.js'
import { walkArgv } from './util/argv.js'

type Kind = 'string' | 'integer' | 'number' | 'boolean' | 'list'

export interface Setting {
  /** Dotted path in the config object and the TOML file. */
  key: string
  kind: Kind
  default: string | number | boolean | readonly string[]
  doc: string
  /** Long flag without dashes; booleans also take `--no-<flag>`. */
  flag: string
  choices?: readonly string[]
  min?: number
  max?: number
}

export const ENV_PREFIX = 'REGISTRY_NODE_'

const TABLE = [
  {
    key: 'data_dir',
    kind: 'string',
    default: './data',
    flag: 'data',
    doc: 'Directory for the LMDB store and the node key.'
  },
  {
    key: 'host',
    kind: 'string',
    default: 'localhost',
    flag: 'host',
    doc: 'Public host name of this node, used in FQANs (<host>/<handle>/<entity>) and as home_registry.'
  },
  {
    key: 'name',
    kind: 'string',
    default: 'registry-node',
    flag: 'name',
    doc: 'Human-readable node name shown to peers and in /v1/network/status.'
  },
  {
    key: 'public_url',
    kind: 'string',
    default: '',
    flag: 'public-url',
    doc: 'Public base URL of this node (registry_url in onboarding redirects); empty: http://<Host header of the request>.'
  },
  {
    key: 'tls.cert_file',
    kind: 'string',
    default: '',
    flag: 'tls-cert-file',
    doc: "PEM certificate served for this host (by the node's TLS terminator); its SPKI fingerprint goes into the registry identity proof."
  },
  {
    key: 'verification.dns_servers',
    kind: 'list',
    default: [],
    flag: 'dns-servers',
    doc: 'DNS servers (ip or ip:port) for handle verification; empty: the system resolvers.'
  },
  {
    key: 'verification.github_api_url',
    kind: 'string',
    default: 'https://api.github.com',
    flag: 'github-api-url',
    doc: 'GitHub API base URL for handle verification (GitHub Enterprise: https://host/api/v3).'
  },
  {
    key: 'verification.github_ca_file',
    kind: 'string',
    default: '',
    flag: 'github-ca-file',
    doc: 'Extra CA certificate (PEM) trusted for the GitHub API, for a private CA.'
  },
  {
    key: 'verification.timeout_ms',
    kind: 'integer',
    default: 5000,
    flag: 'verification-timeout-ms',
    min: 100,
    max: 60_000,
    doc: 'Time limit of each DNS or GitHub request made to verify a handle.'
  },
  {
    key: 'http.host',
    kind: 'string',
    default: '0.0.0.0',
    flag: 'http-host',
    doc: 'Address the HTTP/WebSocket front listens on.'
  },
  {
    key: 'http.port',
    kind: 'integer',
    default: 8080,
    flag: 'http-port',
    min: 0,
    max: 65535,
    doc: 'HTTP port (0 picks a free port).'
  },
  {
    key: 'http.server',
    kind: 'string',
    default: 'auto',
    flag: 'http-server',
    choices: ['auto', 'uws', 'node'],
    doc: 'Server under the HTTP/WebSocket API: uws (uWebSockets.js, the fast path; start fails if no build of it loads on this runtime), node (node:http + ws, any runtime) or auto (uws where it loads, else node).'
  },
  {
    key: 'http.body_limit_bytes',
    kind: 'integer',
    default: 65536,
    flag: 'body-limit',
    min: 1024,
    max: 16 * 1024 * 1024,
    doc: 'Largest accepted request body; larger bodies get 413 body_too_large.'
  },
  {
    key: 'http.cors_origins',
    kind: 'list',
    default: ['*'],
    flag: 'cors-origins',
    doc: 'Origins allowed by CORS ("*" for any).'
  },
  {
    key: 'http.trusted_proxies',
    kind: 'list',
    default: [],
    flag: 'trusted-proxies',
    doc: 'Proxy addresses or CIDRs whose X-Forwarded-For is believed; otherwise the socket address is the client.'
  },
  {
    key: 'p2p.enabled',
    kind: 'boolean',
    default: true,
    flag: 'p2p',
    doc: 'Join the mesh (libp2p); --no-p2p runs a stand-alone node.'
  },
  {
    key: 'p2p.host',
    kind: 'string',
    default: '0.0.0.0',
    flag: 'p2p-host',
    doc: 'Address the libp2p listeners bind to.'
  },
  {
    key: 'p2p.port',
    kind: 'integer',
    default: 4001,
    flag: 'p2p-port',
    min: 0,
    max: 65534,
    doc: 'libp2p TCP port; WebSockets listens on port + 1 (0: both ephemeral).'
  },
  {
    key: 'p2p.bootstrap',
    kind: 'list',
    default: [],
    flag: 'bootstrap',
    doc: "Peer multiaddrs dialled at start and re-dialled every 30 s while disconnected (repeatable); end them in /p2p/<peer-id> to pin the peer's key."
  },
  {
    key: 'p2p.announce',
    kind: 'list',
    default: [],
    flag: 'announce',
    doc: 'Multiaddrs announced to peers instead of the listen addresses, e.g. the public address in front of a NAT (repeatable).'
  },
  {
    key: 'p2p.max_connections',
    kind: 'integer',
    default: 100,
    flag: 'max-connections',
    min: 1,
    max: 10_000,
    doc: 'libp2p connections kept open; beyond it the least valuable are closed.'
  },
  {
    key: 'p2p.dht_announce_interval_seconds',
    kind: 'number',
    default: 30,
    flag: 'dht-announce-interval-seconds',
    min: 0.01,
    max: 3600,
    doc: 'Pause between two DHT provider announcements of this node (its host, then the buckets of its home entities, 17 at most): each costs a DHT query and writes to several peers, so they trickle in the background; lookups are the fallback for what gossip and sync have not brought.'
  },
  {
    key: 'p2p.sync_interval_seconds',
    kind: 'integer',
    default: 60,
    flag: 'sync-interval-seconds',
    min: 1,
    max: 86_400,
    doc: 'Period of sync rounds (/zns/sync/1.0.0) with one connected peer picked at random; a sync also runs when a connection opens.'
  },
  {
    key: 'p2p.gossip_mesh_degree',
    kind: 'integer',
    default: 4,
    flag: 'gossip-mesh-degree',
    min: 2,
    max: 12,
    doc: "Peers each node forwards gossip to (gossipsub's D; the mesh keeps between D − 1 and 1.5 D). A node's own operations go to every connected peer, and sync catches up whatever gossip missed, so a mesh smaller than gossipsub's 6 costs each node fewer copies and control messages per operation."
  },
  {
    key: 'p2p.gossip_max_per_peer_per_second',
    kind: 'integer',
    default: 100,
    flag: 'gossip-max-per-peer-per-second',
    min: 1,
    max: 100_000,
    doc: "Gossip messages accepted per second from one peer (the spec's 100); beyond it they are ignored and left to sync."
  },
  {
    key: 'p2p.origin_ops_per_second',
    kind: 'number',
    default: 1_000,
    flag: 'origin-ops-per-second',
    min: 0,
    doc: 'Operations per second taken from one other registry (bursts of 10 × this): at least the write rate an honest node may sustain. Beyond it gossip ignores them (not forwarded from here) and sync takes them later. 0: no limit.'
  },
  {
    key: 'p2p.developer_ops_per_second',
    kind: 'number',
    default: 20,
    flag: 'developer-ops-per-second',
    min: 0,
    doc: "Operations per second taken from the mesh for one developer's records, their status changes aside (bursts of 10 × this), as above. 0: no limit."
  },
  {
    key: 'p2p.max_entities_per_origin',
    kind: 'integer',
    default: 100_000,
    flag: 'max-entities-per-origin',
    min: 0,
    doc: 'Entities homed at one other registry this node keeps; registrations beyond it are refused for good (sync does not offer them again). 0: no limit.'
  },
  {
    key: 'p2p.allow_peers',
    kind: 'list',
    default: [],
    flag: 'allow-peer',
    doc: 'When set, the only peers (PeerIds) this node connects to, either way (repeatable): private meshes and testnet topologies.'
  },
  {
    key: 'p2p.trace_file',
    kind: 'string',
    default: '',
    flag: 'trace',
    doc: 'Append a JSON line per gossip event (publish, first receipt, duplicate) to this file: the propagation trace of experiments.'
  },
  {
    key: 'onboarding.mode',
    kind: 'string',
    default: 'open',
    flag: 'mode',
    choices: ['open', 'restricted'],
    doc: 'open: anyone may register developers; restricted: an operator approves developers through the admin webhook.'
  },
  {
    key: 'onboarding.auth_url',
    kind: 'string',
    default: '',
    flag: 'auth-url',
    doc: 'Where restricted-mode clients are sent to be approved (reported by /v1/info).'
  },
  {
    key: 'onboarding.webhook_secret',
    kind: 'string',
    default: '',
    flag: 'webhook-secret',
    doc: 'Bearer secret of the admin endpoints.'
  },
  {
    key: 'rate_limit.enabled',
    kind: 'boolean',
    default: true,
    flag: 'rate-limit',
    doc: 'Enforce rate limits (--no-rate-limit for benchmarks and testnets).'
  },
  {
    key: 'rate_limit.reads_per_minute',
    kind: 'integer',
    default: 60,
    flag: 'reads-per-minute',
    min: 1,
    doc: 'Open reads (GET, search, resolve) per client IP per minute.'
  },
  {
    key: 'rate_limit.writes_per_minute',
    kind: 'integer',
    default: 10,
    flag: 'writes-per-minute',
    min: 1,
    doc: 'Signed writes per public key per minute.'
  },
  {
    key: 'rate_limit.writes_per_ip_per_minute',
    kind: 'integer',
    default: 300,
    flag: 'writes-per-ip-per-minute',
    min: 1,
    doc: 'Signed writes per client IP per minute, whatever the key (bounds floods of fresh keys).'
  },
  {
    key: 'log.level',
    kind: 'string',
    default: 'info',
    flag: 'log-level',
    choices: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'],
    doc: 'Log level (request logs are at info).'
  },
  {
    key: 'metrics.enabled',
    kind: 'boolean',
    default: false,
    flag: 'metrics',
    doc: 'Serve Prometheus metrics at /metrics.'
  },
  {
    key: 'tombstones.retention_days',
    kind: 'integer',
    default: 30,
    flag: 'tombstone-retention-days',
    min: 1,
    doc: 'How long a deregistration tombstone (and its replay guard) is kept.'
  },
  {
    key: 'store.commit_delay_ms',
    kind: 'integer',
    default: 5,
    flag: 'commit-delay-ms',
    min: 0,
    max: 100,
    doc: 'Once a write began within this many milliseconds, the next waits out the rest of that time to share one LMDB transaction with the writes that come meanwhile; a lone write does not wait. Batching saves CPU under load.'
  },
  {
    key: 'store.min_free_bytes',
    kind: 'integer',
    default: 64 * 2 ** 20,
    flag: 'min-free-bytes',
    min: 0,
    max: 2 ** 50,
    doc: "Writes (API, gossip, sync) are refused with 507 storage_full while the data directory's disk has less than this free; reads and heartbeats go on, and writes resume when space returns. 0: no reserve."
  },
  {
    key: 'verify.workers',
    kind: 'integer',
    default: 1,
    flag: 'verify-workers',
    min: 0,
    max: 64,
    doc: 'Worker threads that verify client signatures under load, so verification does not hold up the HTTP thread; 0 verifies on the HTTP thread only. One suits 2 cores (the HTTP thread needs the other).'
  },
  {
    key: 'verify.inline_max_rate',
    kind: 'integer',
    default: DEFAULT_INLINE_MAX_RATE,
    flag: 'verify-inline-max-rate',
    min: 0,
    doc: 'Signatures per second below which an idle pool verifies on the HTTP thread (cheaper in CPU than a thread hop; 500 where libsodium is not installed, as node:crypto verifies 2.5 times slower); 0 always uses the workers.'
  },
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
  },
  {
    key: 'liveness.inactive_after_seconds',
    kind: 'number',
    default: 300,
    flag: 'inactive-after-seconds',
    min: 0.1,
    doc: 'Silence after which a home entity becomes inactive (the spec: 5 minutes).'
  },
  {
    key: 'liveness.sweep_interval_seconds',
    kind: 'number',
    default: 60,
    flag: 'sweep-interval-seconds',
    min: 0.05,
    doc: 'How often the inactivity sweep runs (the spec: 60 seconds).'
  },
  {
    key: 'liveness.max_clock_skew_seconds',
    kind: 'number',
    default: 60,
    flag: 'max-clock-skew-seconds',
    min: 1,
    doc: 'Largest accepted difference between a signed timestamp (of a heartbeat, or of a timestamped deletion or release) and the node clock.'
  },
  {
    key: 'liveness.flush_interval_ms',
    kind: 'integer',
    default: 5000,
    flag: 'liveness-flush-ms',
    min: 10,
    max: 300_000,
    doc: 'How often last-seen times are written to LMDB in one batch (a crash loses at most this much heartbeat history; status changes are written at once).'
  },
  {
    key: 'liveness.max_entities_per_connection',
    kind: 'integer',
    default: 50,
    flag: 'max-entities-per-connection',
    min: 1,
    max: 10_000,
    doc: 'Entities one multiplexed /v1/heartbeat connection may carry.'
  },
  {
    key: 'liveness.frames_per_second_per_entity',
    kind: 'number',
    default: 1,
    flag: 'heartbeat-rate',
    min: 0.01,
    doc: 'Heartbeat frames per second one connection may send per entity it may carry (bursts of 10 × this); a connection that keeps exceeding it is closed.'
  },
  {
    key: 'liveness.max_frame_bytes',
    kind: 'integer',
    default: 1024,
    flag: 'heartbeat-frame-bytes',
    min: 256,
    max: 65_536,
    doc: 'Largest heartbeat frame (× max_entities_per_connection on /v1/heartbeat); larger frames close the connection (1009).'
  },
  {
    key: 'liveness.probation_seconds',
    kind: 'number',
    default: 10,
    flag: 'heartbeat-probation-seconds',
    min: 0,
    doc: 'A heartbeat connection is on probation until its first accepted heartbeat and for this long after any rejected one; proven connections are served first.'
  },
  {
    key: 'liveness.probation_in_flight',
    kind: 'integer',
    default: 128,
    flag: 'heartbeat-probation-in-flight',
    min: 1,
    max: 100_000,
    doc: "Heartbeats of connections on probation awaiting verification, node-wide; beyond it they are answered overloaded before any signature work (128: about 17 ms of one worker, the most a flood adds to a proven heartbeat's wait)."
  },
  {
    key: 'liveness.probation_in_flight_per_address',
    kind: 'integer',
    default: 32,
    flag: 'heartbeat-probation-in-flight-per-address',
    min: 1,
    max: 100_000,
    doc: 'The share of liveness.probation_in_flight one remote address may hold.'
  },
  {
    key: 'activity.queue_size',
    kind: 'integer',
    default: 256,
    flag: 'activity-queue-size',
    min: 1,
    max: 100_000,
    doc: 'Events buffered per /v1/ws/activity subscriber; a slower subscriber loses events (the spec: 256).'
  },
  {
    key: 'cards.timeout_ms',
    kind: 'integer',
    default: 5000,
    flag: 'card-timeout-ms',
    min: 100,
    max: 60_000,
    doc: 'Time limit of one card fetch (connection, redirects and body).'
  },
  {
    key: 'cards.max_bytes',
    kind: 'integer',
    default: 262_144,
    flag: 'card-max-bytes',
    min: 1024,
    max: 16 * 1024 * 1024,
    doc: 'Largest card accepted.'
  },
  {
    key: 'cards.cache_ttl_seconds',
    kind: 'integer',
    default: 3600,
    flag: 'card-cache-ttl',
    min: 0,
    max: 86_400,
    doc: 'How long a fetched card is served from the cache.'
  },
  {
    key: 'cards.allow_private_addresses',
    kind: 'boolean',
    default: false,
    flag: 'card-allow-private',
    doc: 'Fetch cards from private, loopback and link-local addresses (testnets only: it opens the node to SSRF).'
  },
  {
    key: 'cards.ca_file',
    kind: 'string',
    default: '',
    flag: 'card-ca-file',
    doc: 'Extra CA certificate (PEM) trusted when fetching cards (private PKI, tests).'
  },
  {
    key: 'entities.allow_http_url',
    kind: 'boolean',
    default: false,
    flag: 'allow-http-entity-url',
    doc: 'Accept http:// entity URLs (and fetch cards over http) so a node and entities can run on one machine without TLS; testnets turn it on. Public nodes keep it off: the spec requires HTTPS.'
  },
  {
    key: 'entities.strict_replay',
    kind: 'boolean',
    default: false,
    flag: 'strict-replay',
    doc: 'Refuse an update, deletion or release sent to this node whose signature was already used, even for a later re-registration (or re-claim, re-binding) of the same key. The deployed clients sign the same bytes every time (a deletion signs only the ID), so with this on they cannot deregister a re-registered entity; off, a captured write can be applied again to later incarnations of its own subject (SECURITY.md). Within one incarnation a signature is good once either way, and timestamped deletions always.'
  },
  {
    key: 'limits.max_list_limit',
    kind: 'integer',
    default: 200,
    flag: 'max-list-limit',
    min: 1,
    max: 10_000,
    doc: 'Largest page size of GET /v1/entities and /v1/developers/{id}/entities; a larger ?limit or ?page_size is clamped to it (the reply says what applied).'
  }
] as const satisfies readonly Setting[]

/** The settings, one row each, in the order the config file and docs/reference/configuration.md list them. */
export const SETTINGS: readonly Setting[] = TABLE

/** The value type of one row: its choices as a union, else its kind's type. */
type ValueOf<S> = S extends { readonly choices: readonly (infer C)[] }
  ? C
  : S extends { readonly kind: 'string' }
    ? string
    : S extends { readonly kind: 'integer' | 'number' }
      ? number
      : S extends { readonly kind: 'boolean' }
        ? boolean
        : string[]
type Row = (typeof TABLE)[number]
type SectionOf<K> = K extends `${infer Section}.${string}` ? Section : never
type TopKey = Exclude<Row['key'], `${string}.${string}`>

/** The node's configuration, derived from SETTINGS: one key per row, sections from the dotted paths. */
export type NodeConfig = { [K in TopKey]: ValueOf<Extract<Row, { key: K }>> } & {
  [S in SectionOf<Row['key']>]: {
    [R in Extract<Row, { key: `${S}.${string}` }> as R['key'] extends `${S}.${infer Leaf}` ? Leaf : never]: ValueOf<R>
  }
}
export type LogLevel = NodeConfig['log']['level']

export class ConfigError extends Error {
  override name = 'ConfigError'
}

export function envName(setting: Setting): string {
  return ENV_PREFIX + setting.key.replace(/\./g, '_').toUpperCase()
}

function coerce(setting: Setting, value: unknown, source: string): string | number | boolean | string[] {
  const where = `${setting.key} (${source})`
  switch (setting.kind) {
    case 'string': {
      if (typeof value !== 'string') throw new ConfigError(`${where}: expected a string`)
      if (setting.choices && !setting.choices.includes(value))
        throw new ConfigError(`${where}: expected one of ${setting.choices.join(', ')}`)
      return value
    }
    case 'integer':
    case 'number': {
      const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value
      if (typeof n !== 'number' || !Number.isFinite(n) || (setting.kind === 'integer' && !Number.isInteger(n)))
        throw new ConfigError(`${where}: expected ${setting.kind === 'integer' ? 'an integer' : 'a number'}`)
      if (setting.min !== undefined && n < setting.min)
        throw new ConfigError(`${where}: must be at least ${setting.min}`)
      if (setting.max !== undefined && n > setting.max)
        throw new ConfigError(`${where}: must be at most ${setting.max}`)
      return n
    }
    case 'boolean': {
      if (typeof value === 'boolean') return value
      if (typeof value === 'string' && /^(1|true|yes|on)$/i.test(value)) return true
      if (typeof value === 'string' && /^(0|false|no|off)$/i.test(value)) return false
      throw new ConfigError(`${where}: expected true or false`)
    }
    case 'list': {
      if (typeof value === 'string')
        return value
          .split(',')
          .map(s => s.trim())
          .filter(Boolean)
      if (Array.isArray(value) && value.every(v => typeof v === 'string')) return value as string[]
      throw new ConfigError(`${where}: expected a list of strings`)
    }
  }
}

function setPath(target: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.')
  let node = target
  for (const part of parts.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>
  node[parts[parts.length - 1] as string] = value
}

function getPath(source: Record<string, unknown>, key: string): unknown {
  let node: unknown = source
  for (const part of key.split('.')) {
    if (node === null || typeof node !== 'object') return undefined
    node = (node as Record<string, unknown>)[part]
  }
  return node
}

export function defaultConfig(): NodeConfig {
  const config: Record<string, unknown> = {}
  for (const s of SETTINGS) setPath(config, s.key, structuredClone(s.default))
  return config as unknown as NodeConfig
}

export interface ParsedFlags {
  values: Map<Setting, unknown>
  configFile?: string
  positionals: string[]
}

const FLAG_INDEX = new Map<string, Setting>(SETTINGS.map(s => [s.flag, s]))

/** Parses `--flag value`, `--flag=value`, boolean `--flag`/`--no-flag`; list flags repeat or take commas. */
export function parseFlags(argv: readonly string[]): ParsedFlags {
  const values = new Map<Setting, unknown>()
  let configFile: string | undefined
  const positionals = walkArgv(
    argv,
    ({ name, inline, takeValue }) => {
      if (name === 'config') {
        configFile = takeValue()
        return
      }
      const setting = FLAG_INDEX.get(name)
      if (!setting && name.startsWith('no-')) {
        const positive = FLAG_INDEX.get(name.slice(3))
        if (positive?.kind === 'boolean') {
          values.set(positive, false)
          return
        }
      }
      if (!setting) throw new ConfigError(`unknown flag --${name}`)
      if (setting.kind === 'boolean') {
        values.set(setting, inline === undefined ? true : coerce(setting, inline, `--${name}`))
        return
      }
      const value = coerce(setting, takeValue(), `--${name}`)
      if (setting.kind === 'list')
        values.set(setting, [...((values.get(setting) as string[] | undefined) ?? []), ...(value as string[])])
      else values.set(setting, value)
    },
    message => new ConfigError(message)
  )
  return configFile === undefined ? { values, positionals } : { values, positionals, configFile }
}

export interface LoadOptions {
  argv?: readonly string[]
  env?: NodeJS.ProcessEnv
}

/** Builds the configuration from defaults, the config file, the environment and flags, in that order. */
export async function loadConfig({ argv = [], env = process.env }: LoadOptions = {}): Promise<NodeConfig> {
  const flags = parseFlags(argv)
  const config = defaultConfig() as unknown as Record<string, unknown>
  const file = flags.configFile ?? env[`${ENV_PREFIX}CONFIG`]
  if (file) {
    let parsed: Record<string, unknown>
    try {
      parsed = parseToml(await readFile(file, 'utf8')) as Record<string, unknown>
    } catch (err) {
      throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`)
    }
    for (const s of SETTINGS) {
      const v = getPath(parsed, s.key)
      if (v !== undefined) setPath(config, s.key, coerce(s, v, file))
    }
  }
  for (const s of SETTINGS) {
    const v = env[envName(s)]
    if (v !== undefined && v !== '') setPath(config, s.key, coerce(s, v, envName(s)))
  }
  for (const [s, v] of flags.values) setPath(config, s.key, v)
  return config as unknown as NodeConfig
}

function tomlValue(value: Setting['default']): string {
  return JSON.stringify(value)
}

/** The commented config file `registry-node init` writes: every setting at its default. */
export function configTemplate(overrides: Partial<Record<string, Setting['default']>> = {}): string {
  const lines = [
    '# registry-node configuration (TOML).',
    '# Precedence: defaults < this file < environment (REGISTRY_NODE_<SECTION>_<KEY>) < command-line flags.',
    ''
  ]
  let section = ''
  for (const s of SETTINGS) {
    const dot = s.key.lastIndexOf('.')
    const sec = dot === -1 ? '' : s.key.slice(0, dot)
    const leaf = dot === -1 ? s.key : s.key.slice(dot + 1)
    if (sec !== section) {
      lines.push('', `[${sec}]`)
      section = sec
    }
    lines.push(`# ${s.doc} (flag --${s.flag}, env ${envName(s)})`)
    const value = overrides[s.key] ?? s.default
    lines.push(`${overrides[s.key] === undefined ? '# ' : ''}${leaf} = ${tomlValue(value)}`)
  }
  return `${lines.join('\n')}\n`
}
