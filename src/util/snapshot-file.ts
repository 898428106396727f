/**
 * A file of named parts (typed arrays as their bytes, string lists, JSON values) behind a JSON
 * header at its end; each typed array is read back into a buffer of its own.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'

export type TypedArray =
  | Int8Array<ArrayBuffer>
  | Uint8Array<ArrayBuffer>
  | Uint16Array<ArrayBuffer>
  | Int32Array<ArrayBuffer>
  | Uint32Array<ArrayBuffer>
  | Float32Array<ArrayBuffer>
  | Float64Array<ArrayBuffer>
type TypedConstructor<T extends TypedArray> = {
  new (buffer: ArrayBuffer, byteOffset?: number, length?: number): T
  readonly BYTES_PER_ELEMENT: number
  readonly name: string
}

const MAGIC = 'RNSNAP01'
/** The footer: the header's byte length (u32) and MAGIC. */
const FOOTER = 4 + MAGIC.length
/** Parts are read in slices of at most this many bytes. */
const READ_SLICE = 64 * 1024 * 1024
/** Parts are gathered and written this many bytes at a time (copying them takes a few milliseconds). */
const WRITE_BUFFER = 8 * 1024 * 1024
/** Strings joined into one chunk of the file. */
const STRINGS_PER_CHUNK = 65_536

interface PartEntry {
  kind: 'array' | 'strings' | 'json'
  /** An array's constructor name. */
  type?: string
  offset: number
  bytes: number
}

interface Header {
  meta: unknown
  parts: Record<string, PartEntry>
}

/** The option of an array made for the snapshot (written as it is, not copied). */
export const FRESH = { fresh: true } as const

/** What a part is, or a function giving it when the part's turn to be written comes. */
type Given<T> = T | (() => T)

/** One entry of a snapshot's plan: the chunks of a part's bytes, or (no name) work that prepares later parts. */
interface Task {
  name: string | null
  kind: PartEntry['kind']
  chunks: () => Iterable<Uint8Array>
  /** The chunks are views of live structures: copied before they are written. */
  live: boolean
  type?: string
}

/** The snapshot was given up: the structures it was written from changed meanwhile (see `finish`). */
export class SnapshotAborted extends Error {
  override name = 'SnapshotAborted'
}

/**
 * A snapshot being made, a slice at a time. The parts are planned first (nothing is read yet), and
 * `finish` writes them in order: each part is read from its structure when its turn comes, copied
 * WRITE_BUFFER bytes at a time and written on libuv's pool, with turns between, so a large index
 * goes on answering queries while its snapshot is written. Its owner sees that what the parts read
 * does not change meanwhile, or has `finish` give up (its `aborted` check).
 */
export class SnapshotWriter {
  private readonly tasks: Task[] = []

  /**
   * A typed array as it is when its turn comes. `fresh`: the array was made for the snapshot and
   * is not changed afterwards, so it is written without being copied.
   */
  array(name: string, values: Given<ArrayBufferView>, { fresh = false } = {}): void {
    const task: Task = {
      name,
      kind: 'array',
      live: !fresh,
      chunks: function* () {
        const array = typeof values === 'function' ? values() : values
        task.type = array.constructor.name
        yield bytesOf(array)
      }
    }
    this.tasks.push(task)
  }

  /** One typed array of `type`, given as consecutive views of live arrays (each read when it is written). */
  arraySlices(name: string, type: string, slices: () => Iterable<ArrayBufferView>): void {
    this.tasks.push({
      name,
      kind: 'array',
      type,
      live: true,
      chunks: function* () {
        for (const slice of slices()) {
          if (slice.constructor.name !== type)
            throw new Error(`part ${name}: a ${slice.constructor.name}, not a ${type}`)
          yield bytesOf(slice)
        }
      }
    })
  }

  /** Any strings (lone surrogates included): their lengths, then their UTF-16 code units. */
  strings(name: string, given: Given<readonly string[]>): void {
    let values: readonly string[] = []
    this.step(() => {
      values = typeof given === 'function' ? given() : given
    })
    this.array(
      `${name}.lengths`,
      () => {
        const lengths = new Uint32Array(values.length)
        for (let i = 0; i < values.length; i++) lengths[i] = (values[i] as string).length
        return lengths
      },
      { fresh: true }
    )
    this.tasks.push({
      name,
      kind: 'strings',
      live: false,
      // Joined a slice at a time: one string of every value could pass V8's string length limit.
      chunks: function* () {
        for (let at = 0; at < values.length; at += STRINGS_PER_CHUNK)
          yield Buffer.from(values.slice(at, at + STRINGS_PER_CHUNK).join(''), 'utf16le')
      }
    })
  }

  json(name: string, value: Given<unknown>): void {
    this.tasks.push({
      name,
      kind: 'json',
      live: false,
      chunks: function* () {
        yield Buffer.from(JSON.stringify(typeof value === 'function' ? value() : value))
      }
    })
  }

  /** Work run in its turn, between the parts planned before it and those after (it prepares them). */
  step(work: () => void): void {
    this.tasks.push({
      name: null,
      kind: 'array',
      live: false,
      chunks: () => {
        work()
        return []
      }
    })
  }

  /**
   * Writes the parts and the header to `path` (under a temporary name first, then renamed into
   * place, so a reader never finds half a file); resolves with the file's size in bytes. Before
   * each write and each part, `aborted()` is asked: when it says so, the file is given up
   * (SnapshotAborted).
   */
  async finish(path: string, meta: unknown, aborted: () => boolean = () => false): Promise<number> {
    const temporary = `${path}.${process.pid}.tmp`
    const file = await open(temporary, 'w')
    const check = (): void => {
      if (aborted()) throw new SnapshotAborted(`${path}: what it is written from changed`)
    }
    const buffer = new Uint8Array(WRITE_BUFFER)
    let buffered = 0
    let offset = 0
    const writeAll = async (bytes: Uint8Array): Promise<void> => {
      check()
      let done = 0
      while (done < bytes.length) done += (await file.write(bytes, done, bytes.length - done)).bytesWritten
    }
    const flush = async (): Promise<void> => {
      if (buffered === 0) return
      await writeAll(buffer.subarray(0, buffered))
      buffered = 0
    }
    // Small chunks are gathered into the buffer; a live chunk is copied through it a buffer at a time.
    const put = async (bytes: Uint8Array, live: boolean): Promise<void> => {
      offset += bytes.length
      if (!live && bytes.length >= WRITE_BUFFER / 2) {
        await flush()
        await writeAll(bytes)
        return
      }
      for (let at = 0; at < bytes.length; ) {
        const n = Math.min(WRITE_BUFFER - buffered, bytes.length - at)
        buffer.set(bytes.subarray(at, at + n), buffered)
        buffered += n
        at += n
        if (buffered === WRITE_BUFFER) await flush()
      }
    }
    const parts: Record<string, PartEntry> = {}
    try {
      for (const task of this.tasks.splice(0)) {
        check()
        const begins = offset
        for (const chunk of task.chunks()) await put(chunk, task.live)
        if (task.name === null) await nextTurn()
        else parts[task.name] = { kind: task.kind, type: task.type, offset: begins, bytes: offset - begins }
      }
      const header = Buffer.from(JSON.stringify({ meta, parts } satisfies Header))
      const footer = Buffer.alloc(FOOTER)
      footer.writeUInt32LE(header.length, 0)
      footer.write(MAGIC, 4, 'latin1')
      await put(header, false)
      await put(footer, false)
      await flush()
      check()
    } catch (err) {
      await file.close()
      await rm(temporary, { force: true })
      throw err
    }
    await file.close()
    await rename(temporary, path)
    return offset
  }
}
function bytesOf(values: ArrayBufferView): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength)
}

const nextTurn = (): Promise<void> => new Promise(resolve => setImmediate(resolve))

/** Why a file could not be read as a snapshot. */
export class SnapshotUnreadable extends Error {
  override name = 'SnapshotUnreadable'
}

export class SnapshotReader {
  private readonly fd: number
  readonly meta: unknown
  private readonly parts: Record<string, PartEntry>

  /** Opens the file and reads its header (SnapshotUnreadable: not a whole snapshot). */
  constructor(path: string) {
    this.fd = openSync(path, 'r')
    try {
      const size = fstatSync(this.fd).size
      if (size < FOOTER) throw new SnapshotUnreadable(`${path}: too short`)
      const footer = this.read(size - FOOTER, FOOTER)
      if (footer.toString('latin1', 4) !== MAGIC) throw new SnapshotUnreadable(`${path}: not a snapshot`)
      const length = footer.readUInt32LE(0)
      if (length > size - FOOTER) throw new SnapshotUnreadable(`${path}: header out of bounds`)
      const header = JSON.parse(this.read(size - FOOTER - length, length).toString()) as Header
      this.meta = header.meta
      this.parts = header.parts
    } catch (err) {
      closeSync(this.fd)
      throw err instanceof SnapshotUnreadable ? err : new SnapshotUnreadable(`${path}: ${String(err)}`)
    }
  }

  /**
   * The array stored under `name`; `room(length)`, when given, is the length of the array returned,
   * the stored values first and zeros after.
   */
  array<T extends TypedArray>(name: string, type: TypedConstructor<T>, room?: (length: number) => number): T {
    const part = this.part(name, 'array')
    if (part.type !== type.name) throw new SnapshotUnreadable(`part ${name} is a ${part.type}, not a ${type.name}`)
    const length = part.bytes / type.BYTES_PER_ELEMENT
    const buffer = new ArrayBuffer(Math.max(length, room?.(length) ?? 0) * type.BYTES_PER_ELEMENT)
    this.readInto(new Uint8Array(buffer, 0, part.bytes), part.offset)
    return new type(buffer)
  }

  strings(name: string): string[] {
    const part = this.part(name, 'strings')
    const lengths = this.array(`${name}.lengths`, Uint32Array)
    const out: string[] = new Array(lengths.length)
    let i = 0
    let offset = part.offset
    while (i < lengths.length) {
      // The strings a write slice joined, read back as one string and cut.
      const end = Math.min(lengths.length, i + STRINGS_PER_CHUNK)
      let units = 0
      for (let j = i; j < end; j++) units += lengths[j] as number
      const joined = this.read(offset, units * 2).toString('utf16le')
      offset += units * 2
      let at = 0
      for (; i < end; i++) {
        const length = lengths[i] as number
        out[i] = joined.slice(at, at + length)
        at += length
      }
    }
    return out
  }

  json<T>(name: string): T {
    const part = this.part(name, 'json')
    return JSON.parse(this.read(part.offset, part.bytes).toString()) as T
  }

  close(): void {
    closeSync(this.fd)
  }

  private part(name: string, kind: PartEntry['kind']): PartEntry {
    const part = this.parts[name]
    if (!part || part.kind !== kind) throw new SnapshotUnreadable(`no ${kind} part ${name}`)
    return part
  }

  private read(offset: number, length: number): Buffer {
    const out = Buffer.allocUnsafe(length)
    this.readInto(out, offset)
    return out
  }

  private readInto(out: Uint8Array, offset: number): void {
    let done = 0
    while (done < out.length) {
      const n = readSync(this.fd, out, done, Math.min(out.length - done, READ_SLICE), offset + done)
      if (n === 0) throw new SnapshotUnreadable('the file ends early')
      done += n
    }
  }
}
