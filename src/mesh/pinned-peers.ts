/**
 * The peers a node keeps connected whatever discovery finds: its bootstrap list and the peers an
 * operator added (a /dnsaddr/ entry resolved anew at each round). A round dials every address whose
 * peer is not connected. After a round in which a dial failed, the next comes sooner than the
 * interval (1 s, then twice as long each time, up to the interval): a peer that was busy or
 * restarting at the first dial (a noise handshake past the 3 s an address has, on a loaded machine)
 * is connected seconds later, not a whole interval later.
 */
import type { Connection } from '@libp2p/interface'
import type { DNS } from '@multiformats/dns'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import type { Logger } from 'pino'
import { expandDnsaddr, isDnsaddr } from './dnsaddr.js'
import type { MeshLibp2p } from './libp2p-node.js'

/** Operator-added addresses kept for re-dialling (bootstrap addresses come on top). */
const MAX_ADDED = 100

/** The first early round after a failed dial; each further one waits twice as long, up to the interval. */
const FIRST_RETRY_MS = 1_000

/** The PeerId an address ends in (/p2p/…), if any. */
export const peerOf = (ma: Multiaddr): string | undefined => ma.getComponents().findLast(c => c.name === 'p2p')?.value

export interface PinnedPeersInit {
  libp2p: Pick<MeshLibp2p, 'dial' | 'getConnections' | 'logger'>
  dns: DNS
  logger: Logger
  bootstrap: readonly string[]
  /** Whether a peer is not to be dialled now (banned, or it refused this node lately). */
  skipped(peerId: string): boolean
  /** How often the addresses are dialled while their peers are disconnected. */
  intervalMs: number
  /** Time limit of one dial. */
  dialTimeoutMs: number
}

export class PinnedPeers {
  private readonly addresses = new Set<string>()
  /** The bootstrap list in force (a configuration reload replaces it). */
  private bootstrap: readonly string[]
  /** The peer each address without /p2p/ turned out to be. */
  private readonly learned = new Map<string, string>()
  /** The last outcome of each /dnsaddr/ entry's resolution: logged when it changes, not every round. */
  private readonly dnsaddrOutcome = new Map<string, string>()
  private roundTimer: NodeJS.Timeout | null = null
  private retryTimer: NodeJS.Timeout | null = null
  /** Rounds in a row with a failed dial (0: the last round's dials all succeeded). */
  private failedRounds = 0
  private running = false

  constructor(private readonly o: PinnedPeersInit) {
    this.bootstrap = o.bootstrap
    for (const address of o.bootstrap) this.addresses.add(address)
  }

  /** Dials now, in the background (a node starts even when its bootstrap peers are down), then every interval. */
  start(): void {
    this.running = true
    void this.round()
    this.roundTimer = setInterval(() => void this.round(), this.o.intervalMs).unref()
  }

  stop(): void {
    this.running = false
    if (this.roundTimer) clearInterval(this.roundTimer)
    if (this.retryTimer) clearTimeout(this.retryTimer)
    this.roundTimer = this.retryTimer = null
  }

  /** Dials an address, or every address a /dnsaddr/ list names (the first connection that opens, or the first error). */
  async connect(ma: Multiaddr): Promise<Connection> {
    if (!isDnsaddr(ma)) return this.dial(ma)
    const addresses = await this.resolve(ma)
    if (addresses.length === 0) throw new Error('its DNS records name no address')
    return Promise.any(addresses.map(address => this.dial(address))).catch((err: AggregateError) => {
      throw err.errors[0] as Error
    })
  }

  /** Keeps an address an operator added re-dialled, `connection` the one it opened (ignored past the limit). */
  add(ma: Multiaddr, connection: Connection): void {
    if (this.addresses.size >= this.bootstrap.length + MAX_ADDED) return
    this.addresses.add(ma.toString())
    // A /dnsaddr/ list stands for several peers, resolved anew at each round: it is not one peer's address.
    if (!isDnsaddr(ma)) this.learned.set(ma.toString(), connection.remotePeer.toString())
  }

  /** Forgets the addresses that lead to `peerId`; those it forgot. */
  remove(peerId: string): string[] {
    const dropped: string[] = []
    for (const address of this.addresses) {
      if ((peerOf(multiaddr(address)) ?? this.learned.get(address)) !== peerId) continue
      this.addresses.delete(address)
      this.learned.delete(address)
      dropped.push(address)
    }
    return dropped
  }

  /**
   * The bootstrap list of a reloaded configuration: addresses new to it are dialled now and then
   * re-dialled like the others; addresses it no longer names are no longer re-dialled (a connection
   * to them stays until either side drops it). Returns the addresses added.
   */
  useBootstrap(addresses: readonly string[]): string[] {
    const before = new Set(this.bootstrap)
    const added = addresses.filter(address => !before.has(address))
    const kept = new Set(addresses)
    for (const address of before)
      if (!kept.has(address)) {
        this.addresses.delete(address)
        this.dnsaddrOutcome.delete(address)
      }
    for (const address of added) this.addresses.add(address)
    this.bootstrap = [...addresses]
    if (added.length > 0) void this.round()
    return added
  }

  /** The addresses a /dnsaddr/ entry names now. */
  private resolve(ma: Multiaddr): Promise<Multiaddr[]> {
    const log = this.o.libp2p.logger.forComponent('registry:dnsaddr')
    return expandDnsaddr(ma, this.o.dns, log, AbortSignal.timeout(this.o.dialTimeoutMs))
  }

  private dial(ma: Multiaddr): Promise<Connection> {
    return this.o.libp2p.dial(ma, { signal: AbortSignal.timeout(this.o.dialTimeoutMs) })
  }

  /** Dials each address (/dnsaddr/ entries resolved anew) whose peer is not connected. */
  private async round(): Promise<void> {
    const targets = await this.dialTargets()
    const connected = new Set(this.o.libp2p.getConnections().map(c => c.remotePeer.toString()))
    let failed = false
    await Promise.allSettled(
      targets.map(async address => {
        const ma = multiaddr(address)
        const peerId = peerOf(ma) ?? this.learned.get(address)
        if (peerId && (connected.has(peerId) || this.o.skipped(peerId))) return
        try {
          const connection = await this.dial(ma)
          this.learned.set(address, connection.remotePeer.toString())
        } catch (err) {
          failed = true
          this.o.logger.debug({ err, address }, 'bootstrap dial failed')
        }
      })
    )
    this.failedRounds = failed ? this.failedRounds + 1 : 0
    const retryMs = FIRST_RETRY_MS * 2 ** (this.failedRounds - 1)
    if (!failed || !this.running || retryMs >= this.o.intervalMs) return
    if (this.retryTimer) clearTimeout(this.retryTimer)
    this.retryTimer = setTimeout(() => void this.round(), retryMs).unref()
  }

  /** The addresses, each /dnsaddr/ entry replaced by the addresses it names now. */
  private async dialTargets(): Promise<string[]> {
    const out = new Set<string>()
    await Promise.all(
      [...this.addresses].map(async address => {
        const ma = multiaddr(address)
        if (!isDnsaddr(ma)) {
          out.add(address)
          return
        }
        try {
          const list = (await this.resolve(ma)).map(one => one.toString())
          for (const one of list) out.add(one)
          if (this.dnsaddrOutcome.get(address) !== list.join(' '))
            this.o.logger.info({ address, resolved: list }, 'dnsaddr bootstrap entry resolved')
          this.dnsaddrOutcome.set(address, list.join(' '))
        } catch (err) {
          if (this.dnsaddrOutcome.get(address) !== 'error')
            this.o.logger.warn({ err, address }, 'dnsaddr bootstrap entry did not resolve')
          this.dnsaddrOutcome.set(address, 'error')
        }
      })
    )
    return [...out]
  }
}
