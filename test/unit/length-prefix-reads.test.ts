/**
 * Quiet length-prefix reads (src/mesh/length-prefix-reads.ts): `@libp2p/utils`' decoder yields the
 * same frames however the bytes are split, no longer builds a RangeError at the end of every read,
 * and noise connections between two real libp2p nodes carry messages of every size intact.
 */
import '../../src/polyfills.js'
import test from 'ava'
import { LengthPrefixedDecoder, lpStream } from '@libp2p/utils'
import type { Uint8ArrayList } from 'uint8arraylist'
import { installQuietLengthPrefixReads } from '../../src/mesh/length-prefix-reads.js'
import { bareLibp2p } from '../helpers/bare-libp2p.js'

/** noise's length prefix: two bytes, big-endian; fewer than two buffered throws a RangeError. */
const uint16Length = (data: Uint8Array | Uint8ArrayList): number => {
  if (data.byteLength < 2) throw new RangeError('Could not decode int16BE')
  return data instanceof Uint8Array ? (data[0]! << 8) | data[1]! : data.getUint16(0)
}

const decoder = () => new LengthPrefixedDecoder({ lengthDecoder: uint16Length, encodingLength: () => 2 })

function framed(payloads: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(payloads.reduce((sum, p) => sum + 2 + p.byteLength, 0))
  let at = 0
  for (const p of payloads) {
    out[at] = p.byteLength >> 8
    out[at + 1] = p.byteLength & 0xff
    out.set(p, at + 2)
    at += 2 + p.byteLength
  }
  return out
}

function readAll(chunks: readonly Uint8Array[]): number[][] {
  const d = decoder()
  const frames: number[][] = []
  for (const chunk of chunks) for (const frame of d.decode(chunk)) frames.push([...frame.subarray()])
  return frames
}

/** How many RangeErrors `run` constructs (the decoder and its length function name the global at call time). */
function rangeErrorsMadeBy(run: () => void): number {
  const original = globalThis.RangeError
  let made = 0
  globalThis.RangeError = new Proxy(original, {
    apply(target, self, args) {
      made++
      return Reflect.apply(target, self, args)
    },
    construct(target, args, newTarget) {
      made++
      return Reflect.construct(target, args, newTarget)
    }
  })
  try {
    run()
  } finally {
    globalThis.RangeError = original
  }
  return made
}

const payloads = [new Uint8Array([1, 2, 3]), new Uint8Array(300).fill(7), new Uint8Array([9])]
const wire = framed(payloads)
const expected = payloads.map(p => [...p])

test.serial('a read that empties the buffer builds no RangeError once installed; frames are unchanged', t => {
  const oneFramePerChunk = payloads.map(p => framed([p]))
  t.is(
    rangeErrorsMadeBy(() => t.deepEqual(readAll(oneFramePerChunk), expected)),
    3,
    'one per read before'
  )
  installQuietLengthPrefixReads()
  t.is(
    rangeErrorsMadeBy(() => t.deepEqual(readAll(oneFramePerChunk), expected)),
    0,
    'none after'
  )
})

test.serial('frames come out the same however the bytes are split', t => {
  installQuietLengthPrefixReads()
  t.deepEqual(readAll([wire]), expected)
  t.deepEqual(
    readAll([...wire].map(b => Uint8Array.of(b))),
    expected,
    'a byte at a time (a lone length byte still waits)'
  )
  for (let cut = 1; cut < wire.byteLength; cut++)
    t.deepEqual(readAll([wire.subarray(0, cut), wire.subarray(cut)]), expected, `split at ${cut}`)
})

test.serial('noise connections between two libp2p nodes carry messages of every size intact', async t => {
  installQuietLengthPrefixReads()
  const [sender, receiver] = await Promise.all([bareLibp2p(), bareLibp2p()])
  const sizes = Array.from({ length: 200 }, (_, i) => 1 + ((i * 977) % 70_000))
  try {
    const received = new Promise<boolean[]>((resolve, reject) => {
      receiver
        .handle('/test/lp-reads/1.0.0', async stream => {
          const lp = lpStream(stream)
          const intact: boolean[] = []
          for (const [i, size] of sizes.entries()) {
            const message = (await lp.read()).subarray()
            intact.push(message.byteLength === size && message.every(b => b === i % 251))
          }
          await stream.close()
          resolve(intact)
        })
        .catch(reject)
    })
    const stream = await sender.dialProtocol(receiver.getMultiaddrs()[0]!, '/test/lp-reads/1.0.0')
    const lp = lpStream(stream)
    for (const [i, size] of sizes.entries()) await lp.write(new Uint8Array(size).fill(i % 251))
    t.deepEqual(
      await received,
      sizes.map(() => true)
    )
    await stream.close()
  } finally {
    await Promise.all([sender.stop(), receiver.stop()])
  }
})
