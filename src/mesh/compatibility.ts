/**
 * Whether a peer and this node can work together, from what each says it speaks in its hello
 * (protocols/README.md, "Versions"). Protocol IDs (`/zns/sync/1.0.0`) match within a major version;
 * gossip topics (`/zns/ops/entities/2`) match only exactly, since a topic's number is its whole
 * version. Capabilities are named features a peer may or may not offer, used only where offered.
 */

/** What a node offers in its hello. */
export interface MeshOffer {
  /** Protocol IDs it serves and gossip topics it joins. */
  protocols: readonly string[]
  /** Named features (CAPABILITIES). */
  capabilities: readonly string[]
}

/** Capability names and what each means to a peer (documented in protocols/README.md). */
export const CAPABILITIES = {
  /** Answers `/zns/search/1.x` for its own index. */
  federatedSearch: 'federated-search',
  /** Pushes and accepts term filters over `/zns/bloom/1.x`. */
  termFilters: 'term-filters',
  /** Applies `entity.status.batch` operations (and joins their topic). */
  statusBatches: 'status-batches',
  /** Answers `/zns/fetch/1.x` for the keys it provides. */
  fetch: 'fetch',
  /** Applies `attestation.add` operations (and joins their topic). */
  attestations: 'attestations'
} as const

/**
 * What the release before hellos carried these lists (0.2.0) offers: a hello without `protocols`
 * stands for this. Written out, not derived from today's constants, so it stays what that release
 * spoke when the constants move on.
 */
export const LEGACY_OFFER: MeshOffer = {
  protocols: [
    '/zns/hello/1.0.0',
    '/zns/sync/1.0.0',
    '/zns/fetch/1.0.0',
    '/zns/kad/1.0.0',
    '/zns/search/1.0.0',
    '/zns/bloom/1.0.0',
    '/zns/ops/entities/2',
    '/zns/ops/tombstones/2',
    '/zns/ops/status/2',
    '/zns/ops/status-batches/1',
    '/zns/ops/identities/2'
  ],
  capabilities: ['federated-search', 'term-filters', 'status-batches', 'fetch']
}

/** Without a common version of these, two nodes cannot converge: such a peer is refused. */
export const REQUIRED_FAMILIES = ['/zns/hello/', '/zns/sync/'] as const

export type Compatibility = 'full' | 'partial' | 'incompatible'

export interface Assessment {
  compatibility: Compatibility
  /** This node's protocols (as `family` + major, `/zns/sync/1.x`), topics and capabilities the peer lacks. */
  missing: string[]
  /** The missing entries that make the peer incompatible. */
  required: string[]
  /** What the peer offers of the families it lacks, to name in the log line (`/zns/sync/2.0.0`). */
  offered: string[]
}

const SEMVER_ID = /^(\/.+\/)(\d+)\.\d+\.\d+$/

/** A protocol ID's family and major (`/zns/sync/`, `1`), or a topic's whole name with no major. */
function split(id: string): { family: string; major: string | null } {
  const m = SEMVER_ID.exec(id)
  return m ? { family: m[1]!, major: m[2]! } : { family: id.replace(/\d+$/, ''), major: null }
}

/** How `id` is named when missing: a protocol by its major (`/zns/sync/1.x`), a topic as it is. */
const wanted = (id: string): string => {
  const { family, major } = split(id)
  return major === null ? id : `${family}${major}.x`
}

/** Does the peer speak `id`: the same major of a protocol, or exactly the topic. */
function speaks(theirs: readonly string[], id: string): boolean {
  const { family, major } = split(id)
  if (major === null) return theirs.includes(id)
  return theirs.some(t => {
    const other = split(t)
    return other.family === family && other.major === major
  })
}

/**
 * Compares a peer's offer (or the legacy one for a hello without lists) with this node's.
 * A peer lacking a protocol of REQUIRED_FAMILIES is incompatible; lacking anything else, partial.
 */
export function assess(ours: MeshOffer, theirs: Partial<MeshOffer>): Assessment {
  const protocols = theirs.protocols ?? LEGACY_OFFER.protocols
  const capabilities = theirs.capabilities ?? (theirs.protocols ? [] : LEGACY_OFFER.capabilities)
  const missing: string[] = []
  const required: string[] = []
  const offered: string[] = []
  for (const id of ours.protocols) {
    if (speaks(protocols, id)) continue
    missing.push(wanted(id))
    const { family } = split(id)
    if ((REQUIRED_FAMILIES as readonly string[]).includes(family)) required.push(wanted(id))
    offered.push(...protocols.filter(t => split(t).family === family))
  }
  for (const name of ours.capabilities) if (!capabilities.includes(name)) missing.push(name)
  return {
    compatibility: required.length > 0 ? 'incompatible' : missing.length > 0 ? 'partial' : 'full',
    missing,
    required,
    offered
  }
}

/** Whether a peer offers a capability; a hello without lists offers the legacy set. */
export function offers(theirs: Partial<MeshOffer>, capability: string): boolean {
  const capabilities = theirs.capabilities ?? (theirs.protocols ? [] : LEGACY_OFFER.capabilities)
  return capabilities.includes(capability)
}

/**
 * From identify's list of handled protocols: a peer that handles a required protocol only in
 * versions this node does not speak (so no hello of ours could reach it). Null when nothing is
 * wrong, or when it handles none of the family: not a registry node, and nothing to judge.
 */
export function identifyMismatch(ours: MeshOffer, handled: readonly string[]): Assessment | null {
  const required: string[] = []
  const offered: string[] = []
  for (const id of ours.protocols) {
    const { family } = split(id)
    if (!(REQUIRED_FAMILIES as readonly string[]).includes(family)) continue
    const theirs = handled.filter(t => split(t).family === family)
    if (theirs.length === 0 || speaks(theirs, id)) continue
    required.push(wanted(id))
    offered.push(...theirs)
  }
  return required.length > 0 ? { compatibility: 'incompatible', missing: required, required, offered } : null
}
