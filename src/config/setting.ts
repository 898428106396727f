/**
 * The shape of one configuration setting and the environment-variable name it maps to. Apart from
 * the rows (settings-*.ts) and the loader (load.ts) so that both, and the docs generator, share it
 * without importing each other.
 */

type Kind = 'string' | 'integer' | 'number' | 'boolean' | 'list'

export interface Setting {
  /** Dotted path in the config object and the TOML file. */
  key: string
  kind: Kind
  default: string | number | boolean | readonly string[]
  doc: string
  /** Long flag without dashes; booleans also take `--no-<flag>`. */
  flag: string
  choices?: readonly string[]
  /** A string that, when set, must be an http(s) URL. */
  url?: true
  min?: number
  max?: number
  /** Applied to the running node on SIGHUP; any other setting takes a restart to change. */
  reloadable?: true
}

export const ENV_PREFIX = 'REGISTRY_NODE_'

export function envName(setting: Setting): string {
  return ENV_PREFIX + setting.key.replace(/\./g, '_').toUpperCase()
}
