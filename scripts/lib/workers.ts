/**
 * Worker threads for the benchmarks that sign in parallel (scripts/lib/entity-signing.ts,
 * scripts/bench/heartbeats/signing.ts, scripts/bench/search-node.ts). The worker runs the benchmark's own
 * module, whose top level answers messages when it is not the main thread.
 *
 * (The benchmarks' former fast key import now lives in src/identity/keys.ts `keyPairFromSeed`,
 * checked against RFC 8032's vectors by the unit tests, so no key helper is needed here.)
 */
import { Worker } from 'node:worker_threads'

/**
 * Workers do not inherit tsx's loader from `--import tsx`: this code registers it, then loads the
 * module at `moduleUrl`. It has to be the URL of the module the worker must run (its caller's
 * `import.meta.url`), not this file's.
 */
export function workerBoot(moduleUrl: string): string {
  return `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => { register(); return import(${JSON.stringify(moduleUrl)}) })`
}

/** A worker thread that runs the module at `moduleUrl` (pass `import.meta.url`). */
export function startWorker(moduleUrl: string, workerData?: unknown): Worker {
  return new Worker(workerBoot(moduleUrl), { eval: true, workerData })
}

/**
 * Splits `jobs` into `workers` contiguous parts, each posted to its own worker thread running
 * `moduleUrl`, which answers with one message holding the part's results; the results in job order.
 */
export async function splitOverWorkers<J, R>(
  moduleUrl: string,
  jobs: readonly J[],
  workers: number,
  workerData?: unknown
): Promise<R[]> {
  const size = Math.ceil(jobs.length / workers)
  const parts = await Promise.all(
    Array.from(
      { length: workers },
      (_, w) =>
        new Promise<R[]>((resolve, reject) => {
          const worker = startWorker(moduleUrl, workerData)
          worker.once('message', (results: R[]) => {
            resolve(results)
            void worker.terminate()
          })
          worker.once('error', reject)
          worker.postMessage(jobs.slice(w * size, (w + 1) * size))
        })
    )
  )
  return parts.flat()
}
