/**
 * Worker thread of the search index (src/services/search/search-worker-index.ts): holds the engine, applies
 * the changes it is sent in order, answers the queries and settle requests that follow them, and
 * sends each build of the home term filter.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { IndexedEngine } from './search-index.js'
import type { SearchWorkerData, SearchWorkerReply, SearchWorkerRequest } from './search-worker-index.js'

const port = parentPort
if (!port) throw new Error('search-worker.ts runs as a worker thread')
const indexed = new IndexedEngine(
  workerData as SearchWorkerData,
  filter => port.postMessage({ filter } satisfies SearchWorkerReply),
  // The summary logs a build at debug level (dropped here) and a failed listener (ours only posts).
  { debug: () => {}, error: (...args: unknown[]) => console.error('search worker:', ...args) }
)

port.on('message', ({ changes, ask }: SearchWorkerRequest) => {
  for (const change of changes) indexed.apply(change)
  if (!ask) return
  let reply: SearchWorkerReply
  try {
    if (ask.kind === 'search') reply = { id: ask.id, answer: indexed.search(ask.query) }
    else if (ask.kind === 'settle') reply = { id: ask.id, size: indexed.engine.size }
    else if (ask.kind === 'restore') reply = { id: ask.id, size: indexed.restore(ask.path, ask.meta) }
    else {
      // Copied now, written while the worker goes on answering: the reply follows the write.
      const id = ask.id
      indexed.save(ask.path, ask.meta).then(
        size => port.postMessage({ id, size } satisfies SearchWorkerReply),
        (err: unknown) => port.postMessage({ id, error: failure(err) } satisfies SearchWorkerReply)
      )
      return
    }
  } catch (err) {
    reply = { id: ask.id, error: failure(err) }
  }
  port.postMessage(reply)
})

function failure(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err)
}
