/**
 * Window updates (src/mesh/yamux-window.ts): two real libp2p nodes on loopback; one sends 400
 * small messages (about 1.6 receive windows) over one yamux stream. Every byte arrives, and the
 * receiver sends a window update per half window consumed, not one per data frame.
 */
import '../../src/polyfills.js'
import test from 'ava'
import { lpStream } from '@libp2p/utils'
import { installLazyWindowUpdates } from '../../src/mesh/yamux-window.js'
import { bareLibp2p } from '../helpers/bare-libp2p.js'

const PROTOCOL = '/test/window/1.0.0'
const MESSAGES = 400
const MESSAGE_BYTES = 1_024
/** yamux's frame type of a window update (spec: 0x1). */
const WINDOW_UPDATE = 1

test('a receiver credits its sender once per half window, and a transfer beyond the window completes', async t => {
  installLazyWindowUpdates()
  const [sender, receiver] = await Promise.all([bareLibp2p(), bareLibp2p()])
  try {
    let windowUpdates = 0
    const received = new Promise<number>((resolve, reject) => {
      receiver
        .handle(PROTOCOL, async stream => {
          const frames = stream as unknown as { sendFrame(header: { type: number }, body?: unknown): boolean }
          const send = frames.sendFrame
          frames.sendFrame = (header, body) => {
            if (header.type === WINDOW_UPDATE) windowUpdates++
            return send(header, body)
          }
          const lp = lpStream(stream)
          let bytes = 0
          for (let i = 0; i < MESSAGES; i++) bytes += (await lp.read()).byteLength
          await stream.close()
          resolve(bytes)
        })
        .catch(reject)
    })
    const stream = await sender.dialProtocol(receiver.getMultiaddrs()[0]!, PROTOCOL)
    const lp = lpStream(stream)
    for (let i = 0; i < MESSAGES; i++) await lp.write(new Uint8Array(MESSAGE_BYTES).fill(i % 256))
    t.is(await received, MESSAGES * MESSAGE_BYTES)
    // 400 KiB over a 256 KiB window: an update after each 128 KiB or so, where yamux's own rule sends 400.
    t.true(windowUpdates >= 1 && windowUpdates <= 8, `${windowUpdates} window updates`)
    await stream.close()
  } finally {
    await Promise.all([sender.stop(), receiver.stop()])
  }
})
