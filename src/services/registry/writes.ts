/**
 * The write model of the services: a write as a client sent it, a write another node accepted and
 * the mesh replays here, and the two outcomes a replay may meet besides success.
 */
import type { SignerRole } from '../../identity/authorization.js'
import type { Operation } from '../../store/records.js'

/**
 * How a write's signature came, parsed once: at the API edge from the request's headers and body,
 * or from a replicated operation's `auth` as it is stored. `text` is the signature as it is kept in
 * the operation. `malformed` is a header sent that holds no signature: it is refused as
 * `signature_invalid` when the write is authorized, after its body was checked.
 */
export type Credential =
  | { carrier: 'authorization'; role: SignerRole; signature: Buffer }
  | { carrier: 'x-signature'; signature: Buffer; text: string }
  | { carrier: 'body'; signature: Buffer | null; text: string }
  | { carrier: 'malformed'; header: 'Authorization' | 'X-Signature' }

/** A write as it arrived: the exact body bytes, the parsed body, the path and its signature. */
export interface WriteRequest {
  raw: Uint8Array
  body: unknown
  path: string
  /** Absent: the write is signed in its body in a way its service checks itself (a registration). */
  credential?: Credential | null
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
