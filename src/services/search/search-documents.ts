/**
 * The search documents made of a record: its facets and ranking inputs (SearchDocument), its text
 * as the index analyzes it, and the index changes that carry them and a developer's trust part.
 */
import type { SearchDocument } from '../../search/search-engine.js'
import type { FieldTokens } from '../../search/text-index.js'
import type { RegistryStore } from '../../store/registry-store.js'
import type { EntityRecord } from '../../store/records.js'
import type { HomeFields } from './home-terms.js'
import type { LiveView } from '../registry/ports.js'
import { analyzeText, type DocumentText, type IndexChange } from './search-index.js'
import { developerTrustPart } from '../registry/trust.js'

/** Every string in a value, however nested (capability summaries and cards have no fixed shape). */
export function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value]
  if (Array.isArray(value)) return value.flatMap(stringsIn)
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(stringsIn)
  return []
}

const NOTHING: readonly string[] = Object.freeze([])

/** Distinct lowercased values; the shared empty list when there are none. (The index interns them.) */
function facetValues(values: readonly string[]): readonly string[] {
  if (values.length === 0) return NOTHING
  return [...new Set(values.map(v => v.toLowerCase()))]
}

export function searchDocument(r: EntityRecord, live?: LiveView, transitive = 0): SearchDocument {
  const caps = r.capability_summary ?? {}
  const status = live?.status ?? r.status
  const lastHeartbeat = live ? live.last_heartbeat : r.last_heartbeat
  const set = (key: string) => facetValues(stringsIn(caps[key]))
  return {
    entityId: r.entity_id,
    type: r.type === 'service' ? 'service' : 'agent',
    category: r.category.toLowerCase(),
    tags: facetValues(r.tags),
    developerId: r.developer_id,
    active: status === 'active',
    registeredAt: Date.parse(r.registered_at),
    lastChange: Math.max(Date.parse(r.updated_at), lastHeartbeat ? Date.parse(lastHeartbeat) : 0),
    uptime: live?.uptime ?? (status === 'active' ? 1 : 0),
    transitive,
    capabilities: {
      skills: set('skills'),
      protocols: set('protocols'),
      languages: set('languages'),
      models: set('models')
    }
  }
}

function documentText(r: EntityRecord): DocumentText {
  return {
    name: r.name,
    tags: r.tags,
    category: r.category,
    summary: r.summary,
    capabilities: stringsIn(r.capability_summary ?? {})
  }
}

/** A record's analyzed fields, as the index makes them (benchmarks and the eval index records directly). */
export function documentFields(r: EntityRecord): FieldTokens {
  return analyzeText(documentText(r))
}

function homeFields(r: EntityRecord): HomeFields {
  return { entity_id: r.entity_id, home_registry: r.home_registry, home_registry_id: r.home_registry_id }
}

/** The change that indexes a record (`live`: its liveness, when this node is its home). */
export function upsertChange(
  record: EntityRecord,
  live: LiveView | undefined,
  transitive = 0
): Extract<IndexChange, { op: 'upsert' }> {
  return {
    op: 'upsert',
    doc: searchDocument(record, live, transitive),
    text: documentText(record),
    home: homeFields(record)
  }
}

/** The developer's part of trust (verified handle, profile) as the store holds it, for all their documents. */
export function developerChange(
  store: Pick<RegistryStore, 'getDeveloper' | 'getHandle'>,
  developerId: string
): IndexChange {
  const developer = store.getDeveloper(developerId)
  const handle = developer?.dev_handle ? store.getHandle(developer.dev_handle) : undefined
  return { op: 'developer', developerId, part: developerTrustPart(developer, handle) }
}
