/**
 * Messages between nodes for federated search (protocols/README.md): `/zns/search/1.0.0` carries a
 * search request to a peer and its local results back; `/zns/bloom/1.0.0` carries a node's filter of
 * the terms of its home records to its peers. Unknown members are ignored, so `1.x` may add some.
 */
import { Type, type Static } from '@sinclair/typebox'
import { PublicKey } from './common.js'
import { SearchRequest, SearchResult } from './search.js'

export const FEDERATION_LIMITS = {
  /** Largest search request frame. */
  requestBytes: 64 * 1024,
  /** Largest search response frame; an answerer drops its lowest-ranked results to fit. */
  responseBytes: 4 * 1024 * 1024,
  /** Most results a peer is asked for (offset + max_results beyond it are cut to it). */
  maxPeerResults: 200,
  /** Largest filter, in bits (1 MiB of bits: about 870,000 terms at a 1% false-positive rate). */
  maxFilterBits: 8 * 1024 * 1024,
  /** Largest filter frame (the bits in base64 plus a few members). */
  filterFrameBytes: 1_500_000,
  /** Largest acknowledgement or error frame. */
  smallFrameBytes: 1024
} as const

const RegistryId = Type.String({ pattern: '^zns:registry:[0-9a-f]{32}$', description: 'zns:registry:<32 hex>' })

/** The scheme of `TermFilterMessage.filter`: bloom-filters 3.x BloomFilter index rule (protocols/README.md). */
export const TERM_FILTER_SCHEME = 'bloom-filters/3'

/**
 * A request over `/zns/search/1.0.0`: POST /v1/search's fields without `federated` (an answerer never
 * fans out again), `enrich`, `offset`, `max_results` and `timeout_ms`, plus `limit`: the answerer
 * returns its best `limit` local results.
 */
export const PeerSearchRequest = Type.Composite(
  [
    Type.Omit(SearchRequest, ['federated', 'enrich', 'offset', 'max_results', 'timeout_ms']),
    Type.Object({
      limit: Type.Integer({
        minimum: 1,
        maximum: FEDERATION_LIMITS.maxPeerResults,
        description: 'how many of its best local results the answerer returns'
      })
    })
  ],
  { $id: 'PeerSearchRequest' }
)
export type PeerSearchRequest = Static<typeof PeerSearchRequest>

/**
 * One result as POST /v1/search renders it (without card members: answerers do not enrich), plus
 * the entity's public key (its ID derives from it, so a requester can check the pair and verify the
 * card when it enriches) and whether the answerer is the entity's home registry.
 */
export const PeerSearchResult = Type.Composite(
  [
    Type.Omit(SearchResult, ['card', 'agent_card', 'card_verification', 'card_error', 'source_registry_id']),
    Type.Object({
      public_key: PublicKey,
      home: Type.Boolean({ description: "true when the answering node is the entity's home registry" })
    })
  ],
  { $id: 'PeerSearchResult' }
)
export type PeerSearchResult = Static<typeof PeerSearchResult>

export const PeerSearchResponse = Type.Object(
  {
    registry_id: RegistryId,
    results: Type.Array(PeerSearchResult, { maxItems: FEDERATION_LIMITS.maxPeerResults }),
    total_found: Type.Integer({ minimum: 0, description: "every local match of the request's filters" }),
    latency_ms: Type.Number({ minimum: 0, description: "the answerer's own search time" })
  },
  { $id: 'PeerSearchResponse' }
)
export type PeerSearchResponse = Static<typeof PeerSearchResponse>

/** What an answerer sends instead of a response when it cannot answer (codes from the error table). */
export const PeerError = Type.Object(
  { error: Type.String({ maxLength: 64 }), message: Type.String({ maxLength: 512 }) },
  { $id: 'PeerError' }
)
export type PeerError = Static<typeof PeerError>

/**
 * `/zns/bloom/1.0.0`: a node's Bloom filter of the analyzed terms of its home records (name, tags,
 * category, summary, capabilities), pushed to each peer on connect and whenever it changes.
 */
export const TermFilterMessage = Type.Object(
  {
    registry_id: RegistryId,
    version: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'grows with every rebuild (milliseconds since 1970 at the first build after a start)'
    }),
    scheme: Type.Literal(TERM_FILTER_SCHEME),
    items: Type.Integer({ minimum: 0, description: 'distinct terms in the filter' }),
    bits: Type.Integer({
      minimum: 8,
      maximum: FEDERATION_LIMITS.maxFilterBits,
      multipleOf: 8,
      description: 'filter size m in bits (a multiple of 8)'
    }),
    hashes: Type.Integer({ minimum: 1, maximum: 32, description: 'index functions k' }),
    seed: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    filter: Type.String({
      maxLength: Math.ceil(FEDERATION_LIMITS.maxFilterBits / 8 / 3) * 4,
      description: 'the m bits, standard base64; bit i is bit i mod 8 (least significant first) of byte floor(i / 8)'
    })
  },
  { $id: 'TermFilterMessage' }
)
export type TermFilterMessage = Static<typeof TermFilterMessage>

/** The receiver's answer to a pushed filter: the version it now holds, or why it refused it. */
export const TermFilterAck = Type.Object(
  {
    version: Type.Optional(Type.Integer({ minimum: 0 })),
    error: Type.Optional(Type.String({ maxLength: 64 })),
    message: Type.Optional(Type.String({ maxLength: 512 }))
  },
  { $id: 'TermFilterAck' }
)
export type TermFilterAck = Static<typeof TermFilterAck>
