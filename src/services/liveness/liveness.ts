/**
 * Liveness of the entities whose home is this node: signed heartbeats make an entity active,
 * silence longer than `inactiveAfterMs` (found by a sweep every `sweepIntervalMs`) makes it
 * inactive. Each transition is written at once with a node-signed `entity.status` operation (what
 * the mesh gossips as `agent_status`); plain heartbeats only touch memory, and the last-seen times
 * are written to LMDB in batches every `flushIntervalMs`, so a heartbeat never costs a write.
 *
 * Heartbeat signatures: the spec's form (agent_id followed by timestamp) and the deployed one
 * (the timestamp alone), see docs/compatibility.md. Replays inside the skew window are accepted: they can
 * only keep alive an entity that signed a heartbeat less than a minute ago.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Logger } from 'pino'
import { RegistryError } from '../../errors.js'
import { parsePublicKey, parseSignature } from '../../identity/encoding.js'
import type { SignedForm } from '../../identity/verifiers.js'
import type { VerifyPriority } from '../../identity/verify-pool.js'
import type { EntityViewFields } from '../../store/entity-views.js'
import type { EntityRecord, LivenessRecord, Operation } from '../../store/records.js'
import { SortedRuns } from '../../util/sorted-runs.js'
import { HeartbeatFrame, type HeartbeatAck } from '../../wire/sockets.js'
import { validate } from '../../wire/validate.js'
import type { ServiceComponents } from '../registry/components.js'
import type { LiveView, LivenessView } from '../registry/ports.js'
import { type LiveState, LivenessTable } from './liveness-table.js'
import { statusBatchOperation, statusOperation } from '../registry/operations.js'

export interface LivenessSettings {
  inactiveAfterMs: number
  sweepIntervalMs: number
  maxClockSkewMs: number
  flushIntervalMs: number
}

export type HeartbeatVerifier = (
  agentId: string,
  timestamp: string,
  publicKey: Buffer,
  signature: Buffer,
  priority: VerifyPriority
) => Promise<SignedForm | null>

export interface LivenessComponents extends Pick<ServiceComponents, 'store' | 'bus' | 'identity' | 'settings' | 'now'> {
  verifyHeartbeat: HeartbeatVerifier
  liveness: LivenessSettings
  /** Where background writes that failed (a full disk) are reported. */
  logger?: Pick<Logger, 'warn'>
}

/** Liveness as this node observes it (home entities); elsewhere the record's status stands. */
/** A status change ready to commit: the next state and the event announcing it. */
interface Transition {
  entityId: string
  state: LiveState
  next: LivenessRecord
  event: { entity_id: string; status: 'active' | 'inactive'; last_heartbeat: string | null; changed_at: string }
}

/**
 * Inactive transitions per transaction in a sweep. A load of registrations without heartbeats
 * makes a sweep flip as many entities as were registered in a minute (about 110k loading 1M):
 * written as one commit each, they filled the store's commit queue and every registration waited
 * behind all of them. Each batch holds the HTTP thread twice, to sign (about 75 µs a transition)
 * and inside the transaction (about 50 µs): at 200 that was 14 and 10 ms, which lengthened the
 * p95 of one-at-a-time searches by 20 ms (4 to 25 ms for a rare word at 100k) while a sweep ran.
 */
export const SWEEP_BATCH = 50

/** Home entities a sweep checks per turn of the event loop: a whole scan took about 40 ms at 1M. */
const SWEEP_SCAN_CHUNK = 25_000

/**
 * Batches of a sweep committing at once: the next batch is signed while one commits, so small
 * batches drain as fast as large ones did. Two batches that join one LMDB transaction still hold
 * its callbacks for about 5 ms.
 */
const SWEEP_BATCHES_IN_FLIGHT = 2

/**
 * Transitions a sweep writes at full speed. Beyond them it spreads its remaining batches over half
 * the sweep interval: a mass silence (a load without heartbeats, a restart after downtime) flipped
 * 100k entities at about 8,000/s, which held the HTTP thread for 12 s and doubled the p95 of
 * searches meanwhile; spread, it takes about 40 % of the thread for 30 s (at the spec's 60 s
 * interval), and the last of them is written before the next sweep begins.
 */
export const SWEEP_UNPACED = 1_000

/**
 * A sweep writes its transitions in entity ID order, the order of the liveness and subject-index
 * keys: a batch of 50 random IDs among a million rows dirtied 50 leaf pages of each table (about
 * 10 µs a put on the HTTP thread at 1M, and the pages' writes in every commit), consecutive silent
 * IDs share pages. Sorted in runs of this many (a few ms each, a turn of the event loop between),
 * merged as the batches are taken.
 */
const SWEEP_SORT_RUN = 5_000

export class LivenessService implements LivenessView {
  private readonly table = new LivenessTable()
  private readonly states = new Map<string, LiveState>()
  private readonly dirty = new Set<string>()
  private readonly removed = new Set<string>()
  private readonly now: () => Date
  private sweepTimer: NodeJS.Timeout | null = null
  private sweeping: Promise<number> | null = null
  /** Ends the pause between two batches of a paced sweep (stop). */
  private wakeSweep: (() => void) | null = null
  private stopping = false
  /**
   * When this node began observing heartbeats (its start): silence is counted from here at the
   * earliest, because while the node was down no entity could reach it.
   */
  private observingSince = Number.NEGATIVE_INFINITY
  private flushTimer: NodeJS.Timeout | null = null
  private flushing: Promise<void> | null = null
  /** The batch that follows the one being written (see flush). */
  private flushQueued: Promise<void> | null = null
  /** Transitions in progress, so concurrent heartbeats of one entity commit one transition. */
  private readonly transitions = new Map<string, Promise<void>>()
  accepted = 0
  rejected = 0
  /** Since start: sweeps run and their time, and status changes written (either way). */
  readonly counts = { sweeps: 0, sweepSeconds: 0, activated: 0, deactivated: 0 }

  constructor(private readonly c: LivenessComponents) {
    this.now = c.now ?? (() => new Date())
    c.bus.subscribe(event => {
      const id = event.data.entity_id
      if (typeof id !== 'string') return
      if (event.type === 'agent_registered') this.observe(id, event.entity)
      else if (event.type === 'agent_deregistered') this.forget(id)
    })
  }

  /** One stored entity at start: a home entity gets its flushed state (`flushed`), or one from its record. */
  loadRecord(record: EntityViewFields, flushed?: LivenessRecord): void {
    if (!this.isHome(record)) return
    this.replace(
      record.entity_id,
      this.table.add(flushed ?? this.initialState(record), parsePublicKey(record.public_key))
    )
  }

  /** The home entities (those whose liveness this node tracks). */
  homeEntityIds(): IterableIterator<string> {
    return this.states.keys()
  }

  start(): void {
    this.observingSince = this.now().getTime()
    // Failures (a full disk) leave the states in memory, for the next round to write.
    const report = (what: string) => (err: unknown) => {
      this.c.logger?.warn({ err }, `liveness ${what} not written; retried next round`)
    }
    this.sweepTimer = setInterval(() => {
      this.sweep().catch(report('status changes'))
    }, this.c.liveness.sweepIntervalMs).unref()
    this.flushTimer = setInterval(() => {
      this.flush().catch(report('last-seen times'))
    }, this.c.liveness.flushIntervalMs).unref()
  }

  async stop(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer)
    if (this.flushTimer) clearInterval(this.flushTimer)
    // A sweep ends after the batches it is writing; the rest are found again by the next start's sweeps.
    this.stopping = true
    this.wakeSweep?.()
    await this.sweeping?.catch(() => 0)
    await Promise.all(this.transitions.values())
    await this.flush()
  }

  /** Entities whose home is this node (what the hello reports; the store also holds the mesh's). */
  homeCounts(): { entities: number; agents: number; active: number } {
    let agents = 0
    let active = 0
    for (const [id, s] of this.states) {
      if (!id.startsWith('zns:svc:')) agents++
      if (s.active) active++
    }
    return { entities: this.states.size, agents, active }
  }

  /** Status and last heartbeat as this node sees them now (undefined: not a home entity). */
  current(entityId: string): LiveView | undefined {
    const s = this.states.get(entityId)
    if (!s) return undefined
    return {
      status: s.active ? 'active' : 'inactive',
      last_heartbeat: s.last_seen > s.observed_since ? new Date(s.last_seen).toISOString() : null,
      uptime: this.uptime(s)
    }
  }

  /**
   * The share of the time since this node began observing the entity that it was active, in
   * [0, 1]; an entity observed for less than a minute counts as fully up.
   */
  uptime(s: LivenessRecord, now = this.now().getTime()): number {
    const observed = now - s.observed_since
    if (observed < 60_000) return s.active ? 1 : 0
    const active = s.active_ms + (s.active && s.active_since !== null ? now - s.active_since : 0)
    return Math.min(1, Math.max(0, active / observed))
  }

  /**
   * Checks and applies one heartbeat. `pathEntityId` is the entity of a per-entity socket (the
   * frame's agent_id is then optional); on the multiplexed socket the frame must name it.
   */
  async heartbeat(frame: unknown, pathEntityId?: string, priority: VerifyPriority = 'normal'): Promise<HeartbeatAck> {
    try {
      return await this.apply(frame, pathEntityId, priority)
    } catch (err) {
      this.rejected++
      throw err
    }
  }

  private async apply(
    received: unknown,
    pathEntityId: string | undefined,
    priority: VerifyPriority
  ): Promise<HeartbeatAck> {
    const frame = validate(HeartbeatFrame, received, 'heartbeat_invalid')
    const agentId = frame.agent_id ?? pathEntityId
    if (agentId === undefined)
      throw new RegistryError('heartbeat_invalid', 'The frame must name its entity in agent_id.', 'agent_id')
    if (pathEntityId !== undefined && agentId !== pathEntityId)
      throw new RegistryError('heartbeat_invalid', 'agent_id differs from the entity of this socket.', 'agent_id')
    const state = this.stateOf(agentId)
    // Unix seconds (the ecosystem's docs) are signed as their decimal text.
    const timestamp = String(frame.timestamp)
    const sentAt = typeof frame.timestamp === 'number' ? frame.timestamp * 1000 : Date.parse(frame.timestamp)
    if (Number.isNaN(sentAt) || (typeof frame.timestamp === 'string' && !/^\d{4}-\d{2}-\d{2}T/.test(timestamp)))
      throw new RegistryError(
        'heartbeat_invalid',
        'timestamp must be an ISO 8601 date and time, or Unix seconds.',
        'timestamp'
      )
    const now = this.now().getTime()
    if (Math.abs(now - sentAt) > this.c.liveness.maxClockSkewMs) {
      throw new RegistryError(
        'clock_skew',
        `The timestamp is ${Math.round((sentAt - now) / 1000)} s from the node clock; at most ${this.c.liveness.maxClockSkewMs / 1000} s is accepted.`,
        'timestamp'
      )
    }
    const signature = parseSignature(frame.signature)
    if (!signature)
      throw new RegistryError('signature_invalid', 'signature must be ed25519:<base64 of 64 bytes>.', 'signature')
    const form = await this.c.verifyHeartbeat(agentId, timestamp, state.publicKey, signature, priority)
    if (!form)
      throw new RegistryError(
        'signature_invalid',
        'The heartbeat signature does not verify against the entity key (over agent_id followed by timestamp, or the timestamp alone).',
        'signature'
      )
    // The state may have gone (deregistration) while the signature was being checked.
    if (this.states.get(agentId) !== state) throw new RegistryError('entity_not_found', undefined, 'agent_id')
    const receivedAt = this.now().getTime()
    state.last_seen = Math.max(state.last_seen, receivedAt)
    this.dirty.add(agentId)
    this.accepted++
    this.c.bus.publish('agent_heartbeat', { entity_id: agentId, timestamp, form })
    // A sweep may be writing this entity's inactive transition; the heartbeat then undoes it.
    await this.transitions.get(agentId)?.catch(() => {})
    if (!state.active && this.states.get(agentId) === state) {
      // The heartbeat stands when the status change cannot be written (a full disk): the next one retries it.
      await this.transition(agentId, state, true, receivedAt).catch(err => {
        if (!(err instanceof RegistryError && err.code === 'storage_full')) throw err
      })
    }
    return { type: 'ack', agent_id: agentId, timestamp: frame.timestamp, status: 'active' }
  }

  private stateOf(entityId: string): LiveState {
    const state = this.states.get(entityId)
    if (state) return state
    const record = this.c.store.getEntity(entityId)
    if (!record)
      throw new RegistryError('entity_not_found', `No entity ${entityId} is registered on this node.`, 'agent_id')
    throw new RegistryError(
      'not_home_registry',
      `The home registry of ${entityId} is ${record.home_registry}; send its heartbeats there.`,
      'agent_id',
      { home_registry: record.home_registry }
    )
  }

  /** Whether heartbeats for this entity are accepted here (it exists and its home is this node). */
  check(entityId: string): void {
    this.stateOf(entityId)
  }

  /**
   * Flips every home entity silent for longer than the threshold to inactive, a batch of
   * SWEEP_BATCH per transaction, SWEEP_BATCHES_IN_FLIGHT at a time. Returns how many. A sweep
   * asked for while one runs shares it.
   */
  sweep(): Promise<number> {
    if (this.sweeping) return this.sweeping
    const started = performance.now()
    this.sweeping = this.sweepInBatches().finally(() => {
      this.sweeping = null
      this.counts.sweeps++
      this.counts.sweepSeconds += (performance.now() - started) / 1000
    })
    return this.sweeping
  }

  private async sweepInBatches(): Promise<number> {
    // The states themselves, not their IDs: a lookup in a map of a million entities costs a cache
    // miss or two (over a microsecond a transition at 1M), and a state replaced or dropped meanwhile
    // says so itself (its row is gone). Taken in entity ID order (see SWEEP_SORT_RUN).
    const silent = new SortedRuns<[string, LiveState]>(entry => entry[0], SWEEP_SORT_RUN)
    const now = this.now().getTime()
    let seen = 0
    for (const entry of this.states) {
      const closedRun = this.isSilent(entry[0], entry[1], now) && silent.push(entry)
      // A map's iteration goes on correctly across turns, whatever is added or removed meanwhile.
      if (++seen % SWEEP_SCAN_CHUNK === 0 || closedRun) await nextTurn()
    }
    const total = silent.size
    let changed = 0
    const writing: Promise<number>[] = []
    const started = performance.now()
    const spreadMs = this.c.liveness.sweepIntervalMs / 2
    for (let i = 0; i < total; i += SWEEP_BATCH) {
      if (writing.length === SWEEP_BATCHES_IN_FLIGHT) changed += await (writing.shift() as Promise<number>)
      // Checked after the wait: a stop asked for meanwhile starts no further batch.
      if (this.stopping) break
      const batch = this.deactivate(silent.take(SWEEP_BATCH))
      // A failed batch fails the sweep when its turn comes; until then it must not go unhandled.
      batch.catch(() => {})
      writing.push(batch)
      // Requests and searches get a turn between the signing of two batches; past SWEEP_UNPACED,
      // the batches left share what is left of the spread.
      const next = i + SWEEP_BATCH
      const left = Math.ceil((total - next) / SWEEP_BATCH)
      const pauseMs = next < SWEEP_UNPACED || left === 0 ? 0 : (spreadMs - (performance.now() - started)) / (left + 1)
      await this.pause(pauseMs)
    }
    for (const batch of writing) changed += await batch
    return changed
  }

  /** Waits `ms` (at least a turn of the event loop); a stop ends the wait at once. */
  private pause(ms: number): Promise<void> {
    if (ms < 1) return nextTurn()
    return new Promise<void>(resolve => {
      // Like the sweep timer, a paced sweep does not keep the process alive.
      const timer = setTimeout(done, ms).unref()
      function done(): void {
        clearTimeout(timer)
        resolve()
      }
      this.wakeSweep = done
    }).finally(() => {
      this.wakeSweep = null
    })
  }

  private isSilent(entityId: string, s: LiveState, now: number): boolean {
    return (
      s.row >= 0 &&
      s.active &&
      now - Math.max(s.last_seen, this.observingSince) > this.c.liveness.inactiveAfterMs &&
      !this.transitions.has(entityId)
    )
  }

  /**
   * Commits the inactive transition of those of `silent` still current and silent, in one transaction:
   * a registration waits behind one batch of a mass sweep, not behind all of it. Returns how many.
   */
  private async deactivate(silent: [string, LiveState][]): Promise<number> {
    const at = this.now().getTime()
    const changes: Transition[] = []
    for (const [entityId, state] of silent)
      if (this.isSilent(entityId, state, at)) changes.push(this.transitionOf(entityId, state, false, at))
    return changes.length === 0 ? 0 : this.commitTransitions(changes)
  }

  /**
   * Commits a status change: the liveness state and a node-signed `entity.status` operation, then
   * announces it. One transition per entity at a time.
   */
  private transition(entityId: string, state: LiveState, active: boolean, at: number): Promise<void> {
    const running = this.transitions.get(entityId)
    if (running) return running
    return this.commitTransitions([this.transitionOf(entityId, state, active, at)]).then(() => {})
  }

  private transitionOf(entityId: string, state: LiveState, active: boolean, at: number): Transition {
    const next: LivenessRecord = {
      last_seen: state.last_seen,
      active,
      active_since: active ? at : null,
      active_ms: state.active_ms + (!active && state.active_since !== null ? at - state.active_since : 0),
      observed_since: state.observed_since
    }
    const lastHeartbeat = state.last_seen > state.observed_since ? new Date(state.last_seen).toISOString() : null
    const status = active ? 'active' : 'inactive'
    const changedAt = new Date(at).toISOString()
    return {
      entityId,
      state,
      next,
      event: { entity_id: entityId, status, last_heartbeat: lastHeartbeat, changed_at: changedAt }
    }
  }

  /**
   * The signed operation stating the transitions: `entity.status` for one, `entity.status.batch`
   * for several (a sweep's batch, all changed at the same time), signed once for all of them.
   */
  private operationOf(changes: Transition[]): { op: Operation; subjects?: string[] } {
    const [first] = changes as [Transition]
    const { status, last_heartbeat, changed_at } = first.event
    if (changes.length === 1)
      return { op: statusOperation(this.c.identity, first.entityId, status, last_heartbeat, changed_at) }
    const listed = changes.map(({ event }) => ({
      entity_id: event.entity_id,
      status: event.status,
      last_heartbeat: event.last_heartbeat
    }))
    return { op: statusBatchOperation(this.c.identity, listed, changed_at), subjects: listed.map(c => c.entity_id) }
  }

  /**
   * Writes the transitions in one transaction, then applies and announces those of entities still
   * here. Until then each entity's transition is in progress (`transitions`), for heartbeats to wait on.
   */
  private async commitTransitions(changes: Transition[]): Promise<number> {
    const work = this.writeTransitions(changes)
    const settled = work.then(
      () => {},
      () => {}
    )
    for (const change of changes) this.transitions.set(change.entityId, settled)
    try {
      return await work
    } finally {
      for (const change of changes) this.transitions.delete(change.entityId)
    }
  }

  private async writeTransitions(changes: Transition[]): Promise<number> {
    // The record keeps the status it was registered with: for a home entity, reads take the
    // status from here (`current`), and the stored liveness state survives a restart. Rewriting
    // the record (decoded, encoded and compressed again) was half the cost of a transition.
    const written = await this.c.store.commit(tx => {
      const present = changes.filter(({ entityId, next }) => {
        // A state is made for a stored entity, and an entity leaves the store only with a
        // tombstone written in the same transaction (a new registration lifts it): asking the small
        // tombstone table spares a random page of the entity table (11 µs a change at 1M).
        if (tx.getTombstone(entityId)) return false
        tx.putLiveness(entityId, next)
        return true
      })
      if (present.length === 0) return present
      const { op, subjects } = this.operationOf(present)
      tx.appendOperation(op, subjects)
      return present
    })
    let applied = 0
    for (const { state, next, event } of written) {
      // Replaced (a new registration) or dropped (a deregistration) meanwhile.
      if (state.row < 0) continue
      // A heartbeat received meanwhile keeps its time (and makes the entity active again, see apply).
      const lastSeen = Math.max(state.last_seen, next.last_seen)
      state.set(next)
      state.last_seen = lastSeen
      applied++
      this.counts[next.active ? 'activated' : 'deactivated']++
      this.c.bus.publish(next.active ? 'agent_became_active' : 'agent_became_inactive', event)
      // What the mesh announces as agent_status (the signed operation is in the store's log).
      this.c.bus.publish('agent_status', event)
    }
    return applied
  }

  /**
   * Writes the last-seen times gathered since the previous flush, in one transaction. A batch
   * already being written holds only what was dirty when it began, so a flush asked for meanwhile
   * (the one at stop) writes the rest right after it; callers in that time share the second batch.
   */
  flush(): Promise<void> {
    if (this.flushing === null) {
      this.flushing = this.writeBatch().finally(() => {
        this.flushing = null
      })
      return this.flushing
    }
    this.flushQueued ??= this.flushing
      .catch(() => {})
      .then(() => {
        this.flushQueued = null
        return this.flush()
      })
    return this.flushQueued
  }

  private async writeBatch(): Promise<void> {
    if (this.dirty.size === 0 && this.removed.size === 0) return
    const batch: [string, LivenessRecord][] = []
    for (const id of this.dirty) {
      const s = this.states.get(id)
      if (s) batch.push([id, s.record()])
    }
    // Written states replace what an earlier registration of the same key left.
    const removed = [...this.removed].filter(id => !this.dirty.has(id))
    this.dirty.clear()
    this.removed.clear()
    try {
      await this.c.store.commit(tx => {
        for (const [id, record] of batch) tx.putLiveness(id, record)
        for (const id of removed) tx.deleteLiveness(id)
      })
    } catch (err) {
      // Not written (a full disk): kept for the next flush, which writes the states as they are then.
      for (const [id] of batch) if (this.states.has(id)) this.dirty.add(id)
      for (const id of removed) if (!this.dirty.has(id)) this.removed.add(id)
      throw err
    }
  }

  private isHome(record: EntityViewFields): boolean {
    return record.home_registry_id !== undefined
      ? record.home_registry_id === this.c.identity.registryId
      : record.home_registry === this.c.settings.host
  }

  private initialState(record: EntityViewFields): LivenessRecord {
    const registered = Date.parse(record.registered_at)
    const lastSeen = Math.max(registered, record.last_heartbeat ? Date.parse(record.last_heartbeat) : 0)
    const active = record.status === 'active'
    return {
      last_seen: lastSeen,
      active,
      active_since: active ? lastSeen : null,
      active_ms: 0,
      observed_since: registered
    }
  }

  /** A new registration counts as a sign of life: the spec makes it active at once. */
  private observe(entityId: string, committed?: EntityRecord): void {
    const record = committed ?? this.c.store.getEntity(entityId)
    if (!record || !this.isHome(record)) return
    this.replace(entityId, this.table.add(this.initialState(record), parsePublicKey(record.public_key)))
    // Nothing to write: until its first heartbeat the state is the one `load` derives from the
    // record. A record left by an earlier registration of the same key stays marked for removal.
  }

  private replace(entityId: string, state: LiveState): void {
    const before = this.states.get(entityId)
    if (before) this.table.remove(before)
    this.states.set(entityId, state)
  }

  private forget(entityId: string): void {
    const state = this.states.get(entityId)
    if (!state) return
    this.states.delete(entityId)
    this.table.remove(state)
    this.dirty.delete(entityId)
    this.removed.add(entityId)
  }
}
