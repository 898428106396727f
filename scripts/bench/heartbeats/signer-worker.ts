/**
 * The heartbeat benchmark's signing worker threads (this module is what each worker runs, started
 * by signing.ts): each owns a contiguous range of entities, signs their registrations and keeps
 * their keys to sign their beats, job after job. Also the entities' seeds and the beats' planned
 * times, which the main thread shares.
 */
import { createHash } from 'node:crypto'
import { isMainThread, parentPort } from 'node:worker_threads'
import { deriveId } from '../../../src/identity/ids.js'
import { keyPairFromSeed, sign, type KeyPair } from '../../../src/identity/keys.js'
import { signedRegistration } from '../../../src/testnet/entity-factory.js'

export const entitySeed = (i: number): Buffer => createHash('sha256').update(`bench-heartbeats entity ${i}`).digest()

export type SignRequest =
  | { type: 'register'; from: number; to: number }
  | { type: 'beats'; wallT0: number; periodMs: number; beats: number; offsets: number[]; spec: boolean[] }
export type RegisterReply = { ids: string[]; bodies: string[] }

/** The timestamp of entity e's k-th beat: its planned send time, ms from the run's start. */
export const plannedMs = (offset: number, k: number, periodMs: number): number => Math.round(offset + k * periodMs)

if (!isMainThread) {
  let keys: { keyPair: KeyPair; id: string }[] = []
  parentPort!.on('message', (job: SignRequest) => {
    if (job.type === 'register') {
      keys = []
      const bodies: string[] = []
      for (let i = job.from; i < job.to; i++) {
        const keyPair = keyPairFromSeed(entitySeed(i))
        const body = signedRegistration(keyPair, {
          name: `Heartbeat bench agent ${i}`,
          type: 'agent',
          category: 'tools',
          summary: `Benchmark agent ${i} that only sends heartbeats`,
          tags: ['bench', 'heartbeat'],
          entity_url: `https://hb${i}.bench.example`
        })
        const id = deriveId('agent', keyPair.publicKey)
        keys.push({ keyPair, id })
        bodies.push(JSON.stringify(body))
      }
      parentPort!.postMessage({ ids: keys.map(k => k.id), bodies } satisfies RegisterReply)
    } else {
      const frames: string[] = []
      for (let e = 0; e < keys.length; e++) {
        const { keyPair, id } = keys[e]!
        const offset = job.offsets[e]!
        const spec = job.spec[e]!
        for (let k = 0; k < job.beats; k++) {
          const timestamp = new Date(job.wallT0 + plannedMs(offset, k, job.periodMs)).toISOString()
          frames.push(
            spec
              ? `{"agent_id":"${id}","timestamp":"${timestamp}","signature":"${sign(keyPair, id + timestamp)}"}`
              : `{"timestamp":"${timestamp}","signature":"${sign(keyPair, timestamp)}"}`
          )
        }
      }
      parentPort!.postMessage(frames)
    }
  })
}
