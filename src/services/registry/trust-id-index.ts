/**
 * Identity ID → its number in a trust computation, for the ten million lookups of a full one. A Map
 * keyed by fresh strings cost about 1.5 µs a lookup at a million identities on this machine: hashing,
 * then cache misses through its table, the key and the key's characters. IDs are `zns:` + 32 hex digits
 * (`zns:svc:`, `zns:dev:` for services and developers); here each is three exact numbers (digits 0–12,
 * 13–25, and 26–31 with its kind) held in one open-addressing table of [numbers…, identity number]
 * rows, so a lookup reads about one cache line. The same numbers come from an ID's 16 raw bytes
 * (attestation edges keep subjects that way, store/attestation-edges.ts): no string is made at all.
 * Anything not shaped like an ID is looked up in a Map.
 */
import { ID_KINDS, type RawId } from '../../store/attestation-edges.js'

const STRIDE = 4
const EMPTY = -1
const scratch = { k1: 0, k2: 0, k3: 0 }

/** The three numbers of an ID string into `scratch`; false when it is not shaped like an ID. */
function keysOfString(id: string): boolean {
  let start = 4
  let kind: number = ID_KINDS.agent
  if (id.length === 40 && id.charCodeAt(7) === 58 /* ':' */) {
    const c = id.charCodeAt(4)
    if (c === 115 /* s(vc) */) kind = ID_KINDS.service
    else if (c === 100 /* d(ev) */) kind = ID_KINDS.developer
    else return false
    start = 8
  } else if (id.length !== 36) return false
  if (id.charCodeAt(0) !== 122 /* z */ || id.charCodeAt(3) !== 58 /* ':' */) return false
  let k1 = 0
  let k2 = 0
  let k3 = 0
  for (let d = 0; d < 32; d++) {
    const c = id.charCodeAt(start + d)
    const digit = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1
    if (digit < 0) return false
    if (d < 13) k1 = k1 * 16 + digit
    else if (d < 26) k2 = k2 * 16 + digit
    else k3 = k3 * 16 + digit
  }
  scratch.k1 = k1
  scratch.k2 = k2
  scratch.k3 = k3 * 4 + kind
  return true
}

/** The three numbers of a raw ID (`bytes[at … at + 15]`, kind `kind`) into `scratch`. */
function keysOfBytes(bytes: Uint8Array, at: number, kind: number): void {
  let k1 = 0
  let k2 = 0
  let k3 = 0
  for (let d = 0; d < 32; d++) {
    const byte = bytes[at + (d >> 1)]!
    const digit = d & 1 ? byte & 15 : byte >> 4
    if (d < 13) k1 = k1 * 16 + digit
    else if (d < 26) k2 = k2 * 16 + digit
    else k3 = k3 * 16 + digit
  }
  scratch.k1 = k1
  scratch.k2 = k2
  scratch.k3 = k3 * 4 + kind
}

export class TrustIdIndex {
  /** Rows [k1, k2, k3, number]: k1 −1 marks an empty row. */
  private readonly rows: Float64Array
  private readonly mask: number
  /** IDs not shaped like one. */
  private readonly others = new Map<string, number>()

  /** Numbers `ids` 0 … n − 1 in the order given. */
  constructor(ids: readonly string[]) {
    let capacity = 1024
    while (capacity < ids.length * 2) capacity *= 2
    this.mask = capacity - 1
    this.rows = new Float64Array(capacity * STRIDE).fill(EMPTY)
    for (let i = 0; i < ids.length; i++) {
      if (!keysOfString(ids[i]!)) {
        this.others.set(ids[i]!, i)
        continue
      }
      let row = this.rowOf()
      while (this.rows[row * STRIDE] !== EMPTY) row = (row + 1) & this.mask
      const at = row * STRIDE
      this.rows[at] = scratch.k1
      this.rows[at + 1] = scratch.k2
      this.rows[at + 2] = scratch.k3
      this.rows[at + 3] = i
    }
  }

  get(id: string): number | undefined {
    return keysOfString(id) ? this.find() : this.others.get(id)
  }

  /** The number of the raw ID at `bytes[at … at + 15]` of kind `kind` (ID_KINDS). */
  getRaw(raw: RawId): number | undefined {
    keysOfBytes(raw.bytes, raw.at, raw.kind)
    return this.find()
  }

  has(id: string): boolean {
    return this.get(id) !== undefined
  }

  /** The row of the numbers in `scratch`. */
  private find(): number | undefined {
    const { k1, k2, k3 } = scratch
    for (let row = this.rowOf(); ; row = (row + 1) & this.mask) {
      const at = row * STRIDE
      const held = this.rows[at]!
      if (held === EMPTY) return undefined
      if (held === k1 && this.rows[at + 1] === k2 && this.rows[at + 2] === k3) return this.rows[at + 3]!
    }
  }

  /**
   * The first row to try for the numbers in `scratch`: all three mixed (real IDs are hash-derived,
   * but IDs that differ only in their last digits must spread too).
   */
  private rowOf(): number {
    let h = Math.imul(scratch.k3 | 0, 0x9e3779b1)
    h = Math.imul(h ^ (scratch.k2 % 4294967296) ^ (h >>> 15), 0x85ebca6b)
    h = Math.imul(h ^ (scratch.k1 % 4294967296) ^ (h >>> 13), 0xc2b2ae35)
    return ((h ^ (h >>> 16)) >>> 0) & this.mask
  }
}
