/**
 * The liveness of the home entities in columns: one Float64Array per time and one buffer of public
 * keys, a row per entity. An object per entity with its times as fields cost five heap objects
 * (the object, a boxed number per time field that is not a small integer, the key's Buffer), and
 * at a million entities the full collections that mark them all paused the HTTP thread for
 * hundreds of milliseconds. A `LiveState` is now one small object: its row and its status.
 */
import type { LivenessRecord } from '../../store/records.js'
import { widened } from '../../util/typed-arrays.js'

const KEY_BYTES = 32
const INITIAL_ROWS = 1024

export class LivenessTable {
  lastSeen = new Float64Array(INITIAL_ROWS)
  /** NaN while inactive (the record's null). */
  activeSince = new Float64Array(INITIAL_ROWS)
  activeMs = new Float64Array(INITIAL_ROWS)
  observedSince = new Float64Array(INITIAL_ROWS)
  keys = new Uint8Array(INITIAL_ROWS * KEY_BYTES)
  private rows = 0
  private readonly free: number[] = []

  /** A new state holding `record` and `publicKey` (32 bytes; anything else is stored as zeros, which verifies nothing). */
  add(record: LivenessRecord, publicKey: Uint8Array | null): LiveState {
    const row = this.free.pop() ?? this.grow()
    const state = new LiveState(this, row, record.active)
    state.set(record)
    const key = this.keys.subarray(row * KEY_BYTES, (row + 1) * KEY_BYTES)
    if (publicKey?.length === KEY_BYTES) key.set(publicKey)
    else key.fill(0)
    return state
  }

  /** Frees the state's row. The state reads as empty from then on, and writes to it go nowhere. */
  remove(state: LiveState): void {
    if (state.row < 0) return
    this.free.push(state.row)
    state.row = -1
  }

  private grow(): number {
    const row = this.rows++
    if (row < this.lastSeen.length) return row
    const size = this.lastSeen.length * 2
    this.lastSeen = widened(this.lastSeen, size)
    this.activeSince = widened(this.activeSince, size)
    this.activeMs = widened(this.activeMs, size)
    this.observedSince = widened(this.observedSince, size)
    this.keys = widened(this.keys, size * KEY_BYTES)
    return row
  }
}

/**
 * One home entity's liveness: a row of a `LivenessTable`. Its identity matters: code that awaits
 * checks the state is still the entity's (a deregistration replaces or drops it).
 */
export class LiveState implements LivenessRecord {
  constructor(
    private readonly table: LivenessTable,
    public row: number,
    public active: boolean
  ) {}

  get last_seen(): number {
    return this.table.lastSeen[this.row] as number
  }

  set last_seen(value: number) {
    this.table.lastSeen[this.row] = value
  }

  get active_since(): number | null {
    const value = this.table.activeSince[this.row] as number
    return Number.isNaN(value) ? null : value
  }

  set active_since(value: number | null) {
    this.table.activeSince[this.row] = value ?? NaN
  }

  get active_ms(): number {
    return this.table.activeMs[this.row] as number
  }

  set active_ms(value: number) {
    this.table.activeMs[this.row] = value
  }

  get observed_since(): number {
    return this.table.observedSince[this.row] as number
  }

  set observed_since(value: number) {
    this.table.observedSince[this.row] = value
  }

  /** A copy of the entity's public key: a verification outlives a removal that frees the row for another entity. */
  get publicKey(): Buffer {
    if (this.row < 0) return Buffer.alloc(KEY_BYTES)
    return Buffer.from(this.table.keys.subarray(this.row * KEY_BYTES, (this.row + 1) * KEY_BYTES))
  }

  set(record: LivenessRecord): void {
    this.last_seen = record.last_seen
    this.active = record.active
    this.active_since = record.active_since
    this.active_ms = record.active_ms
    this.observed_since = record.observed_since
  }

  /** The state as a plain record (what the store writes). */
  record(): LivenessRecord {
    return {
      last_seen: this.last_seen,
      active: this.active,
      active_since: this.active_since,
      active_ms: this.active_ms,
      observed_since: this.observed_since
    }
  }
}
