/**
 * Worker thread of the status signer (status-signer.ts): it holds the node's key and answers a
 * batch of status statements with the signatures of their `entity.status` operations, made by the
 * same code as on the main thread.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { identityFromKeyPair } from '../identity/node-identity.js'
import { keyPairFromSeed } from '../identity/keys.js'
import { type StatusSignatures, type StatusStatement, signStatus } from './operations.js'

/** Marks the workerData that makes a thread loading this module serve batches. */
export const STATUS_SIGNER_WORKER = 'registry-node/status-signer-worker'

export interface StatusSignerWorkerData {
  kind: typeof STATUS_SIGNER_WORKER
  seed: Uint8Array
  host?: string
}

export type StatusSignerRequest = { id: number; statements: StatusStatement[] }
/** Per statement its body and signatures (strings clone cheaply; a Buffer would take its whole pool slab along). */
export type StatusSignerReply = { type: 'ready' } | { type: 'signed'; id: number; signed: StatusSignatures[] }

const data = workerData as Partial<StatusSignerWorkerData> | null
if (parentPort && data?.kind === STATUS_SIGNER_WORKER && data.seed) {
  const port = parentPort
  const identity = {
    ...identityFromKeyPair(keyPairFromSeed(Buffer.from(data.seed))),
    ...(data.host !== undefined ? { host: data.host } : {})
  }
  port.on('message', ({ id, statements }: StatusSignerRequest) => {
    const signed = statements.map(s => signStatus(identity, s))
    port.postMessage({ type: 'signed', id, signed } satisfies StatusSignerReply)
  })
  port.postMessage({ type: 'ready' } satisfies StatusSignerReply)
}
