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
/** Parts are written and read in slices of at most this many bytes. */
const WRITE_SLICE = 64 * 1024 * 1024
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

/**
 * A snapshot being made: its parts are copied as they are given (the structures they come from go
 * on changing), and `finish` writes them to the file without holding the thread (the writes run on
 * libuv's pool), so a large index keeps answering while its snapshot is written.
 */
export class SnapshotWriter {
  private readonly chunks: Uint8Array[] = []
  private offset = 0
  private readonly parts: Record<string, PartEntry> = {}

  /** `fresh`: the array was made for the snapshot and is not changed afterwards, so it is not copied. */
  array(name: string, values: ArrayBufferView, { fresh = false } = {}): void {
    const view = new Uint8Array(values.buffer, values.byteOffset, values.byteLength)
    this.parts[name] = { kind: 'array', type: values.constructor.name, offset: this.offset, bytes: view.length }
    this.push(fresh ? view : view.slice())
  }

  /** Any strings (lone surrogates included): their lengths, then their UTF-16 code units. */
  strings(name: string, values: readonly string[]): void {
    const lengths = new Uint32Array(values.length)
    for (let i = 0; i < values.length; i++) lengths[i] = (values[i] as string).length
    this.array(`${name}.lengths`, lengths, { fresh: true })
    const offset = this.offset
    // Joined a slice at a time: one string of every value could pass V8's string length limit.
    for (let at = 0; at < values.length; at += STRINGS_PER_CHUNK)
      this.push(Buffer.from(values.slice(at, at + STRINGS_PER_CHUNK).join(''), 'utf16le'))
    this.parts[name] = { kind: 'strings', offset, bytes: this.offset - offset }
  }

  json(name: string, value: unknown): void {
    const offset = this.offset
    this.push(Buffer.from(JSON.stringify(value)))
    this.parts[name] = { kind: 'json', offset, bytes: this.offset - offset }
  }

  /**
   * Writes the parts and the header to `path` (under a temporary name first, then renamed into
   * place, so a reader never finds half a file); resolves with the file's size in bytes.
   */
  async finish(path: string, meta: unknown): Promise<number> {
    const header = Buffer.from(JSON.stringify({ meta, parts: this.parts } satisfies Header))
    const footer = Buffer.alloc(FOOTER)
    footer.writeUInt32LE(header.length, 0)
    footer.write(MAGIC, 4, 'latin1')
    this.push(header)
    this.push(footer)
    const temporary = `${path}.${process.pid}.tmp`
    const file = await open(temporary, 'w')
    try {
      for (const chunk of this.chunks.splice(0))
        for (let at = 0; at < chunk.length; at += WRITE_SLICE) {
          const slice = chunk.subarray(at, at + WRITE_SLICE)
          let done = 0
          while (done < slice.length) done += (await file.write(slice, done, slice.length - done)).bytesWritten
        }
    } catch (err) {
      await file.close()
      await rm(temporary, { force: true })
      throw err
    }
    await file.close()
    await rename(temporary, path)
    return this.offset
  }

  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes)
    this.offset += bytes.length
  }
}

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
      const n = readSync(this.fd, out, done, Math.min(out.length - done, WRITE_SLICE), offset + done)
      if (n === 0) throw new SnapshotUnreadable('the file ends early')
      done += n
    }
  }
}
