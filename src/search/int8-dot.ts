/**
 * Dot products of one int8 query against many int8 vectors, the inner loop of the semantic scan.
 *
 * The kernels are WebAssembly SIMD functions assembled below from their bytes (no toolchain, no
 * binary file), one module per dimension: per vector they load 8 int8 lanes at a time sign-extended
 * to int16 (`v128.load8x8_s`) and accumulate `i32x4.dot_i16x8_s` with the query's lanes, extended
 * once per call and held in locals; the loop over the dimensions is unrolled. Vectors are stored
 * with a stride rounded up to 16 bytes (zero padded), in the module's own memory, so a query reads
 * 1 byte per dimension instead of 4 (float32). At 1M vectors of 128 dimensions a scan takes about
 * 8 ms here (10 ms with a loop over 16-byte chunks that extended both sides each time), about what
 * reading 128 MB costs on one core. A plain JavaScript loop computes the same where WebAssembly
 * SIMD is unavailable; the tests check that both agree.
 *
 * Two functions, in the text format:
 *   (func (export "scan") (param $vec i32) (param $count i32) (param $stride i32) (param $q i32) (param $out i32)
 *     for i < count:  out[i] = dot(vec, q) as int32;  vec += stride
 *   (func (export "similar") (param $vec i32) (param $count i32) (param $stride i32) (param $q i32) (param $out i32)
 *                            (param $scales i32) (param $qscale f32) (param $min f32) (param $above i32) (result i32)
 *     found = 0
 *     for i < count:  sim = f32(dot(vec, q)) × scales[i] × qscale;  out[i] = sim
 *                     above[found] = i;  found += sim >= min;  vec += stride
 *     return found
 *   where dot(vec, q): acc = Σ over h < stride / 8 of dot(load8x8_s(vec + 8h), q_h)   (unrolled)
 *                      acc[0] + acc[1] + acc[2] + acc[3]
 *   and q_h = load8x8_s(q + 8h), read into locals before the loop.
 *   (func (export "similarSlots") (param $vec i32) (param $slots i32) (param $count i32) (param $stride i32)
 *                                 (param $q i32) (param $out i32) (param $scales i32) (param $qscale f32)
 *     for i < count:  slot = slots[i];  out[slot] = f32(dot(vec + slot × stride, q)) × scales[slot] × qscale
 * `similar` turns the dot products into cosine similarities and lists those reaching `min` in the
 * same pass: done in JavaScript over the int32 output, that pass cost a third of the scan.
 * `similarSlots` does the same for a list of slots (a query's candidates) in one call: one call per
 * slot from JavaScript cost more than the dot product itself.
 */

const I32_TYPE = 0x7f
const F32_TYPE = 0x7d
const V128_TYPE = 0x7b
const LOCAL_GET = 0x20
const LOCAL_SET = 0x21
const I32_CONST = 0x41
const I32_ADD = 0x6a
const I32_MUL = 0x6c
const I32_SHL = 0x74
const I32_LOAD = [0x28, 0x02, 0x00]
const I32_STORE = [0x36, 0x02, 0x00]
const F32_LOAD = [0x2a, 0x02, 0x00]
const F32_STORE = [0x38, 0x02, 0x00]
const F32_GE = 0x60
const F32_MUL = 0x94
const F32_CONVERT_I32_S = 0xb2
const SIMD = 0xfd
const DOT_I16X8_S = [SIMD, 0xba, 0x01]
const I32X4_ADD = [SIMD, 0xae, 0x01]
const extractLane = (lane: number) => [SIMD, 0x1b, lane]
const get = (i: number) => [LOCAL_GET, ...uleb(i)]
const set = (i: number) => [LOCAL_SET, ...uleb(i)]
/** The address base + 4 · index. */
const element = (base: number, index: number) => [...get(base), ...get(index), I32_CONST, 0x02, I32_SHL, I32_ADD]

// Parameters shared by both functions, then each one's own.
const [VEC, COUNT, STRIDE, Q, OUT] = [0, 1, 2, 3, 4]
const [SCALES, QSCALE, MIN, ABOVE] = [5, 6, 7, 8]

/** The locals of the loop over the vectors: i and acc, then the query's halves (int16 lanes), one per 8 dimensions. */
interface Locals {
  i: number
  acc: number
  query: number
}

/** Reads 8 int8 lanes at base + offset, sign-extended to int16 (`v128.load8x8_s`, alignment hint 1 byte). */
const load8x8 = (base: number, offset: number) => [...get(base), SIMD, 0x01, 0x00, ...uleb(offset)]

/** The query's int16 halves (the query's address is parameter `param`), read into the locals from `query` on. */
function queryHalves(param: number, stride: number, query: number): number[] {
  const code: number[] = []
  for (let h = 0; h < stride / 8; h++) code.push(...load8x8(param, h * 8), ...set(query + h))
  return code
}

/** The int32 dot product of the vector at `base` with the query's halves (locals from `query`), left on the stack; `acc` is scratch. */
function dotProduct(base: number, query: number, acc: number, stride: number): number[] {
  const code: number[] = []
  for (let h = 0; h < stride / 8; h++) {
    code.push(...load8x8(base, h * 8), ...get(query + h), ...DOT_I16X8_S)
    if (h > 0) code.push(...I32X4_ADD)
  }
  code.push(...set(acc))
  code.push(...get(acc), ...extractLane(0), ...get(acc), ...extractLane(1), I32_ADD)
  code.push(...get(acc), ...extractLane(2), I32_ADD, ...get(acc), ...extractLane(3), I32_ADD)
  return code
}

/**
 * The loop over the vectors: for each, the int32 dot product with the query is left on the stack
 * for `store` (which must consume it), then vec moves on by the stride. The dot product is
 * unrolled for the stride (the module is built per dimension), and the query's int16 halves are
 * read once per call into locals, so each 8 dimensions cost one extending load, one
 * `i32x4.dot_i16x8_s` and one add.
 */
function vectorLoop({ i, acc, query }: Locals, stride: number, store: number[]): number[] {
  return [
    ...queryHalves(Q, stride, query),
    0x02,
    0x40,
    0x03,
    0x40, // block, loop
    ...get(i),
    ...get(COUNT),
    0x4f,
    0x0d,
    0x01, // if i >= count break
    ...dotProduct(VEC, query, acc, stride), // for `store`
    ...store,
    ...get(VEC),
    ...get(STRIDE),
    I32_ADD,
    ...set(VEC), // vec += stride
    ...get(i),
    I32_CONST,
    0x01,
    I32_ADD,
    ...set(i), // i += 1
    0x0c,
    0x00,
    0x0b,
    0x0b // br loop, end, end
  ]
}

/** A function body: its local declarations (groups of [count, type]), its code and the final `end`. */
function body(locals: [count: number, type: number][], code: number[]): number[] {
  const declared = [...uleb(locals.length), ...locals.flatMap(([count, type]) => [...uleb(count), type])]
  return [...uleb(declared.length + code.length + 1), ...declared, ...code, 0x0b]
}

function scanBody(stride: number): number[] {
  // After the 5 parameters: i, dot (i32); acc, the query's halves (v128).
  const locals = { i: 5, acc: 7, query: 8 }
  const DOT = 6
  // i32.store takes the address below the value: the dot product is set aside while the address is pushed.
  const store = [...set(DOT), ...element(OUT, locals.i), ...get(DOT), ...I32_STORE]
  return body(
    [
      [2, I32_TYPE],
      [1 + stride / 8, V128_TYPE]
    ],
    vectorLoop(locals, stride, store)
  )
}

function similarBody(stride: number): number[] {
  // After the 9 parameters: i, found (i32); acc, the query's halves (v128); sim (f32).
  const locals = { i: 9, acc: 11, query: 12 }
  const FOUND = 10
  const SIM = 12 + stride / 8
  const store = [
    F32_CONVERT_I32_S,
    ...element(SCALES, locals.i),
    ...F32_LOAD,
    F32_MUL,
    ...get(QSCALE),
    F32_MUL,
    ...set(SIM), // sim = f32(dot) × scales[i] × qscale
    ...element(OUT, locals.i),
    ...get(SIM),
    ...F32_STORE, // out[i] = sim
    ...element(ABOVE, FOUND),
    ...get(locals.i),
    ...I32_STORE, // above[found] = i
    ...get(FOUND),
    ...get(SIM),
    ...get(MIN),
    F32_GE,
    I32_ADD,
    ...set(FOUND) // found += sim >= min
  ]
  return body(
    [
      [2, I32_TYPE],
      [1 + stride / 8, V128_TYPE],
      [1, F32_TYPE]
    ],
    [...vectorLoop(locals, stride, store), ...get(FOUND)]
  )
}

// The parameters of similarSlots.
const [S_VEC, S_SLOTS, S_COUNT, S_STRIDE, Q_OF_SLOTS, S_OUT, S_SCALES, S_QSCALE] = [0, 1, 2, 3, 4, 5, 6, 7]

function similarSlotsBody(stride: number): number[] {
  // After the 8 parameters: i, slot, at (i32); acc, the query's halves (v128).
  const [I, SLOT, AT, ACC, QUERY] = [8, 9, 10, 11, 12]
  const code = [
    ...queryHalves(Q_OF_SLOTS, stride, QUERY),
    0x02,
    0x40,
    0x03,
    0x40, // block, loop
    ...get(I),
    ...get(S_COUNT),
    0x4f,
    0x0d,
    0x01, // if i >= count break
    ...element(S_SLOTS, I),
    ...I32_LOAD,
    ...set(SLOT), // slot = slots[i]
    ...get(S_VEC),
    ...get(SLOT),
    ...get(S_STRIDE),
    I32_MUL,
    I32_ADD,
    ...set(AT), // at = vec + slot × stride
    ...element(S_OUT, SLOT), // the address of out[slot], below the value
    ...dotProduct(AT, QUERY, ACC, stride),
    F32_CONVERT_I32_S,
    ...element(S_SCALES, SLOT),
    ...F32_LOAD,
    F32_MUL,
    ...get(S_QSCALE),
    F32_MUL,
    ...F32_STORE, // out[slot] = f32(dot) × scales[slot] × qscale
    ...get(I),
    I32_CONST,
    0x01,
    I32_ADD,
    ...set(I), // i += 1
    0x0c,
    0x00,
    0x0b,
    0x0b // br loop, end, end
  ]
  return body(
    [
      [3, I32_TYPE],
      [1 + stride / 8, V128_TYPE]
    ],
    code
  )
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

function moduleBytes(stride: number): Uint8Array<ArrayBuffer> {
  const [I32, F32] = [I32_TYPE, F32_TYPE]
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, [
      0x03,
      ...[0x60, 0x05, I32, I32, I32, I32, I32, 0x00], // type 0: (i32 × 5) → ()
      ...[0x60, 0x09, I32, I32, I32, I32, I32, I32, F32, F32, I32, 0x01, I32], // type 1: (i32 × 6, f32, f32, i32) → i32
      ...[0x60, 0x08, I32, I32, I32, I32, I32, I32, I32, F32, 0x00] // type 2: (i32 × 7, f32) → ()
    ]),
    ...section(2, [0x01, ...ascii('env'), ...ascii('memory'), 0x02, 0x00, 0x01]), // import memory, min 1 page
    ...section(3, [0x03, 0x00, 0x01, 0x02]), // three functions, of types 0, 1 and 2
    ...section(7, [
      0x03,
      ...ascii('scan'),
      0x00,
      0x00,
      ...ascii('similar'),
      0x00,
      0x01,
      ...ascii('similarSlots'),
      0x00,
      0x02
    ]),
    ...section(10, [0x03, ...scanBody(stride), ...similarBody(stride), ...similarSlotsBody(stride)])
  ])
}

type ScanFunction = (vec: number, count: number, stride: number, q: number, out: number) => void
type SimilarFunction = (
  vec: number,
  count: number,
  stride: number,
  q: number,
  out: number,
  scales: number,
  queryScale: number,
  min: number,
  above: number
) => number

type SimilarSlotsFunction = (
  vec: number,
  slots: number,
  count: number,
  stride: number,
  q: number,
  out: number,
  scales: number,
  queryScale: number
) => void
type Kernels = { scan: ScanFunction; similar: SimilarFunction; similarSlots: SimilarSlotsFunction }

const PAGE = 65_536

/**
 * Int8 vectors and their scales in one growable memory, with the query and the outputs next to them:
 *   [query: stride bytes][vectors: capacity × stride bytes][output: capacity × 4 bytes]
 *   [scales: capacity × 4 bytes][above: capacity × 4 bytes][listed slots: capacity × 4 bytes]
 * The layout is rebuilt (vectors and scales copied) when the capacity grows.
 */
export class Int8Matrix {
  readonly stride: number
  private memory: WebAssembly.Memory
  private kernels: Kernels | null
  private capacity = 0
  private bytes!: Int8Array
  private output!: Int32Array
  private similarities!: Float32Array
  private scales!: Float32Array
  private above!: Int32Array
  private listed!: Int32Array

  constructor(
    readonly dimension: number,
    options: { simd?: boolean } = {}
  ) {
    this.stride = Math.ceil(dimension / 16) * 16
    this.memory = new WebAssembly.Memory({ initial: 1 })
    this.kernels = options.simd === false ? null : compileKernels(this.memory, this.stride)
    this.grow(1024)
  }

  /** Slots the memory has room for. */
  get slotCapacity(): number {
    return this.capacity
  }

  /** Whether the WebAssembly SIMD kernel is in use (else the JavaScript loop). */
  get simd(): boolean {
    return this.kernels !== null
  }

  private get vectorsOffset(): number {
    return this.stride
  }
  private get outputOffset(): number {
    return this.stride + this.capacity * this.stride
  }
  private get scalesOffset(): number {
    return this.outputOffset + this.capacity * 4
  }
  private get aboveOffset(): number {
    return this.scalesOffset + this.capacity * 4
  }
  private get listedOffset(): number {
    return this.aboveOffset + this.capacity * 4
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
        ? {
            vectors: new Int8Array(this.memory.buffer, this.vectorsOffset, this.capacity * this.stride).slice(),
            scales: this.scales.slice()
          }
        : null
    const needed = this.stride + capacity * this.stride + capacity * 16
    const pages = Math.ceil(needed / PAGE) - this.memory.buffer.byteLength / PAGE
    if (pages > 0) this.memory.grow(pages)
    this.capacity = capacity
    const { buffer } = this.memory
    this.bytes = new Int8Array(buffer)
    this.output = new Int32Array(buffer, this.outputOffset, capacity)
    this.similarities = new Float32Array(buffer, this.outputOffset, capacity)
    this.scales = new Float32Array(buffer, this.scalesOffset, capacity)
    this.above = new Int32Array(buffer, this.aboveOffset, capacity)
    this.listed = new Int32Array(buffer, this.listedOffset, capacity)
    this.scales.fill(0)
    if (old) {
      this.bytes.set(old.vectors, this.vectorsOffset)
      this.scales.set(old.scales)
    }
  }

  /**
   * The vectors and scales of slots [0, count), as views of the matrix: valid until the capacity
   * grows (a snapshot copies them as it writes them).
   */
  rows(count: number): { vectors: Int8Array; scales: Float32Array } {
    this.ensure(count)
    return {
      vectors: new Int8Array(this.memory.buffer, this.vectorsOffset, count * this.stride),
      scales: this.scales.subarray(0, count)
    }
  }

  /** Takes what `rows` gave, into slots [0, scales.length). */
  setRows(vectors: Int8Array, scales: Float32Array): void {
    if (vectors.length !== scales.length * this.stride) throw new RangeError('vectors and scales disagree')
    this.ensure(scales.length)
    this.bytes.set(vectors, this.vectorsOffset)
    this.scales.set(scales)
  }

  /** Stores `values` (already quantised, length = dimension) at `slot`, and the scale that maps them back. */
  set(slot: number, values: Int8Array, scale = 1): void {
    this.ensure(slot + 1)
    const at = this.vectorsOffset + slot * this.stride
    this.bytes.set(values, at)
    this.bytes.fill(0, at + values.length, at + this.stride)
    this.scales[slot] = scale
  }

  /** The slot's vector as it was quantised (values × scale; quantising it again gives the same values), or null. */
  get(slot: number): Float32Array | null {
    const scale = this.scale(slot)
    if (scale === 0) return null
    const at = this.vectorsOffset + slot * this.stride
    const out = new Float32Array(this.dimension)
    for (let i = 0; i < this.dimension; i++) out[i] = (this.bytes[at + i] as number) * scale
    return out
  }

  /** The scale stored with the slot's vector (0: removed or never set). */
  scale(slot: number): number {
    return slot < this.capacity ? (this.scales[slot] as number) : 0
  }

  /** Sets the slot's scale to 0, so its similarities are 0. */
  clear(slot: number): void {
    if (slot < this.capacity) this.scales[slot] = 0
  }

  private setQuery(query: Int8Array): void {
    this.bytes.set(query, 0)
    this.bytes.fill(0, query.length, this.stride)
  }

  /** Dot products of `query` with the vectors in slots [0, count); the result is a view, valid until the next call. */
  scan(query: Int8Array, count: number): Int32Array {
    this.ensure(count)
    this.setQuery(query)
    if (this.kernels) {
      this.kernels.scan(this.vectorsOffset, count, this.stride, 0, this.outputOffset)
    } else {
      const out = this.output
      for (let i = 0; i < count; i++) out[i] = this.dot(query, i)
    }
    return this.output.subarray(0, count)
  }

  /**
   * Similarities (dot × the slot's scale × `queryScale`) of `query` with slots [0, count), and the
   * slots whose similarity reaches `min`, in order; both are views, valid until the next call.
   */
  similar(
    query: Int8Array,
    queryScale: number,
    count: number,
    min: number
  ): { similarities: Float32Array; above: Int32Array } {
    this.ensure(count)
    this.setQuery(query)
    let found = 0
    if (this.kernels) {
      found = this.kernels.similar(
        this.vectorsOffset,
        count,
        this.stride,
        0,
        this.outputOffset,
        this.scalesOffset,
        queryScale,
        min,
        this.aboveOffset
      )
    } else {
      const { similarities, scales, above } = this
      // Math.fround: the same float32 arithmetic as the kernel's.
      const qscale = Math.fround(queryScale)
      const least = Math.fround(min)
      for (let i = 0; i < count; i++) {
        const similarity = Math.fround(Math.fround(this.dot(query, i) * (scales[i] as number)) * qscale)
        similarities[i] = similarity
        if (similarity >= least) above[found++] = i
      }
    }
    return { similarities: this.similarities.subarray(0, count), above: this.above.subarray(0, found) }
  }

  /**
   * Similarities (dot × the slot's scale × `queryScale`) of `query` with the listed slots (each
   * below the capacity), written at those slots of the returned view (the other entries are stale);
   * valid until the next call.
   */
  similarSlots(query: Int8Array, queryScale: number, slots: ArrayLike<number>): Float32Array {
    this.setQuery(query)
    const { similarities, scales } = this
    if (this.kernels) {
      const listed = this.listed
      if (slots instanceof Int32Array || slots instanceof Uint32Array) listed.set(slots)
      else for (let i = 0; i < slots.length; i++) listed[i] = slots[i] as number
      this.kernels.similarSlots(
        this.vectorsOffset,
        this.listedOffset,
        slots.length,
        this.stride,
        0,
        this.outputOffset,
        this.scalesOffset,
        queryScale
      )
    } else {
      const qscale = Math.fround(queryScale)
      for (let i = 0; i < slots.length; i++) {
        const slot = slots[i] as number
        similarities[slot] = Math.fround(Math.fround(this.dot(query, slot) * (scales[slot] as number)) * qscale)
      }
    }
    return similarities
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

function compileKernels(memory: WebAssembly.Memory, stride: number): Kernels | null {
  const bytes = moduleBytes(stride)
  if (!WebAssembly.validate(bytes)) return null
  const { exports } = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } })
  return {
    scan: exports.scan as ScanFunction,
    similar: exports.similar as SimilarFunction,
    similarSlots: exports.similarSlots as SimilarSlotsFunction
  }
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
