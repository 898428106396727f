/**
 * The signed forms of every write, as docs/reference/signing.md lists them, built on the client
 * side: the spec's (a `signature` in the body over its canonical JSON; deletions over the URL path,
 * replay-proof with `?timestamp=`) and the deployed clients' (fixed field subsets, `Authorization:
 * Bearer` over the raw body or the ID). The node's verifiers (src/identity/verifiers.ts) are the
 * other half; the deployed signables are theirs, so both sides sign and check the same bytes.
 */
import { canonicalJson, withoutSignature } from '../identity/canonical-json.js'
import { formatKey } from '../identity/encoding.js'
import { type DeveloperProofFile, readKeyFile } from '../identity/key-file.js'
import { type KeyPair, sign } from '../identity/keys.js'

/** `spec`: what the specification says; `deployed`: what the clients of the public network send. */
export type SignedForm = 'spec' | 'deployed'

/** A key to sign with, and what it stands for. */
export interface Signer {
  keyPair: KeyPair
  /**
   * Whose key it is where a header must say (`Bearer` or `Bearer-Dev`): the record's own
   * (`self`, the default) or its owning developer's.
   */
  role?: 'self' | 'developer'
  /** An HD entity key's developer and proof, which a registration carries. */
  developerId?: string
  developerProof?: DeveloperProofFile
}

export type SigningKey = KeyPair | Signer

export const signerOf = (key: SigningKey): Signer => ('keyPair' in key ? key : { keyPair: key })

/**
 * A key file as `registry-node keys` writes it: a developer key signs its entities as their owning
 * developer; an entity key brings its developer proof.
 */
export async function readSigner(path: string): Promise<Signer & { type: 'developer' | 'entity' }> {
  const { file, keyPair } = await readKeyFile(path)
  return {
    type: file.type,
    keyPair,
    role: file.type === 'developer' ? 'developer' : 'self',
    ...(file.developer_id ? { developerId: file.developer_id } : {}),
    ...(file.developer_proof ? { developerProof: file.developer_proof } : {})
  }
}

export const publicKeyOf = (key: SigningKey): string => formatKey(signerOf(key).keyPair.publicKey)

type Body = Record<string, unknown>

/**
 * A body signed in itself: the spec form signs the canonical JSON of the body without `signature`;
 * the deployed form signs the canonical JSON of `deployedSignable(body)`.
 */
export function signBody<T extends Body>(
  body: T,
  key: SigningKey,
  form: SignedForm,
  deployedSignable: (body: Body) => Body
): T & { signature: string } {
  const unsigned = withoutSignature(body)
  const signable = form === 'deployed' ? deployedSignable(unsigned) : unsigned
  return { ...unsigned, signature: sign(signerOf(key).keyPair, canonicalJson(signable)) } as T & { signature: string }
}

/** What goes on the wire for a signed update: the exact body text and its headers. */
export interface SignedRequest {
  raw?: string
  headers: Record<string, string>
}

const bearer = (signer: Signer): string => (signer.role === 'developer' ? 'Bearer-Dev' : 'Bearer')

/**
 * An update (a record's fields, a handle verification, a name's version): the spec form puts the
 * signature in the body; the deployed form signs the raw bytes sent, in `Authorization`.
 */
export function signUpdate(body: Body, key: SigningKey, form: SignedForm): SignedRequest {
  const signer = signerOf(key)
  const unsigned = withoutSignature(body)
  if (form === 'spec')
    return {
      raw: JSON.stringify({ ...unsigned, signature: sign(signer.keyPair, canonicalJson(unsigned)) }),
      headers: {}
    }
  const raw = JSON.stringify(unsigned)
  return { raw, headers: { Authorization: `${bearer(signer)} ${sign(signer.keyPair, raw)}` } }
}

export interface DeletionOptions {
  form?: SignedForm
  /**
   * Spec form only: sign the path with a `timestamp` query (Unix seconds), which a node accepts
   * once and only within its clock skew (the default), instead of the bare path or subject that
   * stay valid for later registrations of the same key (docs/reference/signing.md).
   */
  timestamp?: boolean
  /** The clock, for tests. */
  now?: () => number
}

/**
 * A deletion or release, for `path` (as sent, percent-encoded). `deployedMessage` is what the
 * deployed clients sign (the ID, or `release:<subject>`); `bareSpec` is the untimestamped spec
 * form's carrier: `X-Signature` over the path for records, `Authorization` over the deployed
 * message for handles and names (their releases accept no X-Signature).
 */
export function signDeletion(
  path: string,
  key: SigningKey,
  o: DeletionOptions & { deployedMessage: string; bareSpec: 'x-signature-path' | 'authorization-message' }
): { path: string; headers: Record<string, string> } {
  const signer = signerOf(key)
  const form = o.form ?? 'spec'
  if (form === 'deployed')
    return { path, headers: { Authorization: `${bearer(signer)} ${sign(signer.keyPair, o.deployedMessage)}` } }
  if (o.timestamp !== false) {
    const seconds = Math.floor((o.now?.() ?? Date.now()) / 1000)
    const stamped = `${path}${path.includes('?') ? '&' : '?'}timestamp=${seconds}`
    const signature = sign(signer.keyPair, stamped)
    return {
      path: stamped,
      headers:
        o.bareSpec === 'x-signature-path'
          ? { 'X-Signature': signature }
          : { Authorization: `${bearer(signer)} ${signature}` }
    }
  }
  return o.bareSpec === 'x-signature-path'
    ? { path, headers: { 'X-Signature': sign(signer.keyPair, path) } }
    : { path, headers: { Authorization: `${bearer(signer)} ${sign(signer.keyPair, o.deployedMessage)}` } }
}
