/**
 * `@libp2p/utils`' LengthPrefixedDecoder, which reads noise's frames on every connection, ends each
 * read by asking its length decoder for the next frame's length on a buffer it has just emptied.
 * The decoder throws a new RangeError there, which the loop catches as "wait for more bytes": an
 * Error and its stack trace for every chunk a socket delivers (1.9 % of the CPU of a 20-node mesh
 * at 20 operations/s, `perf`; docs/decisions.md). An empty buffer now gets one RangeError made
 * once: the loop stops at any RangeError, so what it reads and when it stops are unchanged.
 */
import { LengthPrefixedDecoder } from '@libp2p/utils'
import type { Uint8ArrayList } from 'uint8arraylist'

type LengthDecoder = (data: Uint8Array | Uint8ArrayList) => number

/** The private field the wrapper replaces (length-prefixed-decoder.js keeps it as a plain property). */
interface DecoderFields {
  lengthDecoder: LengthDecoder
}

const NOTHING_BUFFERED = new RangeError('no bytes buffered for a length prefix')
const guardedDecoders = new WeakSet<LengthDecoder>()

function guarded(decodeLength: LengthDecoder): LengthDecoder {
  const guard: LengthDecoder = data => {
    if (data.byteLength === 0) throw NOTHING_BUFFERED
    return decodeLength(data)
  }
  guardedDecoders.add(guard)
  return guard
}

let installed = false

export function installQuietLengthPrefixReads(): void {
  if (installed) return
  installed = true
  const prototype = LengthPrefixedDecoder.prototype as unknown as {
    decode(this: DecoderFields, buf: Uint8Array | Uint8ArrayList): Generator<Uint8ArrayList>
  }
  const decode = prototype.decode
  // A release without the method keeps its own behaviour (test/unit/length-prefix-reads.test.ts then fails).
  if (typeof decode !== 'function') return
  prototype.decode = function (this: DecoderFields, buf: Uint8Array | Uint8ArrayList): Generator<Uint8ArrayList> {
    if (typeof this.lengthDecoder === 'function' && !guardedDecoders.has(this.lengthDecoder))
      this.lengthDecoder = guarded(this.lengthDecoder)
    return decode.call(this, buf)
  }
}
