/**
 * The heartbeat benchmark's signing, on the main thread's side: the worker threads (each running
 * signer-worker.ts with its range of entities), the keys and signed registrations made in them
 * before any node starts, and every beat of a segment signed for its planned time before it starts.
 */
import type { Worker } from 'node:worker_threads'
import { keyPairFromSeed, sign } from '../../../src/identity/keys.js'
import { sleep } from '../../lib/mesh-bench.js'
import { startWorker } from '../../lib/workers.js'
import type { Settings } from './options.js'
import { fmt } from './report.js'
import { entitySeed, type RegisterReply, type SignRequest } from './signer-worker.js'

/** The module each signing worker thread runs. */
const WORKER_MODULE = new URL('./signer-worker.ts', import.meta.url).href

function ask<T>(worker: Worker, job: SignRequest): Promise<T> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err)
    worker.once('error', onError)
    worker.once('message', (reply: T) => {
      worker.off('error', onError)
      resolve(reply)
    })
    worker.postMessage(job)
  })
}

/** The signing worker threads, each with its range of entities, whose keys it keeps to sign their beats. */
export interface Signers {
  workers: Worker[]
  ranges: (readonly [number, number])[]
  ids: string[]
  bodies: string[]
}

/** Keys and signed registrations, in worker threads (kept for signing the beats). */
export async function signRegistrations(s: Settings): Promise<Signers> {
  const W = Math.max(1, Number(s.args.workers))
  const workers = Array.from({ length: W }, () => startWorker(WORKER_MODULE))
  const ranges = Array.from(
    { length: W },
    (_, w) => [Math.floor((w * s.N) / W), Math.floor(((w + 1) * s.N) / W)] as const
  )
  const t = performance.now()
  const registered = await Promise.all(
    workers.map((worker, w) => ask<RegisterReply>(worker, { type: 'register', from: ranges[w]![0], to: ranges[w]![1] }))
  )
  console.error(`signed ${s.N} registrations in ${fmt((performance.now() - t) / 1000)} s`)
  return { workers, ranges, ids: registered.flatMap(r => r.ids), bodies: registered.flatMap(r => r.bodies) }
}

/**
 * Signs every beat of a segment (`K` beats per entity, entity e's at `offsets[e]` into each period)
 * for its planned time; a calibration sets the start far enough ahead.
 */
export async function signBeats(
  s: Settings,
  signers: Signers,
  offsets: Float64Array,
  label: string,
  K: number
): Promise<{ frames: string[]; wallT0: number; startLag: number }> {
  const { N, periodMs, entitySockets, entitySpec } = s
  const { workers, ranges, ids } = signers
  const calibration = performance.now()
  const probe = keyPairFromSeed(entitySeed(0))
  for (let i = 0; i < 300; i++) sign(probe, `${ids[0]}${new Date().toISOString()}`)
  const perSign = (performance.now() - calibration) / 300
  const wallT0 = Date.now() + (N * K * perSign * 1.6) / workers.length + 3000
  const t = performance.now()
  const parts = await Promise.all(
    workers.map((worker, w) => {
      const [from, to] = ranges[w]!
      return ask<string[]>(worker, {
        type: 'beats',
        wallT0,
        periodMs,
        beats: K,
        offsets: Array.from(offsets.subarray(from, to)),
        spec: Array.from({ length: to - from }, (_, j) => from + j >= entitySockets || entitySpec)
      })
    })
  )
  const frames = parts.flat()
  console.error(`${label}: signed ${frames.length} heartbeats in ${fmt((performance.now() - t) / 1000)} s`)
  const wait = wallT0 - Date.now()
  if (wait > 0) await sleep(wait)
  const startLag = Date.now() - wallT0
  if (startLag > 20_000) throw new Error(`signing overran its estimate by ${startLag} ms; timestamps would be stale`)
  return { frames, wallT0, startLag }
}
