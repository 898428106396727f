import { Worker, type WorkerOptions } from 'node:worker_threads'

/**
 * A worker thread running the module `name` beside `caller` (the caller's import.meta.url): the
 * compiled .js when the caller is itself built, else the .ts loaded through tsx's API inside the
 * worker. Run from the sources under tsx (tests, scripts, `npm run dev`), a worker does not get
 * tsx's loader from `--import tsx` on Node 20. `url` overrides the module (tests).
 */
export function spawnModuleWorker(caller: string, name: string, options: WorkerOptions, url?: URL): Worker {
  const entry = url ?? moduleBeside(caller, name)
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, options)
  const api = JSON.stringify(import.meta.resolve('tsx/esm/api'))
  return new Worker(
    `import(${api}).then(tsx => tsx.tsImport(${JSON.stringify(entry.href)}, ${JSON.stringify(caller)}))`,
    { ...options, eval: true }
  )
}

/** The module `name` beside `caller` (an import.meta.url): .ts when the caller runs from the sources, else .js. */
export function moduleBeside(caller: string, name: string): URL {
  return new URL(`./${name}${caller.endsWith('.ts') ? '.ts' : '.js'}`, caller)
}
