import { hash } from 'node:crypto'
import { parsePublicKey } from './encoding.js'

/** The four ID namespaces; all derive from the first 16 bytes of SHA-256 of the raw public key. */
export type IdKind = 'agent' | 'service' | 'developer' | 'registry'

const PREFIX: Record<IdKind, string> = {
  agent: 'zns:',
  service: 'zns:svc:',
  developer: 'zns:dev:',
  registry: 'zns:registry:'
}

export const ID_PATTERNS = {
  entity: /^zns:(svc:)?[0-9a-f]{32}$/,
  agent: /^zns:[0-9a-f]{32}$/,
  service: /^zns:svc:[0-9a-f]{32}$/,
  developer: /^zns:dev:[0-9a-f]{32}$/,
  registry: /^zns:registry:[0-9a-f]{32}$/
} as const

export function idHex(rawPublicKey: Uint8Array): string {
  return hash('sha256', rawPublicKey).slice(0, 32)
}

export function deriveId(kind: IdKind, publicKey: Uint8Array | string): string {
  const raw = typeof publicKey === 'string' ? parsePublicKey(publicKey) : publicKey
  if (raw?.length !== 32) throw new TypeError('deriveId needs a 32-byte Ed25519 public key')
  return PREFIX[kind] + idHex(raw)
}
