/**
 * A whole-store read in a short-lived child process. LMDB maps its file into each process that
 * reads it, and a page once read stays mapped, with its neighbours in the page cache (the kernel's
 * fault-around), until the environment closes. A full scan in the node's own process would leave
 * most of the file in its resident set for as long as it runs: 2.4 GB of a 2.5 GB store at 1M
 * entities, where the records the scan wants are 1 GB of it. The same scan in a child leaves
 * those pages in the child, which exits. LMDB lets readers in other processes share the
 * environment with the node's writer (store-reader.ts).
 */
import { fork } from 'node:child_process'
import { setPriority } from 'node:os'
import { moduleBeside } from '../util/module-worker.js'
import { StoreReader } from './store-reader.js'

/** What the child sends: a part of the answer, the end of it, or why it failed. */
type ChildMessage<T> = { part: T } | { end: true } | { failed: string }

/** A read running in a child: `done` resolves once every part has been passed on. */
export interface ChildRead {
  done: Promise<void>
  /** Keeps the node running until the read ends (a read started with `unref`). */
  hold(): void
}

/**
 * Runs the module `name` (next to `caller`, which calls serveRead) on the store in `dataDir` and
 * passes each part it sends to `onPart`, in order. `signal` ends the child; with `unref` the node
 * may exit while it runs, until `hold()`; `niceness` above 0 yields the processor to the node's
 * more urgent work.
 */
export function readInChild<T>(
  caller: string,
  name: string,
  dataDir: string,
  onPart: (part: T) => void,
  options: { signal?: AbortSignal; unref?: boolean; niceness?: number } = {}
): ChildRead {
  const entry = moduleBeside(caller, name)
  const child = fork(entry, [dataDir], {
    // The parent's own flags (a heap size, a profiler) are not the reader's.
    execArgv: entry.pathname.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : [],
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    ...(options.signal ? { signal: options.signal } : {})
  })
  if (options.niceness !== undefined && child.pid !== undefined) {
    try {
      setPriority(child.pid, options.niceness)
    } catch {
      // A sandbox may refuse it (a system call filter): the child then runs at the node's priority.
    }
  }
  if (options.unref) {
    child.unref()
    child.channel?.unref()
  }
  const done = new Promise<void>((resolve, reject) => {
    let ended = false
    child.on('message', (message: ChildMessage<T>) => {
      if ('part' in message) onPart(message.part)
      else if ('end' in message) {
        ended = true
        resolve()
      } else reject(new Error(`${name}: ${message.failed}`))
    })
    child.once('error', reject)
    // 'close', not 'exit': it comes after the last message the child sent has been read.
    child.once('close', (code, signal) => {
      if (!ended) reject(new Error(`${name} ended before its answer (${signal ?? `exit code ${code}`})`))
    })
  })
  return {
    done,
    hold() {
      child.ref()
      child.channel?.ref()
    }
  }
}

/** Parts a child lets wait in its channel before it reads on: the parent loads one while the child reads the next. */
const PARTS_IN_FLIGHT = 4

/**
 * The child's side: opens the store named on the command line, calls `read` with a function that
 * sends one part (waiting, when the parent lags, until it has room), then sends the end (or the
 * failure) and disconnects.
 */
export async function serveRead<T>(
  read: (reader: StoreReader, send: (part: T) => Promise<void>) => Promise<void>
): Promise<void> {
  const post = (message: ChildMessage<T>): Promise<void> =>
    new Promise(resolve => {
      process.send?.(message, undefined, undefined, () => resolve())
    })
  // The node stopped or failed meanwhile: nobody wants the rest.
  process.once('disconnect', () => process.exit(0))
  const inFlight: Promise<void>[] = []
  try {
    const reader = StoreReader.open(process.argv[2] as string)
    try {
      await read(reader, async part => {
        inFlight.push(post({ part }))
        if (inFlight.length >= PARTS_IN_FLIGHT) await inFlight.shift()
      })
    } finally {
      await reader.close()
    }
    await post({ end: true })
  } catch (err) {
    await post({ failed: err instanceof Error ? err.message : String(err) })
  }
  process.disconnect?.()
}
