/**
 * Finding what this node does not hold, through kad-dht provider records. Announcing every entity
 * would cost one DHT query per registration (and kept two idle test nodes' cores busy at 10k
 * entities each), so a node announces its home *buckets* instead: `home:<x>` for each first hex
 * digit of the IDs of its home entities, at most 16 records however many entities it
 * holds, and `host:<host>` for its own namespace of names. A node asked for an entity it lacks finds
 * the providers of the entity's bucket, or of the FQAN's host, and asks each (up to 5) for the key
 * with `/zns/fetch/1.0.0`; what comes back is applied like any other operation (origin seal and
 * owner signature verified). What the answer came from is for the caller to say.
 *
 * `/zns/fetch/1.0.0`: the asker sends `{"key": "entity:<id>" | "fqan:<host>/<handle>/<name>"}`
 * (one length-prefixed JSON frame); the provider answers `{"ops": [wire operations]}` with every
 * operation of the subjects behind the key (an entity: its own; a name: its developer's, its
 * handle's, its own and its entity's), or `{"ops": []}`.
 */
import type { PeerId, Stream } from '@libp2p/interface'
import { lpStream } from '@libp2p/utils'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import type { Logger } from 'pino'
import { compareOperations } from '../store/operation-order.js'
import type { Operation } from '../store/records.js'
import { BoundedMap } from '../util/bounded-map.js'
import { fromWire, toWire } from '../wire/operations.js'
import type { GossipApply } from './gossip.js'
import type { MeshLibp2p } from './libp2p-node.js'
import { providerKeyOf } from './provider-keys.js'
import { parseJsonBytes } from '../wire/json.js'

export const FETCH_PROTOCOL = '/zns/fetch/1.0.0'
const MAX_FRAME_BYTES = 4 * 1024 * 1024
const RAW_CODEC = 0x55
/** Providers asked for one key. */
const MAX_PROVIDERS = 5
/** Provider records expire (kad-dht keeps them 48 h): announced again this often. */
const REANNOUNCE_MS = 12 * 3_600_000
/**
 * Lookups running at once, and how long a key nobody had is not looked up again: a read of an
 * unknown ID must not become a way to make the node flood the DHT.
 */
const MAX_LOOKUPS = 16
const MISS_TTL_MS = 60_000
const MAX_MISSES = 10_000

export interface LocatorOptions {
  libp2p: MeshLibp2p
  apply: GossipApply
  logger: Logger
  /** The operations behind a key this node provides (empty when it has none). */
  operationsFor: (key: string) => Operation[]
  /**
   * Announcements trickle, one at a time, this far apart on average (p2p.dht_announce_interval_seconds, 30 s):
   * each is a DHT query and a write to the closest peers, which cost about a quarter of a second of
   * CPU over a 20-node testnet, and every node holds the mesh's records anyway (this is the fallback
   * for what gossip and sync have not brought), so the 16 bucket keys of a new node are announced
   * over 8 minutes. Host keys (the authority on names) go first.
   */
  announceIntervalMs: number
}

export async function keyCid(key: string): Promise<CID> {
  return CID.createV1(RAW_CODEC, await sha256.digest(Buffer.from(`zns:${key}`)))
}

export class Locator {
  private readonly queue: string[] = []
  private readonly queued = new Set<string>()
  private announcing = false
  private nextAnnounceAt = 0
  /** Keys announced, and when: a key is announced again only after REANNOUNCE_MS. */
  private readonly announced = new Map<string, number>()
  private reannounceTimer: NodeJS.Timeout | null = null
  private lookups = 0
  private readonly misses = new BoundedMap<string, number>(MAX_MISSES)
  /** Lookups under way, by key. */
  private readonly inflight = new Map<string, Promise<number>>()
  private stopped = false
  /** `skipped`: fetches not looked up (too many running, or the key was missed a moment ago). */
  readonly stats = { announced: 0, announceFailures: 0, lookups: 0, found: 0, skipped: 0 }

  constructor(private readonly o: LocatorOptions) {}

  async start(): Promise<void> {
    await this.o.libp2p.handle(
      FETCH_PROTOCOL,
      stream => {
        void this.answer(stream)
      },
      { maxInboundStreams: 16, maxOutboundStreams: 16 }
    )
    this.reannounceTimer = setInterval(() => {
      const keys = [...this.announced.keys()]
      this.announced.clear()
      this.announce(keys)
    }, REANNOUNCE_MS).unref()
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.queue.length = 0
    if (this.reannounceTimer) clearInterval(this.reannounceTimer)
    await this.o.libp2p.unhandle(FETCH_PROTOCOL).catch(() => {})
  }

  hasAnnounced(key: string): boolean {
    return this.announced.has(key)
  }

  /** Announces this node as a provider of the keys, in the background. */
  announce(keys: Iterable<string>): void {
    for (const key of keys) {
      if (this.queued.has(key) || this.announced.has(key)) continue
      this.queued.add(key)
      if (key.startsWith('host:')) this.queue.unshift(key)
      else this.queue.push(key)
    }
    if (!this.announcing && this.queue.length > 0) void this.announceNext()
  }

  private async announceNext(): Promise<void> {
    this.announcing = true
    try {
      while (!this.stopped) {
        const key = this.queue.shift()
        if (key === undefined) break
        this.queued.delete(key)
        const wait = this.scheduleNext()
        if (wait > 0) await new Promise(resolve => setTimeout(resolve, wait).unref())
        try {
          await this.o.libp2p.contentRouting.provide(await keyCid(key), { signal: AbortSignal.timeout(30_000) })
          this.announced.set(key, Date.now())
          this.stats.announced++
        } catch (err) {
          this.stats.announceFailures++
          this.o.logger.debug({ err, key }, 'DHT announcement failed')
        }
      }
    } finally {
      this.announcing = false
    }
  }

  /**
   * How long to wait before the next announcement. Spaced by the interval on average, at random
   * between half and one and a half of it, and a queue that was idle starts at a random point of an
   * interval: the nodes of a fresh mesh take their first registrations in the same seconds, and when
   * each announced its first bucket at once, 20 nodes on one machine spent both cores on DHT queries
   * and new connections for seconds, and gossip waited behind them (bench:propagation).
   */
  private scheduleNext(): number {
    const now = Date.now()
    const interval = this.o.announceIntervalMs
    const at = this.nextAnnounceAt > now ? this.nextAnnounceAt : now + Math.random() * interval
    this.nextAnnounceAt = at + interval * (0.5 + Math.random())
    return at - now
  }

  /**
   * Finds providers of `key` and fetches its operations from the first that has them; resolves
   * to the number of operations applied (0: nobody had it within the time limit).
   */
  fetch(key: string, timeoutMs: number): Promise<number> {
    // Readers polling an ID before it arrives (a client waiting for its registration to spread) would
    // each start a lookup of their own: one at a time per key, and every reader waits on it.
    const running = this.inflight.get(key)
    if (running) return running
    const lookup = this.fetchOnce(key, timeoutMs).finally(() => this.inflight.delete(key))
    this.inflight.set(key, lookup)
    return lookup
  }

  private async fetchOnce(key: string, timeoutMs: number): Promise<number> {
    const missed = this.misses.get(key)
    if (this.stopped || this.lookups >= MAX_LOOKUPS || (missed !== undefined && Date.now() - missed < MISS_TTL_MS)) {
      this.stats.skipped++
      return 0
    }
    this.lookups++
    try {
      const applied = await this.lookup(key, timeoutMs)
      if (applied === 0) {
        this.misses.set(key, Date.now())
      } else this.misses.delete(key)
      return applied
    } finally {
      this.lookups--
    }
  }

  private async lookup(key: string, timeoutMs: number): Promise<number> {
    this.stats.lookups++
    const providerKey = providerKeyOf(key)
    // With no peer connected, the DHT has nobody to ask: it would only wait out the time limit
    // (3 s on every GET of an unknown ID).
    if (providerKey === null || this.o.libp2p.getConnections().length === 0) return 0
    const signal = AbortSignal.timeout(timeoutMs)
    const self = this.o.libp2p.peerId.toString()
    let tried = 0
    try {
      for await (const provider of this.o.libp2p.contentRouting.findProviders(await keyCid(providerKey), { signal })) {
        if (provider.id.toString() === self) continue
        const applied = await this.fetchFrom(provider.id, provider.multiaddrs, key, signal).catch(err => {
          this.o.logger.debug({ err, key, peer_id: provider.id.toString() }, 'fetch from provider failed')
          return 0
        })
        if (applied > 0) {
          this.stats.found++
          return applied
        }
        if (++tried >= MAX_PROVIDERS) break
      }
    } catch (err) {
      this.o.logger.debug({ err, key }, 'DHT lookup ended')
    }
    return 0
  }

  private async fetchFrom(
    peer: PeerId,
    addresses: Parameters<MeshLibp2p['dial']>[0][],
    key: string,
    signal: AbortSignal
  ): Promise<number> {
    if (addresses.length > 0)
      await this.o.libp2p.peerStore.merge(peer, { multiaddrs: addresses as never }).catch(() => {})
    const stream = await this.o.libp2p.dialProtocol(peer, FETCH_PROTOCOL, { signal })
    const lp = lpStream(stream, { maxDataLength: MAX_FRAME_BYTES })
    await lp.write(Buffer.from(JSON.stringify({ key })), { signal })
    const reply = parseJsonBytes((await lp.read({ signal })).subarray()) as { ops?: unknown }
    await stream.close({ signal }).catch(() => {})
    if (!Array.isArray(reply.ops)) throw new Error('malformed fetch reply')
    const ops = reply.ops.map(wire => fromWire(wire)).sort(compareOperations)
    let applied = 0
    for (const op of ops) if ((await this.o.apply(op).catch(() => 'invalid')) === 'applied') applied++
    return applied
  }

  private async answer(stream: Stream): Promise<void> {
    const signal = AbortSignal.timeout(10_000)
    try {
      const lp = lpStream(stream, { maxDataLength: MAX_FRAME_BYTES })
      const request = parseJsonBytes((await lp.read({ signal })).subarray()) as { key?: unknown }
      const ops = typeof request.key === 'string' && request.key.length <= 400 ? this.o.operationsFor(request.key) : []
      await lp.write(Buffer.from(JSON.stringify({ ops: ops.map(toWire) })), { signal })
      await stream.close({ signal })
    } catch (err) {
      stream.abort(err as Error)
    }
  }
}
