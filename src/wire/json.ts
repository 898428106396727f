/**
 * JSON from outside the process (request bodies, socket frames, gossip, sync and search frames)
 * is parsed here, with a nesting limit: JSON.parse accepts thousands of levels, but everything
 * that walks the value afterwards (canonical JSON, schema checks, msgpack in the store) recurses,
 * and a body of a few KiB nested deeply enough overflows the stack.
 */
import { bufferView } from '../util/buffer-view.js'

/** The deepest nesting of arrays and objects accepted in any JSON from outside. */
export const MAX_JSON_DEPTH = 64

export class JsonDepthError extends Error {
  constructor(readonly limit: number) {
    super(`JSON nested deeper than ${limit} levels`)
    this.name = 'JsonDepthError'
  }
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const OPEN_OBJECT = 0x7b
const CLOSE_ARRAY = 0x5d
const CLOSE_OBJECT = 0x7d

/** Whether the arrays and objects of a JSON text (UTF-8) nest deeper than `limit`; one pass, no allocation. */
export function nestsDeeperThan(bytes: Uint8Array, limit: number): boolean {
  // Each level takes one byte to open, so a text this short cannot be too deep.
  if (bytes.length <= limit) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]
    if (inString) {
      if (b === BACKSLASH) i++
      else if (b === QUOTE) inString = false
    } else if (b === QUOTE) inString = true
    else if (b === OPEN_ARRAY || b === OPEN_OBJECT) {
      if (++depth > limit) return true
    } else if (b === CLOSE_ARRAY || b === CLOSE_OBJECT) depth--
  }
  return false
}

/**
 * Parses UTF-8 JSON bytes (invalid UTF-8 decodes to U+FFFD, as a text decoder does); throws a
 * SyntaxError when they are not JSON and a JsonDepthError when they nest too deeply.
 */
export function parseJsonBytes(bytes: Uint8Array, limit = MAX_JSON_DEPTH): unknown {
  if (nestsDeeperThan(bytes, limit)) throw new JsonDepthError(limit)
  return JSON.parse(bufferView(bytes).toString('utf8'))
}
