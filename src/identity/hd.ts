import { createHash } from 'node:crypto'
import { keyPairFromSeed, type KeyPair } from './keys.js'

const AGENT_DOMAIN = Buffer.from('zns:agent:', 'ascii')
const MAX_HD_INDEX = 0xffff_ffff

function uint32be(index: number): Buffer {
  if (!Number.isInteger(index) || index < 0 || index > MAX_HD_INDEX)
    throw new RangeError('HD index must be an unsigned 32-bit integer')
  const b = Buffer.alloc(4)
  b.writeUInt32BE(index)
  return b
}

/** agent seed = first 32 bytes of SHA-512(developer seed ‖ "zns:agent:" ‖ uint32be(index)). */
export function deriveAgentSeed(developerSeed: Uint8Array, index: number): Buffer {
  return createHash('sha512')
    .update(developerSeed)
    .update(AGENT_DOMAIN)
    .update(uint32be(index))
    .digest()
    .subarray(0, 32)
}

export function deriveAgentKeyPair(developerSeed: Uint8Array, index: number): KeyPair {
  return keyPairFromSeed(deriveAgentSeed(developerSeed, index))
}

/** The 36 bytes a developer proof signs: raw agent public key ‖ uint32be(index). */
export function developerProofMessage(agentPublicKey: Uint8Array, index: number): Buffer {
  return Buffer.concat([agentPublicKey, uint32be(index)])
}
