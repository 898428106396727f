/**
 * A simulation's randomness, seeded: `Math.random` (gossipsub's and libp2p's shuffles), Web Crypto's
 * `getRandomValues` and node:crypto's `randomBytes`/`randomFillSync`/`randomUUID` (kad-dht's random
 * walks, noise's ephemeral keys, stream and connection IDs). Keys and nonces drawn from it are
 * predictable, which is what a repeatable simulation wants and what nothing outside it may have:
 * `restore()` puts the real sources back.
 */
import { createRequire, syncBuiltinESMExports } from 'node:module'
import { seededRandom } from '../random.js'

const require = createRequire(import.meta.url)
const nodeCrypto = require('node:crypto') as typeof import('node:crypto')

type Writable = Record<string, unknown>

export function seedRandomness(seed: number): () => void {
  const random = seededRandom(seed)
  const fill = <T extends ArrayBufferView>(view: T): T => {
    const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength)
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256)
    return view
  }
  const webCrypto = globalThis.crypto as unknown as Writable
  const saved = {
    mathRandom: Math.random,
    getRandomValues: Object.getOwnPropertyDescriptor(webCrypto, 'getRandomValues'),
    randomBytes: nodeCrypto.randomBytes,
    randomFillSync: nodeCrypto.randomFillSync,
    randomUUID: nodeCrypto.randomUUID,
    webRandomUUID: Object.getOwnPropertyDescriptor(webCrypto, 'randomUUID')
  }
  const mathRandom = seededRandom(seed * 31 + 7)
  Math.random = mathRandom
  const uuid = (): `${string}-${string}-${string}-${string}-${string}` => {
    const hex = Buffer.from(fill(new Uint8Array(16))).toString('hex')
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}` as const
  }
  Object.defineProperty(webCrypto, 'getRandomValues', { value: fill, configurable: true, writable: true })
  Object.defineProperty(webCrypto, 'randomUUID', { value: uuid, configurable: true, writable: true })
  const c = nodeCrypto as unknown as Writable
  c.randomBytes = (size: number, callback?: (err: Error | null, buf: Buffer) => void) => {
    const buf = fill(Buffer.alloc(size))
    if (callback) queueMicrotask(() => callback(null, buf))
    return buf
  }
  c.randomFillSync = (view: ArrayBufferView, offset = 0, size?: number) => {
    const length = size ?? view.byteLength - offset
    fill(new Uint8Array(view.buffer, view.byteOffset + offset, length))
    return view
  }
  c.randomUUID = uuid
  syncBuiltinESMExports()
  return () => {
    Math.random = saved.mathRandom
    if (saved.getRandomValues) Object.defineProperty(webCrypto, 'getRandomValues', saved.getRandomValues)
    else delete webCrypto.getRandomValues
    if (saved.webRandomUUID) Object.defineProperty(webCrypto, 'randomUUID', saved.webRandomUUID)
    else delete webCrypto.randomUUID
    c.randomBytes = saved.randomBytes
    c.randomFillSync = saved.randomFillSync
    c.randomUUID = saved.randomUUID
    syncBuiltinESMExports()
  }
}
