/**
 * Peer bookkeeping: who is connected, where they can be dialled, how far away they are and what
 * registry they say they are. On connect (and then every `helloIntervalMs`) both sides exchange a
 * hello over `/zns/hello/1.0.0`; every `pingIntervalMs` each connected peer is pinged, and the
 * connections of a peer that answers no ping are closed.
 *
 * Verification: noise authenticates the peer's key, and with Ed25519 keys the PeerId *is* that key,
 * so the registry ID and public key a peer must present follow from its PeerId. A hello that states
 * them correctly puts the peer in tier `peer-id`; the name and host it states remain claims until the
 * registry-proof tier (the peer's /.well-known/node-registry.json checked against its host) exists.
 *
 * Versions: each hello also lists the protocol versions and capabilities of its sender
 * (compatibility.ts). A peer that lacks a version of hello or sync this node speaks is refused: one
 * warning line names it, its version and what it lacks, and this node hangs up on it (and does not
 * re-dial it for a while). A peer lacking something else stays, and what it lacks is not used with it.
 */
import type { Connection, IdentifyResult, PeerId, Stream } from '@libp2p/interface'
import { lpStream } from '@libp2p/utils'
import type { Multiaddr } from '@multiformats/multiaddr'
import type { Logger } from 'pino'
import type { EventBus } from '../events/bus.js'
import { formatKey, normalizePublicKey } from '../identity/encoding.js'
import { deriveId } from '../identity/ids.js'
import { HELLO_LIMITS, HelloMessage, type PeerView } from '../wire/network.js'
import { type Assessment, assess, identifyMismatch, type MeshOffer, offers } from './compatibility.js'
import { decodeJson } from './frames.js'
import type { MeshLibp2p } from './libp2p-node.js'
import { listenTo } from './listen.js'

export const HELLO_PROTOCOL = '/zns/hello/1.0.0'

/** Disconnected peers are forgotten after this long, and beyond this many known peers (oldest first). */
const FORGET_AFTER_MS = 24 * 60 * 60 * 1000
const MAX_KNOWN_PEERS = 1000
const MAX_ADDRESSES = 16
const REQUEST_TIMEOUT_MS = 5000
/** A ping round tries twice before calling a connected peer degraded. */
const PING_ATTEMPTS = 2
const PING_RETRY_DELAY_MS = 250
/** An incompatible peer's bootstrap or added address is not re-dialled for this long (it may upgrade). */
const REFUSED_REDIAL_MS = 10 * 60 * 1000

const isTimeout = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError')

export type VerificationTier = PeerView['verification_tier']

interface PeerEntry {
  peerId: PeerId
  address: string | null
  addresses: string[]
  direction: 'inbound' | 'outbound' | null
  connected: boolean
  connectedAt: number | null
  lastSeen: number
  latencyMs: number | null
  pingFailed: boolean
  hello: HelloMessage | null
  tier: VerificationTier
  /** Its offer compared with this node's, from its last verified hello. */
  assessment: Assessment | null
  /** What was last logged about its compatibility, so a peer that keeps coming back is logged once. */
  logged: string | null
  /** When this node last refused it as incompatible. */
  refusedAt: number | null
}

export interface PeerBookOptions {
  libp2p: MeshLibp2p
  bus: EventBus
  logger: Logger
  /** What this node says about itself in its hello. */
  info: () => HelloMessage
  /** The protocol versions and capabilities this node offers, added to its hello. */
  offer: MeshOffer
  pingIntervalMs: number
  helloIntervalMs: number
  /** This node's gossip score of a peer (scoring.ts), if it scores peers. */
  gossipScore?: (peer: string) => number
}

/** The registry ID and public key a PeerId stands for (Ed25519 PeerIds embed the key). */
export function registryKeyOf(peerId: PeerId): { registryId: string; publicKey: string } | null {
  if (peerId.type !== 'Ed25519') return null
  const raw = peerId.publicKey.raw
  return { registryId: deriveId('registry', raw), publicKey: formatKey(raw) }
}

function withPeerId(ma: Multiaddr | string, peerId: PeerId): string {
  const text = ma.toString()
  return text.includes('/p2p/') ? text : `${text}/p2p/${peerId.toString()}`
}

function ipOf(ma: Multiaddr): string | undefined {
  return ma.getComponents().find(c => c.name === 'ip4' || c.name === 'ip6' || c.name.startsWith('dns'))?.value
}

const isPlainTcp = (ma: Multiaddr): boolean => {
  const names = ma.getComponents().map(c => c.name)
  return names.includes('tcp') && !names.includes('ws') && !names.includes('wss') && !names.includes('p2p-circuit')
}

export function encodeHello(message: HelloMessage): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(message))
}

export function decodeHello(bytes: Uint8Array): HelloMessage {
  return decodeJson(HelloMessage, bytes, 'hello')
}

export class PeerBook {
  private readonly entries = new Map<string, PeerEntry>()
  /** Who waits for a peer's first hello (`helloFrom`). */
  private readonly helloWaiters = new Map<string, (() => void)[]>()
  private readonly refreshing = new Map<string, Promise<void>>()
  private readonly log: Logger
  private pingTimer: NodeJS.Timeout | null = null
  private helloTimer: NodeJS.Timeout | null = null
  private readonly spreadTimers = new Set<NodeJS.Timeout>()
  private readonly detach: Array<() => void> = []
  /** Aborted by stop(), so no hello or ping holds up a shutdown. */
  private readonly shutdown = new AbortController()
  private stopped = false

  constructor(private readonly o: PeerBookOptions) {
    this.log = o.logger
  }

  async start(): Promise<void> {
    const { libp2p } = this.o
    await libp2p.handle(HELLO_PROTOCOL, (stream, connection) => this.answerHello(stream, connection), {
      maxInboundStreams: 4,
      maxOutboundStreams: 4
    })
    this.detach.push(
      listenTo(libp2p, 'peer:connect', evt => this.connected(evt.detail)),
      listenTo(libp2p, 'peer:disconnect', evt => this.disconnected(evt.detail)),
      listenTo(libp2p, 'peer:identify', evt => this.identified(evt.detail))
    )
    this.pingTimer = setInterval(
      () => this.spread(this.o.pingIntervalMs, e => this.ping(e.peerId)),
      this.o.pingIntervalMs
    ).unref()
    this.helloTimer = setInterval(
      () => this.spread(this.o.helloIntervalMs, e => this.sayHello(e.peerId)),
      this.o.helloIntervalMs
    ).unref()
  }

  /**
   * Whether to use `capability` with a peer: what its verified hello offers (a hello without lists:
   * what 0.2.0 offered). Before any verified hello, true: callers also go by identify, which lists
   * only protocols the peer handles.
   */
  offers(peerId: PeerId | string, capability: string): boolean {
    const e = this.entries.get(peerId.toString())
    if (!e?.hello || e.tier !== 'peer-id') return true
    return offers(e.hello, capability)
  }

  /**
   * Resolves once a hello from the peer was taken (verified or not), at once if one was, or after
   * `timeoutMs`: what a peer offers decides what some protocols show it, and the first exchange
   * with a new peer runs beside the hello.
   */
  helloFrom(peerId: string, timeoutMs: number): Promise<void> {
    const e = this.entries.get(peerId)
    if (e?.hello || this.stopped) return Promise.resolve()
    return new Promise(resolve => {
      const timer = setTimeout(done, timeoutMs).unref()
      const waiters = this.helloWaiters.get(peerId) ?? []
      waiters.push(done)
      this.helloWaiters.set(peerId, waiters)
      function done(): void {
        clearTimeout(timer)
        resolve()
      }
    })
  }

  /** Whether this node refused the peer as incompatible recently (its addresses are not re-dialled). */
  refusedRecently(peerId: string): boolean {
    const at = this.entries.get(peerId)?.refusedAt
    return at != null && Date.now() - at < REFUSED_REDIAL_MS
  }

  /** Stops timers and listening; the node's own shutdown then closes connections without events. */
  async stop(): Promise<void> {
    this.stopped = true
    this.shutdown.abort()
    for (const off of this.detach.splice(0)) off()
    if (this.pingTimer) clearInterval(this.pingTimer)
    if (this.helloTimer) clearInterval(this.helloTimer)
    for (const timer of this.spreadTimers) clearTimeout(timer)
    this.spreadTimers.clear()
    await Promise.allSettled([...this.refreshing.values()])
    await this.o.libp2p.unhandle(HELLO_PROTOCOL).catch(() => {})
  }

  get connectedCount(): number {
    let n = 0
    for (const e of this.entries.values()) if (e.connected) n++
    return n
  }

  get knownCount(): number {
    return this.entries.size
  }

  /** Connected peers, or all known ones; connected first, then by peer ID. */
  list(all = false): PeerView[] {
    const entries = [...this.entries.values()].filter(e => all || e.connected)
    entries.sort(
      (a, b) => Number(b.connected) - Number(a.connected) || (a.peerId.toString() < b.peerId.toString() ? -1 : 1)
    )
    return entries.map(e => this.view(e))
  }

  get(peerId: PeerId | string): PeerView | null {
    const e = this.entries.get(peerId.toString())
    return e ? this.view(e) : null
  }

  /** Sum of the counts connected peers reported. */
  reportedCounts(): { entities: number; agents: number } {
    let entities = 0
    let agents = 0
    for (const e of this.entries.values()) {
      if (!e.connected || !e.hello || e.tier === 'unverified') continue
      entities += e.hello.entity_count
      agents += e.hello.agent_count
    }
    return { entities, agents }
  }

  /**
   * Records a connection we have just opened (the connect event may not have been handled yet),
   * then exchanges hellos and pings at once.
   */
  async admit(connection: Connection): Promise<PeerView> {
    this.connected(connection.remotePeer)
    await this.refresh(connection.remotePeer)
    const view = this.get(connection.remotePeer)
    if (!view) throw new Error('the peer disconnected during the hello')
    return view
  }

  /**
   * Hello then ping (none for a peer the hello refused); concurrent calls for one peer share the
   * work. `again`: a new connection, which needs its own hello even while the last one's runs.
   */
  refresh(peerId: PeerId, again = false): Promise<void> {
    const key = peerId.toString()
    const running = this.refreshing.get(key)
    if (running && !again) return running
    const work = async () => {
      await running?.catch(() => {})
      await this.sayHello(peerId)
      if (this.entries.get(key)?.assessment?.compatibility !== 'incompatible') await this.ping(peerId)
    }
    const next: Promise<void> = work().finally(() => {
      if (this.refreshing.get(key) === next) this.refreshing.delete(key)
    })
    this.refreshing.set(key, next)
    return next
  }

  private gossipScore(peer: string): number | null {
    const score = this.o.gossipScore?.(peer)
    return score === undefined || !Number.isFinite(score) ? null : Math.round(score * 100) / 100
  }

  private view(e: PeerEntry): PeerView {
    const key = registryKeyOf(e.peerId)
    const hello = e.tier === 'peer-id' ? e.hello : null
    return {
      peer_id: e.peerId.toString(),
      address: e.address,
      addresses: e.addresses,
      name: hello?.name ?? null,
      host: hello?.host ?? null,
      registry_id: key?.registryId ?? null,
      public_key: key?.publicKey ?? null,
      version: hello?.version ?? null,
      protocols: hello?.protocols ? [...hello.protocols] : null,
      capabilities: hello?.capabilities ? [...hello.capabilities] : null,
      compatibility: e.assessment?.compatibility ?? 'unknown',
      missing: e.assessment?.missing ?? [],
      agent_count: hello?.agent_count ?? null,
      entity_count: hello?.entity_count ?? null,
      latency_ms: e.latencyMs,
      gossip_score: this.gossipScore(e.peerId.toString()),
      health: !e.connected ? 'disconnected' : e.latencyMs === null || e.pingFailed ? 'degraded' : 'healthy',
      connected: e.connected,
      direction: e.direction,
      connected_at: e.connectedAt === null ? null : new Date(e.connectedAt).toISOString(),
      last_seen: new Date(e.lastSeen).toISOString(),
      verification_tier: e.tier
    }
  }

  private connected(peerId: PeerId): void {
    if (this.stopped) return
    const key = peerId.toString()
    const connection = this.o.libp2p.getConnections(peerId)[0]
    let e = this.entries.get(key)
    if (e?.connected) return
    const now = Date.now()
    if (!e) {
      e = {
        peerId,
        address: null,
        addresses: [],
        direction: null,
        connected: false,
        connectedAt: null,
        lastSeen: now,
        latencyMs: null,
        pingFailed: false,
        hello: null,
        tier: 'unverified',
        assessment: null,
        logged: null,
        refusedAt: null
      }
      this.entries.set(key, e)
    }
    e.connected = true
    e.connectedAt = now
    e.lastSeen = now
    e.pingFailed = false
    e.latencyMs = null
    e.direction = connection?.direction ?? null
    if (connection) {
      const remote = withPeerId(connection.remoteAddr, peerId)
      // An outbound connection's remote address is dialable; an inbound one's port is the peer's
      // ephemeral source port, used only until identify tells us its listen addresses.
      if (connection.direction === 'outbound' || e.address === null) e.address = remote
    }
    this.prune(now)
    this.log.info({ peer_id: key, address: e.address, direction: e.direction }, 'peer connected')
    this.o.bus.publish('peer_connected', {
      peer_id: key,
      address: connection ? withPeerId(connection.remoteAddr, peerId) : e.address
    })
    void this.refresh(peerId, true).catch(() => {})
  }

  private disconnected(peerId: PeerId): void {
    if (this.stopped) return
    const key = peerId.toString()
    const e = this.entries.get(key)
    if (!e?.connected) return
    e.connected = false
    e.lastSeen = Date.now()
    this.log.info({ peer_id: key }, 'peer disconnected')
    this.o.bus.publish('peer_disconnected', { peer_id: key, address: e.address })
  }

  private identified(result: IdentifyResult): void {
    const e = this.entries.get(result.peerId.toString())
    if (!e) return
    // A peer that handles only other majors of hello or sync never exchanges a hello with us.
    const mismatch = identifyMismatch(this.o.offer, result.protocols)
    if (mismatch) this.judge(e, (result.agentVersion ?? 'unknown').slice(0, HELLO_LIMITS.version), mismatch)
    e.addresses = result.listenAddrs.slice(0, MAX_ADDRESSES).map(ma => withPeerId(ma, result.peerId))
    if (e.direction === 'outbound') return
    // For an inbound peer pick the listen address on the host it connected from, TCP first.
    const remoteIp = ipOf(result.connection.remoteAddr)
    const candidates = result.listenAddrs.filter(ma => ipOf(ma) === remoteIp)
    const best =
      candidates.find(isPlainTcp) ?? candidates[0] ?? result.listenAddrs.find(isPlainTcp) ?? result.listenAddrs[0]
    if (best) e.address = withPeerId(best, result.peerId)
  }

  private async answerHello(stream: Stream, connection: Connection): Promise<void> {
    const signal = this.deadline()
    try {
      const lp = lpStream(stream, { maxDataLength: HELLO_LIMITS.messageBytes })
      const theirs = decodeHello((await lp.read({ signal })).subarray())
      await lp.write(encodeHello(this.ownHello()), { signal })
      await stream.close({ signal })
      this.recordHello(connection.remotePeer, theirs)
    } catch (err) {
      this.log.debug({ err, peer_id: connection.remotePeer.toString() }, 'hello from peer failed')
      stream.abort(err as Error)
    }
  }

  private async sayHello(peerId: PeerId): Promise<void> {
    const connection = this.o.libp2p.getConnections(peerId)[0]
    if (!connection || this.stopped) return
    const signal = this.deadline()
    let stream: Stream | undefined
    try {
      stream = await connection.newStream(HELLO_PROTOCOL, { signal })
      const lp = lpStream(stream, { maxDataLength: HELLO_LIMITS.messageBytes })
      await lp.write(encodeHello(this.ownHello()), { signal })
      const theirs = decodeHello((await lp.read({ signal })).subarray())
      await stream.close({ signal })
      this.recordHello(peerId, theirs)
    } catch (err) {
      this.log.debug({ err, peer_id: peerId.toString() }, 'hello to peer failed')
      stream?.abort(err as Error)
    }
  }

  private ownHello(): HelloMessage {
    return {
      ...this.o.info(),
      protocols: [...this.o.offer.protocols],
      capabilities: [...this.o.offer.capabilities]
    }
  }

  private recordHello(peerId: PeerId, hello: HelloMessage): void {
    const waiters = this.helloWaiters.get(peerId.toString())
    this.helloWaiters.delete(peerId.toString())
    for (const done of waiters ?? []) queueMicrotask(done)
    const e = this.entries.get(peerId.toString())
    if (!e) return
    const key = registryKeyOf(peerId)
    const matches =
      key !== null && hello.registry_id === key.registryId && normalizePublicKey(hello.public_key) === key.publicKey
    if (!matches) {
      this.log.warn(
        { peer_id: peerId.toString(), claimed: hello.registry_id },
        'peer hello does not match its key; its claims are ignored'
      )
      e.hello = null
      e.tier = 'unverified'
      e.assessment = null
      return
    }
    e.hello = hello
    e.tier = 'peer-id'
    e.lastSeen = Date.now()
    this.judge(e, hello.version, assess(this.o.offer, hello))
  }

  /** Compares the peer's offer with ours: logs what it lacks once, and hangs up on an incompatible peer. */
  private judge(e: PeerEntry, version: string, a: Assessment): void {
    e.assessment = a
    const peerId = e.peerId.toString()
    const said = `${version}|${a.compatibility}|${a.missing.join(',')}`
    const fresh = e.logged !== said
    e.logged = said
    const fields = { peer_id: peerId, version, missing: a.missing }
    if (a.compatibility === 'incompatible') {
      e.refusedAt = Date.now()
      if (fresh)
        this.log.warn(
          { ...fields, offered: a.offered },
          `peer ${peerId} (version ${version}) is incompatible: it lacks ${a.required.join(', ')}${a.offered.length > 0 ? ` (it speaks ${a.offered.join(', ')})` : ''}; refusing it`
        )
      if (!this.stopped) void this.o.libp2p.hangUp(e.peerId).catch(() => {})
      return
    }
    e.refusedAt = null
    if (a.compatibility === 'partial' && fresh)
      this.log.info(fields, `peer ${peerId} (version ${version}) lacks ${a.missing.join(', ')}: not used with it`)
  }

  private async ping(peerId: PeerId): Promise<void> {
    const e = this.entries.get(peerId.toString())
    if (!e?.connected || this.stopped) return
    for (let attempt = 1; ; attempt++) {
      try {
        e.latencyMs = await this.o.libp2p.services.ping.ping(peerId, { signal: this.deadline() })
        e.pingFailed = false
        e.lastSeen = Date.now()
        return
      } catch (err) {
        this.log.debug({ err, peer_id: peerId.toString(), attempt }, 'ping failed')
        if (attempt === PING_ATTEMPTS || !e.connected || this.stopped) {
          e.pingFailed = true
          // What libp2p's connection monitor did (it is off: it pinged every connection in the same
          // instant): a peer that answers no ping within the deadline is gone, and its connections
          // with it. Other failures (a refused stream) leave the connection up, marked degraded.
          if (isTimeout(err) && !this.stopped)
            for (const connection of this.o.libp2p.getConnections(peerId)) connection.abort(err as Error)
          return
        }
        await new Promise(resolve => setTimeout(resolve, PING_RETRY_DELAY_MS).unref())
      }
    }
  }

  private deadline(): AbortSignal {
    return AbortSignal.any([this.shutdown.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)])
  }

  /**
   * Runs `task` for each connected peer at a random moment within the next `withinMs`: every peer
   * at once opened a stream to each in the same millisecond, and in a 20-node mesh on one machine
   * those bursts (over a hundred streams in a second) delayed the gossip they coincided with. The
   * tasks themselves skip a peer that has gone or a book that has stopped by then.
   */
  private spread(withinMs: number, task: (e: PeerEntry) => Promise<void>): void {
    for (const e of this.entries.values()) {
      if (!e.connected) continue
      const timer = setTimeout(() => {
        this.spreadTimers.delete(timer)
        void task(e)
      }, Math.random() * withinMs).unref()
      this.spreadTimers.add(timer)
    }
  }

  /** Forgets disconnected peers that are old, or the oldest beyond the cap. */
  private prune(now: number): void {
    for (const [key, e] of this.entries)
      if (!e.connected && now - e.lastSeen > FORGET_AFTER_MS) this.entries.delete(key)
    if (this.entries.size <= MAX_KNOWN_PEERS) return
    const idle = [...this.entries.entries()]
      .filter(([, e]) => !e.connected)
      .sort((a, b) => a[1].lastSeen - b[1].lastSeen)
    for (const [key] of idle.slice(0, this.entries.size - MAX_KNOWN_PEERS)) this.entries.delete(key)
  }
}
