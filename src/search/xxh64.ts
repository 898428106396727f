/**
 * XXH64 of a string's UTF-8 bytes, its low 32 bits: what bloom-filters' `Hashing.serialize` returns
 * for a string (xxhashjs's `h64(text, seed).toNumber()`), so our filters keep its index rule and
 * peers' filters stay readable. xxhashjs builds a 64-bit object per step (about 4 µs a hash here);
 * this works on pairs of 32-bit halves in local variables (test/unit/xxh64.test.ts checks them
 * against each other).
 */

// The five primes of XXH64, as (high, low) halves.
const P1H = 0x9e3779b1
const P1L = 0x85ebca87
const P2H = 0xc2b2ae3d
const P2L = 0x27d4eb4f
const P3H = 0x165667b1
const P3L = 0x9e3779f9
const P4H = 0x85ebca77
const P4L = 0xc2b2ae63
const P5H = 0x27d4eb2f
const P5L = 0x165667c5

// The result of the last operation below, as halves: no object per step.
let rh = 0
let rl = 0

function mul(ah: number, al: number, bh: number, bl: number): void {
  const a0 = al & 0xffff
  const a1 = al >>> 16
  const b0 = bl & 0xffff
  const b1 = bl >>> 16
  const mid = a0 * b1 + a1 * b0
  const low = a0 * b0 + (mid % 0x10000) * 0x10000
  rl = low >>> 0
  const high = a1 * b1 + Math.floor(mid / 0x10000) + Math.floor(low / 0x100000000)
  rh = (high + Math.imul(al, bh) + Math.imul(ah, bl)) >>> 0
}

function add(ah: number, al: number, bh: number, bl: number): void {
  const low = al + bl
  rl = low >>> 0
  rh = (ah + bh + (low > 0xffffffff ? 1 : 0)) >>> 0
}

/** Rotates left by r < 32. */
function rotl(h: number, l: number, r: number): void {
  rh = ((h << r) | (l >>> (32 - r))) >>> 0
  rl = ((l << r) | (h >>> (32 - r))) >>> 0
}

/** acc + lane × P2, rotated by 31, × P1. */
function round(ah: number, al: number, lh: number, ll: number): void {
  mul(lh, ll, P2H, P2L)
  add(ah, al, rh, rl)
  rotl(rh, rl, 31)
  mul(rh, rl, P1H, P1L)
}

function readLow(bytes: Uint8Array, at: number): number {
  return (
    ((bytes[at] as number) |
      ((bytes[at + 1] as number) << 8) |
      ((bytes[at + 2] as number) << 16) |
      ((bytes[at + 3] as number) << 24)) >>>
    0
  )
}

const encoder = new TextEncoder()
let scratch = new Uint8Array(256)

/** The low 32 bits of XXH64(UTF-8 of `text`, seed), the seed taken modulo 2³² as xxhashjs takes a number. */
export function xxh64Low32(text: string, seed: number): number {
  // Three bytes at most per UTF-16 unit.
  if (scratch.length < text.length * 3) scratch = new Uint8Array(text.length * 3)
  const bytes = scratch
  const len = encoder.encodeInto(text, bytes).written
  const seedLow = seed >>> 0
  let p = 0
  let hh: number
  let hl: number
  if (len >= 32) {
    add(0, seedLow, P1H, P1L)
    add(rh, rl, P2H, P2L)
    let v1h = rh
    let v1l = rl
    add(0, seedLow, P2H, P2L)
    let v2h = rh
    let v2l = rl
    let v3h = 0
    let v3l = seedLow
    // seed − P1 is seed + (2⁶⁴ − P1).
    add(0, seedLow, ~P1H >>> 0, ((~P1L >>> 0) + 1) >>> 0)
    let v4h = rh
    let v4l = rl
    for (; p + 32 <= len; p += 32) {
      round(v1h, v1l, readLow(bytes, p + 4), readLow(bytes, p))
      v1h = rh
      v1l = rl
      round(v2h, v2l, readLow(bytes, p + 12), readLow(bytes, p + 8))
      v2h = rh
      v2l = rl
      round(v3h, v3l, readLow(bytes, p + 20), readLow(bytes, p + 16))
      v3h = rh
      v3l = rl
      round(v4h, v4l, readLow(bytes, p + 28), readLow(bytes, p + 24))
      v4h = rh
      v4l = rl
    }
    const lanes = [
      [v1h, v1l, 1],
      [v2h, v2l, 7],
      [v3h, v3l, 12],
      [v4h, v4l, 18]
    ] as const
    hh = 0
    hl = 0
    for (const [vh, vl, r] of lanes) {
      rotl(vh, vl, r)
      add(hh, hl, rh, rl)
      hh = rh
      hl = rl
    }
    for (const [vh, vl] of lanes) {
      round(0, 0, vh, vl)
      mul((hh ^ rh) >>> 0, (hl ^ rl) >>> 0, P1H, P1L)
      add(rh, rl, P4H, P4L)
      hh = rh
      hl = rl
    }
  } else {
    add(0, seedLow, P5H, P5L)
    hh = rh
    hl = rl
  }
  add(hh, hl, 0, len)
  hh = rh
  hl = rl
  for (; p + 8 <= len; p += 8) {
    round(0, 0, readLow(bytes, p + 4), readLow(bytes, p))
    rotl((hh ^ rh) >>> 0, (hl ^ rl) >>> 0, 27)
    mul(rh, rl, P1H, P1L)
    add(rh, rl, P4H, P4L)
    hh = rh
    hl = rl
  }
  if (p + 4 <= len) {
    mul(0, readLow(bytes, p), P1H, P1L)
    rotl((hh ^ rh) >>> 0, (hl ^ rl) >>> 0, 23)
    mul(rh, rl, P2H, P2L)
    add(rh, rl, P3H, P3L)
    hh = rh
    hl = rl
    p += 4
  }
  for (; p < len; p++) {
    mul(0, bytes[p] as number, P5H, P5L)
    rotl((hh ^ rh) >>> 0, (hl ^ rl) >>> 0, 11)
    mul(rh, rl, P1H, P1L)
    hh = rh
    hl = rl
  }
  // Avalanche: h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32.
  hl = (hl ^ (hh >>> 1)) >>> 0
  mul(hh, hl, P2H, P2L)
  hh = rh
  hl = (rl ^ ((rl >>> 29) | (rh << 3))) >>> 0
  hh = (hh ^ (hh >>> 29)) >>> 0
  mul(hh, hl, P3H, P3L)
  return (rl ^ rh) >>> 0
}
