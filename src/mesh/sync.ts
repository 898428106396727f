/**
 * `/zns/sync/1.0.0`: brings two nodes to the same operations (protocols/README.md, "Sync"). Bucketed
 * digests find what differs (SubjectDigests); only the operations of differing subjects travel,
 * in both directions in one session, and each is applied through the same path as gossip (origin
 * seal and owner signature verified, last writer wins). Run when a connection opens (by the side
 * with the lower peer ID), every `intervalMs` with one connected peer picked at random, and, after
 * a session that applied something, with every other connected peer (news spreads).
 *
 * A session, each frame a JSON object with an unsigned-varint length prefix:
 *   initiator → {t:"buckets", digests:[256 hex]}         responder → {t:"buckets", digests}
 *          (or {t:"busy"}: it runs its own session with the initiator, and has the lower peer ID;
 *          or the initiator opened more than `maxPerPeerPerMinute` sessions in the last minute)
 *   both → {t:"subjects", entries:[[subject, digest hex]…], more?} for the buckets whose digests
 *          differ and are empty on neither side (frames of 20,000 entries, `more` on all but the last)
 *   both → {t:"ops", ops:[WireOperation…]}… then {t:"done"}: every operation of each subject the
 *          other side lacks or holds differently; one subject's operations are never split. Each
 *          `ops` frame is answered {t:"ack"} once applied; at most 2 may be unacknowledged. A side
 *          is finished once it has the other's `done` and acks for all its own `ops` frames.
 */
import type { Connection, PeerId, Stream } from '@libp2p/interface'
import { lpStream, type LengthPrefixedStream } from '@libp2p/utils'
import type { Logger } from 'pino'
import { RegistryError } from '../errors.js'
import type { EventBus } from '../events/bus.js'
import type { Operation } from '../store/records.js'
import { sealDigest } from '../store/registry-store.js'
import { BUCKETS, DIGEST_BYTES, type DigestScope, type SubjectDigests } from '../store/subject-digests.js'
import { BoundedMap } from '../util/bounded-map.js'
import { parseJsonBytes } from '../wire/json.js'
import { fromWire, isShared, toWire } from '../wire/operations.js'
import type { ApplyOutcome, GossipApply } from './gossip.js'
import type { MeshLibp2p } from './libp2p-node.js'

export const SYNC_PROTOCOL = '/zns/sync/1.0.0'
const MAX_FRAME_BYTES = 16 * 1024 * 1024
/** Operations per `ops` frame (a subject's operations stay together, so a frame may hold a few more). */
const OPS_PER_FRAME = 128
/** `ops` frames a sender may have unacknowledged. */
const OPS_FRAMES_IN_FLIGHT = 2
/** Subject entries per `subjects` frame (about 70 bytes each: well under the stream's 4 MiB read buffer). */
const SUBJECTS_PER_FRAME = 20_000
const EMPTY_DIGEST = '0'.repeat(DIGEST_BYTES * 2)
/** A session that applied something starts one with every other peer after SPREAD_DELAY_MS, at most once per peer per SPREAD_COOLDOWN_MS. */
const SPREAD_DELAY_MS = 250
const SPREAD_COOLDOWN_MS = 2_000
/** Subjects applied at once: their commits share LMDB transactions. */
const APPLY_CONCURRENCY = 64

export interface SyncOptions {
  libp2p: MeshLibp2p
  digests: SubjectDigests
  apply: GossipApply
  bus: EventBus
  logger: Logger
  intervalMs: number
  /** Time limit of one session. */
  timeoutMs?: number
  /** Sessions one peer may open with this node per minute (p2p.sync_max_per_peer_per_minute); beyond, answered busy. */
  maxPerPeerPerMinute: number
  /** What a peer is shown of the log: all but attestations to one that does not apply them. */
  scopeFor?: (peer: string) => Promise<DigestScope>
}

export interface SyncResult {
  peer: string
  differingBuckets: number
  sent: number
  received: number
  applied: number
  invalid: number
  ms: number
}

type Frame =
  | { t: 'buckets'; digests: string[] }
  | { t: 'subjects'; entries: [string, string][]; more?: boolean }
  | { t: 'ops'; ops: unknown[] }
  | { t: 'ack' }
  | { t: 'done' }
  | { t: 'busy' }

/** Peers whose session starts are counted at once; beyond, the longest tracked is forgotten. */
const MAX_COUNTED_PEERS = 10_000

export class SyncService {
  /** Start times of the sessions each peer opened with this node in the last minute. */
  private readonly opened = new BoundedMap<string, number[]>(MAX_COUNTED_PEERS)
  /** When the refusal of each peer was last logged (once a minute per peer). */
  private readonly loggedOver = new BoundedMap<string, number>(MAX_COUNTED_PEERS)
  private timer: NodeJS.Timeout | null = null
  private readonly running = new Map<string, Promise<SyncResult | null>>()
  /** When a session with each peer was last started to spread news. */
  private readonly spreadAt = new Map<string, number>()
  private readonly shutdown = new AbortController()
  private readonly onConnect = (evt: CustomEvent<PeerId>): void => {
    // One session serves both directions: the side with the lower peer ID starts it.
    if (this.o.libp2p.peerId.toString() < evt.detail.toString())
      setTimeout(() => {
        void this.syncWith(evt.detail)
      }, 200).unref()
  }
  /** `corrected`: subject digests found stale and recomputed (should stay 0); `over_limit`: sessions refused to a peer over its per-minute limit. */
  readonly totals = {
    sessions: 0,
    failed: 0,
    busy: 0,
    sent: 0,
    received: 0,
    applied: 0,
    corrected: 0,
    over_limit: 0
  }
  /** Operations received by sync, by what applying them came to (`refused` also counts the rest of a declined subject's). */
  readonly outcomes: Record<ApplyOutcome | 'invalid' | 'storage_full', number> = {
    applied: 0,
    stale: 0,
    deferred: 0,
    unsupported: 0,
    throttled: 0,
    refused: 0,
    invalid: 0,
    storage_full: 0
  }

  constructor(private readonly o: SyncOptions) {}

  async start(): Promise<void> {
    await this.o.libp2p.handle(
      SYNC_PROTOCOL,
      (stream, connection) => {
        void this.answer(stream, connection)
      },
      { maxInboundStreams: 4, maxOutboundStreams: 4 }
    )
    this.o.libp2p.addEventListener('peer:connect', this.onConnect)
    this.timer = setInterval(() => {
      const peers = this.o.libp2p.getPeers()
      const peer = peers[Math.floor(Math.random() * peers.length)]
      if (peer) void this.syncWith(peer)
    }, this.o.intervalMs).unref()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.o.libp2p.removeEventListener('peer:connect', this.onConnect)
    this.shutdown.abort()
    await Promise.allSettled([...this.running.values()])
    await this.o.libp2p.unhandle(SYNC_PROTOCOL).catch(() => {})
  }

  /**
   * After a session brought news, sync with the other connected peers too: operations applied by
   * sync are older than gossip's age bound and are not gossiped again, so without this a healed
   * partition would spread only at one random session per node per interval.
   */
  private spread(from: string): void {
    const now = Date.now()
    for (const peer of this.o.libp2p.getPeers()) {
      const key = peer.toString()
      if (key === from || this.running.has(key) || now - (this.spreadAt.get(key) ?? 0) < SPREAD_COOLDOWN_MS) continue
      this.spreadAt.set(key, now)
      setTimeout(() => {
        if (!this.shutdown.signal.aborted) void this.syncWith(peer)
      }, SPREAD_DELAY_MS).unref()
    }
  }

  /** Runs a session with a connected peer (joins one already running); null when it failed. */
  syncWith(peer: PeerId): Promise<SyncResult | null> {
    const key = peer.toString()
    const running = this.running.get(key)
    if (running) return running
    const session = this.initiate(peer).finally(() => this.running.delete(key))
    this.running.set(key, session)
    return session
  }

  private signal(): AbortSignal {
    return AbortSignal.any([this.shutdown.signal, AbortSignal.timeout(this.o.timeoutMs ?? 120_000)])
  }

  private async initiate(peer: PeerId): Promise<SyncResult | null> {
    const connection = this.o.libp2p.getConnections(peer)[0]
    if (!connection || this.shutdown.signal.aborted) return null
    const signal = this.signal()
    let stream: Stream | undefined
    try {
      stream = await connection.newStream(SYNC_PROTOCOL, { signal })
      const lp = lpStream(stream, { maxDataLength: MAX_FRAME_BYTES })
      const scope = (await this.o.scopeFor?.(peer.toString())) ?? 'all'
      const mine = this.o.digests.bucketDigests(scope)
      await write(lp, { t: 'buckets', digests: mine.map(d => d.toString('hex')) }, signal)
      const theirs = await read(lp, 'buckets', signal)
      if (theirs === null) {
        // The peer runs its own session with this node, which stands.
        this.totals.busy++
        await stream.close({ signal })
        return null
      }
      const result = await this.reconcile(lp, mine, theirs.digests, peer.toString(), scope, signal)
      await stream.close({ signal })
      return result
    } catch (err) {
      this.totals.failed++
      this.o.logger.debug({ err, peer_id: peer.toString() }, 'sync with peer failed')
      stream?.abort(err as Error)
      return null
    }
  }

  private async answer(stream: Stream, connection: Connection): Promise<void> {
    const signal = this.signal()
    try {
      const lp = lpStream(stream, { maxDataLength: MAX_FRAME_BYTES })
      const theirs = await read(lp, 'buckets', signal)
      if (theirs === null) throw new Error('unexpected busy frame')
      // Both sides opened a session at once: the one the lower peer ID opened stands, the other is
      // answered busy (two sessions of one pair would send the same operations twice).
      const remote = connection.remotePeer.toString()
      if (!this.admit(remote)) {
        await write(lp, { t: 'busy' }, signal)
        await stream.close({ signal })
        return
      }
      if (this.running.has(remote) && this.o.libp2p.peerId.toString() < remote) {
        this.totals.busy++
        await write(lp, { t: 'busy' }, signal)
        await stream.close({ signal })
        return
      }
      const scope = (await this.o.scopeFor?.(remote)) ?? 'all'
      const mine = this.o.digests.bucketDigests(scope)
      await write(lp, { t: 'buckets', digests: mine.map(d => d.toString('hex')) }, signal)
      await this.reconcile(lp, mine, theirs.digests, remote, scope, signal)
      await stream.close({ signal })
    } catch (err) {
      this.totals.failed++
      this.o.logger.debug({ err, peer_id: connection.remotePeer.toString() }, 'sync from peer failed')
      stream.abort(err as Error)
    }
  }

  /**
   * Whether `peer` may open one more session now. An honest peer opens one per connection, one per
   * sync interval at most, and one per 2 s at most while news spreads (SPREAD_COOLDOWN_MS); a full
   * session costs this node a digest comparison and a read of each differing subject's log.
   */
  private admit(peer: string): boolean {
    const now = Date.now()
    const recent = (this.opened.get(peer) ?? []).filter(at => now - at < 60_000)
    if (recent.length >= this.o.maxPerPeerPerMinute) {
      this.opened.set(peer, recent)
      this.totals.over_limit++
      if (now - (this.loggedOver.get(peer) ?? 0) >= 60_000) {
        this.loggedOver.set(peer, now)
        this.o.logger.warn(
          { peer_id: peer, sessions_last_minute: recent.length, limit: this.o.maxPerPeerPerMinute },
          'sync sessions from peer over p2p.sync_max_per_peer_per_minute: answered busy for the rest of the minute'
        )
      }
      return false
    }
    recent.push(now)
    this.opened.set(peer, recent)
    return true
  }

  /** Both sides, once the bucket digests are exchanged: subjects of the differing buckets, then operations both ways. */
  private async reconcile(
    lp: LengthPrefixedStream<Stream>,
    mine: Buffer[],
    theirDigests: string[],
    peer: string,
    scope: DigestScope,
    signal: AbortSignal
  ): Promise<SyncResult> {
    const started = performance.now()
    if (theirDigests.length !== BUCKETS) throw new Error(`expected ${BUCKETS} bucket digests`)
    const differing = mine.map((d, i) => (d.toString('hex') === theirDigests[i] ? -1 : i)).filter(i => i >= 0)
    // Buckets empty on one side need no listing (a node that joins sends no list, and gets everything).
    const listed = differing.filter(
      i => theirDigests[i] !== EMPTY_DIGEST && (mine[i] as Buffer).toString('hex') !== EMPTY_DIGEST
    )
    const myEntries = [...this.o.digests.subjectsIn(listed, scope)]
    for (let start = 0; start === 0 || start < myEntries.length; start += SUBJECTS_PER_FRAME) {
      const more = start + SUBJECTS_PER_FRAME < myEntries.length
      await write(
        lp,
        { t: 'subjects', entries: myEntries.slice(start, start + SUBJECTS_PER_FRAME), ...(more ? { more } : {}) },
        signal
      )
    }
    const theirEntries = new Map<string, string>()
    for (let frame = await read(lp, 'subjects', signal); ; frame = await read(lp, 'subjects', signal)) {
      for (const [subject, digest] of frame.entries) theirEntries.set(subject, digest)
      if (!frame.more) break
    }
    // A subject that differs is rechecked against the log first: a stale digest would otherwise
    // make every session list it again without ever sending what the peer lacks.
    const differingSubjects = myEntries
      .filter(([subject, digest]) => theirEntries.get(subject) !== digest)
      .map(([subject]) => subject)
    const stale = differingSubjects.filter(subject => this.o.digests.recheck(subject))
    if (stale.length > 0) {
      this.totals.corrected += stale.length
      this.o.logger.warn(
        { peer_id: peer, subjects: stale.slice(0, 10), count: stale.length },
        'sync digests were stale; recomputed from the log'
      )
    }
    const wanted = [
      ...differingSubjects.filter(subject => this.o.digests.digestOf(subject) !== theirEntries.get(subject)),
      ...this.o.digests
        .subjectsIn(
          differing.filter(i => theirDigests[i] === EMPTY_DIGEST),
          scope
        )
        .keys()
    ]

    // Both sides send and receive at once. Each `ops` frame is acknowledged once applied, and a
    // sender keeps at most OPS_FRAMES_IN_FLIGHT unacknowledged: applying (verifying) is slower than
    // the network, and without this the receiver's stream buffer overflows (StreamBufferError).
    const writes = serialWriter(lp, signal)
    const credit = new Credit(OPS_FRAMES_IN_FLIGHT)
    const receiving = this.receive(lp, signal, writes, credit)
    // Sending may fail first (the peer closed the stream); the read then fails too, unawaited.
    receiving.catch(() => {})
    let sent = 0
    let frame: unknown[] = []
    const flush = async (): Promise<void> => {
      await credit.take(signal)
      sent += frame.length
      await writes({ t: 'ops', ops: frame })
      frame = []
    }
    // An operation on several subjects (a batch of status changes) is in the history of each: sent
    // once, and not even read again for the others (a joining node's sync lists every subject).
    const sentShared = new Set<string>()
    for (const subject of wanted) {
      for (const op of this.o.digests.operationsOf(subject, sentShared)) {
        if (isShared(op)) sentShared.add(sealDigest(op.node_signature).toString('hex'))
        frame.push(toWire(op))
      }
      if (frame.length >= OPS_PER_FRAME) await flush()
    }
    if (frame.length > 0) await flush()
    await writes({ t: 'done' })
    credit.finish()
    const { received, applied, invalid } = await receiving
    const result: SyncResult = {
      peer,
      differingBuckets: differing.length,
      sent,
      received,
      applied,
      invalid,
      ms: Math.round(performance.now() - started)
    }
    this.totals.sessions++
    this.totals.sent += sent
    this.totals.received += received
    this.totals.applied += applied
    if (sent > 0 || received > 0) this.o.logger.info(result, 'synced with peer')
    if (applied > 0) this.spread(peer)
    return result
  }

  /**
   * Reads frames until the other side's `done` has come and every frame this side sent is
   * acknowledged: `ops` are applied (each frame's subjects concurrently, one subject's operations
   * in order) and acknowledged; `ack`s return credit.
   */
  private async receive(
    lp: LengthPrefixedStream<Stream>,
    signal: AbortSignal,
    writes: (frame: Frame) => Promise<void>,
    credit: Credit
  ): Promise<{ received: number; applied: number; invalid: number }> {
    let received = 0
    let applied = 0
    let invalid = 0
    let remoteDone = false
    let sawFinish = false
    let reading: Promise<Frame> | null = null
    const { outcomes } = this
    const applyGroup = async (ops: Operation[]): Promise<void> => {
      for (const [i, op] of ops.entries()) {
        try {
          const outcome = await this.o.apply(op)
          outcomes[outcome]++
          if (outcome === 'applied') applied++
          // Refused for good (over its origin's quota): not offered to this node again.
          if (outcome === 'refused') {
            outcomes.refused += ops.length - i - 1
            this.o.digests.decline(op.subject, ops)
            break
          }
        } catch (err) {
          // A full disk ends the session: the operations are not invalid, and the next session brings them.
          if (err instanceof RegistryError && err.code === 'storage_full') {
            outcomes.storage_full++
            throw err
          }
          outcomes.invalid++
          invalid++
        }
      }
    }
    for (;;) {
      if (remoteDone && credit.settled) break
      // Wait for a frame, or for this side's sending to finish (which may settle the session).
      reading ??= readFrame(lp, signal)
      const next = sawFinish ? await reading : await Promise.race([reading, credit.changed])
      if (next === null) {
        sawFinish = true
        continue
      }
      reading = null
      const frame = next
      if (frame.t === 'done') {
        remoteDone = true
        continue
      }
      if (frame.t === 'ack') {
        credit.give()
        continue
      }
      if (frame.t !== 'ops' || !Array.isArray(frame.ops)) throw new Error(`unexpected ${frame.t} frame`)
      received += frame.ops.length
      const bySubject = new Map<string, Operation[]>()
      for (const wire of frame.ops) {
        let op: Operation
        try {
          op = fromWire(wire)
        } catch {
          this.outcomes.invalid++
          invalid++
          continue
        }
        const list = bySubject.get(op.subject)
        if (list) list.push(op)
        else bySubject.set(op.subject, [op])
      }
      const groups = [...bySubject.values()].map(ops => ops.sort(inApplyOrder))
      // Operations on several subjects after the rest, once the records they change are here.
      const shared = groups.filter(ops => ops.some(isShared))
      await forEachLimited(
        groups.filter(ops => !shared.includes(ops)),
        APPLY_CONCURRENCY,
        applyGroup
      )
      await forEachLimited(shared, APPLY_CONCURRENCY, applyGroup)
      await writes({ t: 'ack' })
    }
    // Nothing more comes; a read still waiting ends with the stream.
    reading?.catch(() => {})
    if (applied > 0) this.o.bus.publish('gossip_incoming', { kind: 'sync', applied, received })
    return { received, applied, invalid }
  }
}

/** Frames written one after another (the sender and the acknowledgements share the stream). */
function serialWriter(lp: LengthPrefixedStream<Stream>, signal: AbortSignal): (frame: Frame) => Promise<void> {
  let last: Promise<void> = Promise.resolve()
  return frame => {
    last = last.then(() => write(lp, frame, signal))
    return last
  }
}

/** Frames a sender may have unacknowledged, and whether all it sent are acknowledged. */
class Credit {
  private waiting: (() => void)[] = []
  private finished = false
  private wake: () => void = () => {}
  /** Resolves (to null) when this side finishes sending. */
  readonly changed: Promise<null>
  constructor(
    private available: number,
    private readonly total = available
  ) {
    this.changed = new Promise(resolve => {
      this.wake = () => resolve(null)
    })
  }

  /** This side sent its last frame. */
  finish(): void {
    this.finished = true
    this.wake()
  }

  /** Finished, and every frame acknowledged. */
  get settled(): boolean {
    return this.finished && this.available === this.total
  }

  async take(signal: AbortSignal): Promise<void> {
    while (this.available === 0) await this.wait(signal)
    this.available--
  }

  give(): void {
    this.available = Math.min(this.total, this.available + 1)
    for (const wake of this.waiting.splice(0)) wake()
  }

  private wait(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted()
    return new Promise((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      this.waiting.push(() => {
        signal.removeEventListener('abort', onAbort)
        resolve()
      })
    })
  }
}

const REGISTRATION_KINDS = new Set(['entity.register', 'developer.register', 'developer.implicit'])

/** Time order; at the same time a registration comes before what builds on it. */
function inApplyOrder(a: Operation, b: Operation): number {
  if (a.accepted_at !== b.accepted_at) return a.accepted_at < b.accepted_at ? -1 : 1
  return (REGISTRATION_KINDS.has(a.kind) ? 0 : 1) - (REGISTRATION_KINDS.has(b.kind) ? 0 : 1)
}

async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T)
    })
  )
}

async function write(lp: LengthPrefixedStream<Stream>, frame: Frame, signal: AbortSignal): Promise<void> {
  await lp.write(Buffer.from(JSON.stringify(frame)), { signal })
}

async function readFrame(lp: LengthPrefixedStream<Stream>, signal: AbortSignal): Promise<Frame> {
  const bytes = await lp.read({ signal })
  const frame = parseJsonBytes(bytes.subarray()) as Frame
  if (frame === null || typeof frame !== 'object' || typeof frame.t !== 'string')
    throw new Error('malformed sync frame')
  return frame
}

/** The next frame, of type `t` (else an error); null for `busy` in place of the buckets frame. */
async function read<T extends Frame['t']>(
  lp: LengthPrefixedStream<Stream>,
  t: T,
  signal: AbortSignal
): Promise<T extends 'buckets' ? Extract<Frame, { t: T }> | null : Extract<Frame, { t: T }>> {
  const frame = await readFrame(lp, signal)
  if (t === 'buckets' && frame.t === 'busy') return null as never
  if (frame.t !== t) throw new Error(`expected a ${t} frame, got ${frame.t}`)
  if (t === 'buckets' && !Array.isArray((frame as { digests?: unknown }).digests))
    throw new Error('malformed buckets frame')
  if (t === 'subjects' && !Array.isArray((frame as { entries?: unknown }).entries))
    throw new Error('malformed subjects frame')
  return frame as never
}
