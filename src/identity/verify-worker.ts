/**
 * Worker thread of the verification pool (verify-pool.ts). It receives batches packed into one
 * transferred ArrayBuffer and answers, per job, the index of the first message that verifies or -1.
 * Public KeyObjects are cached per worker (keys.ts), as on the main thread.
 *
 * Batch layout, little-endian: u32 job count, then per job: 32-byte public key, 64-byte signature,
 * u8 message count, and per message a u32 length and the bytes.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { verifyRaw } from './keys.js'

/** workerData that makes a thread loading this module serve batches (so importing it elsewhere does nothing). */
export const VERIFY_WORKER = 'registry-node/verify-worker'

export type VerifyWorkerRequest = { id: number; batch: ArrayBuffer }
export type VerifyWorkerReply = { type: 'ready' } | { type: 'done'; id: number; results: ArrayBuffer }

export function verifyBatch(batch: ArrayBuffer): Int16Array {
  const buf = Buffer.from(batch)
  const count = buf.readUInt32LE(0)
  const results = new Int16Array(count)
  let off = 4
  for (let j = 0; j < count; j++) {
    const publicKey = buf.subarray(off, off + 32)
    const signature = buf.subarray(off + 32, off + 96)
    const messages = buf[off + 96] as number
    off += 97
    let found = -1
    for (let m = 0; m < messages; m++) {
      const length = buf.readUInt32LE(off)
      off += 4
      if (found === -1 && verifyRaw(publicKey, buf.subarray(off, off + length), signature)) found = m
      off += length
    }
    results[j] = found
  }
  return results
}

if (parentPort && workerData === VERIFY_WORKER) {
  const port = parentPort
  port.on('message', (request: VerifyWorkerRequest) => {
    const results = verifyBatch(request.batch).buffer as ArrayBuffer
    port.postMessage({ type: 'done', id: request.id, results } satisfies VerifyWorkerReply, [results])
  })
  port.postMessage({ type: 'ready' } satisfies VerifyWorkerReply)
}
