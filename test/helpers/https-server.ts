/** HTTPS stand-ins for outside services in the tests: the GitHub API, a registry's well-known proof, agent cards. */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { generate } from 'selfsigned'

export interface TestHttpsServer {
  url: string
  /** The self-signed certificate (PEM): trust it as a CA, or fingerprint it. */
  certPem: string
  close(): Promise<void>
}

/** A stand-in's JSON answer. */
export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

/** A real HTTPS server on 127.0.0.1 with a certificate made for the test (CN and SAN localhost/127.0.0.1). */
export async function startHttpsServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void
): Promise<TestHttpsServer> {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keySize: 2048,
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' }
        ]
      }
    ]
  })
  const server = createServer({ key: pems.private, cert: pems.cert }, handler)
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `https://127.0.0.1:${port}`,
    certPem: pems.cert,
    close: () =>
      new Promise<void>(resolve => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
