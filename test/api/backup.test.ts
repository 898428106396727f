/**
 * Export, import, backup and restore through the CLI against real nodes: a log exported from a
 * running node and imported into a fresh one gives the same sync digests and entities, and again
 * changes nothing; a forged line is refused and the rest imported; an export resumes where it
 * stopped; a backup taken under a steady write load restores every write acknowledged before it.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'
import { RegistryClient } from '../../src/client/index.js'
import { SubjectDigests } from '../../src/store/subject-digests.js'
import { agent, developer } from '../helpers/identities.js'
import { developerSigner, entitySigner, registration } from '../helpers/client-signers.js'
import { heartbeatOnce, http, type TestNode, testNodes } from '../helpers/node.js'
import { sleep, until } from '../helpers/wait.js'

const nodes = testNodes()
test.after.always(nodes.stopAll)

const SECRET = 'whsec_backup_test'

interface Run {
  code: number
  signal: string | null
  stdout: string
  stderr: string
}

function cli(args: string[], input?: string): Promise<Run> {
  return new Promise(done => {
    const child = execFile(
      process.execPath,
      [...CLI_FOR_TESTS, ...args],
      { maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const failed = err as { code?: number | null; signal?: string | null } | null
        done({ code: failed ? (failed.code ?? 1) : 0, signal: failed?.signal ?? null, stdout, stderr })
      }
    )
    child.stdin?.end(input ?? '')
  })
}

/** The command's JSON answer; when it printed none, an error saying how it ended and what it wrote to stderr. */
function answerOf(run: Run): unknown {
  try {
    return JSON.parse(run.stdout)
  } catch {
    throw new Error(`no JSON on stdout (exit ${run.code}, signal ${run.signal}); stderr: ${run.stderr}`)
  }
}

async function tempDir(t: import('ava').ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'registry-backup-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** The sync digests a node's log gives (what the mesh compares). */
function digestsOf(n: TestNode): string[] {
  const digests = new SubjectDigests(n.node.store)
  digests.start()
  const buckets = digests.bucketDigests().map(b => b.toString('hex'))
  digests.stop()
  return buckets
}

async function entityIds(n: TestNode): Promise<string[]> {
  const page = await http(n.url, 'GET', '/v1/entities?limit=100')
  return (page.body.entities as { entity_id: string }[]).map(e => e.entity_id).sort()
}

/**
 * A node holding every kind of record: developers (registered and implicit), handles, names,
 * updates, a deregistered entity (a tombstone), status changes by batch and one by one.
 */
async function populatedNode(): Promise<TestNode> {
  // Swept by hand below: every silent entity in one batch.
  const node = await nodes.start({ liveness: { inactive_after_seconds: 1, sweep_interval_seconds: 3600 } })
  const client = new RegistryClient(node.url)
  const alice = developer(41)
  await client.registerDeveloper({ name: 'Alice', handle: 'alice' }, developerSigner(alice))
  const bots = [0, 1, 2, 3].map(i => agent(alice, i))
  for (const [i, a] of bots.entries())
    await client.registerEntity(registration(`Alice Bot ${i}`), entitySigner(alice, a))
  await client.bindName(
    { entity_id: bots[0]!.agentId, entity_name: 'doc', developer_handle: 'alice' },
    developerSigner(alice)
  )
  await client.updateName('alice', 'doc', { version: '1.1.0' }, developerSigner(alice))
  await client.updateEntity(bots[1]!.agentId, { summary: 'Reads documents aloud' }, developerSigner(alice))
  await client.deregisterEntity(bots[3]!.agentId, entitySigner(alice, bots[3]!))
  const bob = developer(42)
  const bobBot = agent(bob, 0)
  await client.registerEntity(registration('Bob Bot'), entitySigner(bob, bobBot))
  await client.claimHandle('bob', bob.id, developerSigner(bob))
  // The sweep makes the silent entities inactive (a batch); a heartbeat brings one back (one change).
  await sleep(1100)
  await node.node.liveness.sweep()
  if ((await http(node.url, 'GET', `/v1/entities/${bots[2]!.agentId}`)).body.status !== 'inactive')
    throw new Error('the sweep left the entity active')
  const ack = await heartbeatOnce(node.url, bots[2]!)
  if (ack.type !== 'ack') throw new Error(JSON.stringify(ack))
  await until('a status change from the heartbeat', () =>
    [...node.node.store.allOperations()].some(op => op.kind === 'entity.status')
  )
  return node
}

const linesOf = (text: string): string[] => text.split('\n').filter(l => l !== '')

test('an export of a running node imported into a fresh one: same digests and entities; again, nothing applied', async t => {
  const source = await populatedNode()
  const exported = await cli(['export', '--data', source.dataDir])
  t.is(exported.code, 0, exported.stderr)
  const lines = linesOf(exported.stdout)
  const kinds = new Set(lines.map(l => (JSON.parse(l) as { kind: string }).kind))
  for (const kind of [
    'developer.register',
    'developer.implicit',
    'entity.register',
    'entity.update',
    'entity.deregister',
    'entity.status',
    'entity.status.batch',
    'handle.claim',
    'name.bind',
    'name.update'
  ])
    t.true(kinds.has(kind), kind)
  t.regex(exported.stderr, new RegExp(`exported ${lines.length} operations after seq 0`))

  const fresh = await nodes.start({ host: 'fresh.test', onboarding: { webhook_secret: SECRET } })
  const imported = await cli(['import', '-', '--registry', fresh.url, '--admin-token', SECRET], exported.stdout)
  t.is(imported.code, 0, imported.stderr)
  t.deepEqual(answerOf(imported), { lines: lines.length, applied: lines.length, present: 0, refused: {} })
  t.deepEqual(digestsOf(fresh), digestsOf(source))
  t.deepEqual(await entityIds(fresh), await entityIds(source))
  // Another registry's names are resolved by FQAN, from the names the import brought.
  const resolve = '/v1/resolve?fqan=registry.test/alice/doc'
  const resolved = (await http(fresh.url, 'GET', resolve)).body
  t.is(resolved.entity_id, (await http(source.url, 'GET', resolve)).body.entity_id)

  const again = await cli(['import', '-', '--registry', fresh.url, '--admin-token', SECRET], exported.stdout)
  t.is(again.code, 0, again.stderr)
  t.deepEqual(answerOf(again), { lines: lines.length, applied: 0, present: lines.length, refused: {} })
  t.deepEqual(digestsOf(fresh), digestsOf(source))

  const unauthorized = await cli(['import', '-', '--registry', fresh.url, '--admin-token', 'wrong'], exported.stdout)
  t.is(unauthorized.code, 1)
  t.regex(unauthorized.stderr, /^registry-node: .*admin_unauthorized.*\n$/)
})

test('a forged line is refused and reported, the rest imported (into a stopped node)', async t => {
  const source = await populatedNode()
  const lines = linesOf((await cli(['export', '--data', source.dataDir])).stdout)
  const target = lines.findIndex(l => (JSON.parse(l) as { kind: string }).kind === 'entity.update')
  const forged = JSON.parse(lines[target]!) as { body: string }
  const body = JSON.parse(Buffer.from(forged.body, 'base64').toString('utf8')) as Record<string, unknown>
  forged.body = Buffer.from(JSON.stringify({ ...body, summary: 'Forged' })).toString('base64')
  const file = join(await tempDir(t), 'ops.jsonl')
  await writeFile(file, `${lines.map((l, i) => (i === target ? JSON.stringify(forged) : l)).join('\n')}\n`)

  const dataDir = join(await tempDir(t), 'data')
  const imported = await cli(['import', file, '--data', dataDir])
  t.is(imported.code, 1)
  t.deepEqual(answerOf(imported), {
    lines: lines.length,
    applied: lines.length - 1,
    present: 0,
    refused: { operation_invalid: 1 }
  })
  t.is(
    imported.stderr,
    `registry-node: line ${target + 1}: refused (operation_invalid): node_signature does not verify against origin_key.\n`
  )
  const restarted = await nodes.start({}, dataDir)
  t.deepEqual(await entityIds(restarted), await entityIds(source))
})

test('an export resumes from a cursor with exactly the remaining lines', async t => {
  const source = await populatedNode()
  const full = linesOf((await cli(['export', '--data', source.dataDir])).stdout)
  const k = Math.floor(full.length / 2)
  const seq = (JSON.parse(full[k - 1]!) as { seq: number }).seq
  const rest = await cli(['export', '--data', source.dataDir, '--after', String(seq)])
  t.deepEqual(linesOf(rest.stdout), full.slice(k))

  // An export cut short mid-line continues from the file itself.
  const file = join(await tempDir(t), 'ops.jsonl')
  await writeFile(file, `${full.slice(0, k).join('\n')}\n${full[k]!.slice(0, 40)}`)
  const resumed = await cli(['export', '--data', source.dataDir, '--out', file, '--resume'])
  t.is(resumed.code, 0, resumed.stderr)
  t.deepEqual(linesOf(await readFile(file, 'utf8')), full)
  t.regex(resumed.stderr, new RegExp(`exported ${full.length - k} operations after seq ${seq}`))
})

test('a backup under a steady write load restores every write acknowledged before it began', async t => {
  const source = await nodes.start()
  const client = new RegistryClient(source.url)
  const dev = developer(43)
  const acknowledged: string[] = []
  let writing = true
  const writer = (async () => {
    for (let i = 0; writing; i++) {
      const a = agent(dev, i)
      await client.registerEntity(registration(`Load Bot ${i}`), entitySigner(dev, a))
      acknowledged.push(a.agentId)
    }
  })()
  await until('30 writes acknowledged', () => acknowledged.length >= 30)
  const before = [...acknowledged]
  const backupDir = join(await tempDir(t), 'backup')
  const backup = await cli(['backup', '--data', source.dataDir, '--to', backupDir])
  const during = acknowledged.length
  writing = false
  await writer
  t.is(backup.code, 0, backup.stderr)
  t.true(during > before.length, 'the writer kept writing while the backup ran')
  const manifest = answerOf(backup) as { registry_id: string; files: string[]; last_seq: number }
  t.is(manifest.registry_id, source.node.identity.registryId)
  t.deepEqual(manifest.files.sort(), ['node-key.json', 'registry.lmdb'])

  const running = await cli(['restore', '--from', backupDir, '--data', source.dataDir])
  t.is(running.code, 1)
  t.is(
    running.stderr,
    `registry-node: data directory ${source.dataDir} is in use by process ${process.pid}; stop it or choose another --data\n`
  )

  const dataDir = join(await tempDir(t), 'restored')
  const restored = await cli(['restore', '--from', backupDir, '--data', dataDir])
  t.is(restored.code, 0, restored.stderr)
  const again = await cli(['restore', '--from', backupDir, '--data', dataDir])
  t.is(again.code, 1)
  t.regex(again.stderr, /^registry-node: .* is not empty \(.*\); --force replaces what it holds\n$/)
  t.is((await cli(['restore', '--from', backupDir, '--data', dataDir, '--force'])).code, 0)

  const node = await nodes.start({}, dataDir)
  t.is(node.node.identity.registryId, source.node.identity.registryId)
  const missing = before.filter(id => !node.node.store.getEntity(id))
  t.deepEqual(missing, [])
  t.true(node.node.store.entityCount() >= before.length)
})
