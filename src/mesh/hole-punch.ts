/**
 * Hole punching between two nodes that reach each other only through a relay: both open a TCP
 * connection to the other at the same moment, each from a port it told the other beforehand, so each
 * side's outbound SYN opens its own stateful filter (or port-preserving NAT) for the other's.
 *
 * libp2p's DCUtR cannot do this on Node: @libp2p/tcp dials from a kernel-chosen port while peers dial
 * the listen port, Node has no SO_REUSEPORT to dial from the listen port, and DCUtR tries public
 * addresses only (docs/decisions.md, "Hole punching of our own"). Here each side binds a fresh port of
 * its own choosing for the punch, so nothing needs to share the listener's.
 *
 * /zns/punch/1.0.0, over the relayed connection, JSON frames (length-prefixed):
 *   initiator → responder  { hosts, port }      its addresses and the port it will dial from
 *   responder → initiator  { hosts, port }      the same for the responder
 *   initiator → responder  { go: true }         sent half a round trip before the initiator dials
 * The side the relayed connection reached (inbound) initiates, as in DCUtR. The initiator upgrades its
 * socket as the outbound side (noise initiator, verifying the peer's key); the responder as inbound.
 * A successful punch closes the relayed connection.
 */
import { connect, createServer, type Socket } from 'node:net'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Connection, Logger as Libp2pLogger, MultiaddrConnection, PeerId, Stream } from '@libp2p/interface'
import { isPrivate, lpStream } from '@libp2p/utils'
import { type Multiaddr, multiaddr } from '@multiformats/multiaddr'
import type { Logger } from 'pino'
import { encodeJson, parseJson } from './frames.js'
import type { MeshLibp2p } from './libp2p-node.js'
import { isRelayed } from './reachability.js'

export const PUNCH_PROTOCOL = '/zns/punch/1.0.0'

const MAX_FRAME_BYTES = 2048
const MAX_HOSTS = 8
const EXCHANGE_TIMEOUT_MS = 10_000
/** A punch whose SYNs were dropped until the other side's left still connects on a retransmission. */
const CONNECT_TIMEOUT_MS = 8_000
/** A SYN that reached a side with no filter before its own left is refused (RST): try again shortly. */
const REFUSED_RETRIES = 6
const REFUSED_PAUSE_MS = 250
/** Identify has to run on the relayed connection first, to know the peer speaks the protocol. */
const START_DELAY_MS = 1_500
const ATTEMPTS = 3
const DIRECT_DIAL_TIMEOUT_MS = 4_000
/** A responder punches for one peer at most this often (each punch connects to an address the peer names). */
const RESPOND_WINDOW_MS = 5_000
const RETRY_DELAY_MS = 10_000

export interface HolePunchStats {
  attempted: number
  succeeded: number
  failed: number
  /** Why the latest failed punch failed, for an operator wondering why the relay stays. */
  last_failure: string | null
}

export interface HolePunchOptions {
  libp2p: MeshLibp2p
  logger: Logger
  enabled: boolean
  /** This node's hosts as peers saw them (reachability.ts): behind a NAT, the public one. */
  observedHosts: () => string[]
}

interface Offer {
  hosts: string[]
  port: number
}

type SocketToConnection = (init: {
  socket: Socket
  direction: 'inbound' | 'outbound'
  remoteAddr: Multiaddr
  log: Libp2pLogger
}) => MultiaddrConnection

interface UpgraderView {
  upgradeOutbound(maConn: MultiaddrConnection, opts: { signal: AbortSignal }): Promise<Connection>
  upgradeInbound(maConn: MultiaddrConnection, opts: { signal: AbortSignal }): Promise<void>
}

interface ComponentsView {
  upgrader?: UpgraderView
  logger?: { forComponent(name: string): Libp2pLogger }
}

/**
 * @libp2p/tcp's socket-to-connection adapter (not in its exports map): the same framing, back-pressure
 * and close handling as every TCP connection libp2p makes, rather than a copy of it.
 */
async function loadSocketAdapter(): Promise<SocketToConnection> {
  const entry = createRequire(import.meta.url).resolve('@libp2p/tcp')
  const module = (await import(pathToFileURL(join(dirname(entry), 'socket-to-conn.js')).href)) as {
    toMultiaddrConnection?: SocketToConnection
  }
  if (typeof module.toMultiaddrConnection !== 'function') throw new Error('@libp2p/tcp has no toMultiaddrConnection')
  return module.toMultiaddrConnection
}

/** A port free now on every address; the punch binds it a moment later. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject()))
    })
  })
}

const delay = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/** One connect from `localPort`, resolving with the open socket. */
function connectOnce(host: string, port: number, localPort: number, signal: AbortSignal): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, localPort, noDelay: true })
    const fail = (err: Error): void => {
      socket.destroy()
      reject(err)
    }
    const onAbort = (): void => fail(new Error('punch timed out'))
    signal.addEventListener('abort', onAbort, { once: true })
    socket.once('error', fail)
    socket.once('connect', () => {
      signal.removeEventListener('abort', onAbort)
      socket.removeListener('error', fail)
      resolve(socket)
    })
  })
}

/** Connects from `localPort`, again while the other side answers with a reset (its SYN not yet sent). */
async function punch(host: string, port: number, localPort: number): Promise<Socket> {
  const signal = AbortSignal.timeout(CONNECT_TIMEOUT_MS)
  for (let attempt = 0; ; attempt++) {
    try {
      return await connectOnce(host, port, localPort, signal)
    } catch (err) {
      const code = (err as { code?: string }).code
      if (code !== 'ECONNREFUSED' || attempt >= REFUSED_RETRIES || signal.aborted) throw err
      await delay(REFUSED_PAUSE_MS)
    }
  }
}

function parseOffer(bytes: Uint8Array): Offer {
  const value = parseJson(bytes, 'punch offer') as { hosts?: unknown; port?: unknown }
  const hosts = Array.isArray(value.hosts)
    ? value.hosts.filter((h): h is string => typeof h === 'string' && h.length <= 64).slice(0, MAX_HOSTS)
    : []
  const port = value.port
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) throw new Error('bad punch port')
  return { hosts, port }
}

export class HolePunch {
  readonly stats: HolePunchStats = { attempted: 0, succeeded: 0, failed: 0, last_failure: null }
  private adapter: SocketToConnection | null = null
  private readonly pending = new Set<string>()
  /** When each peer last asked this node to punch: a peer names the address we connect to, so at most one a window. */
  private readonly answered = new Map<string, number>()
  private readonly timers = new Set<NodeJS.Timeout>()
  private running = false

  constructor(private readonly o: HolePunchOptions) {}

  /** Registers the handler and the relayed-connection listener; called before libp2p starts. */
  async register(): Promise<void> {
    if (!this.o.enabled) return
    try {
      this.adapter = await loadSocketAdapter()
    } catch (err) {
      this.o.logger.warn({ err: (err as Error).message }, 'hole punching unavailable')
      return
    }
    this.running = true
    await this.o.libp2p.handle(PUNCH_PROTOCOL, (stream, connection) => this.respond(stream, connection), {
      maxInboundStreams: 2,
      runOnLimitedConnection: true
    })
    this.o.libp2p.addEventListener('connection:open', this.onOpen)
  }

  async stop(): Promise<void> {
    this.running = false
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.clear()
    this.o.libp2p.removeEventListener('connection:open', this.onOpen)
    await this.o.libp2p.unhandle(PUNCH_PROTOCOL).catch(() => {})
  }

  private readonly onOpen = (event: CustomEvent<Connection>): void => {
    const connection = event.detail
    if (!isRelayed(connection) || connection.direction !== 'inbound') return
    this.later(connection.remotePeer, 0)
  }

  private later(peer: PeerId, attempt: number): void {
    const key = peer.toString()
    if (!this.running || this.pending.has(key) || attempt >= ATTEMPTS) return
    this.pending.add(key)
    const timer = setTimeout(
      () => {
        this.timers.delete(timer)
        void this.initiate(peer).then(done => {
          this.pending.delete(key)
          if (!done) this.later(peer, attempt + 1)
        })
      },
      attempt === 0 ? START_DELAY_MS : RETRY_DELAY_MS
    )
    timer.unref()
    this.timers.add(timer)
  }

  private connections(peer: PeerId): { relayed?: Connection; direct: boolean; dialledToo: boolean } {
    const open = this.o.libp2p.getConnections(peer).filter(c => c.status === 'open')
    return {
      relayed: open.find(isRelayed),
      direct: open.some(c => !isRelayed(c)),
      dialledToo: open.some(c => isRelayed(c) && c.direction === 'outbound')
    }
  }

  /** Once a direct connection exists, the relayed ones only hold slots on relays. */
  private async closeRelayed(peer: PeerId): Promise<void> {
    const relayed = this.o.libp2p.getConnections(peer).filter(isRelayed)
    await Promise.all(relayed.map(c => c.close().catch(() => {})))
  }

  /**
   * This node's hosts the peer can try: those peers saw it connect from first (a NAT's public
   * address), then its own, public before private before loopback; never relayed addresses.
   */
  private hosts(): string[] {
    const rank = new Map<string, number>()
    for (const host of this.o.observedHosts().reverse()) rank.set(host, host.startsWith('127.') ? 2 : 0)
    for (const ma of this.o.libp2p.getMultiaddrs()) {
      const text = ma.toString()
      const [, family, host] = text.split('/')
      if (family !== 'ip4' || host === undefined || text.includes('/p2p-circuit') || rank.has(host)) continue
      rank.set(host, host.startsWith('127.') ? 2 : isPrivate(ma) === true ? 1 : 0)
    }
    return [...rank].sort((a, b) => a[1] - b[1]).map(([host]) => host)
  }

  /** true when there is nothing left to do: punched, already direct, gone, or the peer cannot punch. */
  private async initiate(peer: PeerId): Promise<boolean> {
    const { relayed, direct, dialledToo } = this.connections(peer)
    if (!this.running || relayed === undefined) return true
    // Both dialled through the relay: each side was reached, and the lower peer ID alone punches, so
    // two punches do not cross.
    if (dialledToo && !direct && this.o.libp2p.peerId.toString() > peer.toString()) return true
    if (direct) {
      // A direct dial got through after all (the peer is reachable, or libp2p upgraded a limited
      // connection itself): the relayed one only holds a slot on the relay.
      await this.closeRelayed(peer)
      return true
    }
    const protocols = await this.o.libp2p.peerStore
      .get(peer)
      .then(p => p.protocols)
      .catch(() => [] as string[])
    if (!protocols.includes(PUNCH_PROTOCOL)) return protocols.length > 0
    if (await this.dialDirect(peer)) {
      await this.closeRelayed(peer)
      return true
    }
    // The relayed connection may have been replaced during the dial (the peer dialled through the relay too).
    const through = this.connections(peer).relayed
    if (through === undefined) return false
    this.stats.attempted++
    const signal = AbortSignal.timeout(EXCHANGE_TIMEOUT_MS)
    let stream: Stream | undefined
    try {
      const localPort = await freePort()
      stream = await through.newStream(PUNCH_PROTOCOL, { signal, runOnLimitedConnection: true })
      const lp = lpStream(stream, { maxDataLength: MAX_FRAME_BYTES })
      const sent = performance.now()
      await lp.write(encodeJson({ hosts: this.hosts(), port: localPort }), { signal })
      const theirs = parseOffer((await lp.read({ signal })).subarray())
      const roundTrip = performance.now() - sent
      const host = theirs.hosts[0]
      if (host === undefined) throw new Error('the peer offered no address')
      await lp.write(encodeJson({ go: true }), { signal })
      // The go frame reaches the responder half a round trip from now, and it dials at once.
      await delay(roundTrip / 2)
      const socket = await punch(host, theirs.port, localPort)
      await stream.close().catch(() => {})
      await this.upgrade(socket, 'outbound', peer)
      this.stats.succeeded++
      this.o.logger.info(
        { peer: peer.toString(), address: `${host}:${theirs.port}` },
        'hole punched: direct connection'
      )
      await this.closeRelayed(peer)
      return true
    } catch (err) {
      stream?.abort(err as Error)
      // The peer's own punch (or a dial) won meanwhile and closed the relayed connection under ours.
      if (this.connections(peer).direct) {
        await this.closeRelayed(peer)
        return true
      }
      this.stats.failed++
      this.stats.last_failure = (err as Error).message
      this.o.logger.debug({ peer: peer.toString(), err: (err as Error).message }, 'hole punch failed')
      return false
    }
  }

  /**
   * A peer that dialled through the relay may itself be reachable (it did not know we are not): a
   * plain dial to its addresses settles that before a punch, which needs both sides' SYNs in flight
   * at once and so fails where the other side answers an early one with a reset.
   */
  private async dialDirect(peer: PeerId): Promise<boolean> {
    const addresses = await this.o.libp2p.peerStore
      .get(peer)
      .then(p =>
        p.addresses
          .map(a => a.multiaddr)
          .filter(ma => !ma.toString().includes('/p2p-circuit'))
          .map(ma => ma.encapsulate(`/p2p/${peer.toString()}`))
      )
      .catch(() => [] as Multiaddr[])
    if (addresses.length === 0) return false
    try {
      const connection = await this.o.libp2p.dial(addresses, { signal: AbortSignal.timeout(DIRECT_DIAL_TIMEOUT_MS) })
      return !isRelayed(connection)
    } catch {
      return false
    }
  }

  private async respond(stream: Stream, connection: Connection): Promise<void> {
    const signal = AbortSignal.timeout(EXCHANGE_TIMEOUT_MS)
    try {
      if (!isRelayed(connection) || this.adapter === null) throw new Error('punch requested off a relayed connection')
      const peer = connection.remotePeer.toString()
      const now = Date.now()
      if (now - (this.answered.get(peer) ?? 0) < RESPOND_WINDOW_MS) throw new Error('punch requested too soon again')
      this.answered.set(peer, now)
      for (const [id, at] of this.answered) if (now - at >= RESPOND_WINDOW_MS) this.answered.delete(id)
      const lp = lpStream(stream, { maxDataLength: MAX_FRAME_BYTES })
      const theirs = parseOffer((await lp.read({ signal })).subarray())
      const host = theirs.hosts[0]
      if (host === undefined) throw new Error('the peer offered no address')
      const localPort = await freePort()
      await lp.write(encodeJson({ hosts: this.hosts(), port: localPort }), { signal })
      const go = parseJson((await lp.read({ signal })).subarray(), 'punch go') as { go?: unknown }
      if (go.go !== true) throw new Error('no go frame')
      const socket = await punch(host, theirs.port, localPort)
      await stream.close().catch(() => {})
      await this.upgrade(socket, 'inbound', connection.remotePeer)
    } catch (err) {
      stream.abort(err as Error)
    }
  }

  private async upgrade(socket: Socket, direction: 'inbound' | 'outbound', peer: PeerId): Promise<void> {
    const components = (this.o.libp2p as unknown as { components?: ComponentsView }).components
    const upgrader = components?.upgrader
    if (upgrader === undefined || components?.logger === undefined || this.adapter === null) {
      socket.destroy()
      throw new Error('libp2p exposes no upgrader')
    }
    const host = socket.remoteAddress ?? ''
    const family = host.includes(':') ? 'ip6' : 'ip4'
    // The outbound side names the peer, so noise refuses any other key at that address.
    const remoteAddr = multiaddr(
      `/${family}/${host}/tcp/${socket.remotePort}${direction === 'outbound' ? `/p2p/${peer.toString()}` : ''}`
    )
    const maConn = this.adapter({
      socket,
      direction,
      remoteAddr,
      log: components.logger.forComponent('registry:hole-punch')
    })
    const signal = AbortSignal.timeout(EXCHANGE_TIMEOUT_MS)
    try {
      if (direction === 'outbound') await upgrader.upgradeOutbound(maConn, { signal })
      else await upgrader.upgradeInbound(maConn, { signal })
    } catch (err) {
      maConn.abort(err as Error)
      throw err
    }
  }
}
