/**
 * A mixed-version mesh: the previous release and this code, two real processes meshed on loopback,
 * see each other's registrations (gossip and sync speak the same /1.0.0 protocols and topics), and
 * the new node, reading the old hello (which lists no protocols), finds it compatible, lacking only
 * attestations.
 * The previous release is PREVIOUS_RELEASE_DIR (a built checkout) when set, else the git tag
 * PREVIOUS_RELEASE checked out beside this repository (a worktree, node_modules linked) and run from
 * its sources; without either (no git history here) the test is skipped, saying why.
 * (Not a REGISTRY_NODE_* name: the nodes refuse variables of that prefix they do not know.)
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import test from 'ava'
import { CLI_FROM_SOURCES, TSX_IMPORT } from '../../scripts/lib/node-process.js'
import { RegistryClient } from '../../src/client/registry-client.js'
import { RegistryClient as EntityRegistryClient } from '../../src/entity/registry-client.js'
import { entityKeyFile } from '../../src/identity/key-file.js'
import { keyPairFromSeed } from '../../src/identity/keys.js'
import { NODE_VERSION } from '../../src/version.js'
import { until } from '../helpers/wait.js'

const PREVIOUS_RELEASE = 'v0.3.0'
const REPO = new URL('../..', import.meta.url).pathname
const git = (...args: string[]) => promisify(execFile)('git', ['-C', REPO, ...args])

interface Release {
  dir: string
  /** Node arguments that run its CLI. */
  cli: string[]
  remove(): Promise<void>
}

/** The previous release to run, or why there is none. */
async function previousRelease(): Promise<Release | string> {
  const given = process.env.PREVIOUS_RELEASE_DIR
  if (given) return { dir: given, cli: [join(given, 'dist/cli.js')], remove: async () => {} }
  try {
    await git('rev-parse', '--verify', '--quiet', `${PREVIOUS_RELEASE}^{commit}`)
  } catch {
    return `no git tag ${PREVIOUS_RELEASE} in ${REPO} and no PREVIOUS_RELEASE_DIR`
  }
  const dir = await mkdtemp(join(tmpdir(), 'previous-release-'))
  await git('worktree', 'add', '--detach', dir, PREVIOUS_RELEASE)
  await symlink(join(REPO, 'node_modules'), join(dir, 'node_modules'))
  return {
    dir,
    cli: ['--import', TSX_IMPORT, join(dir, 'src/cli.ts')],
    remove: async () => {
      await git('worktree', 'remove', '--force', dir).catch(() => rm(dir, { recursive: true, force: true }))
    }
  }
}

const previous = await previousRelease()
test.after.always(() => (typeof previous === 'string' ? undefined : previous.remove()))
if (typeof previous === 'string') console.log(`mixed-version test skipped: ${previous}`)

interface Running {
  process: ChildProcess
  url: string
  p2p: string
  version: string
}

/** `registry-node start` from `cli` (node arguments) on a fresh data directory; its URL and TCP address. */
async function startProcess(cli: string[], dir: string, extra: string[] = []): Promise<Running> {
  const child = spawn(
    process.execPath,
    [
      ...cli,
      'start',
      '--dev',
      '--data',
      dir,
      '--http-port',
      '0',
      '--p2p-host',
      '127.0.0.1',
      '--p2p-port',
      '0',
      '--host',
      '127.0.0.1',
      ...extra
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] }
  )
  let out = ''
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  let exited: number | null = null
  child.once('exit', code => {
    exited = code
  })
  const lines = await until(
    'the node prints its p2p line',
    () => {
      if (exited !== null) throw new Error(`${cli.at(-1)} exited (${exited}) before listening`)
      return /registry-node (\S+) listening on (\S+)[\s\S]*registry-node p2p \S+ at (\S+)/.exec(out) ?? undefined
    },
    60_000
  )
  return { process: child, version: lines[1]!, url: lines[2]!, p2p: lines[3]! }
}

const stop = (r: Running): Promise<unknown> => {
  const exited = new Promise(resolve => r.process.once('exit', resolve))
  r.process.kill('SIGTERM')
  return exited
}

/** An HD entity of a fixed developer (`developerSeed`), registered on `url`: its ID and key pair. */
async function register(url: string, index: number, name: string, developerSeed = 9) {
  const developer = keyPairFromSeed(Buffer.alloc(32, developerSeed))
  const { file, keyPair } = entityKeyFile(developer, index)
  const signer = { keyPair, developerId: file.developer_id!, developerProof: file.developer_proof! }
  await new RegistryClient(url).registerEntity(
    { name, type: 'agent', category: 'tools', summary: name, tags: ['mixed'], entity_url: `https://${index}.example` },
    signer
  )
  return { id: file.entity_ids!.agent, keyPair }
}

/** A counter of a node's /metrics, summed over the label sets that match `labels`. */
async function metric(url: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  let sum = 0
  for (const line of text.split('\n'))
    if (line.startsWith(name) && line.includes(labels) && !line.startsWith('#')) sum += Number(line.split(' ').at(-1))
  return sum
}

const holds = async (url: string, id: string): Promise<boolean> =>
  (await fetch(`${url}/v1/entities/${encodeURIComponent(id)}`)).status === 200

;(typeof previous === 'string' ? test.skip : test)(
  'a node of the previous release and one of this version mesh and see each other’s registrations',
  async t => {
    const release = previous as Release
    const oldVersion = (JSON.parse(await readFile(join(release.dir, 'package.json'), 'utf8')) as { version: string })
      .version
    const dir = await mkdtemp(join(tmpdir(), 'mixed-versions-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    // The new node first holds registrations and an attestation, which the old node cannot apply.
    const current = await startProcess(CLI_FROM_SOURCES, join(dir, 'new'))
    t.teardown(() => stop(current))
    const issuer = await register(current.url, 1, 'Registered on the new node')
    const subject = await register(current.url, 0, 'Attested on the new node', 10)
    await new EntityRegistryClient(current.url).attest(issuer.keyPair, {
      issuer: issuer.id,
      subject: subject.id,
      outcome: 'success'
    })
    const old = await startProcess(release.cli, join(dir, 'old'), ['--metrics', '--bootstrap', current.p2p])
    t.teardown(() => stop(old))
    t.is(old.version, oldVersion)
    t.is(current.version, NODE_VERSION)
    t.not(old.version, current.version)

    // Each tells the other its version in its hello.
    const peerVersions = async (url: string) =>
      ((await (await fetch(`${url}/v1/network/peers`)).json()) as { peers: { version: string | null }[] }).peers.map(
        p => p.version
      )
    await until('the nodes are connected and have said hello', async () => {
      const [ofOld, ofNew] = await Promise.all([peerVersions(old.url), peerVersions(current.url)])
      return ofOld[0] === NODE_VERSION && ofNew[0] === oldVersion
    })
    // The old hello carries no protocol lists: the new node takes it for what that release spoke,
    // finds only attestations missing (added since), keeps it and leaves them unused with it. The old
    // node ignores the new hello's lists.
    const [oldSeenByNew] = (
      (await (await fetch(`${current.url}/v1/network/peers`)).json()) as {
        peers: Record<string, unknown>[]
      }
    ).peers
    t.like(oldSeenByNew, {
      version: oldVersion,
      protocols: null,
      compatibility: 'partial',
      missing: ['/zns/ops/attestations/1', 'attestations'],
      connected: true
    })
    const fromOld = (await register(old.url, 0, 'Registered on the old node')).id
    await until('the new node holds what the old one registered', () => holds(current.url, fromOld))
    await until('the old node holds what the new one registered (sync)', async () =>
      (await Promise.all([issuer.id, subject.id].map(id => holds(old.url, id)))).every(Boolean)
    )
    // Sync showed the old node everything but the attestation: nothing it was sent was refused.
    const received = 'registry_sync_operations_received_total'
    t.true((await metric(old.url, received, 'outcome="applied"')) >= 2)
    t.is(await metric(old.url, received, 'outcome="invalid"'), 0)
    t.is(await metric(old.url, received, 'outcome="unsupported"'), 0)
  }
)
