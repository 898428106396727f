import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { http } from '../helpers/node.js'
import { REPO, spawnNode } from '../../scripts/lib/node-process.js'

const dev = developer(5)

/** Sends bodies with bounded concurrency; returns the IDs whose registration was acknowledged (201). */
async function register(
  url: string,
  bodies: Record<string, unknown>[],
  concurrency: number,
  onAck?: (n: number) => void
): Promise<string[]> {
  const acked: string[] = []
  let next = 0
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++] as Record<string, unknown>
      try {
        const res = await http(url, 'POST', '/v1/entities', { body })
        if (res.status === 201) {
          acked.push(res.body.entity_id as string)
          onAck?.(acked.length)
        }
      } catch {
        /* connection refused or reset: not acknowledged */
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return acked
}

test('kill -9 loses no acknowledged write', async t => {
  const data = await mkdtemp(join(tmpdir(), 'registry-kill9-'))
  try {
    const bodies = Array.from({ length: 400 }, (_, i) => specRegistration(dev, agent(dev, i)))
    const first = await spawnNode(['--data', data, '--http-port', '0', '--no-rate-limit'])
    const acked = await register(first.url, bodies, 16, n => {
      if (n === 150) first.child.kill('SIGKILL')
    })
    await first.exited
    t.true(acked.length >= 150, `acked ${acked.length}`)
    t.true(acked.length < bodies.length, 'the kill interrupted the run')

    const second = await spawnNode(['--data', data, '--http-port', '0', '--no-rate-limit'])
    try {
      let missing = 0
      for (const id of acked) if ((await http(second.url, 'GET', `/v1/entities/${id}`)).status !== 200) missing++
      t.is(missing, 0, `${missing} of ${acked.length} acknowledged registrations lost`)
      const info = await http(second.url, 'GET', '/v1/info')
      t.true(info.body.agent_count >= acked.length)
    } finally {
      second.child.kill('SIGTERM')
      await second.exited
    }
  } finally {
    await rm(data, { recursive: true, force: true })
  }
})

test('SIGTERM drains in-flight writes and exits 0; a restart keeps everything', async t => {
  const data = await mkdtemp(join(tmpdir(), 'registry-sigterm-'))
  try {
    const bodies = Array.from({ length: 200 }, (_, i) => specRegistration(dev, agent(dev, 1000 + i)))
    const first = await spawnNode(['--data', data, '--http-port', '0', '--no-rate-limit'])
    const acked = await register(first.url, bodies, 8, n => {
      if (n === 60) first.child.kill('SIGTERM')
    })
    t.is(await first.exited, 0, first.output())

    const second = await spawnNode(['--data', data, '--http-port', '0', '--no-rate-limit'])
    try {
      for (const id of acked) t.is((await http(second.url, 'GET', `/v1/entities/${id}`)).status, 200)
      const dup = await http(second.url, 'POST', '/v1/entities', { body: bodies[0] })
      t.is(dup.status, 409, 'state survives the restart')
    } finally {
      second.child.kill('SIGTERM')
      t.is(await second.exited, 0)
    }
  } finally {
    await rm(data, { recursive: true, force: true })
  }
})

test('the built CLI keeps its data in ./data by default', async t => {
  const built = await stat(join(REPO, 'dist/cli.js')).then(
    () => true,
    () => false
  )
  if (!built) {
    t.fail('dist/cli.js missing: npm install runs the build (prepare)')
    return
  }
  const cwd = await mkdtemp(join(tmpdir(), 'registry-cwd-'))
  try {
    const node = await spawnNode([], { cwd, entry: [join(REPO, 'dist/cli.js')], env: { REGISTRY_NODE_HTTP_PORT: '0' } })
    try {
      t.like((await http(node.url, 'GET', '/health')).body, { status: 'ok' })
      t.truthy(await stat(join(cwd, 'data', 'registry.lmdb')))
      t.truthy(await stat(join(cwd, 'data', 'node-key.json')))
    } finally {
      node.child.kill('SIGINT')
      t.is(await node.exited, 0)
    }
  } finally {
    await rm(cwd, { recursive: true, force: true })
  }
})
