/**
 * Worker thread of the verification pool (verify-pool.ts). It receives batches packed into one
 * transferred ArrayBuffer and answers, per job, the index of the first message that verifies or -1:
 * into the shared results area of the batch (batch id modulo 2), then the id of the last finished
 * batch in the shared counter, then a message. The pool reads finished batches at the end of the
 * event-loop turn that sent them when the worker is quick enough, or else on the message.
 * Public KeyObjects are cached per worker (keys.ts), as on the main thread.
 *
 * Batch layout, little-endian: u32 job count, then per job: 32-byte public key, 64-byte signature,
 * u8 message count, and per message a u32 length and the bytes.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { verifyRaw } from './keys.js'

/** Marks the workerData that makes a thread loading this module serve batches (importing it elsewhere does nothing). */
export const VERIFY_WORKER = 'registry-node/verify-worker'

export interface VerifyWorkerData {
  kind: typeof VERIFY_WORKER
  /** Int32 id of the last finished batch, then two results areas of `maxBatch` Int16 each. */
  shared: SharedArrayBuffer
  maxBatch: number
}

export type VerifyWorkerRequest = { id: number; batch: ArrayBuffer }
export type VerifyWorkerReply = { type: 'ready' } | { type: 'done'; id: number }

/** The views of a worker's shared memory, on either side. */
export function sharedViews(data: Pick<VerifyWorkerData, 'shared' | 'maxBatch'>): {
  finished: Int32Array
  results: Int16Array
} {
  return { finished: new Int32Array(data.shared, 0, 1), results: new Int16Array(data.shared, 4, 2 * data.maxBatch) }
}

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

const data = workerData as Partial<VerifyWorkerData> | null
if (parentPort && data?.kind === VERIFY_WORKER && data.shared && data.maxBatch) {
  const port = parentPort
  const { finished, results } = sharedViews({ shared: data.shared, maxBatch: data.maxBatch })
  const area = data.maxBatch
  port.on('message', (request: VerifyWorkerRequest) => {
    results.set(verifyBatch(request.batch), (request.id % 2) * area)
    Atomics.store(finished, 0, request.id)
    port.postMessage({ type: 'done', id: request.id } satisfies VerifyWorkerReply)
  })
  port.postMessage({ type: 'ready' } satisfies VerifyWorkerReply)
}
