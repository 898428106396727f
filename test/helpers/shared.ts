/**
 * Small helpers several test files share: a port nothing listens on, the `$ref`s of a schema
 * document, and what a child process prints.
 */
import type { ChildProcess } from 'node:child_process'
import { type AddressInfo, createServer } from 'node:net'

/** Everything `child` writes to standard output and error so far, read when called. */
export function outputOf(child: ChildProcess): () => string {
  let out = ''
  const add = (chunk: Buffer | string) => {
    out += chunk
  }
  child.stdout?.on('data', add)
  child.stderr?.on('data', add)
  return () => out
}

/** A loopback port nothing listens on: one the system just handed out and took back. */
export async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise(resolve => server.close(resolve))
  return port
}

/** Every `$ref` string in a JSON document, depth first. */
export function collectRefs(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) collectRefs(v, out)
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.push(v)
      else collectRefs(v, out)
    }
  }
  return out
}
