/**
 * A libp2p transport between the nodes of one simulation, over the simulated network
 * (network-model.ts): node i listens on `/memory/sim-<i>`, and every chunk a connection sends
 * reaches the other end when the network model says. Shaped on @libp2p/memory; what runs above
 * it (the upgrader, noise, yamux, identify, gossipsub, kad-dht, the mesh) is the real node's.
 */
import { ConnectionFailedError, serviceCapabilities, transportSymbol } from '@libp2p/interface'
import type {
  AbortOptions,
  ComponentLogger,
  Connection,
  CreateListenerOptions,
  DialTransportOptions,
  Listener,
  ListenerEvents,
  MessageStreamDirection,
  MultiaddrConnection,
  PeerId,
  Transport
} from '@libp2p/interface'
import { AbstractMultiaddrConnection, type SendResult } from '@libp2p/utils'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { TypedEventEmitter } from 'main-event'
import type { Uint8ArrayList } from 'uint8arraylist'
import { type Pipe, Pipe as NetworkPipe, type SimNetwork } from './network-model.js'

const ADDRESS_PREFIX = '/memory/sim-'

export const simAddress = (index: number): string => `${ADDRESS_PREFIX}${index}`

function indexOf(ma: Multiaddr): number | null {
  const text = ma.toString().split('/p2p/')[0] ?? ''
  if (!text.startsWith(ADDRESS_PREFIX)) return null
  const index = Number(text.slice(ADDRESS_PREFIX.length))
  return Number.isInteger(index) ? index : null
}

/** The listeners of one simulation, by node index. */
export class SimSwitchboard {
  private readonly listeners = new Map<number, SimListener>()
  /** Open connections, both ends, for counts and for cutting a crashed node's. */
  readonly connections = new Set<SimConnection>()

  constructor(readonly network: SimNetwork) {}

  register(index: number, listener: SimListener): void {
    if (this.listeners.has(index)) throw new Error(`simulated address ${simAddress(index)} is in use`)
    this.listeners.set(index, listener)
  }

  unregister(index: number, listener: SimListener): void {
    if (this.listeners.get(index) === listener) this.listeners.delete(index)
  }

  listener(index: number): SimListener | undefined {
    return this.listeners.get(index)
  }

  /** Ends every connection of node `index` at once, without a goodbye (a crash). */
  cut(index: number): void {
    for (const connection of [...this.connections])
      if (connection.local === index || connection.remote === index) connection.cut()
  }
}

export interface SimTransportInit {
  switchboard: SimSwitchboard
  /** This node's index. */
  index: number
}

interface SimComponents {
  peerId: PeerId
  logger: ComponentLogger
}

export function simTransport(init: SimTransportInit): (components: SimComponents) => Transport {
  return components => new SimTransport(components, init)
}

class SimTransport implements Transport {
  readonly [transportSymbol] = true
  readonly [Symbol.toStringTag] = 'simulated-transport'
  readonly [serviceCapabilities]: string[] = ['@libp2p/transport']

  constructor(
    private readonly components: SimComponents,
    private readonly init: SimTransportInit
  ) {}

  async dial(ma: Multiaddr, options: DialTransportOptions): Promise<Connection> {
    options.signal.throwIfAborted()
    const to = indexOf(ma)
    const { switchboard, index } = this.init
    const listener = to === null ? undefined : switchboard.listener(to)
    if (to === null || !listener) throw new ConnectionFailedError(`no simulated node listens at ${ma.toString()}`)
    const network = switchboard.network
    // A connection takes a round trip to open (the SYN and its answer); across a partition it never opens.
    await new Promise<void>((resolve, reject) => {
      const abort = (): void => reject(options.signal.reason ?? new Error('dial aborted'))
      options.signal.addEventListener('abort', abort, { once: true })
      const open = (): void => {
        options.signal.removeEventListener('abort', abort)
        resolve()
      }
      if (!network.linked(index, to)) return
      network.clock.schedule(2 * network.latency(index, to), () => {
        if (network.linked(index, to)) open()
      })
    })
    const log = this.components.logger.forComponent('simulated-transport')
    const outward = new NetworkPipe(network, index, to)
    const inward = new NetworkPipe(network, to, index)
    const dialer = new SimConnection({
      switchboard,
      local: index,
      remote: to,
      sendPipe: outward,
      remoteAddr: multiaddr(`${simAddress(to)}/p2p/${listener.peerId.toString()}`),
      direction: 'outbound',
      log: log.newScope('outbound')
    })
    const answerer = new SimConnection({
      switchboard,
      local: to,
      remote: index,
      sendPipe: inward,
      remoteAddr: multiaddr(simAddress(index)),
      direction: 'inbound',
      log: log.newScope('inbound')
    })
    dialer.peer = answerer
    answerer.peer = dialer
    listener.accept(answerer)
    try {
      return await options.upgrader.upgradeOutbound(dialer, options)
    } catch (err) {
      dialer.abort(err as Error)
      throw err
    }
  }

  createListener(options: CreateListenerOptions): Listener {
    return new SimListener(this.components, this.init, options)
  }

  listenFilter(multiaddrs: Multiaddr[]): Multiaddr[] {
    return multiaddrs.filter(ma => indexOf(ma) !== null)
  }

  dialFilter(multiaddrs: Multiaddr[]): Multiaddr[] {
    return this.listenFilter(multiaddrs)
  }
}

export class SimListener extends TypedEventEmitter<ListenerEvents> implements Listener {
  private address: Multiaddr | null = null
  private readonly shutdown = new AbortController()

  constructor(
    private readonly components: SimComponents,
    private readonly init: SimTransportInit,
    private readonly options: CreateListenerOptions
  ) {
    super()
  }

  get peerId(): PeerId {
    return this.components.peerId
  }

  async listen(ma: Multiaddr): Promise<void> {
    if (indexOf(ma) !== this.init.index)
      throw new Error(`node ${this.init.index} listens on ${simAddress(this.init.index)}, not ${ma.toString()}`)
    this.init.switchboard.register(this.init.index, this)
    this.address = multiaddr(simAddress(this.init.index))
    queueMicrotask(() => this.safeDispatchEvent('listening'))
  }

  accept(connection: MultiaddrConnection): void {
    this.options.upgrader
      .upgradeInbound(connection, { signal: this.shutdown.signal })
      .catch((err: unknown) => connection.abort(err as Error))
  }

  getAddrs(): Multiaddr[] {
    return this.address ? [this.address] : []
  }

  updateAnnounceAddrs(): void {}

  async close(): Promise<void> {
    this.init.switchboard.unregister(this.init.index, this)
    this.shutdown.abort()
    queueMicrotask(() => this.safeDispatchEvent('close'))
  }
}

interface SimConnectionInit {
  switchboard: SimSwitchboard
  local: number
  remote: number
  sendPipe: Pipe
  remoteAddr: Multiaddr
  direction: MessageStreamDirection
  log: ReturnType<ComponentLogger['forComponent']>
}

/** One end of a simulated connection: what it sends arrives at `peer` through the network. */
export class SimConnection extends AbstractMultiaddrConnection {
  peer: SimConnection | null = null
  readonly local: number
  readonly remote: number
  private readonly pipe: Pipe
  private readonly switchboard: SimSwitchboard

  constructor(init: SimConnectionInit) {
    super({ remoteAddr: init.remoteAddr, direction: init.direction, log: init.log })
    this.local = init.local
    this.remote = init.remote
    this.pipe = init.sendPipe
    this.switchboard = init.switchboard
    this.switchboard.connections.add(this)
  }

  sendData(data: Uint8ArrayList): SendResult {
    const bytes = data.byteLength
    // The chunk is copied: the sender may reuse its buffers before it arrives.
    const chunk = data.subarray()
    this.pipe.send(bytes, () => this.peer?.onData(chunk))
    return { sentBytes: bytes, canSendMore: true }
  }

  sendReset(): void {
    this.pipe.send(1, () => this.peer?.abort(new ConnectionFailedError('the remote end reset the connection')))
    this.finish()
  }

  async sendClose(options?: AbortOptions): Promise<void> {
    this.pipe.send(1, () => this.peer?.onTransportClosed())
    this.finish()
    options?.signal?.throwIfAborted()
  }

  sendPause(): void {}

  sendResume(): void {}

  /** Ends both ends at once, nothing sent (the node at one end crashed). */
  cut(): void {
    this.pipe.close()
    this.finish()
    this.abort(new ConnectionFailedError('simulated crash'))
  }

  private finish(): void {
    this.switchboard.connections.delete(this)
  }
}
