/**
 * The front on uWebSockets.js (the fast path). uWS invalidates `req` when its handler returns, so
 * the exchange copies what it needs first; writes after an await go through `res.cork`.
 */
import { STATUS_CODES } from 'node:http'
import { createServer } from 'node:net'
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, WebSocket } from 'uWebSockets.js'
import { RegistryError } from '../errors.js'
import type { Front, FrontHandlers, HttpExchange, SocketConnection, SocketEndpoint } from './front.js'
import { JSON_CONTENT_TYPE } from './http.js'
import type { UwsModule } from './uws-loader.js'
import { assertPortFree } from './port-in-use.js'
import type { TlsCredentials } from './tls.js'

/** What uWS may buffer per socket before it drops sends; the protocol layer keeps far below it. */
const MAX_BACKPRESSURE = 4 * 1024 * 1024
/**
 * The idle time announced in `Keep-Alive: timeout=N`. uWS closes an idle keep-alive connection after
 * 10 s counted in its 4 s sweeps, so after 8 to 12 s, and says nothing about it: a client that reuses
 * the connection as it closes gets ECONNRESET (all of a burst's connections at once, since one sweep
 * closes them together). Clients that read the hint (node:http agents with a `timeout`, fetch/undici)
 * drop idle connections 1–2 s before the announced 5 s, well before uWS's earliest close at 8 s.
 */
const KEEP_ALIVE_HINT = 'timeout=5'

interface Slot<T> {
  connection: SocketConnection<T> | null
  state: T
  address: string
}

/**
 * With `tls`, an SSLApp serving that certificate. uWS fixes an app's certificate when it builds the
 * app and has no call to replace it, so `useTls` builds a second app with the same routes, listens
 * on the same port (uWS sets SO_REUSEPORT on a non-zero port), then closes the first app's listener:
 * new connections get the new certificate, open ones stay on the app they came to.
 */
export function createUwsFront(uws: UwsModule, handlers: FrontHandlers, tls?: TlsCredentials): Front {
  const sockets = new Set<WebSocket<Slot<unknown>>>()
  const apps: TemplatedApp[] = []
  const build = (credentials: TlsCredentials | undefined): TemplatedApp => {
    const app = credentials
      ? uws.SSLApp({ cert_file_name: credentials.certFile, key_file_name: credentials.keyFile })
      : uws.App()
    // Registered ahead of the catch-all: a plain (non-upgrade) request on a socket path falls through to it.
    for (const endpoint of handlers.sockets) serveSocket(uws, app, endpoint, sockets)
    app.any('/*', (res, req) => handlers.http(exchange(res, req)))
    apps.push(app)
    return app
  }
  const listenOn = (app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> =>
    new Promise((resolve, reject) => {
      app.listen(host, port, token => (token ? resolve(token) : reject(new Error(`cannot listen on ${host}:${port}`))))
    })
  let listenSocket: us_listen_socket | null = null
  let bound: { host: string; port: number } | null = null
  build(tls)
  return {
    kind: 'uws',
    secure: tls !== undefined,
    async listen(host, port) {
      await assertPortFree(host, port)
      // uWS sets SO_REUSEPORT only on a port it is given, and the second app of a certificate
      // reload must share the port: a secure front picks its free port before it binds.
      const chosen = tls && port === 0 ? await freePort(host) : port
      listenSocket = await listenOn(apps[0] as TemplatedApp, host, chosen)
      bound = { host, port: uws.us_socket_local_port(listenSocket) }
      return bound.port
    },
    async useTls(next) {
      if (!tls) throw new Error('this front serves plain HTTP; HTTPS takes a restart')
      const app = build(next)
      if (!bound || !listenSocket) return
      let token: us_listen_socket
      try {
        token = await listenOn(app, bound.host, bound.port)
      } catch (err) {
        apps.pop()
        throw err
      }
      uws.us_listen_socket_close(listenSocket)
      listenSocket = token
    },
    close() {
      if (listenSocket) uws.us_listen_socket_close(listenSocket)
      listenSocket = null
    },
    closeConnections() {
      for (const ws of sockets) ws.close()
      // Builds from 20.44 on end the app's HTTP connections too; older ones leave them to the process exit.
      for (const app of apps) (app as TemplatedApp & { close?: () => void }).close?.()
    }
  }
}

/** A port nothing holds on `host` now, from the kernel's ephemeral range. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen({ host, port: 0, exclusive: true }, () => {
      const address = probe.address()
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

function exchange(res: HttpResponse, req: HttpRequest): HttpExchange {
  const headers: Record<string, string> = {}
  req.forEach((k, v) => {
    headers[k] = v
  })
  // uWS ends the connection after the reply when the request says `Connection: close` (5 letters, as it tests).
  const keepsConnection = headers.connection?.length !== 5
  let aborted = false
  let abortListener: (() => void) | undefined
  res.onAborted(() => {
    aborted = true
    abortListener?.()
  })
  return {
    method: req.getCaseSensitiveMethod().toUpperCase(),
    path: req.getUrl(),
    query: req.getQuery() ?? '',
    headers,
    remoteAddress: Buffer.from(res.getRemoteAddressAsText()).toString(),
    onAborted(listener) {
      abortListener = listener
    },
    onData(listener) {
      // uWS reuses the chunk's memory after the callback: copy it.
      res.onData((chunk, isLast) => listener(Buffer.from(chunk.slice(0)), isLast))
    },
    reply(status, replyHeaders, body, closeConnection) {
      if (aborted) return
      res.cork(() => {
        res.writeStatus(`${status} ${STATUS_CODES[status] ?? ''}`)
        for (const [k, v] of replyHeaders) res.writeHeader(k, v)
        if (keepsConnection && !closeConnection) res.writeHeader('Keep-Alive', KEEP_ALIVE_HINT)
        res.end(body, closeConnection)
      })
    }
  }
}

function serveSocket<T>(
  uws: UwsModule,
  app: TemplatedApp,
  endpoint: SocketEndpoint<T>,
  open: Set<WebSocket<Slot<unknown>>>
): void {
  const names = [...endpoint.path.matchAll(/:([A-Za-z_]+)/g)].map(m => m[1] as string)
  const connection = (ws: WebSocket<Slot<T>>): SocketConnection<T> => {
    const slot = ws.getUserData()
    slot.connection ??= {
      data: slot.state,
      remoteAddress: slot.address,
      send: text => {
        ws.send(text)
      },
      end: (code, reason) => {
        ws.end(code, reason)
      },
      bufferedAmount: () => ws.getBufferedAmount()
    }
    return slot.connection
  }
  app.ws<Slot<T>>(endpoint.path, {
    compression: uws.DISABLED,
    maxPayloadLength: endpoint.maxPayloadBytes,
    idleTimeout: endpoint.idleTimeoutSeconds,
    maxBackpressure: MAX_BACKPRESSURE,
    upgrade: (res, req, context) => {
      const key = req.getHeader('sec-websocket-key')
      const protocol = req.getHeader('sec-websocket-protocol')
      const extensions = req.getHeader('sec-websocket-extensions')
      const headers: Record<string, string> = {}
      req.forEach((k, v) => {
        headers[k] = v
      })
      const address = Buffer.from(res.getRemoteAddressAsText()).toString()
      let state: T
      try {
        const params: Record<string, string> = {}
        names.forEach((name, i) => {
          params[name] = decodeURIComponent(req.getParameter(i) ?? '')
        })
        state = endpoint.upgrade({ params, headers, remoteAddress: address })
      } catch (err) {
        const error =
          err instanceof RegistryError
            ? err
            : new RegistryError(err instanceof URIError ? 'invalid_id' : 'internal_error')
        res.cork(() => {
          res.writeStatus(`${error.status} ${STATUS_CODES[error.status] ?? ''}`)
          res.writeHeader('Content-Type', JSON_CONTENT_TYPE)
          res.end(JSON.stringify(error.toBody()), true)
        })
        return
      }
      res.upgrade<Slot<T>>({ connection: null, state, address }, key, protocol, extensions, context)
    },
    open: ws => {
      open.add(ws as unknown as WebSocket<Slot<unknown>>)
      endpoint.open(connection(ws))
    },
    message: (ws, message) => endpoint.message(connection(ws), Buffer.from(message)),
    drain: ws => endpoint.drain?.(connection(ws)),
    close: ws => {
      open.delete(ws as unknown as WebSocket<Slot<unknown>>)
      endpoint.close(connection(ws))
    }
  })
}
