/**
 * The signed-write commands (src/client/cli.ts) run from the sources against a real node, through
 * the whole life of a developer, its handle, an entity and its name, checking the node after each.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import test from 'ava'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'
import { startDnsServer } from '../helpers/dns-server.js'
import { http, startTestNode } from '../helpers/node.js'
import { closedPort } from '../helpers/shared.js'

const exec = promisify(execFile)

interface Run {
  code: number
  stdout: string
  stderr: string
}

/** The CLI with REGISTRY_NODE_URL set to the node, so that the default registry is exercised too. */
async function cli(cwd: string, registry: string, args: string[], input?: string): Promise<Run> {
  const child = exec(process.execPath, [...CLI_FOR_TESTS, ...args], {
    cwd,
    env: { ...process.env, REGISTRY_NODE_URL: registry },
    timeout: 60_000
  })
  child.child.stdin!.end(input ?? '')
  try {
    const { stdout, stderr } = await child
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string }
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  }
}

test('developer, handle, entity, name: the life cycle through the CLI verbs', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-client-cli-'))
  const dns = await startDnsServer({})
  const node = await startTestNode({ verification: { dns_servers: [dns.address], timeout_ms: 20_000 } })
  const json = async (args: string[], input?: string): Promise<Record<string, any>> => {
    const run = await cli(dir, node.url, args, input)
    if (run.code !== 0) throw new Error(`${args.join(' ')} exited ${run.code}: ${run.stderr}`)
    return JSON.parse(run.stdout) as Record<string, any>
  }
  const get = async (path: string) => http(node.url, 'GET', path)
  try {
    const dev = await json(['keys', 'new', '--out', 'keys/carol.json'])
    const derived = await json([
      'keys',
      'derive',
      '--developer',
      'keys/carol.json',
      '--index',
      '0',
      '--out',
      'keys/a0.json'
    ])
    const id = derived.entity_id as string

    t.like(await json(['developer', 'register', '--key', 'keys/carol.json', '--name', 'Carol', '--handle', 'carol']), {
      developer_id: dev.developer_id,
      handle: 'carol'
    })
    t.like((await get('/v1/handles/carol')).body, { developer_id: dev.developer_id })
    t.like((await get(`/v1/developers/${dev.developer_id}`)).body, { name: 'Carol', implicit: false })
    dns.set('_zns-verify.carol.example', [[dev.public_key]])
    t.like(
      await json([
        'handle',
        'verify',
        'carol',
        '--key',
        'keys/carol.json',
        '--method',
        'dns',
        '--proof',
        'carol.example'
      ]),
      { verified: true, verification_tier: 'dns-verified' }
    )

    const record = JSON.stringify({ name: 'Doc Bot', category: 'tools', entity_url: 'https://doc.example.com' })
    t.like(await json(['entity', 'register', '--key', 'keys/a0.json', '--body', '-'], record), { entity_id: id })
    t.like((await get(`/v1/entities/${id}`)).body, { developer_id: dev.developer_id, name: 'Doc Bot' })

    const bound = await json([
      'name',
      'bind',
      'doc',
      '--entity',
      id,
      '--handle',
      'carol',
      '--key',
      'keys/carol.json',
      '--version',
      '1.0.0',
      '--registry',
      node.url
    ])
    t.is(bound.fqan, 'registry.test/carol/doc')
    t.like((await get('/v1/names/carol/doc')).body, { entity_id: id, version: '1.0.0' })

    // The deployed form: Authorization: Bearer over the raw body.
    await json(['name', 'update', 'carol/doc', '--key', 'keys/carol.json', '--version', '1.1.0', '--form', 'deployed'])
    const versions = await json(['name', 'versions', 'registry.test/carol/doc'])
    t.deepEqual(
      (versions as unknown as { version: string }[]).map(v => v.version),
      ['1.1.0', '1.0.0']
    )

    const updated = await json([
      'entity',
      'update',
      id,
      '--key',
      'keys/a0.json',
      '--set',
      'summary=Reads documents',
      '--set',
      'tags=["docs","reading"]',
      '--set',
      'ttl=3600'
    ])
    t.deepEqual([...updated.changed].sort(), ['summary', 'tags', 'ttl'])
    t.like((await get(`/v1/entities/${id}`)).body, { summary: 'Reads documents', tags: ['docs', 'reading'], ttl: 3600 })
    // The owning developer's key, deployed form (Bearer-Dev), the changes from standard input.
    await json(
      ['entity', 'update', id, '--key', 'keys/carol.json', '--form', 'deployed', '--body', '-'],
      '{"version": "2.0.0"}'
    )
    t.like((await get(`/v1/entities/${id}`)).body, { version: '2.0.0' })

    t.like(await json(['entity', 'status', id]), {
      entity_id: id,
      status: 'active',
      fqan: 'registry.test/carol/doc'
    })

    t.like(await json(['name', 'release', 'carol/doc', '--key', 'keys/carol.json']), { message: 'name released' })
    t.is((await get('/v1/names/carol/doc')).status, 404)

    t.like(await json(['entity', 'deregister', id, '--key', 'keys/a0.json']), { entity_id: id })
    t.is((await get(`/v1/entities/${id}`)).status, 404)
    const gone = await cli(dir, node.url, ['entity', 'status', id])
    t.is(gone.code, 1)
    t.regex(gone.stderr, /^registry-node: GET .*: 404 entity_not_found: .* was deregistered at /)

    t.like(await json(['handle', 'release', 'carol', '--key', 'keys/carol.json']), { message: 'handle released' })
    t.is((await get('/v1/handles/carol')).status, 404)
    t.like(await json(['handle', 'available', 'carol']), { handle: 'carol', available: true })
    t.like(await json(['handle', 'claim', 'carol', '--key', 'keys/carol.json']), { handle: 'carol' })
  } finally {
    await node.stop()
    await dns.close()
    await rm(dir, { recursive: true, force: true })
  }
})

test('usage errors exit 2 and refusals exit 1, each as one line', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-client-cli-'))
  const node = await startTestNode()
  try {
    await cli(dir, node.url, ['keys', 'new', '--out', 'keys/dev.json'])
    await cli(dir, node.url, [
      'keys',
      'derive',
      '--developer',
      'keys/dev.json',
      '--index',
      '0',
      '--out',
      'keys/a0.json'
    ])

    const wrongKey = await cli(dir, node.url, ['handle', 'claim', 'dave', '--key', 'keys/a0.json'])
    t.is(wrongKey.code, 2)
    t.regex(wrongKey.stderr, /^registry-node: handle claim is signed by the developer: .* entity key file\n$/)
    const noSet = await cli(dir, node.url, [
      'entity',
      'update',
      'zns:00000000000000000000000000000000',
      '--key',
      'keys/a0.json'
    ])
    t.is(noSet.code, 2)
    t.regex(noSet.stderr, /needs --set field=value/)
    t.is((await cli(dir, node.url, ['handle', 'verify', 'dave', '--key', 'keys/dev.json', '--method', 'mail'])).code, 2)

    const refused = await cli(dir, node.url, ['handle', 'claim', 'admin', '--key', 'keys/dev.json'])
    t.is(refused.code, 1)
    t.regex(refused.stderr, /^registry-node: POST \/v1\/handles: 400 handle_reserved: .*\n$/)

    const port = await closedPort()
    const away = await cli(dir, `http://127.0.0.1:${port}`, ['handle', 'available', 'dave'])
    t.is(away.code, 1)
    t.regex(
      away.stderr,
      new RegExp(`^registry-node: cannot reach the registry at http://127\\.0\\.0\\.1:${port} .*ECONNREFUSED`)
    )
  } finally {
    await node.stop()
    await rm(dir, { recursive: true, force: true })
  }
})
