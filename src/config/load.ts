/**
 * Loading the configuration: defaults < `--dev` < profile < config file (TOML) < environment < flags, each value
 * checked against its row; and the commented file `init` writes. Apart from the table (settings.ts)
 * so that the table stays data and only what reads configuration imports the parser.
 */
import { parsePaymentRpcs } from './payment-rpcs.js'
import { readFile } from 'node:fs/promises'
import { parse as parseToml } from 'smol-toml'
import { walkArgv } from '../util/argv.js'
import { PROFILES, profileProblem } from './profiles.js'
import { ENV_PREFIX, envName, type Setting } from './setting.js'
import { type NodeConfig, SETTINGS } from './settings.js'

export class ConfigError extends Error {
  override name = 'ConfigError'
}

function coerce(setting: Setting, value: unknown, source: string): string | number | boolean | string[] {
  const where = `${setting.key} (${source})`
  switch (setting.kind) {
    case 'string': {
      if (typeof value !== 'string') throw new ConfigError(`${where}: expected a string`)
      if (setting.choices && !setting.choices.includes(value))
        throw new ConfigError(
          `${where}: expected one of ${setting.choices.join(', ')}${suggestion(value, new Set(setting.choices))}`
        )
      if (setting.url && value !== '' && !/^https?:\/\/[^/\s]+/.test(value))
        throw new ConfigError(`${where}: expected an http:// or https:// URL`)
      return value
    }
    case 'integer':
    case 'number': {
      const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value
      if (typeof n !== 'number' || !Number.isFinite(n) || (setting.kind === 'integer' && !Number.isInteger(n)))
        throw new ConfigError(`${where}: expected ${setting.kind === 'integer' ? 'an integer' : 'a number'}`)
      if (setting.min !== undefined && n < setting.min)
        throw new ConfigError(`${where}: must be at least ${setting.min}`)
      if (setting.max !== undefined && n > setting.max)
        throw new ConfigError(`${where}: must be at most ${setting.max}`)
      return n
    }
    case 'boolean': {
      if (typeof value === 'boolean') return value
      if (typeof value === 'string' && /^(1|true|yes|on)$/i.test(value)) return true
      if (typeof value === 'string' && /^(0|false|no|off)$/i.test(value)) return false
      throw new ConfigError(`${where}: expected true or false`)
    }
    case 'list': {
      if (typeof value === 'string')
        return value
          .split(',')
          .map(s => s.trim())
          .filter(Boolean)
      if (Array.isArray(value) && value.every(v => typeof v === 'string')) return value as string[]
      throw new ConfigError(`${where}: expected a list of strings`)
    }
  }
}

function setPath(target: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.')
  let node = target
  for (const part of parts.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>
  node[parts[parts.length - 1] as string] = value
}

function getPath(source: Record<string, unknown>, key: string): unknown {
  let node: unknown = source
  for (const part of key.split('.')) {
    if (node === null || typeof node !== 'object') return undefined
    node = (node as Record<string, unknown>)[part]
  }
  return node
}

export function defaultConfig(): NodeConfig {
  const config: Record<string, unknown> = {}
  for (const s of SETTINGS) setPath(config, s.key, structuredClone(s.default))
  return config as unknown as NodeConfig
}

export interface ParsedFlags {
  values: Map<Setting, unknown>
  configFile?: string
  positionals: string[]
}

const FLAG_INDEX = new Map<string, Setting>(SETTINGS.map(s => [s.flag, s]))
const KNOWN_FLAGS: ReadonlySet<string> = new Set(FLAG_INDEX.keys())

/** Parses `--flag value`, `--flag=value`, boolean `--flag`/`--no-flag`; list flags repeat or take commas. */
export function parseFlags(argv: readonly string[]): ParsedFlags {
  const values = new Map<Setting, unknown>()
  let configFile: string | undefined
  const positionals = walkArgv(
    argv,
    ({ name, inline, takeValue }) => {
      if (name === 'config') {
        configFile = takeValue()
        return
      }
      const setting = FLAG_INDEX.get(name)
      if (!setting && name.startsWith('no-')) {
        const positive = FLAG_INDEX.get(name.slice(3))
        if (positive?.kind === 'boolean') {
          values.set(positive, false)
          return
        }
      }
      if (!setting) throw new ConfigError(`unknown flag --${name}${suggestion(name, KNOWN_FLAGS, '--')}`)
      if (setting.kind === 'boolean') {
        values.set(setting, inline === undefined ? true : coerce(setting, inline, `--${name}`))
        return
      }
      const value = coerce(setting, takeValue(), `--${name}`)
      if (setting.kind === 'list')
        values.set(setting, [...((values.get(setting) as string[] | undefined) ?? []), ...(value as string[])])
      else values.set(setting, value)
    },
    message => new ConfigError(message)
  )
  return configFile === undefined ? { values, positionals } : { values, positionals, configFile }
}

export interface LoadOptions {
  argv?: readonly string[]
  env?: NodeJS.ProcessEnv
}

const KNOWN_KEYS: ReadonlySet<string> = new Set(SETTINGS.map(s => s.key))
/** REGISTRY_NODE_* variables that are not settings: the config file, and what the CLI's other commands read. */
const OTHER_ENV = ['CONFIG', 'URL', 'SETTLEMENT_KEY', 'CRYPTO', 'TEST_RUNTIME'].map(name => `${ENV_PREFIX}${name}`)
const KNOWN_ENV: ReadonlySet<string> = new Set([...SETTINGS.map(envName), ...OTHER_ENV])

/** Every key of a parsed TOML document that holds a value (arrays are values), dotted. */
function leafKeys(table: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(table).flatMap(([key, value]) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? leafKeys(value as Record<string, unknown>, `${prefix}${key}.`)
      : [`${prefix}${key}`]
  )
}

/** "; did you mean X?" for the known name nearest a mistyped one, when one is near enough. */
function suggestion(name: string, known: ReadonlySet<string>, prefix = ''): string {
  let best = ''
  let bestDistance = Number.POSITIVE_INFINITY
  for (const candidate of known) {
    const d = editDistance(name.toLowerCase(), candidate.toLowerCase())
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return bestDistance <= Math.max(2, Math.floor(name.length / 4)) ? `; did you mean ${prefix}${best}?` : ''
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost)
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

/** What `dev` changes, just above the defaults: anything the file, environment or flags set wins. */
export const DEV_PRESET: Readonly<Record<string, Setting['default']>> = {
  'entities.allow_http_url': true,
  'cards.allow_private_addresses': true,
  'rate_limit.enabled': false
}

/** Where a setting's effective value came from: `default`, `--dev`, `profile <name>`, the file, a variable or a flag. */
export type SettingSource = string

/** Builds the configuration from defaults, `--dev`, the profile, the config file, the environment and flags, in that order. */
export async function loadConfig(options: LoadOptions = {}): Promise<NodeConfig> {
  return (await loadConfigWithSources(options)).config
}

/** The configuration, and for every setting where its value came from (`registry-node config show`). */
export async function loadConfigWithSources({ argv = [], env = process.env }: LoadOptions = {}): Promise<{
  config: NodeConfig
  sources: ReadonlyMap<string, SettingSource>
}> {
  const flags = parseFlags(argv)
  const layers: [Setting, unknown, SettingSource][] = []
  const file = flags.configFile ?? env[`${ENV_PREFIX}CONFIG`]
  if (file) {
    let parsed: Record<string, unknown>
    try {
      parsed = parseToml(await readFile(file, 'utf8')) as Record<string, unknown>
    } catch (err) {
      throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`)
    }
    for (const key of leafKeys(parsed)) {
      if (!KNOWN_KEYS.has(key)) throw new ConfigError(`${file}: unknown setting ${key}${suggestion(key, KNOWN_KEYS)}`)
    }
    for (const s of SETTINGS) {
      const v = getPath(parsed, s.key)
      if (v !== undefined) layers.push([s, coerce(s, v, file), `file ${file}`])
    }
  }
  for (const name of Object.keys(env)) {
    if (name.startsWith(ENV_PREFIX) && !KNOWN_ENV.has(name) && env[name] !== '')
      throw new ConfigError(`unknown environment variable ${name}${suggestion(name, KNOWN_ENV)}`)
  }
  for (const s of SETTINGS) {
    const v = env[envName(s)]
    if (v !== undefined && v !== '') layers.push([s, coerce(s, v, envName(s)), `environment ${envName(s)}`])
  }
  for (const [s, v] of flags.values) layers.push([s, v, `flag --${s.flag}`])
  const config = defaultConfig() as unknown as Record<string, unknown>
  const sources = new Map<string, SettingSource>(SETTINGS.map(s => [s.key, 'default']))
  const dev = layers.findLast(([s]) => s.key === 'dev')?.[1] === true
  if (dev) {
    for (const [key, value] of Object.entries(DEV_PRESET)) {
      setPath(config, key, value)
      sources.set(key, '--dev')
    }
  }
  const profile = layers.findLast(([s]) => s.key === 'profile')?.[1]
  if (profile === 'public' || profile === 'private') {
    for (const [key, value] of Object.entries(PROFILES[profile])) {
      setPath(config, key, value)
      sources.set(key, `profile ${profile}`)
    }
  }
  for (const [s, v, source] of layers) {
    setPath(config, s.key, v)
    sources.set(s.key, source)
  }
  const problem = profileProblem(config as unknown as NodeConfig)
  if (problem) throw new ConfigError(problem)
  try {
    parsePaymentRpcs((config as unknown as NodeConfig).trust.payment_rpc)
  } catch (err) {
    throw new ConfigError((err as Error).message)
  }
  return { config: config as unknown as NodeConfig, sources }
}

function tomlValue(value: Setting['default']): string {
  return JSON.stringify(value)
}

/** The commented config file `registry-node init` writes: every setting at its default. */
export function configTemplate(overrides: Partial<Record<string, Setting['default']>> = {}): string {
  const lines = [
    '# registry-node configuration (TOML).',
    '# Precedence: defaults < profile < this file < environment (REGISTRY_NODE_<SECTION>_<KEY>) < command-line flags.',
    ''
  ]
  let section = ''
  for (const s of SETTINGS) {
    const dot = s.key.lastIndexOf('.')
    const sec = dot === -1 ? '' : s.key.slice(0, dot)
    const leaf = dot === -1 ? s.key : s.key.slice(dot + 1)
    if (sec !== section) {
      lines.push('', `[${sec}]`)
      section = sec
    }
    lines.push(`# ${s.doc} (flag --${s.flag}, env ${envName(s)})`)
    const value = overrides[s.key] ?? s.default
    lines.push(`${overrides[s.key] === undefined ? '# ' : ''}${leaf} = ${tomlValue(value)}`)
  }
  return `${lines.join('\n')}\n`
}
