/**
 * The front on node:http and ws: the same exchanges and socket endpoints as uws-front.ts, on any
 * runtime. Slower per request than uWS (docs/performance.md), never different in
 * what it answers.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { Socket } from 'node:net'
import { WebSocketServer, type WebSocket } from 'ws'
import { RegistryError } from '../errors.js'
import type { Front, FrontHandlers, HttpExchange, SocketConnection, SocketEndpoint } from './front.js'
import { JSON_CONTENT_TYPE, MAX_HEAD_BYTES } from './http.js'
import { PortInUse } from './port-in-use.js'
import type { TlsCredentials } from './tls.js'

const EMPTY = Buffer.alloc(0)
/** uWS keeps an idle keep-alive connection 10 s; node's default of 5 s would close it sooner. */
const KEEP_ALIVE_MS = 10_000

interface Tracked {
  ws: WebSocket
  receivedAt: number
  idleMs: number
}

/** node:http, or node:https when `tls` is given (the WebSocket upgrades ride on either). */
export function createNodeFront(handlers: FrontHandlers, tls?: TlsCredentials): Front {
  const options = { keepAliveTimeout: KEEP_ALIVE_MS, maxHeaderSize: MAX_HEAD_BYTES }
  const serve = (req: IncomingMessage, res: ServerResponse): void => handlers.http(exchange(req, res))
  const secure = tls ? createHttpsServer({ ...options, cert: tls.cert, key: tls.key }, serve) : null
  const server = secure ?? createServer(options, serve)
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) =>
    answerUnparsed(err, socket)
  )
  const routes = handlers.sockets.map(endpoint => ({
    endpoint,
    match: pathMatcher(endpoint.path),
    wss: new WebSocketServer({
      noServer: true,
      maxPayload: endpoint.maxPayloadBytes,
      perMessageDeflate: false,
      clientTracking: false
    })
  }))
  const open = new Set<Tracked>()

  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on('error', () => socket.destroy())
    const { pathname } = splitUrl(req.url ?? '/')
    let state: unknown
    let route: (typeof routes)[number] | undefined
    try {
      for (const r of routes) {
        const params = r.match(pathname)
        if (!params) continue
        route = r
        state = r.endpoint.upgrade({
          params,
          headers: headerRecord(req),
          remoteAddress: req.socket.remoteAddress ?? ''
        })
        break
      }
      if (!route) throw new RegistryError('route_not_found', `No WebSocket endpoint at ${pathname}.`)
    } catch (err) {
      socket.end(
        closingResponse(
          err instanceof RegistryError
            ? err
            : new RegistryError(err instanceof URIError ? 'invalid_id' : 'internal_error')
        )
      )
      return
    }
    const { endpoint, wss } = route
    wss.handleUpgrade(req, socket, head, ws => accept(endpoint, ws, state, req.socket.remoteAddress ?? ''))
  })

  function accept<T>(endpoint: SocketEndpoint<T>, ws: WebSocket, state: T, remoteAddress: string): void {
    const tracked: Tracked = { ws, receivedAt: Date.now(), idleMs: endpoint.idleTimeoutSeconds * 1000 }
    open.add(tracked)
    // Set when a send found bytes still queued: the write that empties the queue then calls drain.
    let backlogged = false
    const drained = (): void => {
      if (backlogged && ws.bufferedAmount === 0) {
        backlogged = false
        endpoint.drain?.(connection)
      }
    }
    const connection: SocketConnection<T> = {
      data: state,
      remoteAddress,
      send: text => {
        if (ws.readyState !== ws.OPEN) return
        if (ws.bufferedAmount > 0) backlogged = true
        ws.send(text, drained)
      },
      end: (code, reason) => {
        if (ws.readyState === ws.OPEN) ws.close(code, reason)
      },
      bufferedAmount: () => ws.bufferedAmount
    }
    const touch = (): void => {
      tracked.receivedAt = Date.now()
    }
    // ws reports protocol violations (oversized frames: 1009) as errors and closes the socket itself.
    ws.on('error', () => {})
    ws.on('ping', touch)
    ws.on('message', (data: Buffer) => {
      touch()
      endpoint.message(connection, data)
    })
    ws.on('close', () => {
      open.delete(tracked)
      endpoint.close(connection)
    })
    endpoint.open(connection)
  }

  // Idle connections are closed like uWS's idleTimeout does.
  const idleSweep = setInterval(() => {
    const now = Date.now()
    for (const t of open) if (now - t.receivedAt > t.idleMs) t.ws.terminate()
  }, 5_000).unref()

  return {
    kind: 'node',
    secure: secure !== null,
    async useTls(next) {
      if (!secure) throw new Error('this front serves plain HTTP; HTTPS takes a restart')
      // New handshakes use the new context; connections already open keep the one they started with.
      secure.setSecureContext({ cert: next.cert, key: next.key })
    },
    listen(host, port) {
      return new Promise((resolve, reject) => {
        const onError = (err: NodeJS.ErrnoException): void =>
          reject(
            err.code === 'EADDRINUSE'
              ? new PortInUse(host, port)
              : new Error(`cannot listen on ${host}:${port}: ${err.message}`)
          )
        server.once('error', onError)
        server.listen(port, host, () => {
          server.off('error', onError)
          const address = server.address()
          resolve(typeof address === 'object' && address ? address.port : port)
        })
      })
    },
    close() {
      server.close()
      clearInterval(idleSweep)
    },
    closeConnections() {
      for (const t of open) t.ws.terminate()
      server.closeAllConnections()
    }
  }
}

function exchange(req: IncomingMessage, res: ServerResponse): HttpExchange {
  const { pathname, query } = splitUrl(req.url ?? '/')
  let aborted = false
  let abortListener: (() => void) | undefined
  res.on('close', () => {
    if (res.writableFinished) return
    aborted = true
    abortListener?.()
  })
  return {
    method: (req.method ?? 'GET').toUpperCase(),
    path: pathname,
    query,
    headers: headerRecord(req),
    remoteAddress: req.socket.remoteAddress ?? '',
    onAborted(listener) {
      abortListener = listener
    },
    onData(listener) {
      req.on('data', (chunk: Buffer) => listener(chunk, false))
      req.on('end', () => listener(EMPTY, true))
    },
    reply(status, headers, body, closeConnection) {
      if (aborted || res.headersSent) return
      for (const [k, v] of headers) res.setHeader(k, v)
      if (body !== undefined) res.setHeader('Content-Length', Buffer.byteLength(body))
      if (closeConnection) res.setHeader('Connection', 'close')
      res.writeHead(status)
      res.end(body)
    }
  }
}

/**
 * A request node's parser refused, answered in the error table's shape before the connection
 * closes: a head over MAX_HEAD_BYTES is 414 when the request line is what overflowed (the packet
 * that overflowed has no line break yet, or its first line ends the request line), else 431;
 * anything else unparsable is 400.
 */
function answerUnparsed(err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket): void {
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy()
    return
  }
  const error =
    err.code !== 'HPE_HEADER_OVERFLOW'
      ? new RegistryError('invalid_request', `The request is not valid HTTP/1.1 (${err.code ?? 'parse error'}).`)
      : err.rawPacket && requestLineOverflowed(err.rawPacket)
        ? new RegistryError('url_too_long')
        : new RegistryError('headers_too_large')
  socket.end(closingResponse(error))
}

/** A whole HTTP/1.1 error response, for sockets node's server has not (or no longer) wrapped in a response. */
function closingResponse(error: RegistryError): string {
  const body = JSON.stringify(error.toBody())
  return `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\nContent-Type: ${JSON_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
}

function requestLineOverflowed(packet: Buffer): boolean {
  const lineEnd = packet.indexOf('\r\n')
  return (
    lineEnd === -1 ||
    packet
      .subarray(Math.max(0, lineEnd - 9), lineEnd)
      .toString('latin1')
      .startsWith(' HTTP/1.')
  )
}

function splitUrl(url: string): { pathname: string; query: string } {
  const q = url.indexOf('?')
  return q === -1 ? { pathname: url, query: '' } : { pathname: url.slice(0, q), query: url.slice(q + 1) }
}

function headerRecord(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v
  return headers
}

/** Matches a path against a template with `:name` segments; the parameters, percent-decoded. */
function pathMatcher(template: string): (path: string) => Record<string, string> | null {
  const parts = template.split('/')
  return path => {
    const segments = path.split('/')
    if (segments.length !== parts.length) return null
    const params: Record<string, string> = {}
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as string
      const segment = segments[i] as string
      if (part.startsWith(':')) {
        if (segment === '') return null
        params[part.slice(1)] = decodeURIComponent(segment)
      } else if (part !== segment) return null
    }
    return params
  }
}
