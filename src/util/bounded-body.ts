import type { IncomingMessage } from 'node:http'

/**
 * Collects a response's body up to `maxBytes`, so that a peer or a remote site cannot make this node
 * buffer without bound. A declared content-length over the cap is refused before any byte is read,
 * and so is each chunk that takes the body over it (`tooLarge` is called for each; the caller ends
 * the request, and repeated calls must be harmless). Otherwise `done` gets the whole body at its end.
 */
export function collectBoundedBody(
  res: IncomingMessage,
  maxBytes: number,
  on: { tooLarge: () => void; done: (body: Buffer) => void }
): void {
  const declared = Number(res.headers['content-length'])
  if (Number.isFinite(declared) && declared > maxBytes) {
    on.tooLarge()
    return
  }
  const chunks: Buffer[] = []
  let size = 0
  res.on('data', (chunk: Buffer) => {
    size += chunk.length
    if (size > maxBytes) {
      on.tooLarge()
      return
    }
    chunks.push(chunk)
  })
  res.on('end', () => on.done(Buffer.concat(chunks, size)))
}
