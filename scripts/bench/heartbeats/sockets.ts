/**
 * WebSocket helpers of the heartbeat benchmark, shared by the valid clients and the flood process:
 * one socket opened (an upgrade the node refuses rejects with its status and body), and many opened
 * a bounded number of handshakes at a time.
 */
import WebSocket from 'ws'

const WS_OPTIONS = { perMessageDeflate: false, skipUTF8Validation: true } as const

export function openSocket(url: string, localAddress?: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { ...WS_OPTIONS, ...(localAddress ? { localAddress } : {}) })
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws))
    ws.once('error', reject)
    ws.once('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (d: Buffer) => {
        body += d.toString()
      })
      res.on('end', () => {
        reject(new Error(`upgrade refused for ${url}: ${res.statusCode} ${body.slice(0, 300)}`))
        ws.terminate()
      })
    })
  })
}

/** Opens every URL, `concurrency` handshakes at a time; `onOpen` runs before the next one starts. */
export async function openAll(
  urls: readonly string[],
  concurrency: number,
  onOpen: (ws: WebSocket, i: number) => void,
  localAddress?: string
): Promise<WebSocket[]> {
  const sockets = new Array<WebSocket>(urls.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(concurrency, urls.length) }, async () => {
      while (next < urls.length) {
        const i = next++
        const ws = await openSocket(urls[i]!, localAddress)
        onOpen(ws, i)
        sockets[i] = ws
      }
    })
  )
  return sockets
}
