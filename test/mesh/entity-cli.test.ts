/**
 * The entity guide's path (docs/guide/entities.md) with the real command line against a 3-node mesh: keys →
 * entity init → entity serve --echo → found by search and active → call by FQAN → stopped, it
 * turns inactive on every node after the (shortened) threshold, and active again on restart; its
 * card, fetched through a node's card proxy, verifies.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import test from 'ava'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'
import { formatKey } from '../../src/identity/encoding.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed } from '../../src/identity/keys.js'
import { developerRegistration } from '../helpers/identities.js'
import { http, startTestNode, tcpAddress, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const exec = promisify(execFile)
const MESH = { enabled: true, sync_interval_seconds: 5 }
// Inactive after 2 s of silence, swept every 0.2 s; the entity beats every 0.5 s.
const LIVENESS = { inactive_after_seconds: 2, sweep_interval_seconds: 0.2 }
const LOCAL_ENTITIES = { entities: { allow_http_url: true }, cards: { allow_private_addresses: true } }
let nodes: TestNode[] = []
let dir: string

async function cli(args: string[]): Promise<string> {
  return (await exec(process.execPath, [...CLI_FOR_TESTS, ...args], { cwd: dir })).stdout
}

function serve(registry: string): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(
    process.execPath,
    [
      ...CLI_FOR_TESTS,
      'entity',
      'serve',
      '--config',
      'echo-bot/entity.toml',
      '--registry',
      registry,
      '--echo',
      '--heartbeat-seconds',
      '0.5'
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }
  )
  let out = ''
  child.stdout!.on('data', d => {
    out += d
  })
  child.stderr!.on('data', d => {
    out += d
  })
  process.once('exit', () => child.kill('SIGKILL'))
  return until(
    'entity serve prints its URL',
    () => {
      if (child.exitCode !== null) throw new Error(`entity serve exited: ${out}`)
      return /serving on .*\n/.exec(out)?.[0]
    },
    60_000
  ).then(line => ({ child, line }))
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'registry-entity-cli-'))
  const a = await startTestNode({
    name: 'node-a',
    host: 'a.registry.test',
    p2p: MESH,
    liveness: LIVENESS,
    ...LOCAL_ENTITIES
  })
  const rest = await Promise.all(
    ['b', 'c'].map(x =>
      startTestNode({
        name: `node-${x}`,
        host: `${x}.registry.test`,
        p2p: { ...MESH, bootstrap: [tcpAddress(a)] },
        liveness: LIVENESS,
        ...LOCAL_ENTITIES
      })
    )
  )
  nodes = [a, ...rest]
  for (const n of nodes) await until(`${n.config.name} has peers`, () => n.node.mesh!.peers.connectedCount >= 1)
})

test.after.always(async () => {
  await Promise.all(nodes.map(n => n.stop()))
  await rm(dir, { recursive: true, force: true })
})

test('keys → entity init → entity serve → search, call by FQAN, inactive on every node when stopped, active again on restart', async t => {
  const [a] = nodes as [TestNode]
  // A developer with a handle: the FQAN is a.registry.test/echo-dev/echo-bot.
  await cli(['keys', 'new', '--out', 'keys/developer.json'])
  const file = JSON.parse(await readFile(join(dir, 'keys/developer.json'), 'utf8')) as { seed: string }
  const keyPair = keyPairFromSeed(Buffer.from(file.seed, 'base64'))
  const dev = { keyPair, id: deriveId('developer', keyPair.publicKey), publicKey: formatKey(keyPair.publicKey) }
  t.is(
    (await http(a.url, 'POST', '/v1/developers', { body: developerRegistration(dev, { handle: 'echo-dev' }) })).status,
    201
  )

  const init = JSON.parse(
    await cli(['entity', 'init', '--developer', 'keys/developer.json', '--name', 'Echo Bot'])
  ) as { entity_id: string; index: number; config: string }
  t.is(init.index, 0)
  t.is(init.config, join('echo-bot', 'entity.toml'))
  const id = init.entity_id

  const first = await serve(a.url)
  t.regex(first.line, /registered at .*a\.registry\.test\/echo-dev\/echo-bot/)
  const searchedAt = Date.now()
  const hit = await until('search finds the entity', async () => {
    const res = await http(a.url, 'POST', '/v1/search', { body: { query: 'echo bot' } })
    return (res.body.results as Array<Record<string, unknown>>).find(r => r.entity_id === id)
  })
  t.log(`found by search ${Date.now() - searchedAt} ms after entity serve printed its URL`)
  t.is(hit.status, 'active')
  t.is(hit.fqan, 'a.registry.test/echo-dev/echo-bot')

  const reply = await cli(['call', 'a.registry.test/echo-dev/echo-bot', 'hello', 'mesh', '--registry', a.url])
  t.is(reply.trim(), 'hello mesh')
  const table = await cli(['search', 'echo', '--registry', a.url])
  t.regex(table, /Echo Bot\s+a\.registry\.test\/echo-dev\/echo-bot\s+agent\s+active/)
  const resolved = JSON.parse(
    await cli(['resolve', 'a.registry.test/echo-dev/echo-bot', '--registry', a.url, '--json'])
  ) as { entity_id: string }
  t.is(resolved.entity_id, id)

  const card = await fetch(`${nodes[1]!.url}/v1/entities/${encodeURIComponent(id)}/card`)
  t.is(card.status, 200)
  t.is(
    card.headers.get('x-card-verification'),
    'verified',
    'the card, fetched by another node through its proxy, verifies'
  )

  const statusOn = async (n: TestNode) =>
    (await http(n.url, 'GET', `/v1/entities/${encodeURIComponent(id)}`)).body.status as string
  for (const n of nodes)
    await until(`${n.config.name} shows the entity active`, async () => (await statusOn(n)) === 'active')
  first.child.kill('SIGTERM')
  for (const n of nodes)
    await until(`${n.config.name} shows the entity inactive`, async () => (await statusOn(n)) === 'inactive')
  const second = await serve(a.url)
  t.regex(second.line, /unchanged|updated/)
  for (const n of nodes)
    await until(`${n.config.name} shows the entity active again`, async () => (await statusOn(n)) === 'active')
  second.child.kill('SIGTERM')
})
