/**
 * Finds a native uWebSockets.js build for this runtime. uWS is not on npm; two republishes carry
 * its binaries: `uWebSockets.js` (an alias of @trufflesuite/uws-js-unofficial 20.30: Node 16–20)
 * and the optional `@btc-vision/uwebsockets.js` (20.57: Node 20–25, Linux builds need glibc ≥
 * 2.38). Each binary is loaded directly: the first republish's own entry point falls back to a
 * JavaScript imitation that answers nothing right (it throws "Not implemented" at the first
 * request), which must never run.
 */
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { MAX_HEAD_BYTES } from './http.js'

export type UwsModule = typeof import('uWebSockets.js')

export interface UwsLoad {
  /** The loaded module, or null when no build loads here. */
  module: UwsModule | null
  /** Which package it came from, or why each one failed. */
  detail: string
}

const require = createRequire(import.meta.url)
const binaryName = (): string => `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`

const CANDIDATES: ReadonlyArray<{ name: string; load: () => UwsModule }> = [
  {
    name: 'uWebSockets.js',
    load: () =>
      require(join(dirname(require.resolve('uWebSockets.js/package.json')), 'binaries', binaryName())) as UwsModule
  },
  // Its entry point loads only the native binary, and throws when there is none.
  { name: '@btc-vision/uwebsockets.js', load: () => require('@btc-vision/uwebsockets.js') as UwsModule }
]

let cached: UwsLoad | undefined

export function loadUws(): UwsLoad {
  if (cached) return cached
  // Read by uWS builds from 20.4x on when they load (their default is 4 KiB): heads up to this size reach
  // the API, which answers 414 over MAX_URL_BYTES; larger ones get uWS's own 431.
  process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= String(MAX_HEAD_BYTES)
  const failures: string[] = []
  for (const candidate of CANDIDATES) {
    try {
      const module = candidate.load()
      if (typeof module.App !== 'function') throw new Error('no App export')
      cached = { module, detail: `${candidate.name} (${binaryName()})` }
      return cached
    } catch (err) {
      failures.push(`${candidate.name}: ${firstLine(err)}`)
    }
  }
  cached = {
    module: null,
    detail: `no uWebSockets.js build loads on Node ${process.versions.node} (${binaryName()}): ${failures.join('; ')}`
  }
  return cached
}

/** The module, or an error saying why no build loads (for `--http-server uws`). */
export function requireUws(): UwsModule {
  const { module, detail } = loadUws()
  if (!module) throw new Error(`--http-server uws: ${detail}. Use --http-server node or auto.`)
  return module
}

function firstLine(err: unknown): string {
  const lines = (err instanceof Error ? err.message : String(err))
    .split('\n')
    .map(l => l.trim())
    .filter(Boolean)
  // The btc-vision wrapper puts its advice first and the loader's own error on an `Error:` line.
  const cause = lines.find(l => l.startsWith('Error: '))?.slice('Error: '.length) ?? lines[0] ?? 'failed'
  return cause.slice(0, 240)
}
