/**
 * Regenerates the reference tables that mirror code tables (settings, error codes, field limits,
 * activity events, commands) in docs/reference/, between `<!-- name:start -->` and `<!-- name:end -->`
 * markers. `npm run docs`; a unit test fails when a page is out of date.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { METRICS, PROCESS_METRICS } from '../src/api/metrics.js'
import { COMMANDS } from '../src/cli-help.js'
import { PROFILES } from '../src/config/profiles.js'
import { envName } from '../src/config/setting.js'
import { SETTINGS } from '../src/config/settings.js'
import { ERRORS } from '../src/errors.js'
import { MAX_HEAD_BYTES, MAX_URL_BYTES } from '../src/http/http.js'
import { DEVELOPER_LIMITS } from '../src/wire/developers.js'
import { MAX_JSON_DEPTH } from '../src/wire/json.js'
import { ENTITY_LIMITS, PRICING_MODELS } from '../src/wire/entities.js'
import { EVENT_PAYLOADS } from '../src/wire/sockets.js'

/** Where each generated table lives (paths from the repository root). */
export const GENERATED_PAGES: Record<string, readonly string[]> = {
  'docs/reference/configuration.md': ['config', 'profiles'],
  'docs/reference/errors.md': ['errors'],
  'docs/reference/http-api.md': ['limits', 'events'],
  'docs/reference/cli.md': ['commands'],
  'docs/reference/metrics.md': ['metrics']
}

const cell = (s: string) => s.replace(/\|/g, '\\|')

export function generatedSections(): Record<string, string> {
  const config = [
    '| config key | flag | environment | default | on SIGHUP | meaning |',
    '|---|---|---|---|---|---|',
    ...SETTINGS.map(
      s =>
        `| \`${s.key}\` | \`--${s.kind === 'boolean' ? `[no-]${s.flag}` : s.flag}\` | \`${envName(s)}\` | \`${JSON.stringify(s.default)}\` | ${s.reloadable ? 'applied' : 'restart'} | ${cell(s.doc)}${s.choices ? ` One of ${s.choices.join(', ')}.` : ''} |`
    )
  ].join('\n')
  const profileNames = Object.keys(PROFILES) as (keyof typeof PROFILES)[]
  const preset = (name: keyof typeof PROFILES, key: string) => {
    const value = PROFILES[name][key]
    return value === undefined ? '—' : `\`${JSON.stringify(value)}\``
  }
  const profiles = [
    `| config key | ${profileNames.join(' | ')} |`,
    `|---|${profileNames.map(() => '---|').join('')}`,
    ...SETTINGS.filter(s => profileNames.some(name => s.key in PROFILES[name])).map(
      s => `| \`${s.key}\` | ${profileNames.map(name => preset(name, s.key)).join(' | ')} |`
    )
  ].join('\n')
  const errors = [
    '| code | status | meaning |',
    '|---|---|---|',
    ...Object.entries(ERRORS).map(([code, e]) => `| \`${code}\` | ${e.status} | ${cell(e.message)} |`)
  ].join('\n')
  const limits = [
    '| field | rule |',
    '|---|---|',
    `| \`name\` (entity) | 1 to ${ENTITY_LIMITS.name} characters; also accepted as \`entity_name\` |`,
    `| \`type\` | \`agent\` or \`service\` (also \`entity_type\`); default \`agent\` |`,
    `| \`category\` | required, 1 to ${ENTITY_LIMITS.category} characters |`,
    `| \`summary\` | at most ${ENTITY_LIMITS.summary} characters |`,
    `| \`tags\` | at most ${ENTITY_LIMITS.tags} strings of 1 to ${ENTITY_LIMITS.tag} characters |`,
    '| `version` | semantic version (semver.org), default `0.1.0` |',
    '| `entity_url` | HTTPS URL, at most 2048 characters; required for agents |',
    '| `service_endpoint`, `openapi_url` | HTTP(S) URL, at most 2048 characters; a service needs `service_endpoint` or `entity_url` |',
    `| \`codebase_hash\` | at most ${ENTITY_LIMITS.codebaseHash} characters |`,
    `| \`capability_summary\` | JSON object of at most ${ENTITY_LIMITS.capabilitySummaryBytes} bytes |`,
    `| \`pricing_model\` / \`entity_pricing\` | \`model\` one of ${PRICING_MODELS.join(', ')} (or hyphenated: \`per-request\`; absent: \`per_request\` when a price is given, else \`free\`); \`base_price_usd\` ≥ 0; \`currency\` \`USDC\`; at most ${ENTITY_LIMITS.paymentMethods} \`payment_methods\` and ${ENTITY_LIMITS.rates} \`rates\` (numbers ≥ 0) |`,
    '| `ttl` | integer seconds, 60 to 31536000, default 86400 |',
    `| \`entity_name\` | at most ${ENTITY_LIMITS.entityName} characters (binding rules come with handles) |`,
    '| `developer_proof.index` | unsigned 32-bit; spelled `index`, `agent_index` or `entity_index`; never defaulted |',
    `| \`name\` (developer) | 1 to ${DEVELOPER_LIMITS.name} characters |`,
    `| \`github\` | a GitHub user name (at most ${DEVELOPER_LIMITS.github} characters) |`,
    '| `profile_url` | HTTP(S) URL, at most 2048 characters |',
    '| request body | at most `http.body_limit_bytes` (64 KiB by default) |',
    `| JSON nesting | at most ${MAX_JSON_DEPTH} levels of arrays and objects, in request bodies, socket frames and mesh messages; deeper is \`400 invalid_json\` |`,
    `| request URL | path and query at most ${MAX_URL_BYTES / 1024} KiB (\`414 url_too_long\`); request line and headers at most ${MAX_HEAD_BYTES / 1024} KiB (\`431 headers_too_large\`, or 414 when the request line is what overflows) |`,
    '| handles and names in paths | a handle or name that breaks its format is `400 handle_invalid` / `name_invalid` before any lookup (the `/available` routes answer `available: false, reason: invalid` instead) |'
  ].join('\n')
  const events = [
    '| type | emitted by | data |',
    '|---|---|---|',
    ...EVENT_PAYLOADS.map(e => `| \`${e.type}\` | ${cell(e.emittedBy)} | ${cell(e.data)} |`)
  ].join('\n')
  const commands = [
    '| command | what it does | flags |',
    '|---|---|---|',
    ...COMMANDS.map(
      c =>
        `| \`registry-node ${c.name} ${cell(c.args)}\` | ${cell(c.summary)} | ${c.flags.map(([f, d]) => `\`${cell(f)}\`: ${cell(d)}`).join('<br>')} |`
    )
  ].join('\n')
  const metrics = [
    '| metric | type | labels | meaning |',
    '|---|---|---|---|',
    ...METRICS.map(
      m =>
        `| \`${m.name}\` | ${m.type} | ${(m.labels ?? []).map(l => `\`${l}\``).join(', ')}${m.values ? `: ${cell(m.values)}` : ''} | ${cell(m.help)} |`
    ),
    `| ${PROCESS_METRICS.map(name => `\`${name}\``).join(', ')}, … | | | the process: CPU, memory, file descriptors, event-loop lag, heap, garbage collection (prom-client's default metrics) |`
  ].join('\n')
  return { config, profiles, errors, limits, events, commands, metrics }
}

export function applySections(page: string, sections: Record<string, string>, names: readonly string[]): string {
  let out = page
  for (const name of names) {
    const pattern = new RegExp(`(<!-- ${name}:start -->\\n)[\\s\\S]*?(<!-- ${name}:end -->)`)
    if (!pattern.test(out)) throw new Error(`the page lacks the ${name} markers`)
    out = out.replace(pattern, (_, a: string, b: string) => `${a}${sections[name]}\n${b}`)
  }
  return out
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const sections = generatedSections()
  for (const [file, names] of Object.entries(GENERATED_PAGES)) {
    const path = fileURLToPath(new URL(`../${file}`, import.meta.url))
    await writeFile(path, applySections(await readFile(path, 'utf8'), sections, names))
  }
  console.log(`regenerated: ${Object.keys(GENERATED_PAGES).join(', ')}`)
}
