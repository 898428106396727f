/**
 * One verifier per signed action. Each takes the bytes a client may have signed in every form
 * docs/compatibility.md lists (the spec's and the deployed clients'), tries them against the stated key and
 * returns the name of the form that verified, or null. Nothing that no form verifies is accepted.
 * The checking itself is the given SignatureVerifier's: inline, or the node's worker pool
 * (verify-pool.ts), which is why every verifier answers a promise.
 */
import { canonicalJson, goEscapedJson, withoutSignature } from './canonical-json.js'
import { developerProofMessage } from './hd.js'
import type { CandidateMessage, SignatureVerifier, VerifyPriority } from './verify-pool.js'

export type SignedForm = string

type Candidate = readonly [form: SignedForm, message: CandidateMessage]

async function firstVerifying(
  verifier: SignatureVerifier,
  publicKey: Buffer,
  signature: Buffer,
  candidates: readonly Candidate[],
  priority?: VerifyPriority
): Promise<SignedForm | null> {
  const index = await verifier.firstVerifying(
    publicKey,
    signature,
    candidates.map(([, message]) => message),
    priority
  )
  return candidates[index]?.[0] ?? null
}

/**
 * Candidates for a JSON object in canonical form, plain then Go-escaped, each built only when a
 * check reaches it (the escaped one only when the text has a character to escape).
 */
function canonicalForms(name: string, value: () => unknown): Candidate[] {
  let plain: string | undefined
  const text = (): string => {
    plain ??= canonicalJson(value())
    return plain
  }
  return [
    [name, text],
    [`${name}-escaped`, () => goEscapedJson(text())]
  ]
}

type Body = Record<string, unknown>

const str = (v: unknown): string => (typeof v === 'string' ? v : '')

type BodyVerifier = (
  body: Body,
  publicKey: Buffer,
  signature: Buffer,
  verifier: SignatureVerifier
) => Promise<SignedForm | null>

/**
 * A verifier for the usual pair of forms of a signed JSON body: the spec's (the whole body less its
 * signature) first, then the deployed clients' (`deployedSignable(body)`, a fixed subset of fields).
 */
function specThenDeployedVerifier(deployedSignable: (body: Body) => Body): BodyVerifier {
  // async so that a throw while building the forms rejects, as it did when each verifier was an async function
  return async (body, publicKey, signature, verifier) =>
    firstVerifying(verifier, publicKey, signature, [
      ...canonicalForms('spec', () => withoutSignature(body)),
      ...canonicalForms('deployed', () => deployedSignable(body))
    ])
}

/**
 * register entity: spec = canonical(body without signature); deployed = a fixed subset. Every form
 * is tried; the likelier one first (deployed clients spell `entity_type`, the spec `type`), since
 * each form that fails costs a whole verification.
 */
export async function verifyEntityRegistration(
  body: Body,
  publicKey: Buffer,
  signature: Buffer,
  verifier: SignatureVerifier
): Promise<SignedForm | null> {
  const spec = canonicalForms('spec', () => withoutSignature(body))
  const deployed = canonicalForms('deployed', () => deployedRegistrationSignable(body))
  // The Python SDK signs a service without entity_url as it sends it, with entity_url "".
  const asSent = deployedServiceSubstitutes(body)
    ? canonicalForms('deployed-empty-url', () => deployedRegistrationSignable(body, false))
    : []
  const deployedFirst = body.type === undefined && body.entity_type !== undefined
  return firstVerifying(
    verifier,
    publicKey,
    signature,
    deployedFirst ? [...deployed, ...asSent, ...spec] : [...spec, ...deployed, ...asSent]
  )
}

/** Whether the deployed form of this registration signs service_endpoint in place of an empty entity_url. */
function deployedServiceSubstitutes(body: Body): boolean {
  return str(body.entity_type) === 'service' && str(body.entity_url) === '' && str(body.service_endpoint) !== ''
}

/**
 * The deployed clients' registration signable. A service without entity_url signs its
 * service_endpoint there (the TypeScript SDK and the Go tools), unless `substitute` is false.
 */
export function deployedRegistrationSignable(body: Body, substitute = true): Body {
  const entityType = str(body.entity_type)
  const entityUrl = substitute && deployedServiceSubstitutes(body) ? str(body.service_endpoint) : str(body.entity_url)
  const signable: Body = {
    category: str(body.category),
    entity_url: entityUrl,
    name: str(body.name),
    public_key: str(body.public_key),
    summary: str(body.summary),
    tags: Array.isArray(body.tags) ? body.tags : null
  }
  if (entityType !== '') signable.entity_type = entityType
  return signable
}

/** developer proof: the developer key signs raw agent public key ‖ uint32be(index). */
export async function verifyDeveloperProof(
  developerKey: Buffer,
  agentKey: Buffer,
  index: number,
  signature: Buffer,
  verifier: SignatureVerifier
): Promise<boolean> {
  return (await verifier.firstVerifying(developerKey, signature, [developerProofMessage(agentKey, index)])) === 0
}

/** What the deployed clients sign of a developer registration: four fields, absent ones `""`. */
export const deployedDeveloperSignable = (body: Body): Body => ({
  github: str(body.github),
  name: str(body.name),
  profile_url: str(body.profile_url),
  public_key: str(body.public_key)
})

/** register developer: spec = canonical(body without signature); deployed = {github, name, profile_url, public_key}. */
export const verifyDeveloperRegistration: BodyVerifier = specThenDeployedVerifier(deployedDeveloperSignable)

/**
 * update entity or developer: spec = body `signature` over canonical(body without signature);
 * deployed = an Authorization header signature over the raw request body bytes.
 */
export async function verifyBodySignedUpdate(
  body: Body,
  publicKey: Buffer,
  signature: Buffer,
  verifier: SignatureVerifier
): Promise<SignedForm | null> {
  return firstVerifying(
    verifier,
    publicKey,
    signature,
    canonicalForms('spec', () => withoutSignature(body))
  )
}

export async function verifyRawBody(
  rawBody: Uint8Array,
  publicKey: Buffer,
  signature: Buffer,
  verifier: SignatureVerifier
): Promise<SignedForm | null> {
  return firstVerifying(verifier, publicKey, signature, [['raw-body', rawBody]])
}

/**
 * deregister entity, delete developer: deployed = signature over the UTF-8 ID; spec = over the
 * URL path. The path is tried as received and decoded, since clients encode IDs in paths.
 */
export async function verifyDeletion(
  id: string,
  rawPath: string,
  publicKey: Buffer,
  signature: Buffer,
  verifier: SignatureVerifier
): Promise<SignedForm | null> {
  const query = rawPath.indexOf('?')
  if (query >= 0) return firstVerifying(verifier, publicKey, signature, [['id', id], ...timestampedForms(rawPath)])
  return firstVerifying(verifier, publicKey, signature, [['id', id], ...pathForms('path', rawPath)])
}

/** A path as received and, when it differs, percent-decoded: clients sign either. */
function pathForms(name: string, rawPath: string): Candidate[] {
  let decoded = rawPath
  try {
    decoded = decodeURIComponent(rawPath)
  } catch {
    /* keep raw */
  }
  return decoded === rawPath
    ? [[name, rawPath]]
    : [
        [name, rawPath],
        [`${name}-decoded`, decoded]
      ]
}

/**
 * The replay-proof form of a deletion or release: the request path with its query (which carries
 * `timestamp`), as sent or decoded. Its bytes differ every time, so its signature is good once.
 */
function timestampedForms(pathWithQuery: string): Candidate[] {
  return pathForms('timestamped', pathWithQuery)
}

/** Whether a form's signed bytes carry a timestamp (else they are the same every time they are made). */
export function isTimestampedForm(form: SignedForm): boolean {
  return form.startsWith('timestamped')
}

/** What the deployed clients sign of a handle claim. */
export const deployedHandleClaimSignable = (body: Body): Body => ({
  developer_id: str(body.developer_id),
  handle: str(body.handle),
  public_key: str(body.public_key)
})

/** claim handle: spec = canonical(body without signature); deployed = {developer_id, handle, public_key}. */
export const verifyHandleClaim: BodyVerifier = specThenDeployedVerifier(deployedHandleClaimSignable)

/** What the deployed clients sign of a name binding: five fields, `capability_tags` absent = null, `version` absent = `""`. */
export const deployedNameBindingSignable = (body: Body): Body => ({
  capability_tags: Array.isArray(body.capability_tags) ? body.capability_tags : null,
  developer_handle: str(body.developer_handle),
  entity_id: str(body.entity_id),
  entity_name: str(body.entity_name),
  version: str(body.version)
})

/** bind name: spec = canonical(body without signature); deployed = the five binding fields. */
export const verifyNameBinding: BodyVerifier = specThenDeployedVerifier(deployedNameBindingSignable)

/**
 * release handle or name: a signature over `release:` + handle or FQAN, or (replay-proof) over the
 * request path with its `timestamp` query.
 */
export async function verifyRelease(
  subject: string,
  rawPath: string,
  publicKey: Buffer,
  signature: Buffer,
  verifier: SignatureVerifier
): Promise<SignedForm | null> {
  const timestamped = rawPath.includes('?') ? timestampedForms(rawPath) : []
  return firstVerifying(verifier, publicKey, signature, [['release', `release:${subject}`], ...timestamped])
}

/** heartbeat: spec = agent_id followed by timestamp; deployed = the timestamp alone. */
export async function verifyHeartbeat(
  agentId: string,
  timestamp: string,
  publicKey: Buffer,
  signature: Buffer,
  verifier: SignatureVerifier,
  priority?: VerifyPriority
): Promise<SignedForm | null> {
  return firstVerifying(
    verifier,
    publicKey,
    signature,
    [
      ['spec', agentId + timestamp],
      ['deployed', timestamp]
    ],
    priority
  )
}
