/**
 * `/zns/search/1.0.0` (protocols/README.md): one federated search request to one peer, one answer.
 * The opener writes a request frame and reads one answer frame (the results, or an error); the
 * answerer searches its own index only (it never fans out again, so queries cannot loop) and closes.
 *
 * Bounds: request frames up to 64 KiB and answers up to 4 MiB (an answerer drops its lowest-ranked
 * results to fit); an answerer gives a requester 5 s to send its request and runs at most
 * `maxConcurrent` searches for peers at a time (beyond, it answers `overloaded` at once). The
 * requester's deadline is its own `signal`.
 */
import type { Connection, Stream } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import { lpStream } from '@libp2p/utils'
import type { Logger } from 'pino'
import { RegistryError } from '../errors.js'
import { FEDERATION_LIMITS, PeerSearchRequest, PeerSearchResponse, type PeerError } from '../wire/federation.js'
import { validate } from '../wire/validate.js'
import { decodeJson, encodeJson, isPeerError, parseJson } from './frames.js'
import type { MeshLibp2p } from './libp2p-node.js'

export const SEARCH_PROTOCOL = '/zns/search/1.0.0'

/** How long an answerer waits for the request frame. */
const REQUEST_READ_TIMEOUT_MS = 5000
/** How long an answerer may take to search and write its answer. */
const ANSWER_TIMEOUT_MS = 10_000
/** Concurrent streams per connection, each way: a busy requester's parallel queries to one peer. */
const STREAMS_PER_CONNECTION = 32

/** Searches this node's own index for a peer. */
export type PeerSearchHandler = (request: PeerSearchRequest, peerId: string) => Promise<PeerSearchResponse>

export interface SearchProtocolOptions {
  libp2p: MeshLibp2p
  logger: Logger
  answer: PeerSearchHandler
  /** Searches for peers running at once (default 16). */
  maxConcurrent?: number
}

export class SearchProtocol {
  private running = 0
  /** Requests answered and refused (tests, logs). */
  answered = 0
  refused = 0
  private readonly shutdown = new AbortController()

  constructor(private readonly o: SearchProtocolOptions) {}

  async start(): Promise<void> {
    await this.o.libp2p.handle(SEARCH_PROTOCOL, (stream, connection) => this.serve(stream, connection), {
      maxInboundStreams: STREAMS_PER_CONNECTION,
      maxOutboundStreams: STREAMS_PER_CONNECTION
    })
  }

  async stop(): Promise<void> {
    this.shutdown.abort()
    await this.o.libp2p.unhandle(SEARCH_PROTOCOL).catch(() => {})
  }

  /** Asks a connected peer; rejects on failure, a refusal, a malformed answer, or when `signal` aborts. */
  async query(peerId: string, request: PeerSearchRequest, signal: AbortSignal): Promise<PeerSearchResponse> {
    const connection = this.o.libp2p.getConnections(peerIdFromString(peerId)).find(c => c.status === 'open')
    if (!connection) throw new Error('not connected')
    const frame = encodeJson(request)
    if (frame.byteLength > FEDERATION_LIMITS.requestBytes)
      throw new Error(`request of ${frame.byteLength} bytes exceeds ${FEDERATION_LIMITS.requestBytes}`)
    let stream: Stream | undefined
    try {
      stream = await connection.newStream(SEARCH_PROTOCOL, { signal })
      const lp = lpStream(stream, { maxDataLength: FEDERATION_LIMITS.responseBytes })
      await lp.write(frame, { signal })
      const answer = parseJson((await lp.read({ signal })).subarray(), 'search answer')
      await stream.close({ signal }).catch(() => {})
      if (isPeerError(answer)) throw new Error(`${answer.error}: ${answer.message ?? ''}`.trim())
      return validate(PeerSearchResponse, answer)
    } catch (err) {
      stream?.abort(err as Error)
      throw err
    }
  }

  private async answerFrame(bytes: Uint8Array, peerId: string): Promise<PeerSearchResponse> {
    let request: PeerSearchRequest
    try {
      request = decodeJson(PeerSearchRequest, bytes, 'search request')
    } catch (err) {
      throw err instanceof RegistryError ? err : new SyntaxError((err as Error).message)
    }
    return this.o.answer(request, peerId)
  }

  private async serve(stream: Stream, connection: Connection): Promise<void> {
    const peerId = connection.remotePeer.toString()
    const lp = lpStream(stream, { maxDataLength: FEDERATION_LIMITS.requestBytes })
    const readSignal = AbortSignal.any([this.shutdown.signal, AbortSignal.timeout(REQUEST_READ_TIMEOUT_MS)])
    const writeSignal = (): AbortSignal =>
      AbortSignal.any([this.shutdown.signal, AbortSignal.timeout(ANSWER_TIMEOUT_MS)])
    const maxConcurrent = this.o.maxConcurrent ?? 16
    let counted = false
    try {
      const bytes = (await lp.read({ signal: readSignal })).subarray()
      let reply: PeerSearchResponse | PeerError
      if (this.running >= maxConcurrent) {
        this.refused++
        reply = { error: 'overloaded', message: `this node already answers ${maxConcurrent} searches for peers` }
      } else {
        this.running++
        counted = true
        reply = await this.answerFrame(bytes, peerId).catch(errorReply)
      }
      await lp.write(fitted(reply), { signal: writeSignal() })
      await stream.close({ signal: writeSignal() })
      if (!('error' in reply)) this.answered++
    } catch (err) {
      this.o.logger.debug({ err, peer_id: peerId }, 'search request from peer failed')
      stream.abort(err as Error)
    } finally {
      if (counted) this.running--
    }
  }
}

function errorReply(err: unknown): PeerError {
  if (err instanceof SyntaxError) return { error: 'invalid_json', message: err.message }
  if (err instanceof RegistryError) return { error: err.code, message: err.message.slice(0, 500) }
  return { error: 'internal_error', message: 'Internal error.' }
}

/** The answer as a frame within the size cap: the lowest-ranked results go first until it fits. */
function fitted(reply: PeerSearchResponse | PeerError): Uint8Array {
  let frame = encodeJson(reply)
  if (frame.byteLength <= FEDERATION_LIMITS.responseBytes || 'error' in reply) return frame
  let results = reply.results
  while (frame.byteLength > FEDERATION_LIMITS.responseBytes && results.length > 0) {
    results = results.slice(0, Math.floor(results.length * (FEDERATION_LIMITS.responseBytes / frame.byteLength) * 0.95))
    frame = encodeJson({ ...reply, results })
  }
  return frame
}
