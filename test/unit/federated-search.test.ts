/**
 * Federated search without a network: routing by term filters, the per-peer deadline (a peer that
 * never answers costs the timeout, even when the transport ignores the abort), merging and events.
 */
import test from 'ava'
import { pino } from 'pino'
import { EventBus, type RegistryEvent } from '../../src/events/bus.js'
import { formatKey } from '../../src/identity/encoding.js'
import { deriveId } from '../../src/identity/ids.js'
import { analyze } from '../../src/search/analyzer.js'
import { hashTerm, TermFilter } from '../../src/search/term-filter.js'
import {
  FederatedSearch,
  merge,
  type FederatedHit,
  type FederationPeer,
  type SearchFederationPort
} from '../../src/services/search/federated-search.js'
import {
  TERM_FILTER_SCHEME,
  type PeerSearchRequest,
  type PeerSearchResponse,
  type PeerSearchResult,
  type TermFilterMessage
} from '../../src/wire/federation.js'

const registry = (c: string) => `zns:registry:${c.repeat(32)}`

function filterOf(registryId: string, words: string[]): TermFilterMessage {
  const terms = words.flatMap(w => analyze(w))
  const f = TermFilter.build(terms.map(hashTerm), terms.length, 0.01, 1 << 23)
  return {
    registry_id: registryId,
    version: 1,
    scheme: TERM_FILTER_SCHEME,
    items: f.items,
    bits: f.bits,
    hashes: f.hashes,
    seed: f.seed,
    filter: Buffer.from(f.bytes()).toString('base64')
  }
}

/** An entity ID with its key, and a result for it. */
function result(keyByte: number, score: number, home: boolean): PeerSearchResult {
  const key = Buffer.alloc(32, keyByte)
  return {
    entity_id: deriveId('agent', key),
    name: `e${keyByte}`,
    summary: '',
    category: 'tools',
    tags: [],
    type: 'agent',
    entity_type: 'agent',
    developer_id: null,
    developer_handle: null,
    fqan: null,
    capability_summary: null,
    entity_url: null,
    service_endpoint: null,
    home_registry: 'x',
    status: 'active',
    last_heartbeat: null,
    score,
    score_breakdown: { text_relevance: 0, semantic_similarity: 0, trust_score: 0, freshness: 0, availability: 0 },
    public_key: formatKey(key),
    home
  }
}

interface FakePeer extends FederationPeer {
  respond: (request: PeerSearchRequest, signal: AbortSignal) => Promise<PeerSearchResponse>
}

function setup(peers: FakePeer[], settings = { maxPeers: 5, timeoutMs: 300 }) {
  const asked: string[] = []
  const port: SearchFederationPort = {
    peers: () => peers,
    query: (peerId, request, signal) => {
      asked.push(peerId)
      return peers.find(p => p.peerId === peerId)!.respond(request, signal)
    }
  }
  const bus = new EventBus()
  const events: RegistryEvent[] = []
  bus.subscribe(e => events.push(e))
  return { federation: new FederatedSearch({ port, bus, logger: pino({ level: 'silent' }), settings }), asked, events }
}

const answering = (id: string, words: string[], results: PeerSearchResult[], total = results.length): FakePeer => ({
  peerId: `peer-${id}`,
  registryId: registry(id),
  name: id,
  latencyMs: 1,
  filter: filterOf(registry(id), words),
  respond: async () => ({ registry_id: registry(id), results, total_found: total, latency_ms: 1 })
})

const noLocal = async () => ({ hits: [], total: 0, semantic: 'used' })

test('only peers whose filter holds a query term are asked; category and tags must all be in the filter', async t => {
  const { federation, asked } = setup([
    answering('a', ['quokka weather'], [result(1, 0.9, true)]),
    answering('b', ['wombat'], [result(2, 0.8, true)]),
    { ...answering('c', [], [result(3, 0.7, true)]), filter: null }
  ])
  const out = await federation.search({ query: 'quokka' }, 20, noLocal)
  t.deepEqual(
    asked,
    ['peer-a', 'peer-c'],
    'a matches, b is ruled out, c has no filter yet (asked after the matching ones)'
  )
  t.is(out.skipped, 1)
  t.deepEqual(
    out.hits.map(h => h.result.name),
    ['e1', 'e3']
  )
  t.is(out.hits[0]!.source, registry('a'))

  asked.length = 0
  await federation.search({ query: 'quokka', category: 'finance' }, 20, noLocal)
  t.deepEqual(asked, ['peer-c'], 'no filter holds "financ"')

  asked.length = 0
  await federation.search({ category: 'weather' }, 20, noLocal)
  t.deepEqual(asked, ['peer-a', 'peer-c'], 'without query terms, peers whose filter is not ruled out by the filters')
})

test('at most maxPeers are asked, those matching most terms first', async t => {
  const { federation, asked } = setup(
    [answering('a', ['quokka'], []), answering('b', ['quokka wombat'], []), answering('c', ['quokka'], [])],
    { maxPeers: 2, timeoutMs: 300 }
  )
  const out = await federation.search({ query: 'quokka wombat' }, 20, noLocal)
  t.is(asked[0], 'peer-b')
  t.is(asked.length, 2)
  t.is(out.overCap, 1)
})

test('a peer that never answers is cut off at its deadline and reported as timed out; a failing one as failed', async t => {
  const { federation, events } = setup(
    [
      answering('a', ['quokka'], [result(1, 0.5, true)]),
      // Ignores the abort signal entirely: the deadline must still hold.
      { ...answering('b', ['quokka'], []), respond: () => new Promise<never>(() => {}) },
      {
        ...answering('c', ['quokka'], []),
        respond: async () => {
          throw new Error('overloaded: busy')
        }
      }
    ],
    { maxPeers: 5, timeoutMs: 200 }
  )
  // The requests all leave before the local search runs, and are awaited together: a dead peer
  // costs one deadline, whatever the number of peers.
  let outgoingWhenLocalRan = -1
  const local = async () => {
    outgoingWhenLocalRan = events.filter(e => e.type === 'search_outgoing').length
    return noLocal()
  }
  const started = performance.now()
  // Settles although b never answers: its deadline cut it off.
  const out = await federation.search({ query: 'quokka' }, 20, local)
  const elapsed = performance.now() - started
  // At least the deadline (2 ms for timer rounding); a busy machine may add any amount.
  t.true(elapsed >= 200 - 2, `took ${elapsed.toFixed(0)} ms`)
  t.is(outgoingWhenLocalRan, 3, 'the three requests left before the local search')
  const byName = Object.fromEntries(out.peers.map(p => [p.name, p]))
  t.is(byName.a!.outcome, 'answered')
  t.is(byName.b!.outcome, 'timed_out')
  t.regex(byName.b!.error!, /200 ms/)
  t.true(byName.b!.latency_ms >= 200 - 2, `b took ${byName.b!.latency_ms} ms`)
  t.is(byName.c!.outcome, 'failed')
  t.regex(byName.c!.error!, /overloaded/)
  t.is(events.filter(e => e.type === 'search_outgoing').length, 3)
  const incoming = events.filter(e => e.type === 'search_result_incoming')
  t.deepEqual(incoming.map(e => e.data.outcome).sort(), ['answered', 'failed', 'timed_out'])

  const quick = await federation.search({ query: 'quokka', timeout_ms: 50 }, 20, noLocal)
  t.is(quick.timeoutMs, 50, "the request's timeout_ms is the per-peer deadline")
  t.like(
    quick.peers.find(p => p.name === 'b'),
    { outcome: 'timed_out', error: 'no answer within 50 ms' }
  )
})

test("a result whose ID is not its key's, or an answer naming another registry, is dropped", async t => {
  const forged = { ...result(1, 0.9, true), entity_id: result(2, 0, true).entity_id }
  const { federation } = setup([
    answering('a', ['quokka'], [forged, result(3, 0.5, true)]),
    {
      ...answering('b', ['quokka'], []),
      respond: async () => ({
        registry_id: registry('e'),
        results: [result(4, 1, true)],
        total_found: 1,
        latency_ms: 1
      })
    }
  ])
  const out = await federation.search({ query: 'quokka' }, 20, noLocal)
  t.deepEqual(
    out.hits.map(h => h.result.name),
    ['e3']
  )
  t.is(out.peers.find(p => p.name === 'b')!.outcome, 'failed')
})

test('merging keeps one copy per entity: the home copy, else our own, else the best score; ranked by score', t => {
  const hit = (keyByte: number, score: number, home: boolean, source: string | null): FederatedHit => {
    const { home: _h, public_key: publicKey, ...r } = result(keyByte, score, home)
    return { result: r, publicKey, home, source }
  }
  const { hits, duplicates } = merge([
    hit(1, 0.9, false, null),
    hit(1, 0.4, true, registry('a')),
    hit(1, 0.95, false, registry('b')),
    hit(2, 0.3, false, registry('a')),
    hit(2, 0.6, false, null),
    hit(3, 0.5, false, registry('a')),
    hit(3, 0.7, false, registry('b'))
  ])
  t.is(duplicates, 4)
  t.deepEqual(
    hits.map(h => [h.result.name, h.source, h.result.score]),
    [
      ['e3', registry('b'), 0.7],
      ['e2', null, 0.6],
      ['e1', registry('a'), 0.4]
    ]
  )
})
