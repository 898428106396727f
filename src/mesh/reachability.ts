/**
 * Whether peers can dial this node: public, private or unknown. A node asks a few directly
 * connected peers to open a new connection back to one of its own addresses (/zns/reach/1.0.0) and
 * answers the same request from them. libp2p's AutoNAT does this for public addresses, but it never
 * tests private ranges (10/8, 192.168/16 …) and wants eight failures from distinct /16s before it
 * calls an address undialable, so on a LAN, a testnet or a small mesh it never answers "private".
 * An address AutoNAT did confirm still counts as public.
 *
 * A node that learns it is private (and p2p.relay_client is auto) starts listening on
 * /p2p-circuit: circuit-relay-v2's transport then reserves a slot on a connected relay and
 * announces the relayed address.
 */
import { isIP } from 'node:net'
import type { Connection, Stream } from '@libp2p/interface'
import { isPrivate, lpStream } from '@libp2p/utils'
import { type Multiaddr, multiaddr } from '@multiformats/multiaddr'
import type { Logger } from 'pino'
import { encodeJson, parseJson } from './frames.js'
import type { MeshLibp2p } from './libp2p-node.js'

export const REACH_PROTOCOL = '/zns/reach/1.0.0'
export type Reachability = 'public' | 'private' | 'unknown'
export type RelayClientMode = 'auto' | 'always' | 'off'

const MAX_FRAME_BYTES = 4096
const MAX_OBSERVED = 4
/** Peers asked per round; a private verdict needs this many failures (or every direct peer's). */
const PEERS_PER_ROUND = 3
const DIAL_BACK_TIMEOUT_MS = 5_000
const STREAM_TIMEOUT_MS = DIAL_BACK_TIMEOUT_MS + 3_000

export interface ReachabilityOptions {
  libp2p: MeshLibp2p
  logger: Logger
  /** p2p.reachability_check: ask and answer dial-backs. */
  enabled: boolean
  relayClient: RelayClientMode
  /** Pause between rounds while the answer is unknown, and between re-checks once known. */
  intervalMs?: number
  recheckIntervalMs?: number
}

export interface ConnectionCounts {
  direct: number
  relayed: number
}

/** A relayed connection runs over a relay's stream: its address has /p2p-circuit, and usually limits. */
export function isRelayed(connection: Connection): boolean {
  return connection.limits != null || connection.remoteAddr.toString().includes('/p2p-circuit')
}

function hostOf(address: string): string | undefined {
  const parts = address.split('/')
  return parts[1] === 'ip4' || parts[1] === 'ip6' ? parts[2] : undefined
}

export class ReachabilityCheck {
  private verdict: Reachability = 'unknown'
  private timer: NodeJS.Timeout | null = null
  private running = false
  private relayListening = false
  private readonly log: Logger
  /** This node's hosts as the peers that answered saw them: behind a NAT, its public address. */
  private readonly observed = new Set<string>()

  constructor(private readonly o: ReachabilityOptions) {
    this.log = o.logger
  }

  /** The latest answer; a public address AutoNAT confirmed makes it public whatever the dial-backs said. */
  get state(): Reachability {
    return this.autonatConfirmed() ? 'public' : this.verdict
  }

  /**
   * libp2p marks private-range and announced addresses verified without testing them (AutoNAT
   * skips them), so only a public transport, observed or mapped address counts.
   */
  private autonatConfirmed(): boolean {
    const manager = (this.o.libp2p as unknown as { components?: { addressManager?: AddressManagerView } }).components
      ?.addressManager
    return (
      manager
        ?.getAddressesWithMetadata()
        .some(
          a =>
            a.verified &&
            a.type !== 'announce' &&
            !a.multiaddr.toString().includes('/p2p-circuit') &&
            isPrivate(a.multiaddr) === false
        ) ?? false
    )
  }

  /** Hosts peers saw this node connect from, most recent last (hole-punch.ts offers them first). */
  observedHosts(): string[] {
    return [...this.observed]
  }

  connectionCounts(): ConnectionCounts {
    let direct = 0
    let relayed = 0
    for (const connection of this.o.libp2p.getConnections()) {
      if (isRelayed(connection)) relayed++
      else direct++
    }
    return { direct, relayed }
  }

  /** Registers the handler; called before libp2p starts. Rounds begin with start(). */
  async register(): Promise<void> {
    if (!this.o.enabled) return
    await this.o.libp2p.handle(REACH_PROTOCOL, (stream, connection) => this.serve(stream, connection), {
      maxInboundStreams: 2
    })
  }

  start(): void {
    this.running = true
    if (this.o.relayClient === 'always') void this.listenOnRelay()
    if (!this.o.enabled) return
    this.schedule(this.o.intervalMs ?? 5_000)
  }

  async stop(): Promise<void> {
    this.running = false
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await this.o.libp2p.unhandle(REACH_PROTOCOL).catch(() => {})
  }

  private schedule(ms: number): void {
    if (!this.running) return
    this.timer = setTimeout(() => {
      void this.round().finally(() =>
        this.schedule(
          this.verdict === 'unknown' ? (this.o.intervalMs ?? 5_000) : (this.o.recheckIntervalMs ?? 10 * 60_000)
        )
      )
    }, ms)
    this.timer.unref()
  }

  /** One round: up to PEERS_PER_ROUND directly connected peers each try to dial this node back. */
  async round(): Promise<Reachability> {
    const addresses = this.o.libp2p
      .getMultiaddrs()
      .map(ma => ma.toString())
      .filter(a => !a.includes('/p2p-circuit') && /\/tcp\/\d+\/p2p\//.test(a) && !a.includes('/ws/'))
    const seen = new Set<string>()
    const peers = this.o.libp2p
      .getConnections()
      .filter(c => !isRelayed(c) && c.status === 'open')
      .filter(c => {
        const id = c.remotePeer.toString()
        if (seen.has(id)) return false
        seen.add(id)
        return true
      })
      .slice(0, PEERS_PER_ROUND)
    if (addresses.length === 0 || peers.length === 0) return this.state
    const answers = await Promise.all(peers.map(c => this.ask(c, addresses)))
    const ok = answers.filter(a => a === true).length
    const failed = answers.filter(a => a === false).length
    const before = this.verdict
    if (ok > 0) this.verdict = 'public'
    else if (failed > 0 && failed === peers.length) this.verdict = 'private'
    if (this.verdict !== before) {
      this.log.info({ reachability: this.verdict, ok, failed }, 'reachability changed')
      if (this.verdict === 'private' && this.o.relayClient === 'auto') void this.listenOnRelay()
    }
    return this.state
  }

  /** true: the peer reached us; false: it tried and failed; null: it could not or would not try. */
  private async ask(connection: Connection, addresses: string[]): Promise<boolean | null> {
    const signal = AbortSignal.timeout(STREAM_TIMEOUT_MS)
    let stream: Stream | undefined
    try {
      stream = await connection.newStream(REACH_PROTOCOL, { signal })
      const lp = lpStream(stream, { maxDataLength: MAX_FRAME_BYTES })
      await lp.write(encodeJson({ addresses }), { signal })
      const reply = parseJson((await lp.read({ signal })).subarray(), 'reach reply') as {
        ok?: unknown
        observed?: unknown
      }
      await stream.close({ signal }).catch(() => {})
      if (typeof reply.observed === 'string' && isIP(reply.observed) !== 0) this.remember(reply.observed)
      return typeof reply.ok === 'boolean' ? reply.ok : null
    } catch (err) {
      stream?.abort(err as Error)
      return null
    }
  }

  /**
   * Dials the asker back on a new connection, only at an address of the host it connects from (so
   * a node cannot be made to dial third parties), and reports whether that worked.
   */
  private async serve(stream: Stream, connection: Connection): Promise<void> {
    const signal = AbortSignal.timeout(STREAM_TIMEOUT_MS)
    try {
      const lp = lpStream(stream, { maxDataLength: MAX_FRAME_BYTES })
      const request = parseJson((await lp.read({ signal })).subarray(), 'reach request') as {
        addresses?: unknown
      }
      const observed = hostOf(connection.remoteAddr.toString())
      const peer = connection.remotePeer.toString()
      const target = (Array.isArray(request.addresses) ? request.addresses : [])
        .filter((a): a is string => typeof a === 'string')
        .find(a => observed !== undefined && hostOf(a) === observed && a.endsWith(`/p2p/${peer}`))
      let ok: boolean | null = null
      if (target !== undefined && !isRelayed(connection)) {
        try {
          const back = await this.o.libp2p.dial(multiaddr(target), {
            force: true,
            signal: AbortSignal.timeout(DIAL_BACK_TIMEOUT_MS)
          })
          ok = true
          await back.close().catch(() => {})
        } catch {
          ok = false
        }
      }
      await lp.write(encodeJson({ ok, observed }), { signal })
      await stream.close({ signal }).catch(() => {})
    } catch (err) {
      stream.abort(err as Error)
    }
  }

  private remember(host: string): void {
    this.observed.delete(host)
    this.observed.add(host)
    if (this.observed.size > MAX_OBSERVED) this.observed.delete(this.observed.values().next().value as string)
  }

  /** Listens on /p2p-circuit once: circuit-relay-v2 reserves a slot on a connected relay. */
  private async listenOnRelay(): Promise<void> {
    if (this.relayListening) return
    this.relayListening = true
    const manager = (this.o.libp2p as unknown as { components?: { transportManager?: TransportManagerView } })
      .components?.transportManager
    try {
      if (!manager) throw new Error('libp2p exposes no transport manager')
      await manager.listen([multiaddr('/p2p-circuit')])
      this.log.info('listening through a relay (reservation requested)')
    } catch (err) {
      this.relayListening = false
      this.log.warn({ err: (err as Error).message }, 'could not listen through a relay')
    }
  }
}

// The parts of libp2p's internal components this file uses; libp2p 3 exposes no public way to add
// a listen address to a running node or to read AutoNAT's verdicts.
interface AddressManagerView {
  getAddressesWithMetadata(): { multiaddr: Multiaddr; verified: boolean; type: string }[]
}
interface TransportManagerView {
  listen(addresses: ReturnType<typeof multiaddr>[]): Promise<void>
}
