/**
 * Settings rows of the node itself: who it is, how it serves HTTP, what it accepts from clients and
 * how it stores and verifies. One of the three files the settings table (settings.ts) is split
 * into so that no file holds all of it; each keeps its rows in the table's order, which is the
 * order of the config file and docs/reference/configuration.md.
 */
import { ED25519_BACKEND } from '../identity/keys.js'
import type { Setting } from './setting.js'

/**
 * node:crypto verifies 2.5 times slower than libsodium, so without libsodium the verify pool takes
 * over at a lower rate (verify-pool.ts explains the numbers). The one default that depends on the
 * runtime, hence the one import from identity: a single literal would give one of the two
 * backends the other's threshold.
 */
export const DEFAULT_INLINE_MAX_RATE = ED25519_BACKEND === 'libsodium' ? 2500 : 500

/** Identity, handle verification and the HTTP front. */
export const NODE_SETTINGS = [
  {
    key: 'dev',
    kind: 'boolean',
    default: false,
    flag: 'dev',
    doc: 'Development mode, for a node on one machine and never in a public mesh: http:// entity URLs and private card addresses are accepted and rate limits are off, unless the file, environment or flags set those settings; the node says so when it starts.'
  },
  {
    key: 'profile',
    kind: 'string',
    default: 'none',
    flag: 'profile',
    choices: ['none', 'public', 'private'],
    doc: 'A preset of the mesh settings, below the file, environment and flags (docs/operator.md, Profiles). public: a node of the public mesh, reachability check, relay server, hole punching, gossip scoring, discovery and per-peer limits on; it warns at start when peers elsewhere could not dial it. private: a closed mesh of the peers p2p.allow_peers names (required), relay, reachability check, hole punching and UPnP off. none: the built-in defaults alone.'
  },
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
    url: true,
    doc: 'Public base URL of this node (registry_url in onboarding redirects); empty: http://<Host header of the request> (https:// when the node serves TLS itself).'
  },
  {
    key: 'replica_of',
    kind: 'string',
    default: '',
    flag: 'replica-of',
    url: true,
    doc: "Public URL of the registry this node is a read-only replica of (set host to that registry's host and bootstrap from its node): writes, onboarding and heartbeats are refused with 503 read_only_replica naming the URL, and this host's names are served from what the mesh brings. Empty: a registry of its own."
  },
  {
    key: 'tls.cert_file',
    kind: 'string',
    default: '',
    flag: 'tls-cert-file',
    reloadable: true,
    doc: 'PEM certificate (with its chain) of this host. With tls.key_file the node serves HTTPS and WSS itself; alone it names the certificate a proxy in front serves. Either way its SPKI fingerprint goes into the registry identity proof. Re-read on SIGHUP.'
  },
  {
    key: 'tls.key_file',
    kind: 'string',
    default: '',
    flag: 'tls-key-file',
    reloadable: true,
    doc: 'PEM private key (unencrypted) of tls.cert_file. Set both to serve HTTPS and WSS on http.port; empty: plain HTTP. Re-read on SIGHUP (turning TLS on or off takes a restart).'
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
    reloadable: true,
    min: 1024,
    max: 16 * 1024 * 1024,
    doc: 'Largest accepted request body; larger bodies get 413 body_too_large.'
  },
  {
    key: 'http.cors_origins',
    kind: 'list',
    default: ['*'],
    flag: 'cors-origins',
    reloadable: true,
    doc: 'Origins allowed by CORS ("*" for any).'
  },
  {
    key: 'http.trusted_proxies',
    kind: 'list',
    default: [],
    flag: 'trusted-proxies',
    reloadable: true,
    doc: 'Proxy addresses or CIDRs whose X-Forwarded-For is believed; otherwise the socket address is the client.'
  }
] as const satisfies readonly Setting[]

/** What the node accepts and how it stores and verifies it. */
export const SERVICE_SETTINGS = [
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
    reloadable: true,
    doc: 'Enforce rate limits (--no-rate-limit for benchmarks and testnets).'
  },
  {
    key: 'rate_limit.reads_per_minute',
    kind: 'integer',
    default: 60,
    flag: 'reads-per-minute',
    reloadable: true,
    min: 1,
    doc: 'Open reads (GET, search, resolve) per client IP per minute.'
  },
  {
    key: 'rate_limit.dashboard_reads_per_minute',
    kind: 'integer',
    default: 120,
    flag: 'dashboard-reads-per-minute',
    reloadable: true,
    min: 1,
    doc: "Reads the node's own dashboard page makes (marked X-Registry-Dashboard) per client IP per minute, a budget apart from reads_per_minute: an open dashboard polls about 48 times a minute and would otherwise spend the reader's own reads."
  },
  {
    key: 'rate_limit.writes_per_minute',
    kind: 'integer',
    default: 10,
    flag: 'writes-per-minute',
    reloadable: true,
    min: 1,
    doc: 'Signed writes per public key per minute.'
  },
  {
    key: 'rate_limit.writes_per_ip_per_minute',
    kind: 'integer',
    default: 300,
    flag: 'writes-per-ip-per-minute',
    reloadable: true,
    min: 1,
    doc: 'Signed writes per client IP per minute, whatever the key (bounds floods of fresh keys).'
  },
  {
    key: 'log.level',
    kind: 'string',
    default: 'info',
    flag: 'log-level',
    reloadable: true,
    choices: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'],
    doc: 'Log level (request logs are at info).'
  },
  {
    key: 'trust.seeds',
    kind: 'list',
    default: [],
    flag: 'trust-seed',
    doc: 'Developer or entity IDs trusted from the start (repeatable), beside every developer with a verified handle: transitive trust flows from them through attestations.'
  },
  {
    key: 'trust.payment_rpc',
    kind: 'list',
    default: [],
    flag: 'trust-payment-rpc',
    doc: 'JSON-RPC endpoints that check payment evidence, as <network>=<url> (repeatable; e.g. eip155:8453=https://mainnet.base.org): an attestation whose payment settled on chain weighs most, one that reverted nothing. Evidence of other networks stays unchecked.'
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
  }
] as const satisfies readonly Setting[]

/** Entity cards, entity URLs and replay, and list limits. */
export const ENTITY_SETTINGS = [
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
    reloadable: true,
    min: 1,
    max: 10_000,
    doc: 'Largest page size of GET /v1/entities and /v1/developers/{id}/entities; a larger ?limit or ?page_size is clamped to it (the reply says what applied).'
  }
] as const satisfies readonly Setting[]
