/**
 * The package as someone outside this repository gets it: this checkout built and packed (`npm pack`),
 * the tarball installed into a fresh project beside tsx and TypeScript, and a TypeScript program there
 * that imports only what the package exports. The installed `registry-node` command writes a developer
 * key; the program loads it, runs an entity against a real node (started here, from the sources), finds
 * it through the registry, calls it, and embeds a node of its own through the main export. The program
 * and the library example of docs/guide/entities.md are type-checked against the package's declarations.
 *
 * Once per CI, like the docs' walk-throughs: packing and installing are the same under every runtime,
 * and the rest of the suite runs the same code under each.
 */
import { spawn } from 'node:child_process'
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import anyTest from 'ava'
import { startTestNode, type TestNode } from '../helpers/node.js'
import { blocksOf } from '../helpers/walkthrough.js'

const test = process.env.REGISTRY_NODE_TEST_RUNTIME ? anyTest.skip : anyTest

const REPO = fileURLToPath(new URL('../../', import.meta.url))

interface Ran {
  code: number | null
  output: string
  stdout: string
  seconds: number
}

/**
 * A user's environment: without what `npm test` exports to its scripts (npm_config_local_prefix and the
 * like would point the consumer's npm back at this checkout) or the suite's node settings.
 */
function userEnvironment(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of Object.keys(env)) if (/^(npm_|REGISTRY_NODE_)/i.test(name)) delete env[name]
  return { ...env, ...extra }
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: userEnvironment(env), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk
      output += chunk
    })
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk
    })
    child.once('error', reject)
    child.once('close', code => resolve({ code, output, stdout, seconds: (Date.now() - started) / 1000 }))
  })
}

function ok(ran: Ran, what: string): Ran {
  if (ran.code !== 0) throw new Error(`${what} exited ${ran.code}:\n${ran.output.slice(-4000)}`)
  return ran
}

/** The consumer's program: everything it imports comes from the installed package. */
const PROGRAM = `
import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  callEntity,
  createEntity,
  developerKeyFile,
  generateKeyPair,
  readKeyFile,
  RegistryClient,
  writeKeyFile,
  type KeyPair
} from 'registry-node/entity'
import { loadConfig, NODE_VERSION, startRegistryNode } from 'registry-node'

const registry = process.env.REGISTRY_URL ?? ''

// The key file the command line wrote, as the guide loads it.
const { keyPair: developerKey, file } = await readKeyFile('keys/developer.json')

// A key made and written here reads back as the same key.
const made = generateKeyPair()
await writeKeyFile('keys/made.json', developerKeyFile(made))
const roundTrip = (await readKeyFile('keys/made.json')).keyPair.publicKey.equals(made.publicKey)

// The mistake of the issue (the file's JSON where a KeyPair goes) is named, not a TypeError on \`buffer\`.
let misuse = ''
try {
  const json = JSON.parse(await readFile('keys/developer.json', 'utf8')) as unknown as KeyPair
  createEntity({ developerKey: json, index: 0, registry, card: { name: 'x' }, handler: () => '' })
} catch (err) {
  misuse = (err as Error).message
}

// @ts-expect-error: a card and a handler are required (fails to compile if the declarations were lost)
createEntity({ key: made, registry })

const entity = await createEntity({
  developerKey,
  index: 0,
  registry,
  card: { name: 'Packed Echo', summary: 'Repeats what it is told, from the packed package', tags: ['packed'] },
  handler: ({ content }) => \`echo: \${content}\`
}).start()

const client = new RegistryClient(registry)
let found = false
for (let i = 0; i < 100 && !found; i++) {
  const answer = await client.search({ query: 'packed echo' })
  const results = (answer.results ?? []) as Array<{ entity_id?: string }>
  found = results.some(r => r.entity_id === entity.entityId)
  if (!found) await new Promise(resolve => setTimeout(resolve, 100))
}
const called = await callEntity(entity.entityId, 'hello from the package', { registry })
await entity.stop({ deregister: true })

// A node embedded through the main export, on its own data folder, mesh off, logs off.
const data = await mkdtemp(join(tmpdir(), 'embedded-node-'))
const config = await loadConfig({
  argv: ['--data', data, '--http-host', '127.0.0.1', '--http-port', '0', '--no-p2p', '--log-level', 'silent'],
  env: {}
})
const node = await startRegistryNode(config)
const info = (await (await fetch(\`\${node.url}/v1/info\`)).json()) as Record<string, unknown>
await node.stop()

console.log(
  JSON.stringify({
    developer_id: file.developer_id,
    round_trip: roundTrip,
    misuse,
    entity_id: entity.entityId,
    registration: entity.registration.action,
    found,
    response: called.response,
    card_verification: called.card_verification,
    node_version: NODE_VERSION,
    embedded_registry_id: info.registry_id ?? null
  })
)
`

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node']
  },
  files: ['program.ts', 'doc-example.ts']
}

test('the packed package installs elsewhere; a TypeScript program there runs, finds and calls an entity', async t => {
  t.timeout(600_000)
  const root = await mkdtemp(join(tmpdir(), 'registry-node-pack-'))
  let node: TestNode | undefined
  t.teardown(async () => {
    await node?.stop()
    await rm(root, { recursive: true, force: true })
  })
  const manifest = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
    version: string
    files: string[]
    devDependencies: Record<string, string>
    allowScripts: Record<string, boolean>
  }
  const seconds: Record<string, number> = {}

  // Built from the sources into a copy, so that a stale dist/ cannot pass and the dist/ other tests
  // run (the walk-throughs) is not rewritten under them; packed as `files` says.
  const stage = join(root, 'package')
  await mkdir(stage)
  await cp(join(REPO, 'package.json'), join(stage, 'package.json'))
  for (const entry of manifest.files.filter(f => f !== 'dist')) {
    await cp(join(REPO, entry), join(stage, entry), { recursive: true })
  }
  seconds.build = ok(
    await run('npm', ['run', '-s', 'build', '--', '--outDir', join(stage, 'dist')], REPO),
    'build'
  ).seconds
  const packed = ok(
    await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', root], stage),
    'npm pack'
  )
  seconds.pack = packed.seconds
  const [tarball] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[]; size: number }[]
  if (!tarball) throw new Error(`npm pack printed no tarball:\n${packed.output}`)
  const paths = tarball.files.map(f => f.path)
  for (const path of [
    'dist/index.js',
    'dist/index.d.ts',
    'dist/entity/index.js',
    'dist/entity/index.d.ts',
    'dist/cli.js'
  ])
    t.true(paths.includes(path), `the tarball holds ${path}`)
  t.deepEqual(
    paths.filter(p => /^(src|test|scripts)\//.test(p)),
    [],
    'no sources or tests in the tarball'
  )

  const app = join(root, 'app')
  await mkdir(join(app, 'keys'), { recursive: true })
  // This repository's install-script policy (npm 11 reads it): the native modules' scripts run;
  // onnxruntime-node's (a CUDA download) and @scarf/scarf's (telemetry) do not.
  await writeFile(
    join(app, 'package.json'),
    `${JSON.stringify({ name: 'consumer', private: true, type: 'module', allowScripts: manifest.allowScripts }, null, 2)}\n`
  )
  const dev = manifest.devDependencies
  const installed = ok(
    await run(
      'npm',
      [
        'install',
        join(root, tarball.filename),
        `tsx@${dev.tsx}`,
        `typescript@${dev.typescript}`,
        `@types/node@${dev['@types/node']}`,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--no-update-notifier'
      ],
      app,
      // npm 10 ignores allowScripts; onnxruntime-node reads this itself.
      { ONNXRUNTIME_NODE_INSTALL: 'skip', SCARF_ANALYTICS: 'false' }
    ),
    'npm install'
  )
  seconds.install = installed.seconds

  const guide = await readFile(join(REPO, 'docs/guide/entities.md'), 'utf8')
  const example = blocksOf(guide, ['ts']).find(b => b.text.includes("from 'registry-node/entity'"))
  if (!example) throw new Error("docs/guide/entities.md has no ts block importing 'registry-node/entity'")
  await writeFile(join(app, 'doc-example.ts'), `${example.text}\n`)
  await writeFile(join(app, 'program.ts'), PROGRAM)
  await writeFile(join(app, 'tsconfig.json'), `${JSON.stringify(TSCONFIG, null, 2)}\n`)
  seconds.typecheck = ok(
    await run(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], app),
    'tsc in the consumer project'
  ).seconds

  // The bin as npm linked it (its `#!/usr/bin/env node` line included).
  const keys = ok(
    await run(join(app, 'node_modules/.bin/registry-node'), ['keys', 'new', '--out', 'keys/developer.json'], app),
    'registry-node keys new'
  )
  const written = JSON.parse(keys.stdout) as { developer_id: string }

  node = await startTestNode({ entities: { allow_http_url: true }, cards: { allow_private_addresses: true } })
  const program = ok(
    await run(process.execPath, ['--import', 'tsx', 'program.ts'], app, { REGISTRY_URL: node.url }),
    'the program'
  )
  seconds.program = program.seconds
  const outcome = JSON.parse(program.stdout.trim().split('\n').at(-1) ?? '') as Record<string, unknown>
  t.is(outcome.developer_id, written.developer_id)
  t.true(outcome.round_trip)
  t.regex(String(outcome.misuse), /developerKey is not a KeyPair.*readKeyFile/)
  t.is(outcome.registration, 'registered')
  t.true(outcome.found, 'the registry found the entity by search')
  t.is(outcome.response, 'echo: hello from the package')
  t.is(outcome.card_verification, 'verified')
  t.is(outcome.node_version, manifest.version)
  t.regex(String(outcome.embedded_registry_id), /\S/)
  t.log(
    `tarball ${(tarball.size / 1024).toFixed(0)} KiB; seconds: ${Object.entries(seconds)
      .map(([step, s]) => `${step} ${s.toFixed(1)}`)
      .join(', ')}`
  )
})
