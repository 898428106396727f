/**
 * The signed writes of the registry guide as commands, each a call of RegistryClient signed with a
 * key file (what `keys sign | curl` does by hand):
 *   developer register                         POST /v1/developers (with --handle: claims it too)
 *   handle claim|verify|release|available      /v1/handles
 *   name bind|update|release|versions          /v1/names
 *   entity register|update|deregister|status   /v1/entities (dispatched by entity/cli.ts)
 * Answers print as JSON; usage errors are CliError, refusals the client's RegistryRequestError.
 */
import { readFile } from 'node:fs/promises'
import { deriveId } from '../identity/ids.js'
import { CliError, type CommandFlags, commandFlags } from '../util/argv.js'
import { RegistryClient } from './registry-client.js'
import { readSigner, type SignedForm, type Signer } from './signing.js'
import type { EntityChanges, EntityRegistration } from './types.js'

const DEFAULT_REGISTRY = 'http://127.0.0.1:8080'

/** `--registry`, else REGISTRY_NODE_URL, else the local node. */
export const registryUrl = (f: CommandFlags): string =>
  f.get('registry') ?? (process.env.REGISTRY_NODE_URL || DEFAULT_REGISTRY)

const usage = (message: string): never => {
  throw new CliError(message)
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
}

type KeyFileSigner = Awaited<ReturnType<typeof readSigner>>

interface Context {
  f: CommandFlags
  client: RegistryClient
  form: SignedForm
}

function context(argv: readonly string[]): Context {
  const f = commandFlags(argv, new Set())
  const form = f.get('form') ?? 'spec'
  if (form !== 'spec' && form !== 'deployed') usage('--form must be spec or deployed')
  return { f, client: new RegistryClient(registryUrl(f)), form: form as SignedForm }
}

async function signerFrom(f: CommandFlags, command: string, type?: KeyFileSigner['type']): Promise<KeyFileSigner> {
  const path = f.get('key') ?? usage(`${command} needs --key FILE`)
  const signer = await readSigner(path)
  if (type && signer.type !== type)
    usage(
      `${command} is signed by the ${type}: ${path} is not its key file but a${signer.type === 'entity' ? 'n entity' : ' developer'} key file`
    )
  return signer
}

const developerIdOf = (signer: Signer): string => signer.developerId ?? deriveId('developer', signer.keyPair.publicKey)

/** `alice/doc`, also written as an FQAN (`[zns://]host/alice/doc`): the last two segments. */
function handleAndName(text: string | undefined, command: string): { handle: string; name: string } {
  const parts = (text ?? '').replace(/^zns:\/\//, '').split('/')
  const name = parts.at(-1)
  const handle = parts.at(-2)
  if (!handle || !name) usage(`${command} needs HANDLE/NAME (e.g. alice/doc)`)
  return { handle: handle as string, name: name as string }
}

// --- developer ---------------------------------------------------------------------------------

export async function developerCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  if (sub !== 'register') usage(`unknown developer subcommand ${sub ?? ''}; see registry-node --help`)
  const { f, client, form } = context(rest)
  const signer = await signerFrom(f, 'developer register', 'developer')
  const name = f.get('name') ?? usage('developer register needs --name NAME')
  const github = f.get('github')
  const profileUrl = f.get('profile-url')
  const handle = f.get('handle')
  print(
    await client.registerDeveloper(
      {
        name,
        ...(github !== undefined ? { github } : {}),
        ...(profileUrl !== undefined ? { profile_url: profileUrl } : {}),
        ...(handle !== undefined ? { handle } : {})
      },
      signer,
      { form }
    )
  )
}

// --- handle ------------------------------------------------------------------------------------

export async function handleCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  if (sub !== 'available' && sub !== 'claim' && sub !== 'verify' && sub !== 'release')
    usage(`unknown handle subcommand ${sub ?? ''}; see registry-node --help`)
  const { f, client, form } = context(rest)
  const handle = f.positionals[0] ?? usage(`handle ${sub} needs HANDLE`)
  switch (sub) {
    case 'available':
      return print(await client.handleAvailable(handle))
    case 'claim': {
      const signer = await signerFrom(f, 'handle claim', 'developer')
      return print(await client.claimHandle(handle, developerIdOf(signer), signer, { form }))
    }
    case 'verify': {
      const signer = await signerFrom(f, 'handle verify', 'developer')
      const method = f.get('method') ?? usage('handle verify needs --method dns|github')
      if (method !== 'dns' && method !== 'github') usage('--method must be dns or github')
      const proof = f.get('proof') ?? usage('handle verify needs --proof DOMAIN|GITHUB_USER')
      return print(await client.verifyHandle(handle, { method: method as 'dns' | 'github', proof }, signer, { form }))
    }
    case 'release': {
      const signer = await signerFrom(f, 'handle release', 'developer')
      return print(await client.releaseHandle(handle, signer, { form }))
    }
  }
}

// --- name --------------------------------------------------------------------------------------

export async function nameCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  const { f, client, form } = context(rest)
  const tags = f.all('tag')
  switch (sub) {
    case 'bind': {
      const name = f.positionals[0] ?? usage('name bind needs NAME')
      const entityId = f.get('entity') ?? usage('name bind needs --entity ID')
      const signer = await signerFrom(f, 'name bind', 'developer')
      const handle =
        f.get('handle') ??
        (await client.getDeveloper(developerIdOf(signer))).dev_handle ??
        usage('name bind needs --handle H: the developer holds no handle')
      const version = f.get('version')
      return print(
        await client.bindName(
          {
            entity_id: entityId,
            entity_name: name,
            developer_handle: handle,
            ...(version !== undefined ? { version } : {}),
            ...(tags.length > 0 ? { capability_tags: tags } : {})
          },
          signer,
          { form }
        )
      )
    }
    case 'update': {
      const { handle, name } = handleAndName(f.positionals[0], 'name update')
      const signer = await signerFrom(f, 'name update', 'developer')
      const version = f.get('version')
      if (version === undefined && tags.length === 0) usage('name update needs --version V and/or --tag T')
      return print(
        await client.updateName(
          handle,
          name,
          { ...(version !== undefined ? { version } : {}), ...(tags.length > 0 ? { capability_tags: tags } : {}) },
          signer,
          { form }
        )
      )
    }
    case 'release': {
      const { handle, name } = handleAndName(f.positionals[0], 'name release')
      const signer = await signerFrom(f, 'name release', 'developer')
      return print(await client.releaseName(handle, name, signer, { form }))
    }
    case 'versions': {
      const { handle, name } = handleAndName(f.positionals[0], 'name versions')
      return print(await client.nameVersions(handle, name))
    }
    default:
      usage(`unknown name subcommand ${sub ?? ''}; see registry-node --help`)
  }
}

// --- entity update, deregister, status ---------------------------------------------------------

/** `field=value`: the value as JSON when it parses (numbers, lists, objects, null), else as text. */
function assignment(text: string): [string, unknown] {
  const eq = text.indexOf('=')
  if (eq <= 0) usage(`--set takes field=value, not ${JSON.stringify(text)}`)
  const value = text.slice(eq + 1)
  try {
    return [text.slice(0, eq), JSON.parse(value)]
  } catch {
    return [text.slice(0, eq), value]
  }
}

async function readBody(source: string): Promise<Record<string, unknown>> {
  let text: string
  if (source === '-') {
    const chunks: Buffer[] = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    text = Buffer.concat(chunks).toString('utf8')
  } else text = await readFile(source, 'utf8').catch(err => usage(`cannot read ${source}: ${(err as Error).message}`))
  try {
    const body: unknown = JSON.parse(text)
    if (body !== null && typeof body === 'object' && !Array.isArray(body)) return body as Record<string, unknown>
  } catch {
    /* reported below */
  }
  return usage(`${source} is not a JSON object`)
}

/** The `entity` subcommands that talk to a registry; false when `sub` is not one of them. */
export async function entityClientCommand(sub: string | undefined, argv: string[]): Promise<boolean> {
  if (sub !== 'register' && sub !== 'update' && sub !== 'deregister' && sub !== 'status') return false
  const { f, client, form } = context(argv)
  if (sub === 'register') {
    const signer = await signerFrom(f, 'entity register', 'entity')
    const body = await readBody(f.get('body') ?? usage('entity register needs --body FILE|-'))
    print(await client.registerEntity(body as EntityRegistration, signer, { form }))
    return true
  }
  const id = f.positionals[0] ?? usage(`entity ${sub} needs an entity ID`)
  if (sub === 'status') {
    const r = await client.getEntity(id, { missing: 'throw' })
    print({
      entity_id: r.entity_id,
      name: r.name,
      fqan: r.fqan,
      status: r.status,
      last_heartbeat: r.last_heartbeat,
      registered_at: r.registered_at,
      updated_at: r.updated_at,
      home_registry: r.home_registry
    })
    return true
  }
  // The entity's own key, or its developer's (signing as the owning developer).
  const signer = await signerFrom(f, `entity ${sub}`)
  if (sub === 'deregister') {
    print(await client.deregisterEntity(id, signer, { form }))
    return true
  }
  const sets = f.all('set')
  const bodyPath = f.get('body')
  if (sets.length > 0 === (bodyPath !== undefined)) usage('entity update needs --set field=value … or --body FILE|-')
  const changes = bodyPath !== undefined ? await readBody(bodyPath) : Object.fromEntries(sets.map(assignment))
  print(await client.updateEntity(id, changes as EntityChanges, signer, { form }))
  return true
}
