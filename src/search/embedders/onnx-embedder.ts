/**
 * The `onnx` embedding backend: a local sentence-embedding model (e.g. all-MiniLM-L6-v2 exported to
 * ONNX) run by onnxruntime-node in a worker thread; see onnx-model.ts for inputs, pooling and
 * truncation. Nothing is downloaded. The dimension is the model's: OnnxEmbedder.load() runs the
 * model once to learn it, so it is known before the search engine is built.
 *
 * id: `onnx:<model folder name>:<dimension>:<sha-256 prefix of model, tokenizer and max tokens>`.
 */
import type { Worker } from 'node:worker_threads'
import { spawnModuleWorker } from '../../util/module-worker.js'
import type { Embedder } from './embedder.js'
import {
  modelFiles,
  modelFingerprint,
  ONNX_DEFAULTS,
  OnnxEmbedderError,
  onnxEmbedderId,
  OnnxModel,
  type OnnxModelOptions
} from './onnx-model.js'
import type { OnnxWorkerData, OnnxWorkerReply, OnnxWorkerRequest } from './onnx-worker.js'

export { OnnxEmbedderError } from './onnx-model.js'

export interface OnnxEmbedderOptions extends Partial<OnnxModelOptions> {
  /** Run the model in a worker thread (default) or on the calling thread. */
  worker?: boolean
}

interface Runner {
  embed(texts: readonly string[]): Promise<Float32Array[]>
  close(): Promise<void>
}

export class OnnxEmbedder implements Embedder {
  private constructor(
    readonly id: string,
    readonly dimension: number,
    private readonly runner: Runner
  ) {}

  /** Loads the model folder; a missing folder or file, or a model that does not run, is an error naming the path. */
  static async load(dir: string, options: OnnxEmbedderOptions = {}): Promise<OnnxEmbedder> {
    const { worker = true, ...rest } = options
    const o: OnnxModelOptions = { ...ONNX_DEFAULTS, ...rest }
    const files = modelFiles(dir) // fails fast, on this thread, with the path
    if (!worker) {
      const model = await OnnxModel.load(dir, o)
      return new OnnxEmbedder(
        onnxEmbedderId(files, model.dimension, await modelFingerprint(files, o.maxTokens)),
        model.dimension,
        {
          embed: texts => model.embed(texts),
          close: () => model.release()
        }
      )
    }
    const runner = await WorkerRunner.start({ dir, options: o })
    return new OnnxEmbedder(onnxEmbedderId(files, runner.dimension, runner.fingerprint), runner.dimension, runner)
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.length === 0 ? Promise.resolve([]) : this.runner.embed(texts)
  }

  /** Stops the worker (or releases the session). Not needed for exit: an idle worker does not hold the process. */
  close(): Promise<void> {
    return this.runner.close()
  }
}

/** The model in a worker thread. The worker is unref'd while idle, so it never keeps the process alive on its own. */
class WorkerRunner implements Runner {
  private readonly pending = new Map<number, { resolve: (v: Float32Array[]) => void; reject: (e: Error) => void }>()
  private nextId = 1
  private failure: Error | null = null

  private constructor(
    private readonly worker: Worker,
    readonly dimension: number,
    readonly fingerprint: string
  ) {
    worker.on('message', (reply: OnnxWorkerReply) => {
      if (reply.type !== 'result' && reply.type !== 'error') return
      const waiter = this.pending.get(reply.id)
      if (!waiter) return
      this.pending.delete(reply.id)
      if (this.pending.size === 0) worker.unref()
      if (reply.type === 'result') waiter.resolve(reply.vectors)
      else waiter.reject(new OnnxEmbedderError(reply.message))
    })
    const fail = (err: Error) => {
      this.failure ??= err
      for (const waiter of this.pending.values()) waiter.reject(err)
      this.pending.clear()
    }
    worker.on('error', err => fail(new OnnxEmbedderError(`onnx worker failed: ${err.message}`)))
    worker.on('exit', code => fail(new OnnxEmbedderError(`onnx worker stopped (exit code ${code})`)))
  }

  static start(data: OnnxWorkerData): Promise<WorkerRunner> {
    const worker = spawnModuleWorker(import.meta.url, 'onnx-worker', { workerData: data })
    return new Promise((resolve, reject) => {
      const onMessage = (reply: OnnxWorkerReply) => {
        if (reply.type === 'ready') {
          cleanup()
          worker.unref()
          resolve(new WorkerRunner(worker, reply.dimension, reply.fingerprint))
        } else if (reply.type === 'load-error') {
          cleanup()
          void worker.terminate()
          reject(new OnnxEmbedderError(reply.message))
        }
      }
      const onError = (err: Error) => {
        cleanup()
        reject(new OnnxEmbedderError(`onnx worker failed to start: ${err.message}`))
      }
      const onExit = (code: number) => {
        cleanup()
        reject(new OnnxEmbedderError(`onnx worker stopped while loading (exit code ${code})`))
      }
      const cleanup = () => {
        worker.off('message', onMessage)
        worker.off('error', onError)
        worker.off('exit', onExit)
      }
      worker.on('message', onMessage)
      worker.on('error', onError)
      worker.on('exit', onExit)
    })
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (this.failure) return Promise.reject(this.failure)
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      if (this.pending.size === 1) this.worker.ref()
      this.worker.postMessage({ type: 'embed', id, texts: [...texts] } satisfies OnnxWorkerRequest)
    })
  }

  async close(): Promise<void> {
    this.failure ??= new OnnxEmbedderError('the onnx embedder is closed')
    await this.worker.terminate()
  }
}
