/**
 * Attestations as trust edges: beside each attestation record, the store keeps a 45-byte value under
 * its issuer's raw ID (a database of binary keys with sorted duplicates, `attestation_edges`), holding
 * what its weight depends on and its subject as raw bytes. A full trust computation reads ten million
 * of them in one cursor without decoding a record or making a string.
 *
 *   key    the issuer: its kind (ID_KINDS), then its 32 hex digits as 16 bytes
 *
 *   0      format (1)
 *   1      kind and outcome: 0 interaction success, 1 interaction failure, 2 endorsement, 3 dispute
 *   2      1 when the evidence holds a message ID
 *   3      payment check: 0 none, 1 unchecked, 2 settled, 3 refuted
 *   4–11   issued_at, ms since the epoch (float64, little-endian)
 *   12     the subject's kind (ID_KINDS)
 *   13–28  the subject's 32 hex digits as 16 bytes
 *   29–44  the attestation ID's 32 hex digits as 16 bytes (keeps two edges of one issuer and subject apart)
 */
import type { AttestationRecord } from './records.js'
import type { AttestationFacts, PaymentCheck } from '../trust/weights.js'

export const EDGE_BYTES = 45
const FORMAT = 1
/** The kinds of ID (its prefix: `zns:`, `zns:svc:`, `zns:dev:`). */
export const ID_KINDS = { agent: 0, service: 1, developer: 2 } as const
const KINDS = ['interaction', 'interaction', 'endorsement', 'dispute'] as const
const PAYMENT_CHECKS: readonly PaymentCheck[] = ['none', 'unchecked', 'settled', 'refuted']

/** An ID as raw bytes: its 32 hex digits at `bytes[at … at + 15]`, and its kind. */
export interface RawId {
  bytes: Uint8Array
  at: number
  kind: number
}

/** The ID's kind and the offset of its hex digits, or null when it is not shaped like an ID. */
function parts(id: string): { kind: number; hex: string } | null {
  const m = /^zns:(?:(svc|dev):)?([0-9a-f]{32})$/.exec(id)
  if (!m) return null
  return { kind: m[1] === 'svc' ? ID_KINDS.service : m[1] === 'dev' ? ID_KINDS.developer : ID_KINDS.agent, hex: m[2]! }
}

/** An ID as a key: its kind, then its digits as 16 bytes (null when it is not shaped like one). */
export function rawIdKey(id: string): Buffer | null {
  const p = parts(id)
  if (!p) return null
  const key = Buffer.alloc(17)
  key[0] = p.kind
  key.write(p.hex, 1, 'hex')
  return key
}

/** The edge of an attestation (key and value), or null when an ID is not shaped like one (never stored so). */
export function encodeEdge(r: AttestationRecord): { key: Buffer; value: Buffer } | null {
  const subject = parts(r.subject)
  const issuer = rawIdKey(r.issuer)
  const id = /^zns:att:([0-9a-f]{32})$/.exec(r.attestation_id)?.[1]
  if (!subject || !issuer || !id) return null
  const edge = Buffer.alloc(EDGE_BYTES)
  edge[0] = FORMAT
  edge[1] = r.kind === 'interaction' ? (r.outcome === 'success' ? 0 : 1) : r.kind === 'endorsement' ? 2 : 3
  edge[2] = r.evidence?.message_id !== undefined ? 1 : 0
  edge[3] = PAYMENT_CHECKS.indexOf(r.payment_check)
  edge.writeDoubleLE(Date.parse(r.issued_at), 4)
  edge[12] = subject.kind
  edge.write(subject.hex, 13, 'hex')
  edge.write(id, 29, 'hex')
  return { key: issuer, value: edge }
}

/** What an edge value's weight depends on (as `facts` of the record gives it). */
export function edgeFacts(edge: Uint8Array): AttestationFacts {
  return {
    kind: KINDS[edge[1]!] ?? 'dispute',
    outcome: edge[1] === 0 ? 'success' : edge[1] === 1 ? 'failure' : undefined,
    messageId: edge[2] === 1,
    payment: PAYMENT_CHECKS[edge[3]!] ?? 'none',
    // Buffer's reader on the bytes as they are: a DataView over a fresh typed array's buffer cost 1 µs.
    issuedAtMs: Buffer.prototype.readDoubleLE.call(edge, 4)
  }
}

/** The edge value's subject as a raw ID. */
export function edgeSubject(edge: Uint8Array): RawId {
  return { bytes: edge, at: 13, kind: edge[12]! }
}

/** An edge key's issuer as a raw ID. */
export function edgeIssuer(key: Uint8Array): RawId {
  return { bytes: key, at: 1, kind: key[0]! }
}
