import { Type, type Static } from '@sinclair/typebox'
import { DeveloperId, EntityId, Nullable } from './common.js'

export const SEARCH_LIMITS = {
  maxResults: 100,
  maxOffset: 10_000,
  defaultResults: 20,
  queryLength: 500,
  listItems: 20,
  timeoutMs: 30_000
} as const

const StringList = Type.Array(Type.String({ maxLength: 100 }), { maxItems: SEARCH_LIMITS.listItems })

export const SearchRequest = Type.Object(
  {
    query: Type.Optional(
      Nullable(
        Type.String({
          maxLength: SEARCH_LIMITS.queryLength,
          description: 'free text; "quoted phrases" add 5.0 on an exact match'
        })
      )
    ),
    category: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
    tags: Type.Optional(Nullable(StringList)),
    type: Type.Optional(
      Nullable(
        Type.String({ description: 'agent, service or any (the default: every type); also spelled entity_type' })
      )
    ),
    entity_type: Type.Optional(Nullable(Type.String())),
    status: Type.Optional(
      Nullable(
        Type.String({ description: 'online or active (default; any for a lookup by fqan or entity ID), offline, any' })
      )
    ),
    developer_id: Type.Optional(Nullable(DeveloperId)),
    developer_handle: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
    fqan: Type.Optional(Nullable(Type.String({ maxLength: 300, description: 'an FQAN, or an entity ID' }))),
    skills: Type.Optional(Nullable(StringList)),
    protocols: Type.Optional(Nullable(StringList)),
    languages: Type.Optional(Nullable(StringList)),
    models: Type.Optional(Nullable(StringList)),
    min_trust_score: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
    max_results: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: SEARCH_LIMITS.maxResults }))),
    offset: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: SEARCH_LIMITS.maxOffset }))),
    timeout_ms: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: SEARCH_LIMITS.timeoutMs }))),
    federated: Type.Optional(Nullable(Type.Boolean())),
    enrich: Type.Optional(Nullable(Type.Boolean())),
    fusion: Type.Optional(
      Nullable(
        Type.Union([Type.Literal('weighted'), Type.Literal('rrf')], {
          description:
            'weighted (default: the weighted sum of normalised scores) or rrf (reciprocal rank fusion of the text and semantic rankings)'
        })
      )
    )
  },
  {
    $id: 'SearchRequest',
    description:
      'Every field is optional; filters combine with AND. Without a query, results are ordered by trust, availability and freshness.'
  }
)
export type SearchRequest = Static<typeof SearchRequest>

const ScoreBreakdown = Type.Object(
  {
    text_relevance: Type.Number(),
    semantic_similarity: Type.Number(),
    trust_score: Type.Number(),
    freshness: Type.Number(),
    availability: Type.Number()
  },
  {
    $id: 'ScoreBreakdown',
    description:
      'each signal in [0, 1]; score = 0.30 text + 0.30 semantic + 0.20 trust + 0.10 freshness + 0.10 availability by default'
  }
)

export const SearchResult = Type.Object(
  {
    entity_id: EntityId,
    name: Type.String(),
    summary: Type.String(),
    category: Type.String(),
    tags: Type.Array(Type.String()),
    type: Type.String(),
    entity_type: Type.String(),
    developer_id: Nullable(DeveloperId),
    developer_handle: Nullable(Type.String()),
    fqan: Nullable(Type.String()),
    capability_summary: Nullable(Type.Record(Type.String(), Type.Unknown())),
    entity_url: Nullable(Type.String()),
    service_endpoint: Nullable(Type.String()),
    home_registry: Type.String(),
    status: Type.String(),
    last_heartbeat: Nullable(Type.String()),
    score: Type.Number(),
    score_breakdown: ScoreBreakdown,
    card: Type.Optional(
      Type.Unknown({ description: 'the live card, only with enrich: true (null when it could not be fetched in time)' })
    ),
    agent_card: Type.Optional(Type.Unknown({ description: 'same as card' })),
    card_verification: Type.Optional(Type.String({ description: 'verified, invalid or unsigned' })),
    card_error: Type.Optional(Type.String({ description: 'why card is null' })),
    source_registry_id: Type.Optional(
      Type.String({
        description:
          "federated search: the registry ID of the peer whose answer this result is (absent for this node's own results)"
      })
    )
  },
  { $id: 'SearchResult' }
)
export type SearchResult = Static<typeof SearchResult>

const PeerSearchReport = Type.Object(
  {
    peer_id: Type.String(),
    registry_id: Nullable(Type.String()),
    name: Nullable(Type.String({ description: 'self-declared, from its hello' })),
    outcome: Type.Union([Type.Literal('answered'), Type.Literal('failed'), Type.Literal('timed_out')]),
    results: Type.Integer({ description: 'results the peer returned (after checking each ID against its key)' }),
    total_found: Type.Integer({ description: "the peer's own total" }),
    latency_ms: Type.Number(),
    error: Type.Optional(Type.String({ description: 'why the peer failed or timed out' }))
  },
  { $id: 'PeerSearchReport' }
)

export const SearchResponse = Type.Object(
  {
    results: Type.Array(SearchResult),
    total_found: Type.Integer({
      description:
        "every match of the filters: exact for a local search; for a federated one, this node's total plus the peers' totals minus the duplicates seen among the returned results"
    }),
    total: Type.Integer(),
    has_more: Type.Boolean(),
    offset: Type.Integer(),
    max_results: Type.Integer(),
    federated_peer_count: Type.Integer({ description: 'peers that answered a federated search' }),
    search_stats: Type.Object({
      local_results: Type.Integer({ description: "this node's own matches" }),
      federated_results: Type.Integer({
        description: 'merged results (up to offset + max_results) that came from peers'
      }),
      peers_queried: Type.Integer({ description: 'peers asked' }),
      latency_ms: Type.Number(),
      embedder: Type.String(),
      semantic: Type.Optional(
        Type.String({ description: 'used, unavailable (the query embedding failed) or not used (no query)' })
      ),
      federated: Type.Optional(Type.Boolean({ description: 'true when the request asked for a federated search' })),
      peers_answered: Type.Optional(Type.Integer()),
      peers_failed: Type.Optional(Type.Integer()),
      peers_timed_out: Type.Optional(Type.Integer()),
      peers_skipped: Type.Optional(
        Type.Integer({ description: 'connected peers not asked because their term filter rules out a match' })
      ),
      peers_over_cap: Type.Optional(
        Type.Integer({ description: 'peers that could match but were beyond search.federation_max_peers' })
      ),
      peer_timeout_ms: Type.Optional(Type.Integer({ description: 'the deadline each peer had' })),
      peers: Type.Optional(Type.Array(PeerSearchReport, { description: 'every peer asked, with its outcome' }))
    })
  },
  { $id: 'SearchResponse' }
)
export type SearchResponse = Static<typeof SearchResponse>

export const CategoryCounts = Type.Array(Type.Object({ name: Type.String(), count: Type.Integer() }), {
  $id: 'CategoryCounts'
})
export const TagCounts = Type.Array(Type.Object({ tag: Type.String(), count: Type.Integer() }), { $id: 'TagCounts' })

/** What the origin registry answers and deployed clients (the dashboard) read: the names, most used first. */
export const CategoryNames = Type.Object({ categories: Type.Array(Type.String()) }, { $id: 'CategoryNames' })
export const TagNames = Type.Object({ tags: Type.Array(Type.String()) }, { $id: 'TagNames' })

export const CountsQuery = Type.Object({
  counts: Type.Optional(
    Type.Boolean({ description: 'true: each name with its count, as [{name, count}] or [{tag, count}]' })
  )
})

export const CategoriesAnswer = Type.Union([CategoryNames, CategoryCounts], {
  $id: 'CategoriesAnswer',
  description: '{categories: [names]}; with ?counts=true [{name, count}]'
})
export const TagsAnswer = Type.Union([TagNames, TagCounts], {
  $id: 'TagsAnswer',
  description: '{tags: [names]}; with ?counts=true [{tag, count}]'
})
