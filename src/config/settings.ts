/**
 * The settings table, assembled from its row files, and the NodeConfig type inferred from it. Apart
 * from the loader (load.ts) so that what needs only the rows (the docs generator) does not load
 * the TOML parser.
 */
import { ENTITY_SETTINGS, NODE_SETTINGS, SERVICE_SETTINGS } from './settings-node.js'
import { LIVENESS_SETTINGS, P2P_SETTINGS } from './settings-mesh.js'
import { SEARCH_SETTINGS } from './settings-search.js'
import type { Setting } from './setting.js'

// The order is the order of the config file and docs/reference/configuration.md, sections kept whole.
const TABLE = [
  ...NODE_SETTINGS,
  ...P2P_SETTINGS,
  ...SERVICE_SETTINGS,
  ...SEARCH_SETTINGS,
  ...LIVENESS_SETTINGS,
  ...ENTITY_SETTINGS
] as const satisfies readonly Setting[]

/** The settings, one row each, in the order the config file and docs/reference/configuration.md list them. */
export const SETTINGS: readonly Setting[] = TABLE

/** The value type of one row: its choices as a union, else its kind's type. */
type ValueOf<S> = S extends { readonly choices: readonly (infer C)[] }
  ? C
  : S extends { readonly kind: 'string' }
    ? string
    : S extends { readonly kind: 'integer' | 'number' }
      ? number
      : S extends { readonly kind: 'boolean' }
        ? boolean
        : string[]
type Row = (typeof TABLE)[number]
type SectionOf<K> = K extends `${infer Section}.${string}` ? Section : never
type TopKey = Exclude<Row['key'], `${string}.${string}`>

/** The node's configuration, derived from SETTINGS: one key per row, sections from the dotted paths. */
export type NodeConfig = { [K in TopKey]: ValueOf<Extract<Row, { key: K }>> } & {
  [S in SectionOf<Row['key']>]: {
    [R in Extract<Row, { key: `${S}.${string}` }> as R['key'] extends `${S}.${infer Leaf}` ? Leaf : never]: ValueOf<R>
  }
}
export type LogLevel = NodeConfig['log']['level']
