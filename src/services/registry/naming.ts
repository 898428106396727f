/**
 * Naming rules: handle and entity-name formats, the reserved handles, FQAN parsing and
 * version selection from a binding's history. Pure functions.
 */
import type { NameVersion } from '../../store/records.js'

const HANDLE = /^[a-z0-9][a-z0-9-]{1,30}[a-z0-9]$/
const NAME = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/

/**
 * Handles nobody may claim: words of the API itself (`agent` would clash with /v1/resolve/agent/…),
 * and names users would take for the operator's.
 */
export const RESERVED_HANDLES: ReadonlySet<string> = new Set([
  'admin',
  'administrator',
  'agent',
  'agents',
  'anonymous',
  'api',
  'developer',
  'developers',
  'entities',
  'entity',
  'handle',
  'handles',
  'help',
  'info',
  'localhost',
  'name',
  'names',
  'network',
  'node',
  'null',
  'official',
  'operator',
  'registry',
  'resolve',
  'root',
  'security',
  'service',
  'services',
  'support',
  'system',
  'test',
  'undefined',
  'unknown',
  'www',
  'zns'
])

export type HandleProblem = 'invalid' | 'reserved'

export function handleProblem(handle: string): HandleProblem | null {
  if (!HANDLE.test(handle)) return 'invalid'
  return RESERVED_HANDLES.has(handle) ? 'reserved' : null
}

export function isValidName(name: string): boolean {
  return NAME.test(name)
}

export function formatFqan(host: string, handle: string, name: string): string {
  return `${host}/${handle}/${name}`
}

export interface ParsedFqan {
  /** Null when the text named only <handle>/<name>. */
  host: string | null
  handle: string
  name: string
  /** `@` suffix: an exact version, or a major or major.minor prefix. */
  version: string | null
}

/** Parses `[zns://]<host>/<handle>/<name>[@<version>]` (or `<handle>/<name>[@…]`); null when malformed. */
export function parseFqan(text: string): ParsedFqan | null {
  // `@handle/name` is how the TypeScript SDK's CLI writes a name of the registry it talks to.
  const bare = text
    .trim()
    .replace(/^zns:\/\//i, '')
    .replace(/^@(?=[^/]+\/[^/]+$)/, '')
  const parts = bare.split('/')
  if (parts.length !== 2 && parts.length !== 3) return null
  const last = parts[parts.length - 1] as string
  const at = last.indexOf('@')
  const name = (at === -1 ? last : last.slice(0, at)).toLowerCase()
  const version = at === -1 ? null : last.slice(at + 1)
  const handle = (parts[parts.length - 2] as string).toLowerCase()
  const host = parts.length === 3 ? (parts[0] as string).toLowerCase() : null
  if (
    !HANDLE.test(handle) ||
    !NAME.test(name) ||
    host === '' ||
    (version !== null && !/^\d+(\.\d+){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/.test(version))
  )
    return null
  return { host, handle, name, version }
}

interface Semver {
  major: number
  minor: number
  patch: number
  pre: string[]
}

function parseSemver(v: string): Semver | null {
  const m = /^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(v)
  if (!m) return null
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), pre: m[4] ? m[4].split('.') : [] }
}

/** Semver precedence (build metadata ignored); unparsable versions sort first. */
export function compareSemver(a: string, b: string): number {
  const x = parseSemver(a)
  const y = parseSemver(b)
  if (!x || !y) return x ? 1 : y ? -1 : 0
  for (const k of ['major', 'minor', 'patch'] as const) if (x[k] !== y[k]) return x[k] - y[k]
  if (x.pre.length === 0 || y.pre.length === 0) return y.pre.length - x.pre.length
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    const p = x.pre[i]
    const q = y.pre[i]
    if (p === undefined) return -1
    if (q === undefined) return 1
    const pn = /^\d+$/.test(p)
    const qn = /^\d+$/.test(q)
    if (pn && qn && Number(p) !== Number(q)) return Number(p) - Number(q)
    if (pn !== qn) return pn ? -1 : 1
    if (p !== q) return p < q ? -1 : 1
  }
  return 0
}

/**
 * The history entry a version spec picks: an exact version, or for `2` / `2.1` the highest
 * version with that major (and minor) number. Null when none matches.
 */
export function selectVersion(history: readonly NameVersion[], spec: string): NameVersion | null {
  const exact = history.find(v => v.version === spec)
  if (exact) return exact
  const prefix = spec.split('.')
  if (prefix.length > 2) return null
  let best: NameVersion | null = null
  for (const entry of history) {
    if (!entry.version) continue
    const parsed = parseSemver(entry.version)
    if (!parsed || parsed.pre.length > 0) continue
    if (parsed.major !== Number(prefix[0]) || (prefix.length === 2 && parsed.minor !== Number(prefix[1]))) continue
    if (!best || compareSemver(entry.version, best.version as string) > 0) best = entry
  }
  return best
}
