/**
 * Builds SubjectDigests' tables in a worker thread from a read-only view of the store (LMDB shares
 * the environment with the node's own thread) and posts them back, the subjects as one
 * NUL-separated string: one string crosses threads far faster than millions. See
 * SubjectDigests.prepare.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { buildDigestTables } from './digest-tables.js'
import { StoreReader } from './store-reader.js'

const reader = StoreReader.open((workerData as { dataDir: string }).dataDir)
try {
  const { subjects, ...tables } = reader.snapshot(view => buildDigestTables(view.sealDigests()))
  parentPort?.postMessage({ ...tables, subjects: subjects.join('\0') })
} finally {
  await reader.close()
}
