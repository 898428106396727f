/**
 * A posting list's term weights by slot, exact in two bytes a slot: each slot holds the number of
 * its weight in the list's table of distinct weights (0: the slot does not hold the term).
 *
 * Why a table: a weight follows from a document's field counts and lengths, which repeat, so a list
 * of a million postings has a few hundred distinct weights (at most 895 in the benchmark's 1M
 * corpus). Four bytes a slot made each list read by slot 4.5 MB at a million documents, and each
 * search thread keeps up to 32 of them; the reads of a filtered or walked query also move half as
 * many bytes. A list with more distinct weights than the codes can number has none (see `build`).
 */
import { widened } from '../util/typed-arrays.js'

/** Codes are 16 bits and 0 means "not held". */
const MAX_CODES = 65_535
/** The build's hash of weights to codes: open addressing over twice the most codes. */
const HASH_BITS = 17
const HASH_SIZE = 1 << HASH_BITS
const EMPTY = 0xffffffff

/** A source of array buffers to reuse (see SpareBuffers in impact-walk.ts). */
export interface BufferSource {
  take(bytes: number): ArrayBuffer
}

const fresh: BufferSource = { take: bytes => new ArrayBuffer(bytes) }

// Scratch shared by every build (the engine runs on one thread): a weight's float bits, and the hash.
const floatView = new Float32Array(1)
const bitsView = new Uint32Array(floatView.buffer)
const hashKeys = new Uint32Array(HASH_SIZE).fill(EMPTY)
const hashCodes = new Uint16Array(HASH_SIZE)
/**
 * Before the hash, the last weight met in each narrow range of weights and its code: a list's
 * weights are few, so most postings find theirs there without a probe of the hash.
 */
const RANGES = 1 << 16
const RANGE_SCALE = RANGES / 2.5
const rangeBits = new Uint32Array(RANGES)
const rangeCodes = new Uint16Array(RANGES)

/**
 * Numbers float32 weights 1, 2, … as they come, the same number for the same weight (through the
 * shared scratch: one numbering at a time, ended by `finish`).
 */
export class WeightNumbering {
  values = new Float32Array(256)
  count = 1
  private readonly used: number[] = []

  constructor() {
    // Code 0 marks a range with no weight yet (no weight is numbered 0).
    rangeCodes.fill(0)
  }

  /** The weight's number; 0 when the numbers are used up. */
  number(weight: number): number {
    floatView[0] = weight
    const bits = bitsView[0] as number
    const range = Math.min(RANGES - 1, (weight * RANGE_SCALE) >>> 0)
    if (rangeCodes[range] !== 0 && rangeBits[range] === bits) return rangeCodes[range] as number
    let h = Math.imul(bits, 0x9e3779b1) >>> (32 - HASH_BITS)
    let key = hashKeys[h] as number
    while (key !== EMPTY && key !== bits) {
      h = (h + 1) & (HASH_SIZE - 1)
      key = hashKeys[h] as number
    }
    let code: number
    if (key === EMPTY) {
      if (this.count > MAX_CODES) return 0
      code = this.count++
      if (code >= this.values.length) this.values = widened(this.values, this.values.length * 2)
      this.values[code] = floatView[0] as number
      hashKeys[h] = bits
      hashCodes[h] = code
      this.used.push(h)
    } else code = hashCodes[h] as number
    rangeBits[range] = bits
    rangeCodes[range] = code
    return code
  }

  /** Clears the scratch for the next numbering. */
  finish(): void {
    for (const h of this.used) hashKeys[h] = EMPTY
    this.used.length = 0
  }
}

export class SlotWeights {
  /** By slot: the code of its weight (0: not held). */
  codes: Uint16Array
  /** By code: the weight (values[0] is 0). */
  values: Float32Array
  private count: number
  /** Codes by weight, for weights added after the build (made at the first). */
  private codeOf: Map<number, number> | null = null

  private constructor(codes: Uint16Array, values: Float32Array, count: number) {
    this.codes = codes
    this.values = values
    this.count = count
  }

  /**
   * The weights of `slots[i]` = `weights[i]` for i < length, for `slotCount` slots (codes in a
   * buffer from `buffers`), or null when they have more distinct values than codes.
   */
  static build(
    slots: Uint32Array,
    weights: Float32Array,
    length: number,
    slotCount: number,
    buffers: BufferSource = fresh
  ): SlotWeights | null {
    const buffer = buffers.take(slotCount * 2)
    const codes = new Uint16Array(buffer, 0, buffer.byteLength >> 1)
    codes.fill(0)
    const numbering = new WeightNumbering()
    try {
      for (let i = 0; i < length; i++) {
        const code = numbering.number(weights[i] as number)
        if (code === 0) return null
        codes[slots[i] as number] = code
      }
    } finally {
      numbering.finish()
    }
    return new SlotWeights(codes, numbering.values, numbering.count)
  }

  /** Slots below this are covered. */
  get length(): number {
    return this.codes.length
  }

  /** Codes as long as `slotCount` at least. */
  ensure(slotCount: number): void {
    if (this.codes.length < slotCount) this.codes = widened(this.codes, Math.max(slotCount, this.codes.length * 2))
  }

  /** The slot's weight (0: not held). */
  at(slot: number): number {
    return this.values[this.codes[slot] as number] as number
  }

  /** Sets the slot's weight; false when it is a new value and the codes are used up (the caller drops these). */
  set(slot: number, weight: number): boolean {
    const value = Math.fround(weight)
    if (this.codeOf === null) {
      this.codeOf = new Map()
      for (let c = 1; c < this.count; c++) this.codeOf.set(this.values[c] as number, c)
    }
    let code = this.codeOf.get(value)
    if (code === undefined) {
      if (this.count > MAX_CODES) return false
      code = this.count++
      if (code >= this.values.length) this.values = widened(this.values, this.values.length * 2)
      this.values[code] = value
      this.codeOf.set(value, code)
    }
    this.ensure(slot + 1)
    this.codes[slot] = code
    return true
  }

  clear(slot: number): void {
    if (slot < this.codes.length) this.codes[slot] = 0
  }
}
