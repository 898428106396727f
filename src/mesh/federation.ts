/**
 * The mesh's half of federated search: the `/zns/search/1.0.0` protocol (answering peers, asking
 * them) and the `/zns/bloom/1.0.0` exchange of term filters, seen by the search service through its
 * port (`SearchFederationPort` in src/services/search/federated-search.ts, matched structurally: the mesh
 * does not import services).
 */
import type { IdentifyResult, PeerId } from '@libp2p/interface'
import type { Logger } from 'pino'
import type { PeerSearchRequest, PeerSearchResponse, TermFilterMessage } from '../wire/federation.js'
import { BloomExchange, type LocalTermFilter } from './bloom-exchange.js'
import { CAPABILITIES } from './compatibility.js'
import type { MeshLibp2p } from './libp2p-node.js'
import { listenTo } from './listen.js'
import { registryKeyOf, type PeerBook } from './peers.js'
import { SEARCH_PROTOCOL, SearchProtocol, type PeerSearchHandler } from './search-protocol.js'

/** What the node gives the mesh for federated search. */
export interface FederationHooks {
  /** Searches this node's own index for a peer (never fans out). */
  answer: PeerSearchHandler
  /** This node's term filter, pushed to peers whenever it changes. */
  filter: LocalTermFilter
}

export interface MeshFederationOptions extends FederationHooks {
  libp2p: MeshLibp2p
  peers: PeerBook
  logger: Logger
}

/** A peer that can be asked, as the search service's port describes it. */
export interface SearchPeer {
  peerId: string
  registryId: string | null
  name: string | null
  latencyMs: number | null
  filter: TermFilterMessage | null
}

export class MeshFederation {
  readonly protocol: SearchProtocol
  readonly bloom: BloomExchange
  /** Peers whose identify listed the search protocol. */
  private readonly searchable = new Map<string, PeerId>()
  private readonly detach: Array<() => void> = []

  constructor(private readonly o: MeshFederationOptions) {
    this.protocol = new SearchProtocol({ libp2p: o.libp2p, logger: o.logger, answer: o.answer })
    this.bloom = new BloomExchange({ libp2p: o.libp2p, logger: o.logger, local: o.filter })
  }

  async start(): Promise<void> {
    const { libp2p } = this.o
    this.detach.push(
      listenTo(libp2p, 'peer:identify', evt => this.identified(evt.detail)),
      listenTo(libp2p, 'peer:disconnect', evt => {
        this.searchable.delete(evt.detail.toString())
      })
    )
    await this.protocol.start()
    await this.bloom.start()
  }

  async stop(): Promise<void> {
    for (const off of this.detach.splice(0)) off()
    await this.bloom.stop()
    await this.protocol.stop()
    this.searchable.clear()
  }

  /** Connected peers that speak the search protocol, with their filters. */
  peers(): SearchPeer[] {
    const out: SearchPeer[] = []
    for (const [key, peerId] of this.searchable) {
      if (!this.o.libp2p.getConnections(peerId).some(c => c.status === 'open')) continue
      // Identify lists the handler; the hello says whether the peer answers searches with it.
      if (!this.o.peers.offers(key, CAPABILITIES.federatedSearch)) continue
      const view = this.o.peers.get(key)
      out.push({
        peerId: key,
        registryId: registryKeyOf(peerId)?.registryId ?? null,
        name: view?.name ?? null,
        latencyMs: view?.latency_ms ?? null,
        filter: this.bloom.filterOf(key)
      })
    }
    return out
  }

  query(peerId: string, request: PeerSearchRequest, signal: AbortSignal): Promise<PeerSearchResponse> {
    return this.protocol.query(peerId, request, signal)
  }

  private identified(result: IdentifyResult): void {
    if (result.protocols.includes(SEARCH_PROTOCOL)) this.searchable.set(result.peerId.toString(), result.peerId)
  }
}
