/**
 * The transport under the HTTP/WebSocket API. Routing, limits, the error table and the socket
 * protocols live above it (server.ts, sockets.ts) and see only these interfaces, so the same API
 * runs on uWebSockets.js where a native build of it loads, and on node:http + ws everywhere else.
 */
import type { TlsCredentials } from './tls.js'

/** `auto` takes uWebSockets.js when a native build loads for this runtime, else node:http. */
export type ServerKind = 'uws' | 'node'
export type ServerChoice = ServerKind | 'auto'

/** One HTTP request and its reply. Request fields are read before the first await of the handler. */
export interface HttpExchange {
  /** Upper case. */
  readonly method: string
  /** The path exactly as received (percent-encoding intact), without the query. */
  readonly path: string
  /** The query string without `?` (empty when there is none). */
  readonly query: string
  /** Header names lower case; repeated headers joined by ", ". */
  readonly headers: Record<string, string>
  readonly remoteAddress: string
  /** Called at most once, when the client goes away before the reply was sent. */
  onAborted(listener: () => void): void
  /** Streams the body in chunks the listener may keep; `isLast` marks the final one. */
  onData(listener: (chunk: Buffer, isLast: boolean) => void): void
  /** Sends the whole reply; `closeConnection` ends the connection after it (unread body, shutdown). */
  reply(
    status: number,
    headers: ReadonlyArray<readonly [string, string]>,
    body: string | Buffer | undefined,
    closeConnection: boolean
  ): void
}

/** An accepted WebSocket: the protocol layer's state for it and the calls it needs. */
export interface SocketConnection<T> {
  readonly data: T
  readonly remoteAddress: string
  send(text: string): void
  /** Closes with a close frame (code and reason). */
  end(code: number, reason: string): void
  /** Bytes queued on the socket and not yet written. */
  bufferedAmount(): number
}

export interface UpgradeRequest {
  /** The `:name` parameters of the endpoint path, percent-decoded. */
  readonly params: Record<string, string>
  readonly headers: Record<string, string>
  readonly remoteAddress: string
}

/** A WebSocket endpoint. Its path is a template whose `:name` segments become parameters. */
export interface SocketEndpoint<T> {
  readonly path: string
  /** Larger frames close the connection with 1009. */
  readonly maxPayloadBytes: number
  /** A connection that receives nothing for this long is closed. */
  readonly idleTimeoutSeconds: number
  /** The connection state; a thrown RegistryError is answered as JSON instead of upgrading. */
  upgrade(request: UpgradeRequest): T
  open(ws: SocketConnection<T>): void
  message(ws: SocketConnection<T>, message: Buffer): void
  /** The socket wrote out what it had buffered. */
  drain?(ws: SocketConnection<T>): void
  close(ws: SocketConnection<T>): void
}

export interface FrontHandlers {
  http(exchange: HttpExchange): void
  /** Served ahead of `http`; a plain request on their paths goes to `http`. */
  sockets: ReadonlyArray<SocketEndpoint<unknown>>
}

export interface Front {
  readonly kind: ServerKind
  /** Serving HTTPS and WSS (the front was created with a certificate). */
  readonly secure: boolean
  /** Resolves with the bound port. */
  listen(host: string, port: number): Promise<number>
  /** Stops accepting connections; open ones stay until closeConnections. */
  close(): void
  /** Ends every connection still open (keep-alive HTTP included). */
  closeConnections(): void
  /**
   * Serves another certificate to new connections; open ones keep theirs. Only on a secure front
   * (HTTPS cannot be turned on or off while listening).
   */
  useTls(tls: TlsCredentials): Promise<void>
}
