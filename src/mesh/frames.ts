/**
 * One-frame JSON messages on libp2p streams (length-prefixed with `lpStream`): encoding, and decoding
 * with a schema check, for the request/response protocols between nodes (federated search, reachability,
 * hole punching).
 */
import type { Static, TSchema } from '@sinclair/typebox'
import { JsonDepthError, MAX_JSON_DEPTH, nestsDeeperThan } from '../wire/json.js'
import { validate } from '../wire/validate.js'

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value))
}

/** Parses UTF-8 JSON; throws an Error naming `what` when the bytes are not JSON. */
export function parseJson(bytes: Uint8Array, what: string): unknown {
  try {
    if (nestsDeeperThan(bytes, MAX_JSON_DEPTH)) throw new JsonDepthError(MAX_JSON_DEPTH)
    return JSON.parse(decoder.decode(bytes))
  } catch (err) {
    throw new Error(`${what}: ${err instanceof JsonDepthError ? err.message : 'not UTF-8 JSON'}`)
  }
}

/** Parses and validates; throws the schema's `validation_failed` error naming the first bad field. */
export function decodeJson<T extends TSchema>(schema: T, bytes: Uint8Array, what: string): Static<T> {
  return validate(schema, parseJson(bytes, what))
}

/** True for `{error: string, message?: string}`: a peer's refusal instead of an answer. */
export function isPeerError(value: unknown): value is { error: string; message?: string } {
  return value !== null && typeof value === 'object' && typeof (value as { error?: unknown }).error === 'string'
}
