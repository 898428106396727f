/**
 * The child process of SubjectDigests.prepare: its tables, built from one read of the log's
 * subject index, the subjects as one NUL-separated string (one string crosses processes far faster
 * than millions).
 */
import { buildDigestTables } from './digest-tables.js'
import { serveRead } from './reader-process.js'

await serveRead((reader, send) => {
  const { subjects, ...tables } = reader.snapshot(view => buildDigestTables(view.sealDigests()))
  return send({ ...tables, subjects: subjects.join('\0') })
})
