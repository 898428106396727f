/**
 * A listening port another process holds. uWS binds with SO_REUSEPORT, so a second node on the same
 * port would "listen" and the kernel would split requests between the two: a plain bind first, which
 * a port held by anyone refuses, tells the truth before uWS binds.
 */
import { createServer } from 'node:net'

export class PortInUse extends Error {
  override name = 'PortInUse'
  constructor(
    readonly host: string,
    readonly port: number
  ) {
    super(`port ${port} on ${host} is in use by another process`)
  }
}

/** Resolves when nothing holds host:port (port 0 always is free); rejects with PortInUse otherwise. */
export function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new PortInUse(host, port) : err)
    )
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()))
  })
}
