/**
 * Signed entity registrations for the mesh benchmarks (propagation.ts, convergence.ts), made in
 * worker threads: spec-form bodies (signature over the canonical JSON of the body without
 * `signature`) with a developer proof over an HD-derived entity key, like test/helpers/identities.ts,
 * with content from the Zipf corpus; plus each entity's deregistration token (the entity key's
 * signature over its ID, sent as `Authorization: Bearer <token>`). Deterministic for a given run seed.
 *
 * A job may ask for several variants: bodies of the same key differing in their summary (two
 * homes registering one entity while partitioned; last writer wins).
 */
import { createHash } from 'node:crypto'
import { isMainThread, parentPort, workerData } from 'node:worker_threads'
import { deriveAgentSeed } from '../../src/identity/hd.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed, sign } from '../../src/identity/keys.js'
import { developerKeys, signedRegistration, type DeveloperKeys } from '../../src/testnet/entity-factory.js'
import { entityContent, registrationBody, zipfCorpus, type EntityContent } from './corpus.js'
import { splitOverWorkers } from './workers.js'

export interface EntityJob {
  /** Entity number within the run (content and entity URL). */
  i: number
  /** Developer number; its key is derived from the run seed. */
  developer: number
  /** HD index of the entity under its developer. */
  hdIndex: number
  /** Bodies to sign for this key (1, or 2 for a conflicting registration). */
  variants: number
  /** What the body says (corpus.ts). */
  content: EntityContent
}

export interface SignedEntity {
  i: number
  id: string
  /** One JSON body per variant. */
  bodies: string[]
  /** `Authorization: Bearer <deleteToken>` deregisters it. */
  deleteToken: string
}

const ROLE = 'mesh-bench-entity-signing'

const developerSeed = (seedText: string, d: number): Buffer =>
  createHash('sha256').update(`${seedText} developer ${d}`).digest()

export function signEntities(jobs: readonly EntityJob[], seedText: string): SignedEntity[] {
  const developers = new Map<number, DeveloperKeys>()
  return jobs.map(job => {
    let developer = developers.get(job.developer)
    if (!developer) {
      developer = developerKeys(keyPairFromSeed(developerSeed(seedText, job.developer)))
      developers.set(job.developer, developer)
    }
    const content = job.content
    const keyPair = keyPairFromSeed(deriveAgentSeed(developer.keyPair.seed, job.hdIndex))
    const id = deriveId(content.type, keyPair.publicKey)
    const bodies = Array.from({ length: job.variants }, (_, v) => {
      const body = registrationBody(content, job.i)
      if (v > 0) body.summary = `${content.summary} (variant ${v})`
      return JSON.stringify(signedRegistration(keyPair, body, { developer, index: job.hdIndex }))
    })
    return { i: job.i, id, bodies, deleteToken: sign(keyPair, id) }
  })
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === ROLE) {
  const { seedText } = workerData as { seedText: string }
  parentPort!.once('message', (jobs: EntityJob[]) => parentPort!.postMessage(signEntities(jobs, seedText)))
}

/** Jobs for entities `from` … `from + count - 1`, spread round-robin over `developers` developers (HD indexes in order). */
export function entityJobs(from: number, count: number, developers: number, corpusSeed = 42): EntityJob[] {
  const corpus = zipfCorpus(corpusSeed)
  const jobs: EntityJob[] = []
  for (let k = 0; k < from + count; k++) {
    const content = entityContent(corpus, k)
    if (k < from) continue
    jobs.push({ i: k, developer: k % developers, hdIndex: Math.floor(k / developers), variants: 1, content })
  }
  return jobs
}

/** Signs the jobs in `workers` worker threads (1: on this thread); results in job order. */
export async function signEntitiesInWorkers(
  jobs: EntityJob[],
  seedText: string,
  workers: number
): Promise<SignedEntity[]> {
  if (workers <= 1 || jobs.length < 200) return signEntities(jobs, seedText)
  return splitOverWorkers<EntityJob, SignedEntity>(import.meta.url, jobs, workers, { role: ROLE, seedText })
}
