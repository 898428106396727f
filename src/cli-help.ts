/**
 * Help for every command of `registry-node`, from one table: the top-level help lists the commands,
 * `registry-node <command> --help` (or `-h`, anywhere before `--`) prints that command's usage, flags
 * and examples and does nothing else. docs/reference/cli.md is generated from the same table.
 */
import type { Setting } from './config/setting.js'
import { SETTINGS } from './config/settings.js'
import { RESEARCH_COMMANDS } from './cli-help-research.js'
import type { CommandHelp } from './command-help.js'
import { NODE_VERSION } from './version.js'

export type { CommandHelp }

const REGISTRY_FLAG = [
  '--registry URL',
  'the node to use (default: REGISTRY_NODE_URL, else http://127.0.0.1:8080)'
] as const
const FORM_FLAG = [
  '--form spec|deployed',
  "the spec's signed form (default), or the public network's clients'"
] as const
const DELETION_FORM_FLAG = [
  '--form spec|deployed',
  'spec (default): signed over the path with ?timestamp=, good once; deployed: over the ID or release:<name>'
] as const
const DEVELOPER_KEY = ['--key FILE', 'the developer key file (keys new)'] as const
const ADMIN_SECRET_FLAG = [
  '--secret S',
  "the node's admin secret, onboarding.webhook_secret (default: REGISTRY_NODE_ONBOARDING_WEBHOOK_SECRET)"
] as const
const ADDRESS_ARG = ['ADDRESS', 'a multiaddr (ending in /p2p/<peer-id> to pin its key) or host:port'] as const

export const COMMANDS: readonly CommandHelp[] = [
  {
    name: 'start',
    args: '[flags]',
    summary:
      'run a node; stops cleanly on SIGINT/SIGTERM, and on SIGHUP reads its config file again and applies the settings that can change at run time (in this repository: npm start -- [flags])',
    flags: [
      ['--config FILE', 'a TOML config file (REGISTRY_NODE_CONFIG); flags > environment > file > profile > defaults']
    ],
    examples: [
      'registry-node start',
      'registry-node start --data ./data-b --http-port 8081 --p2p-port 4201 --bootstrap /ip4/…/tcp/4101/p2p/12D3KooW…',
      'registry-node start --config registry-node.toml',
      'registry-node start --config registry-node.toml --tls-cert-file fullchain.pem --tls-key-file privkey.pem',
      'registry-node start --profile public --host registry.example.org --bootstrap /dnsaddr/bootstrap.example.org'
    ]
  },
  {
    name: 'init',
    args: '[flags] [--force]',
    summary: "create the node's identity (<data>/node-key.json) and a commented config file",
    flags: [
      ['--config FILE', 'the config file to write (default registry-node.toml)'],
      ['--force', 'overwrite an existing config file']
    ],
    examples: ['registry-node init', 'registry-node init --mode restricted --auth-url https://example.org/approve']
  },
  {
    name: 'config check',
    args: '[flags]',
    summary: 'check the configuration start would run with (file, environment, flags) without starting',
    flags: [['--config FILE', 'the config file (REGISTRY_NODE_CONFIG)']],
    examples: ['registry-node config check --config registry-node.toml']
  },
  {
    name: 'config show',
    args: '[flags] [--json]',
    summary: 'print every effective setting and where it came from (default, --dev, profile, file, environment, flag)',
    flags: [
      ['--config FILE', 'the config file (REGISTRY_NODE_CONFIG)'],
      ['--json', 'print {key: {value, source}}']
    ],
    examples: [
      'registry-node config show --config registry-node.toml',
      'registry-node config show --dev --http-port 9000',
      'registry-node config show --profile private --allow-peer 12D3KooW…'
    ]
  },
  {
    name: 'export',
    args: '[--data DIR | --config FILE] [--after SEQ | --resume] [--out FILE]',
    summary:
      "write the node's signed operation log as JSON Lines, one operation a line with its seq; reads the data directory beside the node, running or not",
    flags: [
      ['--data DIR', 'the data directory (default: data_dir of --config, REGISTRY_NODE_DATA_DIR, ./data)'],
      ['--config FILE', 'the config file naming data_dir'],
      ['--after SEQ', 'only the operations after this seq (the seq of the last line already written)'],
      ['--out FILE', 'write to FILE (a new file) instead of standard output'],
      ['--resume', 'with --out: continue the file after its last complete line']
    ],
    examples: [
      'registry-node export --data ./data > ops.jsonl',
      'registry-node export --data ./data --out ops.jsonl --resume',
      'registry-node export --data ./data --after 1200 >> ops.jsonl'
    ]
  },
  {
    name: 'import',
    args: 'FILE|- [--registry URL --admin-token SECRET | --data DIR]',
    summary:
      'apply an export: every operation checked (seal, signature, ownership, replay) and applied as one from a peer; held ones count as present; exit 1 if any line was refused',
    flags: [
      REGISTRY_FLAG,
      [
        '--admin-token SECRET',
        "the node's onboarding.webhook_secret (default: the one --config or REGISTRY_NODE_ONBOARDING_WEBHOOK_SECRET gives)"
      ],
      ['--data DIR', 'import into a stopped node: its data directory (refused while a node runs there)'],
      ['--config FILE', 'the config file of that node']
    ],
    examples: [
      'registry-node import ops.jsonl --registry http://127.0.0.1:8080 --admin-token whsec_…',
      'registry-node import ops.jsonl --data ./data-new',
      'registry-node export --data ./data-a | registry-node import - --data ./data-b'
    ]
  },
  {
    name: 'backup',
    args: '--to DIR [--data DIR | --config FILE] [--compact]',
    summary:
      "copy a node's data directory, running or not: LMDB's snapshot copy of the store, the node key and the rest of its state, and a manifest",
    flags: [
      ['--to DIR', 'a new or empty directory'],
      ['--data DIR', 'the data directory (default: data_dir of --config, REGISTRY_NODE_DATA_DIR, ./data)'],
      ['--config FILE', 'the config file naming data_dir'],
      ['--compact', 'leave out free pages (slower, smaller)']
    ],
    examples: ['registry-node backup --data ./data --to backups/2024-06-01']
  },
  {
    name: 'restore',
    args: '--from DIR --data DIR [--force]',
    summary: 'bring a backup back into an empty data directory; refused while a node runs there',
    flags: [
      ['--from DIR', 'a backup (registry-node backup --to)'],
      ['--data DIR', 'where to restore (or --config FILE naming data_dir)'],
      ['--force', 'delete what the data directory holds first']
    ],
    examples: ['registry-node restore --from backups/2024-06-01 --data ./data']
  },
  {
    name: 'verify-registry',
    args: 'URL [--ca FILE]',
    summary: "fetch and check a node's registry identity proof (signature, ID, expiry, domain, TLS key)",
    flags: [['--ca FILE', 'a CA certificate to trust for https (PEM)']],
    examples: ['registry-node verify-registry https://registry.example.org']
  },
  {
    name: 'keys new',
    args: '[--out FILE]',
    summary: 'create a developer key file and print its ID and public key',
    flags: [['--out FILE', 'where to write it (default keys/developer.json; an existing file is never overwritten)']],
    examples: ['registry-node keys new --out keys/developer.json']
  },
  {
    name: 'keys derive',
    args: '--developer FILE --index N [--type agent|service] [--out FILE]',
    summary: 'derive the HD entity key at index N and print its IDs, public key and developer proof',
    flags: [
      ['--developer FILE', 'the developer key file'],
      ['--index N', 'the derivation index (0 … 2^32-1; never defaulted)'],
      ['--type agent|service', 'which of its IDs is printed as entity_id (default agent)'],
      ['--out FILE', 'also write the entity key file']
    ],
    examples: ['registry-node keys derive --developer keys/developer.json --index 0 --out keys/agent0.json']
  },
  {
    name: 'keys show',
    args: '--key FILE',
    summary: 'print the IDs and public key of a key file',
    flags: [['--key FILE', 'a developer or entity key file']],
    examples: ['registry-node keys show --key keys/agent0.json']
  },
  {
    name: 'keys sign',
    args: '--key FILE (--body FILE|- [--with-proof] | --message TEXT | --raw FILE)',
    summary: 'sign a JSON body (canonical JSON, signature inserted), a text, or a file as sent',
    flags: [
      ['--key FILE', 'the key to sign with'],
      ['--body FILE|-', 'a JSON body: prints it with `signature` added'],
      ['--with-proof', 'with --body and an entity key: also add developer_id and developer_proof'],
      ['--message TEXT', 'prints the signature of TEXT (for Authorization: Bearer)'],
      ['--raw FILE', "prints the signature of the file's bytes"]
    ],
    examples: [
      'registry-node keys sign --key keys/agent0.json --body agent.json --with-proof',
      'registry-node keys sign --key keys/agent0.json --message zns:…'
    ]
  },
  {
    name: 'entity init',
    args: '--developer KEYFILE --name NAME [--type agent|service] [--index N] [--out DIR] [--registry URL]',
    summary: 'derive an entity key (the next free index unless --index) and write DIR/entity.toml',
    flags: [
      ['--developer KEYFILE', 'the developer key file'],
      ['--name NAME', "the entity's name; DIR defaults to its slug"],
      ['--type agent|service', 'default agent'],
      ['--index N', 'the derivation index (default: the next one not registered and not on disk)'],
      ['--out DIR', 'the folder to write entity.toml and entity-key.json to'],
      REGISTRY_FLAG
    ],
    examples: ['registry-node entity init --developer keys/developer.json --name "Echo Bot"']
  },
  {
    name: 'entity serve',
    args: '--config FILE [flags]',
    summary: 'run an entity: register or update it, heartbeat, serve its webhook and A2A endpoints',
    flags: [
      ['--config FILE', 'its entity.toml'],
      ['--echo | --handler MODULE', 'reply with the message, or run the default export of MODULE'],
      ['--port N, --host ADDR', 'where to listen (default: a free port on 127.0.0.1)'],
      ['--url PUBLIC_URL', 'the URL to register, when it differs from where it listens'],
      ['--auth-mode strict|permissive', 'override the file: signed messages only, or unsigned ones too'],
      ['--heartbeat-seconds S', 'heartbeat interval'],
      ['--http-server auto|uws|node', 'the HTTP server to run on'],
      ['--deregister-on-stop', 'deregister on SIGINT/SIGTERM'],
      REGISTRY_FLAG
    ],
    examples: ['registry-node entity serve --config echo-bot/entity.toml --echo']
  },
  {
    name: 'entity register',
    args: '--key FILE --body FILE|- [flags]',
    summary: 'register an agent or service, signed by its key (with its developer proof)',
    flags: [
      ['--key FILE', 'the entity key file (keys derive --out)'],
      ['--body FILE|-', 'the record as JSON: name, category, entity_url, …'],
      FORM_FLAG,
      REGISTRY_FLAG
    ],
    examples: ['registry-node entity register --key keys/agent0.json --body agent.json']
  },
  {
    name: 'entity update',
    args: 'ID --key FILE (--set FIELD=VALUE … | --body FILE|-) [flags]',
    summary: "change an entity's fields, signed by its key or its developer's",
    flags: [
      ['--key FILE', "the entity's key file, or its developer's"],
      ['--set FIELD=VALUE …', 'a field to change; VALUE as JSON when it parses (numbers, ["lists"]), else text'],
      ['--body FILE|-', 'the changes as a JSON object'],
      FORM_FLAG,
      REGISTRY_FLAG
    ],
    examples: [
      'registry-node entity update zns:… --key keys/agent0.json --set summary="Translates documents"',
      'registry-node entity update zns:… --key keys/agent0.json --set \'tags=["translation","pdf"]\''
    ]
  },
  {
    name: 'entity deregister',
    args: 'ID --key FILE [flags]',
    summary: "deregister an entity (a tombstone stays behind), signed by its key or its developer's",
    flags: [['--key FILE', "the entity's key file, or its developer's"], DELETION_FORM_FLAG, REGISTRY_FLAG],
    examples: ['registry-node entity deregister zns:… --key keys/agent0.json']
  },
  {
    name: 'entity status',
    args: 'ID [--registry URL]',
    summary: "an entity's status, last heartbeat, FQAN and home registry",
    flags: [REGISTRY_FLAG],
    examples: ['registry-node entity status zns:…']
  },
  {
    name: 'call',
    args: 'TARGET TEXT [flags]',
    summary: 'send a signed message to an entity (FQAN, entity ID or URL) and print its reply',
    flags: [
      ['--key FILE', 'sign as this key (default: a new key for each call)'],
      ['--async', 'use /webhook and print the acknowledgement'],
      ['--a2a', 'use A2A message/send'],
      ['--json', 'print the whole answer as JSON'],
      ['--pay --wallet FILE', 'answer an x402 quote from the wallet (a 0x… key file) and print the receipt'],
      ['--max-usd X', 'the most to pay for one call (default 1)'],
      ['--attest', 'afterwards, state how the call went as a signed attestation (needs --key of a registered entity)'],
      REGISTRY_FLAG
    ],
    examples: [
      'registry-node call localhost/alice/echo-bot "hello there"',
      'registry-node call localhost/alice/echo-bot "hello" --pay --wallet local-chain/payer-wallet.txt --max-usd 0.05'
    ]
  },
  {
    name: 'search',
    args: '[QUERY] [flags]',
    summary: 'search a registry and print a table (or JSON)',
    flags: [
      ['--type agent|service', 'only this type'],
      ['--category C, --tag T …', 'only these facets (--tag repeats)'],
      ['--status S', 'active, inactive or any'],
      ['--limit N', 'results (default 20, at most 100)'],
      ['--federated', "ask the node's peers too"],
      ['--json', 'print the answer as JSON'],
      REGISTRY_FLAG
    ],
    examples: ['registry-node search echo', 'registry-node search translation --type agent --federated --json']
  },
  {
    name: 'resolve',
    args: 'FQAN|ENTITY_ID [--json]',
    summary: "print an entity's record, found by name or ID",
    flags: [['--json', 'print the record as JSON'], REGISTRY_FLAG],
    examples: ['registry-node resolve localhost/alice/echo-bot']
  },
  {
    name: 'developer register',
    args: '--key FILE --name NAME [--handle H] [--github G] [--profile-url U] [flags]',
    summary: 'register the developer of a key file (open mode); with --handle, claim that handle in the same write',
    flags: [
      DEVELOPER_KEY,
      ['--name NAME', 'the display name'],
      ['--handle H', 'a handle to claim with it (all or nothing)'],
      ['--github G, --profile-url U', 'the profile'],
      FORM_FLAG,
      REGISTRY_FLAG
    ],
    examples: ['registry-node developer register --key keys/developer.json --name "Alice the Builder" --handle alice']
  },
  {
    name: 'handle claim',
    args: 'HANDLE --key FILE [flags]',
    summary: "claim a handle for the key file's developer (one per developer)",
    flags: [DEVELOPER_KEY, FORM_FLAG, REGISTRY_FLAG],
    examples: ['registry-node handle claim alice --key keys/developer.json']
  },
  {
    name: 'handle verify',
    args: 'HANDLE --key FILE --method dns|github --proof DOMAIN|USER [flags]',
    summary: "prove a handle's ownership by a DNS TXT record or a GitHub gist holding the developer key",
    flags: [
      DEVELOPER_KEY,
      ['--method dns|github', 'dns: TXT _zns-verify.<domain>; github: a public gist of the user'],
      ['--proof DOMAIN|USER', 'the domain, or the GitHub user name'],
      FORM_FLAG,
      REGISTRY_FLAG
    ],
    examples: ['registry-node handle verify alice --key keys/developer.json --method dns --proof example.com']
  },
  {
    name: 'handle release',
    args: 'HANDLE --key FILE [flags]',
    summary: 'release a handle and every name bound under it',
    flags: [DEVELOPER_KEY, DELETION_FORM_FLAG, REGISTRY_FLAG],
    examples: ['registry-node handle release alice --key keys/developer.json']
  },
  {
    name: 'handle available',
    args: 'HANDLE [--registry URL]',
    summary: 'whether a handle can be claimed (and why not)',
    flags: [REGISTRY_FLAG],
    examples: ['registry-node handle available alice']
  },
  {
    name: 'name bind',
    args: 'NAME --entity ID --key FILE [--handle H] [--version V] [--tag T …] [flags]',
    summary: "bind HANDLE/NAME to one of the developer's entities",
    flags: [
      ['--entity ID', 'the entity (it must belong to the developer)'],
      DEVELOPER_KEY,
      ['--handle H', "the handle (default: the developer's)"],
      ['--version V, --tag T …', 'a semantic version, capability tags (--tag repeats)'],
      FORM_FLAG,
      REGISTRY_FLAG
    ],
    examples: ['registry-node name bind doc --entity zns:… --handle alice --key keys/developer.json --version 1.0.0']
  },
  {
    name: 'name update',
    args: 'HANDLE/NAME --key FILE [--version V] [--tag T …] [flags]',
    summary: 'give a name a new version or capability tags (the history keeps the old ones)',
    flags: [DEVELOPER_KEY, ['--version V, --tag T …', 'what changes'], FORM_FLAG, REGISTRY_FLAG],
    examples: ['registry-node name update alice/doc --key keys/developer.json --version 1.1.0']
  },
  {
    name: 'name release',
    args: 'HANDLE/NAME --key FILE [flags]',
    summary: 'release a name',
    flags: [DEVELOPER_KEY, DELETION_FORM_FLAG, REGISTRY_FLAG],
    examples: ['registry-node name release alice/doc --key keys/developer.json']
  },
  {
    name: 'name versions',
    args: 'HANDLE/NAME [--registry URL]',
    summary: "a name's versions, newest first",
    flags: [REGISTRY_FLAG],
    examples: ['registry-node name versions alice/doc']
  },
  {
    name: 'peers list',
    args: '[--all] [--registry URL]',
    summary: "a running node's connected peers (--all: also the known ones that disconnected)",
    flags: [['--all', 'also list known peers that are no longer connected'], REGISTRY_FLAG],
    examples: ['registry-node peers list --registry http://127.0.0.1:8080']
  },
  {
    name: 'peers add',
    args: 'ADDRESS [--secret S] [--registry URL]',
    summary: 'connect a running node to a peer now; the address is re-dialled while the node runs',
    flags: [ADDRESS_ARG, ADMIN_SECRET_FLAG, REGISTRY_FLAG],
    examples: ['registry-node peers add /ip4/203.0.113.7/tcp/4001/p2p/12D3KooW… --secret "$SECRET"']
  },
  {
    name: 'peers remove',
    args: 'PEER_ID [--secret S] [--registry URL]',
    summary:
      'hang up on a peer and stop re-dialling its added or bootstrap addresses (it may come back: ban it to keep it out)',
    flags: [ADMIN_SECRET_FLAG, REGISTRY_FLAG],
    examples: ['registry-node peers remove 12D3KooW… --secret "$SECRET"']
  },
  {
    name: 'peers ban',
    args: 'PEER_ID [--reason TEXT] [--secret S] [--registry URL]',
    summary: 'ban a peer: hung up on, refused both ways, never dialled; kept in the store across restarts',
    flags: [['--reason TEXT', 'a note shown in the ban list'], ADMIN_SECRET_FLAG, REGISTRY_FLAG],
    examples: ['registry-node peers ban 12D3KooW… --reason "floods gossip" --secret "$SECRET"']
  },
  {
    name: 'peers unban',
    args: 'PEER_ID [--secret S] [--registry URL]',
    summary: 'lift a ban: the peer may connect again',
    flags: [ADMIN_SECRET_FLAG, REGISTRY_FLAG],
    examples: ['registry-node peers unban 12D3KooW… --secret "$SECRET"']
  },
  {
    name: 'peers bans',
    args: '[--secret S] [--registry URL]',
    summary: "a running node's banned peers, oldest first",
    flags: [ADMIN_SECRET_FLAG, REGISTRY_FLAG],
    examples: ['registry-node peers bans --secret "$SECRET"']
  },
  ...RESEARCH_COMMANDS
]

/** The command the words of argv name (the longest match), or null. */
export function commandOf(argv: readonly string[]): CommandHelp | null {
  let best: CommandHelp | null = null
  for (const command of COMMANDS) {
    const words = command.name.split(' ')
    if (words.every((word, i) => argv[i] === word) && words.length > (best?.name.split(' ').length ?? 0)) best = command
  }
  return best
}

/** Whether argv asks for help: `-h` or `--help` before any `--`. */
export function asksForHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf('--')
  const own = end === -1 ? argv : argv.slice(0, end)
  return own.includes('--help') || own.includes('-h')
}

export function topLevelHelp(): string {
  const width = Math.max(...COMMANDS.map(c => c.name.length)) + 2
  return `registry-node ${NODE_VERSION}: a peer-to-peer registry node for AI agents and services

Usage: registry-node <command> [arguments]

Commands:
${COMMANDS.map(c => `  ${c.name.padEnd(width)}${c.summary}`).join('\n')}

registry-node <command> --help prints a command's flags and examples.
registry-node version prints the version. Docs: docs/reference/cli.md, docs/guide/.
`
}

export function commandHelp(command: CommandHelp): string {
  const flags = [...command.flags]
  const width = Math.min(34, Math.max(...flags.map(([f]) => f.length), 10) + 2)
  const rows = (list: readonly (readonly [string, string])[]): string =>
    list
      .map(([f, d]) => (f.length >= width ? `  ${f}\n  ${''.padEnd(width)}${d}` : `  ${f.padEnd(width)}${d}`))
      .join('\n')
  const settings = command.name === 'start' || command.name === 'init' ? `\n${settingsHelp()}` : ''
  return `Usage: registry-node ${command.name} ${command.args}

${command.summary[0]?.toUpperCase() ?? ''}${command.summary.slice(1)}.

Flags:
${rows(flags)}
${settings}
Examples:
${command.examples.map(e => `  ${e}`).join('\n')}
`
}

/** The settings as flags, grouped by section; each also a config key and an environment variable. */
function settingsHelp(): string {
  const sections = new Map<string, Setting[]>()
  for (const setting of SETTINGS) {
    const section = setting.key.includes('.') ? (setting.key.split('.')[0] ?? '') : 'node'
    sections.set(section, [...(sections.get(section) ?? []), setting])
  }
  const lines = ['Settings (also config file keys and REGISTRY_NODE_* variables; docs/reference/configuration.md):']
  for (const [section, settings] of sections) {
    lines.push(`\n  [${section}]`)
    for (const s of settings) {
      const value =
        s.kind === 'boolean'
          ? ''
          : s.kind === 'integer' || s.kind === 'number'
            ? ' N'
            : s.kind === 'list'
              ? ' A,B'
              : ' VALUE'
      const name = s.kind === 'boolean' ? `--[no-]${s.flag}` : `--${s.flag}${value}`
      lines.push(`  ${name.padEnd(34)}default ${JSON.stringify(s.default)}`, ...wrap(s.doc, 94).map(l => `      ${l}`))
    }
  }
  return `${lines.join('\n')}\n`
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/)) {
    if (line && line.length + word.length + 1 > width) {
      lines.push(line)
      line = word
    } else line = line ? `${line} ${word}` : word
  }
  if (line) lines.push(line)
  return lines
}
