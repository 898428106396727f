/**
 * Authorization of updates and deletions, in every form docs/compatibility.md lists, and of writes
 * signed in their own body (registrations, claims, bindings). Returns how the signature was carried
 * and which form verified, which the operation keeps for re-verification.
 */
import { RegistryError } from '../../errors.js'
import type { SignerRole } from '../../identity/authorization.js'
import { parsePublicKey, parseSignature } from '../../identity/encoding.js'
import {
  isTimestampedForm,
  verifyBodySignedUpdate,
  verifyDeletion,
  verifyRawBody,
  verifyRelease,
  type SignedForm
} from '../../identity/verifiers.js'
import type { SignatureVerifier } from '../../identity/verify-pool.js'
import type { Operation, OperationAuth } from '../../store/records.js'
import { SignatureReplayed, type SignatureReuse, type WriteTransaction } from '../../store/registry-store.js'
import type { Credential, WriteRequest } from './writes.js'
import { changedFields } from './validation.js'

/** The keys allowed to sign for a record: its own, and its owning developer's when it has one. */
export interface SignerKeys {
  self: Buffer
  developer: Buffer | null
}

/** For records a developer signs directly (its profile, handle, names): Bearer and Bearer-Dev both mean that key. */
export function developerSigner(publicKey: string): SignerKeys {
  const key = parsePublicKey(publicKey) as Buffer
  return { self: key, developer: key }
}

function keyFor(keys: SignerKeys, role: SignerRole): Buffer {
  const key = role === 'self' ? keys.self : keys.developer
  if (!key) throw new RegistryError('signature_invalid', 'Bearer-Dev was used but this record has no owning developer.')
  return key
}

function signers(keys: SignerKeys): [SignerRole, Buffer][] {
  return keys.developer
    ? [
        ['self', keys.self],
        ['developer', keys.developer]
      ]
    : [['self', keys.self]]
}

const MALFORMED = {
  Authorization:
    'Malformed Authorization header: expected "Bearer ed25519:<base64 signature>" or "Bearer-Dev ed25519:<base64 signature>".',
  'X-Signature': 'Malformed X-Signature header: expected ed25519:<base64 signature>.'
} as const

/** The credential, its malformed headers refused; nothing when none was sent. */
function sent(credential: Credential | null | undefined): Exclude<Credential, { carrier: 'malformed' }> | null {
  if (credential?.carrier === 'malformed') throw new RegistryError('signature_invalid', MALFORMED[credential.header])
  return credential ?? null
}

const signatureText = (signature: Buffer) => `ed25519:${signature.toString('base64')}`

/** A verifier of one kind of body-signed write (identity/verifiers.ts): the form that verified, or null. */
export type BodySignatureCheck = (
  body: Record<string, unknown>,
  publicKey: Buffer,
  signature: Buffer,
  verifier: SignatureVerifier
) => Promise<SignedForm | null>

/**
 * A write signed in its own body (the `signature` member): verified with `key` by `check`, in any
 * form it accepts. Returns the form; a signature that does not verify is `signature_invalid`, with
 * `failure` saying whose key it was checked against.
 */
export async function requireBodySignature(
  check: BodySignatureCheck,
  body: { signature: string },
  key: Buffer,
  verifier: SignatureVerifier,
  failure: string
): Promise<SignedForm> {
  const form = await check(body as Record<string, unknown>, key, parseSignature(body.signature) as Buffer, verifier)
  if (!form) throw new RegistryError('signature_invalid', failure, 'signature')
  return form
}

/**
 * An update to a record its developer signs directly (its profile, handle, names): Authorization or
 * the body's own signature, with the developer's key whichever role the header names.
 */
export function authorizeDeveloperUpdate(
  request: Pick<WriteRequest, 'raw' | 'credential'>,
  body: Record<string, unknown>,
  developerPublicKey: string,
  verifier: SignatureVerifier
): Promise<OperationAuth> {
  return authorizeUpdate(request.credential, developerSigner(developerPublicKey), request.raw, body, verifier)
}

/** Update: Authorization over the raw body, or the body's own `signature` over its canonical JSON. */
export async function authorizeUpdate(
  credential: Credential | null | undefined,
  keys: SignerKeys,
  rawBody: Uint8Array,
  body: Record<string, unknown>,
  verifier: SignatureVerifier
): Promise<OperationAuth> {
  const auth = sent(credential)
  if (auth?.carrier === 'authorization') {
    const key = keyFor(keys, auth.role)
    const form =
      (await verifyRawBody(rawBody, key, auth.signature, verifier)) ??
      (await verifyBodySignedUpdate(body, key, auth.signature, verifier))
    if (!form)
      throw new RegistryError(
        'signature_invalid',
        `The Authorization signature does not verify against the ${auth.role === 'self' ? "record's" : "owning developer's"} key over the request body.`
      )
    return { carrier: 'authorization', signer: auth.role, signature: signatureText(auth.signature), form }
  }
  if (auth?.carrier === 'body') {
    if (auth.signature) {
      for (const [role, key] of signers(keys)) {
        const form = await verifyBodySignedUpdate(body, key, auth.signature, verifier)
        if (form) return { carrier: 'body', signer: role, signature: auth.text, form }
      }
    }
    throw new RegistryError(
      'signature_invalid',
      'The body signature does not verify over the canonical JSON of the body without `signature`.',
      'signature'
    )
  }
  throw new RegistryError('authorization_required')
}

/**
 * The node's clock, for the checks made only when a client sends a write (never when an operation
 * is replayed from the mesh, which is judged by when its home node accepted it).
 */
export interface EdgeClock {
  nowMs: number
  maxSkewMs: number
}

export function edgeClock(now: Date, settings: { maxClockSkewMs: number }): EdgeClock {
  return { nowMs: now.getTime(), maxSkewMs: settings.maxClockSkewMs }
}

/**
 * Deletion: Authorization or X-Signature over the ID (deployed) or the URL path (spec), or over the
 * path with a `timestamp` query (replay-proof; its timestamp checked against `clock` when given).
 */
export async function authorizeDeletion(
  credential: Credential | null | undefined,
  keys: SignerKeys,
  id: string,
  path: string,
  verifier: SignatureVerifier,
  clock?: EdgeClock
): Promise<OperationAuth> {
  const auth = sent(credential)
  if (auth?.carrier === 'authorization') {
    const form = await verifyDeletion(id, path, keyFor(keys, auth.role), auth.signature, verifier)
    if (!form)
      throw new RegistryError(
        'signature_invalid',
        `The Authorization signature does not verify over the ID or the path with the ${auth.role === 'self' ? "record's" : "owning developer's"} key.`
      )
    if (clock) requireFreshTimestamp(form, path, clock)
    return { carrier: 'authorization', signer: auth.role, signature: signatureText(auth.signature), form }
  }
  if (auth?.carrier === 'x-signature') {
    for (const [role, key] of signers(keys)) {
      const form = await verifyDeletion(id, path, key, auth.signature, verifier)
      if (!form) continue
      if (clock) requireFreshTimestamp(form, path, clock)
      return { carrier: 'x-signature', signer: role, signature: auth.text, form }
    }
    throw new RegistryError('signature_invalid', 'The X-Signature does not verify over the URL path or the ID.')
  }
  throw new RegistryError('authorization_required')
}

/**
 * A timestamped form's `timestamp` query (RFC 3339, or Unix seconds) must be within the clock
 * skew of the node: outside it, a captured request is refused even where its signature was never seen.
 */
function requireFreshTimestamp(form: SignedForm, path: string, clock: EdgeClock): void {
  if (!isTimestampedForm(form)) return
  const text = new URLSearchParams(path.slice(path.indexOf('?') + 1)).get('timestamp')
  const at =
    text === null
      ? Number.NaN
      : /^\d{1,12}$/.test(text)
        ? Number(text) * 1000
        : /^\d{4}-\d{2}-\d{2}T/.test(text)
          ? Date.parse(text)
          : Number.NaN
  if (Number.isNaN(at))
    throw new RegistryError(
      'validation_failed',
      'timestamp: a signature over the path and its query needs a timestamp query parameter, RFC 3339 or Unix seconds.',
      'timestamp'
    )
  if (Math.abs(clock.nowMs - at) > clock.maxSkewMs)
    throw new RegistryError(
      'clock_skew',
      `The timestamp is ${Math.round((at - clock.nowMs) / 1000)} s from the node clock; at most ${clock.maxSkewMs / 1000} s is accepted.`,
      'timestamp'
    )
}

/**
 * Whether an update's, deletion's or release's signature may act again on a later incarnation of
 * its subject, one that began at `since` (store/signature-ledger.ts SignatureReuse): only forms whose
 * bytes never change (no timestamp), and not on a node told to refuse that (`strict`,
 * entities.strict_replay, for the writes its clients send).
 */
export function deterministicReuse(auth: OperationAuth, since: string, strict: boolean): SignatureReuse | undefined {
  return strict || isTimestampedForm(auth.form) ? undefined : { since }
}

/**
 * A signed body that names its target (in the spec form it may, to bind the signature to it) must
 * name the one in the path: a signature made for one name cannot be replayed against another.
 */
export function requireTarget(body: Record<string, unknown>, target: Record<string, string>): void {
  for (const [field, value] of Object.entries(target)) {
    const sent = body[field]
    if (sent !== undefined && sent !== null && String(sent).toLowerCase() !== value.toLowerCase()) {
      throw new RegistryError(
        'validation_failed',
        `${field}: the body names ${String(sent)}, but the path names ${value}`,
        field
      )
    }
  }
}

/**
 * Appends an update's operation inside its transaction, a signature of an earlier incarnation
 * allowed (deterministicReuse). Returns false, having written nothing, when a client sent again
 * an update already in effect: the deployed clients sign the same bytes every time, and such a
 * repeat changes nothing.
 */
export function appendUpdate<T extends { registered_at: string }>(
  tx: WriteTransaction,
  op: Operation,
  current: T,
  updated: T,
  o: { remote: boolean; strict: boolean }
): boolean {
  try {
    tx.appendOperation(op, undefined, deterministicReuse(op.auth, current.registered_at, !o.remote && o.strict))
    return true
  } catch (err) {
    if (!o.remote && err instanceof SignatureReplayed && changedFields(current, updated).length === 0) return false
    throw err
  }
}

/**
 * Release of a handle or name: Authorization (Bearer or Bearer-Dev) by the developer over
 * `release:<subject>`, or over the path with a `timestamp` query (replay-proof, checked against `clock`).
 */
export async function authorizeRelease(
  credential: Credential | null | undefined,
  subject: string,
  path: string,
  developerKey: string,
  what: string,
  verifier: SignatureVerifier,
  clock?: EdgeClock
): Promise<OperationAuth> {
  const auth = sent(credential)
  if (auth?.carrier !== 'authorization')
    throw new RegistryError(
      'authorization_required',
      `Releasing a ${what} needs Authorization: Bearer <signature over "release:${subject}"> by its developer.`
    )
  const form = await verifyRelease(subject, path, parsePublicKey(developerKey) as Buffer, auth.signature, verifier)
  if (!form)
    throw new RegistryError(
      'signature_invalid',
      `The signature does not verify over "release:${subject}" (or the path with its timestamp query) with the key of the ${what}'s developer.`
    )
  if (clock) requireFreshTimestamp(form, path, clock)
  return { carrier: 'authorization', signer: 'developer', signature: signatureText(auth.signature), form }
}
