/**
 * Worker thread of the `onnx` embedder: loads the model (onnx-model.ts) and answers embedding
 * requests, so model runs never block the node's event loop. Requests are served one batch at a
 * time, round robin, so a one-text query waits for at most one batch of a bulk reindex.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import { parentPort, workerData } from 'node:worker_threads'
import { modelFingerprint, OnnxModel, type OnnxModelOptions } from './onnx-model.js'

export interface OnnxWorkerData {
  dir: string
  options: OnnxModelOptions
}
export type OnnxWorkerRequest = { type: 'embed'; id: number; texts: string[] }
export type OnnxWorkerReply =
  | { type: 'ready'; dimension: number; fingerprint: string; model: string }
  | { type: 'load-error'; message: string }
  | { type: 'result'; id: number; vectors: Float32Array[] }
  | { type: 'error'; id: number; message: string }

interface Job {
  id: number
  texts: string[]
  done: Float32Array[]
}

const port = parentPort
if (!port) throw new Error('onnx-worker.ts runs as a worker thread')
const { dir, options } = workerData as OnnxWorkerData
const send = (reply: OnnxWorkerReply, transfer: ArrayBuffer[] = []) => port.postMessage(reply, transfer)

const jobs: Job[] = []
let running = false

async function drain(model: OnnxModel): Promise<void> {
  running = true
  try {
    while (jobs.length > 0) {
      const job = jobs.shift() as Job
      const start = job.done.length
      try {
        job.done.push(...(await model.embed(job.texts.slice(start, start + options.batchSize))))
      } catch (err) {
        send({ type: 'error', id: job.id, message: (err as Error).message })
        continue
      }
      if (job.done.length >= job.texts.length)
        send(
          { type: 'result', id: job.id, vectors: job.done },
          job.done.map(v => v.buffer as ArrayBuffer)
        )
      else jobs.push(job) // back of the line: other requests get the next batch
      await nextTurn() // let new requests arrive
    }
  } finally {
    running = false
  }
}

try {
  const model = await OnnxModel.load(dir, options)
  const fingerprint = await modelFingerprint(model.files, options.maxTokens)
  port.on('message', (request: OnnxWorkerRequest) => {
    jobs.push({ id: request.id, texts: request.texts, done: [] })
    if (!running) void drain(model)
  })
  send({ type: 'ready', dimension: model.dimension, fingerprint, model: model.files.model })
} catch (err) {
  send({ type: 'load-error', message: (err as Error).message })
}
