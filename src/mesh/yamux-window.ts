/**
 * js-libp2p's yamux answers every data frame it receives with a window update frame, so each
 * gossip message (one small frame) costs its receiver an extra encryption and socket write, and
 * its sender an extra read and decryption. Go's yamux, which the protocol comes from, sends an
 * update only once half the receive window has been consumed; this does the same. The sender
 * still has at least half a window (128 KiB by default) when the update leaves, so bulk
 * transfers (sync) do not stall, and peers of any version interoperate: an update is only a
 * credit, and fewer of them is within the protocol.
 */
import { StreamState, YamuxStream } from '@chainsafe/libp2p-yamux/stream'

/** The private fields the decision reads (stream.js keeps them as plain properties). */
interface ReceiveWindow {
  state: StreamState
  recvWindow: number
  recvWindowCapacity: number
}

/** Flags go out on the first frame of a stream (SYN, ACK) and a paused stream keeps its own rule: both stay eager. */
const LAZY_STATES = new Set([StreamState.SYNSent, StreamState.Established, StreamState.Finished])

let installed = false

export function installLazyWindowUpdates(): void {
  if (installed) return
  installed = true
  const prototype = YamuxStream.prototype as unknown as { sendWindowUpdate(this: ReceiveWindow): void }
  const eager = prototype.sendWindowUpdate
  // A yamux release without the method keeps its own behaviour (test/unit/yamux-window.test.ts then fails).
  if (typeof eager !== 'function') return
  prototype.sendWindowUpdate = function sendWindowUpdate(this: ReceiveWindow): void {
    if (LAZY_STATES.has(this.state) && this.recvWindowCapacity * 2 > this.recvWindow) return
    eager.call(this)
  }
}
