/**
 * Records what a client sends to a node and what the node answers: a reverse proxy between them
 * that writes one JSON line per HTTP exchange and per WebSocket event. Its output is what
 * `npm run client-fixture` turns into a fixture of test/fixtures/clients/ (docs/compatibility.md,
 * "Recording a client").
 *
 *   npm run client-record -- --listen 18081 --node http://127.0.0.1:18080 --out session.jsonl
 */
import { appendFileSync } from 'node:fs'
import { createServer, request } from 'node:http'
import { parseArgs } from 'node:util'
import WebSocket, { WebSocketServer } from 'ws'

const { values } = parseArgs({
  options: { listen: { type: 'string' }, node: { type: 'string' }, out: { type: 'string' } }
})
if (!values.listen || !values.node || !values.out) {
  console.error('usage: record --listen PORT --node http://HOST:PORT --out FILE.jsonl')
  process.exit(2)
}
const node = new URL(values.node)
const out = values.out
let next = 0
const log = (line: Record<string, unknown>) => appendFileSync(out, `${JSON.stringify(line)}\n`)
/** Response headers a client may read (the rest is transport). */
const KEPT = ['content-type', 'x-card-verification', 'x-card-source', 'retry-after', 'location']

const server = createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', chunk => chunks.push(chunk))
  req.on('end', () => {
    const body = Buffer.concat(chunks)
    const id = ++next
    const headers = { ...req.headers, host: node.host, 'content-length': String(body.length) }
    const upstream = request(
      { host: node.hostname, port: node.port, method: req.method, path: req.url, headers },
      answer => {
        const parts: Buffer[] = []
        answer.on('data', chunk => parts.push(chunk))
        answer.on('end', () => {
          const response = Buffer.concat(parts)
          log({
            id,
            at: new Date().toISOString(),
            method: req.method,
            path: req.url,
            headers: req.headers,
            body: body.toString('utf8'),
            status: answer.statusCode,
            response_headers: Object.fromEntries(KEPT.filter(h => answer.headers[h]).map(h => [h, answer.headers[h]])),
            response: response.toString('utf8')
          })
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          res.end(response)
        })
      }
    )
    upstream.on('error', err => {
      res.writeHead(502)
      res.end(String(err))
    })
    upstream.end(body)
  })
})

const sockets = new WebSocketServer({ noServer: true })
server.on('upgrade', (req, socket, head) => {
  sockets.handleUpgrade(req, socket, head, client => {
    const id = ++next
    log({ id, at: new Date().toISOString(), ws: 'open', path: req.url, headers: req.headers })
    const upstream = new WebSocket(`ws://${node.host}${req.url}`)
    const pending: WebSocket.RawData[] = []
    upstream.on('open', () => {
      for (const frame of pending.splice(0)) upstream.send(frame)
    })
    client.on('message', frame => {
      log({ id, at: new Date().toISOString(), ws: 'client', frame: frame.toString() })
      if (upstream.readyState === WebSocket.OPEN) upstream.send(frame)
      else pending.push(frame)
    })
    upstream.on('message', frame => {
      log({ id, at: new Date().toISOString(), ws: 'server', frame: frame.toString() })
      client.send(frame)
    })
    upstream.on('unexpected-response', (_req, answer) => {
      log({ id, at: new Date().toISOString(), ws: 'refused', status: answer.statusCode })
      client.close(1011)
    })
    upstream.on('close', code => {
      log({ id, at: new Date().toISOString(), ws: 'close-server', code })
      client.close()
    })
    upstream.on('error', () => client.close(1011))
    client.on('close', () => upstream.close())
  })
})

server.listen(Number(values.listen), '127.0.0.1', () =>
  console.error(`recording ${values.listen} → ${node.host} into ${out}`)
)
