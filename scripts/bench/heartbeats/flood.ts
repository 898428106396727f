/**
 * The heartbeat benchmark's flood of invalid signatures, run in its own process (flood-child.ts) so
 * its CPU is counted apart and its event loop does not delay the valid client, driven over IPC:
 * the commands and replies, and the child's side (multiplexed sockets from the flood address,
 * heartbeats of registered entities signed by a wrong key, batched, at the offered rate, reopened
 * when the node closes them, and what came back counted by code).
 */
import { createHash } from 'node:crypto'
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks'
import WebSocket from 'ws'
import { keyPairFromSeed, sign } from '../../../src/identity/keys.js'
import { openAll, openSocket } from './sockets.js'

export interface FloodPlan {
  mode: 'a' | 'b'
  url: string
  sockets: number
  rate: number
  batch: number
  reconnect: boolean
  address: string
}
export type FloodCommand =
  | { cmd: 'init'; ids: string[] }
  | ({ cmd: 'prepare' } & FloodPlan)
  | { cmd: 'go' }
  | { cmd: 'stop' }
  | { cmd: 'collect' }
  | { cmd: 'exit' }

export interface FloodStats {
  mode: 'a' | 'b'
  sockets: number
  openMs: number
  sendingMs: number
  offered: number
  sent: number
  messages: number
  skippedClosed: number
  skippedBackpressure: number
  replies: Record<string, number>
  closedByNode: Record<string, number>
  reconnects: number
  connectFailures: number
  eventLoopDelayMaxMs: number
}
export type FloodReply = { type: 'ready'; openMs: number } | { type: 'stats'; stats: FloodStats }

export async function floodChild(): Promise<void> {
  const send = (m: FloodReply) => process.send!(m)
  const wrongKey = keyPairFromSeed(createHash('sha256').update('bench-heartbeats flood key').digest())
  const signatures = Array.from({ length: 64 }, (_, i) => sign(wrongKey, `not the entity's key ${i}`))
  let ids: string[] = []
  let plan: FloodPlan | null = null
  let sockets: (WebSocket | null)[] = []
  let stats: FloodStats | null = null
  let ready = false
  let wantGo = false
  let running = false
  let collecting = false
  let goAt = 0
  let sentMessages = 0
  let stoppedAt = 0
  let pick = 1
  let loop: IntervalHistogram | null = null

  const onMessage = (data: Buffer): void => {
    const s = stats!
    let code: string
    if (data.indexOf('"signature_invalid"') !== -1) code = 'signature_invalid'
    else if (data.indexOf('"rate_limited"') !== -1) code = 'rate_limited'
    else if (data.indexOf('"type":"ack"') !== -1) code = 'ack'
    else {
      try {
        code = String((JSON.parse(data.toString()) as { error?: unknown }).error ?? 'unknown')
      } catch {
        code = 'unparsable'
      }
    }
    s.replies[code] = (s.replies[code] ?? 0) + 1
  }
  const attach = (ws: WebSocket, c: number): void => {
    ws.on('message', onMessage)
    ws.on('error', () => {})
    ws.on('close', (code, reason) => {
      if (sockets[c] !== ws) return
      sockets[c] = null
      if (collecting || !stats) return
      const key = `${code}${reason.length ? ` "${reason.toString()}"` : ''}`
      stats.closedByNode[key] = (stats.closedByNode[key] ?? 0) + 1
      if (plan!.reconnect && running) reopen(c)
    })
  }
  const url = () => `${plan!.url.replace(/^http/, 'ws')}/v1/heartbeat`
  const reopen = (c: number): void => {
    openSocket(url(), plan!.address).then(
      ws => {
        if (collecting || !running) {
          ws.terminate()
          return
        }
        stats!.reconnects++
        attach(ws, c)
        sockets[c] = ws
      },
      () => {
        stats!.connectFailures++
        if (running) setTimeout(() => reopen(c), 100)
      }
    )
  }

  const tick = (): void => {
    if (!running) return
    const p = plan!
    const s = stats!
    const elapsed = performance.now() - goAt
    const perMessageMs = (1000 * p.batch) / p.rate
    const due = Math.floor(elapsed / perMessageMs) + 1
    if (due > sentMessages) {
      const timestamp = new Date().toISOString()
      while (sentMessages < due) {
        let c = sentMessages % p.sockets
        let ws = sockets[c]
        // (a) pushes its whole rate through whichever of its connections are open, and holds what
        // is due while none is (it goes out as soon as one reopens); (b) keeps every connection
        // within its own rate, so a closed connection's share is skipped until it reopens.
        for (let tries = 1; p.mode === 'a' && (!ws || ws.readyState !== WebSocket.OPEN) && tries < p.sockets; tries++)
          ws = sockets[(c = (c + 1) % p.sockets)]
        if (p.mode === 'a' && (!ws || ws.readyState !== WebSocket.OPEN)) break
        sentMessages++
        s.offered += p.batch
        if (!ws || ws.readyState !== WebSocket.OPEN) {
          s.skippedClosed += p.batch
          continue
        }
        if (ws.bufferedAmount > 1024 * 1024) {
          s.skippedBackpressure += p.batch
          continue
        }
        const frames: string[] = []
        for (let f = 0; f < p.batch; f++) {
          pick = (Math.imul(pick, 1103515245) + 12345) >>> 0
          const id = ids[pick % ids.length]!
          frames.push(`{"agent_id":"${id}","timestamp":"${timestamp}","signature":"${signatures[pick & 63]!}"}`)
        }
        ws.send(p.batch === 1 ? frames[0]! : `[${frames.join(',')}]`)
        s.messages++
        s.sent += p.batch
      }
    }
    setTimeout(tick, 1)
  }
  const start = (): void => {
    running = true
    goAt = performance.now()
    sentMessages = 0
    loop = monitorEventLoopDelay({ resolution: 10 })
    loop.enable()
    tick()
  }

  process.on('message', (msg: FloodCommand) => {
    switch (msg.cmd) {
      case 'init':
        ids = msg.ids
        break
      case 'prepare': {
        plan = msg
        collecting = false
        ready = false
        wantGo = false
        stats = {
          mode: msg.mode,
          sockets: msg.sockets,
          openMs: 0,
          sendingMs: 0,
          offered: 0,
          sent: 0,
          messages: 0,
          skippedClosed: 0,
          skippedBackpressure: 0,
          replies: {},
          closedByNode: {},
          reconnects: 0,
          connectFailures: 0,
          eventLoopDelayMaxMs: 0
        }
        const started = performance.now()
        sockets = new Array<WebSocket | null>(msg.sockets).fill(null)
        void openAll(
          Array.from({ length: msg.sockets }, url),
          100,
          (ws, c) => {
            attach(ws, c)
            sockets[c] = ws
          },
          msg.address
        ).then(
          () => {
            stats!.openMs = performance.now() - started
            ready = true
            send({ type: 'ready', openMs: stats!.openMs })
            if (wantGo) start()
          },
          err => {
            process.stderr.write(`flood: ${(err as Error).message}\n`)
            process.exit(1)
          }
        )
        break
      }
      case 'go':
        if (ready) start()
        else wantGo = true
        break
      case 'stop':
        if (running) {
          running = false
          stoppedAt = performance.now()
          stats!.sendingMs = stoppedAt - goAt
          // What was due but held back (no connection open) counts as offered, not sent.
          const due = Math.floor(stats!.sendingMs / ((1000 * plan!.batch) / plan!.rate))
          if (due > sentMessages) stats!.offered += (due - sentMessages) * plan!.batch
        }
        wantGo = false
        if (loop) {
          loop.disable()
          stats!.eventLoopDelayMaxMs = loop.max / 1e6
        }
        break
      case 'collect':
        collecting = true
        for (const ws of sockets) ws?.terminate()
        sockets = []
        send({ type: 'stats', stats: stats! })
        break
      case 'exit':
        process.exit(0)
    }
  })
}
