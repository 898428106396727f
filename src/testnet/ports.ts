/**
 * Free TCP ports on 127.0.0.1 for process-mode nodes, none handed out twice within a testnet.
 */
import { createServer } from 'node:net'
import { TestnetError } from './testnet-types.js'

/** Free ports on 127.0.0.1 for the nodes' HTTP (p) and libp2p (q, with q + 1 for WebSockets), never the same twice. */
export class PortPicker {
  private readonly taken = new Set<number>()

  async take(): Promise<[number, number]> {
    const http = await this.next(1)
    return [http, await this.next(2)]
  }

  private async next(span: number): Promise<number> {
    for (let attempt = 0; attempt < 100; attempt++) {
      const port = await freePort(0)
      const range = Array.from({ length: span }, (_, k) => port + k)
      if (port + span > 65535 || range.some(p => this.taken.has(p))) continue
      if (
        span > 1 &&
        !(await freePort(port + 1).then(
          () => true,
          () => false
        ))
      )
        continue
      for (const p of range) this.taken.add(p)
      return port
    }
    throw new TestnetError('found no free ports on 127.0.0.1')
  }
}

/** Binds `port` (0: the kernel's pick) on 127.0.0.1, releases it and returns it. */
function freePort(port: number): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as { port: number }).port
      server.close(() => resolvePort(bound))
    })
  })
}
