import { parseSignature } from './encoding.js'

/** Who an Authorization signature claims to be from: the record's own key, or its owning developer's. */
export type SignerRole = 'self' | 'developer'

export interface AuthorizationSignature {
  role: SignerRole
  signature: Buffer
}

/**
 * Parses `Authorization: Bearer ed25519:<sig>` (the record's key) and `Bearer-Dev ed25519:<sig>`
 * (the owning developer's key). Returns null when the header is absent, undefined when malformed.
 */
export function parseAuthorization(header: string | undefined): AuthorizationSignature | null | undefined {
  if (header === undefined || header === '') return null
  const match = /^(bearer|bearer-dev)\s+(\S+)\s*$/i.exec(header)
  if (!match) return undefined
  const signature = parseSignature(match[2] as string)
  if (!signature) return undefined
  return { role: (match[1] as string).toLowerCase() === 'bearer-dev' ? 'developer' : 'self', signature }
}
