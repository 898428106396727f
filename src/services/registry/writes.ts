/**
 * The write model of the services: a write as a client sent it, a write another node accepted and
 * the mesh replays here, and the two outcomes a replay may meet besides success.
 */
import type { Operation } from '../../store/records.js'

/** The signature headers of a write, as received. */
export interface Credentials {
  authorization?: string | undefined
  xSignature?: string | undefined
}

/** A write as it arrived: the exact body bytes, the parsed body, the path and signature headers. */
export interface WriteRequest {
  raw: Uint8Array
  body: unknown
  path: string
  credentials?: Credentials
}

/**
 * A write another node accepted, replayed here from its operation (gossip, sync): verified again
 * as a client's would be, then applied with the origin's time and home.
 */
export interface RemoteWrite {
  op: Operation
  /** The origin's host: `home_registry` of what the operation creates. */
  home: string
}

/** A replayed operation that loses to what this node holds (last writer wins): nothing changed. */
export class StaleOperation extends Error {
  constructor() {
    super('stale operation')
    this.name = 'StaleOperation'
  }
}

/** A replayed operation that needs a record this node does not hold yet (`subject`): retried once it arrives. */
export class MissingDependency extends Error {
  constructor(readonly subject: string) {
    super(`waiting for ${subject}`)
    this.name = 'MissingDependency'
  }
}
