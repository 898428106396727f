/**
 * Worker thread of transitive trust (transitive-trust.ts): reads the node's store through its own
 * read-only view (LMDB shares the environment with the node's writer, and a reader never blocks it),
 * computes the scores there, and answers in the order it is asked: refreshes with the scores that
 * changed, explanations from the last computation.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { StoreReader } from '../../store/store-reader.js'
import { TrustComputation } from './trust-computation.js'
import type { TrustWorkerData, TrustWorkerReply, TrustWorkerRequest } from './transitive-trust.js'

const port = parentPort
if (!port) throw new Error('trust-worker.ts runs as a worker thread')
const { dataDir, seeds } = workerData as TrustWorkerData
const reader = StoreReader.open(dataDir)
const computation = new TrustComputation(reader, seeds)

port.on('message', (request: TrustWorkerRequest) => {
  if (request.kind === 'close') {
    void reader.close().finally(() => port.close())
    return
  }
  let reply: TrustWorkerReply
  try {
    if (request.kind === 'refresh') reply = { kind: 'scores', id: request.id, ...computation.refresh(request.at) }
    else reply = { kind: 'explained', id: request.id, explanation: computation.explain(request.subject, request.top) }
  } catch (err) {
    reply = { kind: 'failed', id: request.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }
  }
  port.postMessage(reply)
})
port.postMessage({ kind: 'opened' } satisfies TrustWorkerReply)
