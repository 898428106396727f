/**
 * Dot products of one int8 query against many int8 vectors, the inner loop of the semantic scan.
 *
 * The kernel is a WebAssembly SIMD function assembled below from its bytes (no toolchain, no binary
 * file): per vector it sign-extends 16 int8 lanes to int16 and accumulates `i32x4.dot_i16x8_s`,
 * then writes the int32 sum. Vectors are stored with a stride rounded up to 16 bytes (zero padded),
 * in the module's own memory, so a query reads 1 byte per dimension instead of 4 (float32) and
 * does 16 multiply-adds per instruction. A plain JavaScript loop computes the same sums where
 * WebAssembly SIMD is unavailable; the tests check that both agree.
 *
 * The function, in the text format:
 *   (func (export "scan") (param $vec i32) (param $count i32) (param $stride i32) (param $q i32) (param $out i32)
 *     (local $i i32) (local $j i32) (local $acc v128) (local $a v128) (local $b v128)
 *     for i < count:  acc = 0; for j < stride step 16: a = load(vec + j); b = load(q + j)
 *                       acc += dot(extend_low(a), extend_low(b)) + dot(extend_high(a), extend_high(b))
 *                     out[i] = acc[0] + acc[1] + acc[2] + acc[3];  vec += stride
 */

const LOCAL_GET = 0x20
const LOCAL_SET = 0x21
const SIMD = 0xfd
const V128_LOAD = [SIMD, 0x00, 0x00, 0x00]
const EXTEND_LOW_S = [SIMD, 0x87, 0x01]
const EXTEND_HIGH_S = [SIMD, 0x88, 0x01]
const DOT_I16X8_S = [SIMD, 0xba, 0x01]
const I32X4_ADD = [SIMD, 0xae, 0x01]
const extractLane = (lane: number) => [SIMD, 0x1b, lane]
const [VEC, COUNT, STRIDE, Q, OUT, I, J, ACC, A, B] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]

function scanFunctionBody(): number[] {
  const get = (i: number) => [LOCAL_GET, i]
  const set = (i: number) => [LOCAL_SET, i]
  const code = [
    0x02,
    0x40,
    0x03,
    0x40, // block, loop
    ...get(I),
    ...get(COUNT),
    0x4f,
    0x0d,
    0x01, // if i >= count break
    SIMD,
    0x0c,
    ...new Array<number>(16).fill(0),
    ...set(ACC), // acc = 0
    0x41,
    0x00,
    ...set(J), // j = 0
    0x02,
    0x40,
    0x03,
    0x40,
    ...get(J),
    ...get(STRIDE),
    0x4f,
    0x0d,
    0x01, // if j >= stride break
    ...get(VEC),
    ...get(J),
    0x6a,
    ...V128_LOAD,
    ...set(A),
    ...get(Q),
    ...get(J),
    0x6a,
    ...V128_LOAD,
    ...set(B),
    ...get(ACC),
    ...get(A),
    ...EXTEND_LOW_S,
    ...get(B),
    ...EXTEND_LOW_S,
    ...DOT_I16X8_S,
    ...I32X4_ADD,
    ...get(A),
    ...EXTEND_HIGH_S,
    ...get(B),
    ...EXTEND_HIGH_S,
    ...DOT_I16X8_S,
    ...I32X4_ADD,
    ...set(ACC),
    ...get(J),
    0x41,
    0x10,
    0x6a,
    ...set(J), // j += 16
    0x0c,
    0x00,
    0x0b,
    0x0b, // br loop, end, end
    ...get(OUT),
    ...get(I),
    0x41,
    0x02,
    0x74,
    0x6a, // address out + 4i
    ...get(ACC),
    ...extractLane(0),
    ...get(ACC),
    ...extractLane(1),
    0x6a,
    ...get(ACC),
    ...extractLane(2),
    0x6a,
    ...get(ACC),
    ...extractLane(3),
    0x6a,
    0x36,
    0x02,
    0x00, // i32.store
    ...get(VEC),
    ...get(STRIDE),
    0x6a,
    ...set(VEC), // vec += stride
    ...get(I),
    0x41,
    0x01,
    0x6a,
    ...set(I), // i += 1
    0x0c,
    0x00,
    0x0b,
    0x0b, // br loop, end, end
    0x0b // end of function
  ]
  const locals = [0x02, 0x02, 0x7f, 0x03, 0x7b] // 2 × i32, 3 × v128
  return [...uleb(locals.length + code.length), ...locals, ...code]
}

function uleb(n: number): number[] {
  const out: number[] = []
  do {
    let byte = n & 0x7f
    n >>>= 7
    if (n !== 0) byte |= 0x80
    out.push(byte)
  } while (n !== 0)
  return out
}

function section(id: number, content: number[]): number[] {
  return [id, ...uleb(content.length), ...content]
}

const ascii = (s: string) => [s.length, ...Array.from(s, c => c.charCodeAt(0))]

function moduleBytes(): Uint8Array<ArrayBuffer> {
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, [0x01, 0x60, 0x05, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x00]), // type: (i32 × 5) → ()
    ...section(2, [0x01, ...ascii('env'), ...ascii('memory'), 0x02, 0x00, 0x01]), // import memory, min 1 page
    ...section(3, [0x01, 0x00]), // one function of type 0
    ...section(7, [0x01, ...ascii('scan'), 0x00, 0x00]), // export it as "scan"
    ...section(10, [0x01, ...scanFunctionBody()])
  ])
}

type ScanFunction = (vec: number, count: number, stride: number, q: number, out: number) => void

const PAGE = 65_536

/**
 * Int8 vectors in one growable memory, with the query and the output next to them:
 *   [query: stride bytes][vectors: capacity × stride bytes][output: capacity × 4 bytes]
 * The layout is rebuilt (vectors copied) when the capacity grows.
 */
export class Int8Matrix {
  readonly stride: number
  private memory: WebAssembly.Memory
  private scanKernel: ScanFunction | null
  private capacity = 0
  private bytes!: Int8Array
  private output!: Int32Array

  constructor(
    readonly dimension: number,
    options: { simd?: boolean } = {}
  ) {
    this.stride = Math.ceil(dimension / 16) * 16
    this.memory = new WebAssembly.Memory({ initial: 1 })
    this.scanKernel = options.simd === false ? null : compileKernel(this.memory)
    this.grow(1024)
  }

  /** Whether the WebAssembly SIMD kernel is in use (else the JavaScript loop). */
  get simd(): boolean {
    return this.scanKernel !== null
  }

  private get vectorsOffset(): number {
    return this.stride
  }
  private get outputOffset(): number {
    return this.stride + this.capacity * this.stride
  }

  /** Makes room for `slots` vectors. */
  ensure(slots: number): void {
    if (slots <= this.capacity) return
    let capacity = Math.max(1024, this.capacity)
    while (capacity < slots) capacity *= 2
    this.grow(capacity)
  }

  private grow(capacity: number): void {
    const old =
      this.capacity > 0
        ? new Int8Array(this.memory.buffer, this.vectorsOffset, this.capacity * this.stride).slice()
        : null
    const needed = this.stride + capacity * this.stride + capacity * 4
    const pages = Math.ceil(needed / PAGE) - this.memory.buffer.byteLength / PAGE
    if (pages > 0) this.memory.grow(pages)
    this.capacity = capacity
    this.bytes = new Int8Array(this.memory.buffer)
    this.output = new Int32Array(this.memory.buffer, this.outputOffset, capacity)
    if (old) this.bytes.set(old, this.vectorsOffset)
  }

  /** Stores `values` (already quantised, length = dimension) at `slot`. */
  set(slot: number, values: Int8Array): void {
    this.ensure(slot + 1)
    const at = this.vectorsOffset + slot * this.stride
    this.bytes.set(values, at)
    this.bytes.fill(0, at + values.length, at + this.stride)
  }

  /** Dot products of `query` with the vectors in slots [0, count); the result is a view, valid until the next call. */
  scan(query: Int8Array, count: number): Int32Array {
    this.ensure(count)
    this.bytes.set(query, 0)
    this.bytes.fill(0, query.length, this.stride)
    if (this.scanKernel) {
      this.scanKernel(this.vectorsOffset, count, this.stride, 0, this.outputOffset)
    } else {
      const v = this.bytes
      const out = this.output
      for (let i = 0; i < count; i++) {
        const base = this.vectorsOffset + i * this.stride
        let sum = 0
        for (let d = 0; d < query.length; d++) sum += (v[base + d] as number) * (query[d] as number)
        out[i] = sum
      }
    }
    return this.output.subarray(0, count)
  }

  /**
   * Dot products of `query` with the vectors of the listed slots, written at those slots of the
   * returned view (the other entries are stale); valid until the next call.
   */
  scanSlots(query: Int8Array, slots: ArrayLike<number>): Int32Array {
    this.bytes.set(query, 0)
    this.bytes.fill(0, query.length, this.stride)
    const out = this.output
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as number
      if (this.scanKernel)
        this.scanKernel(this.vectorsOffset + slot * this.stride, 1, this.stride, 0, this.outputOffset + slot * 4)
      else out[slot] = this.dot(query, slot)
    }
    return out
  }

  /** Dot product of `query` with one stored vector. */
  dot(query: Int8Array, slot: number): number {
    const v = this.bytes
    const base = this.vectorsOffset + slot * this.stride
    let sum = 0
    for (let d = 0; d < query.length; d++) sum += (v[base + d] as number) * (query[d] as number)
    return sum
  }
}

function compileKernel(memory: WebAssembly.Memory): ScanFunction | null {
  const bytes = moduleBytes()
  if (!WebAssembly.validate(bytes)) return null
  const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } })
  return instance.exports.scan as ScanFunction
}

/**
 * Symmetric int8 quantisation of one vector: q = round(v · 127 / max|v|). Returns the values and
 * the scale that maps them back (v ≈ q · scale); a zero vector has scale 0.
 */
export function quantize(
  vector: Float32Array,
  into: Int8Array = new Int8Array(vector.length)
): { values: Int8Array; scale: number } {
  let max = 0
  for (let i = 0; i < vector.length; i++) max = Math.max(max, Math.abs(vector[i] as number))
  if (max === 0) {
    into.fill(0)
    return { values: into, scale: 0 }
  }
  const k = 127 / max
  for (let i = 0; i < vector.length; i++) into[i] = Math.round((vector[i] as number) * k)
  return { values: into, scale: max / 127 }
}
