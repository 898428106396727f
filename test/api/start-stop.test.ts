/**
 * `registry-node start` as a user runs it, on each server kind this runtime has: it serves, takes a
 * signed registration and a heartbeat, names its server, and on SIGTERM stops cleanly (exit 0: its
 * own stop finished, before the 4 s shutdown watchdog would have exited 1). Where no uWebSockets.js
 * build loads, asking for it fails at once with the reason instead of serving badly.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { loadUws } from '../../src/http/uws-loader.js'
import { spawnNode } from '../../scripts/lib/node-process.js'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { heartbeatOnce, http } from '../helpers/node.js'

const uwsLoads = loadUws().module !== null
const kinds = uwsLoads ? (['uws', 'node'] as const) : (['node'] as const)
const dev = developer(91)

for (const [i, kind] of kinds.entries()) {
  test(`--http-server ${kind}: serves, registers, takes a heartbeat, names its server, and exits cleanly on SIGTERM`, async t => {
    const dir = await mkdtemp(join(tmpdir(), `registry-start-${kind}-`))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const node = await spawnNode(['--data', dir, '--http-port', '0', '--http-server', kind])
    t.teardown(() => {
      node.child.kill('SIGKILL')
    })
    t.regex(
      node.output(),
      new RegExp(`listening on http://\\S+ \\(server ${kind}, Node.js ${process.versions.node.replace(/\./g, '\\.')}`)
    )

    t.deepEqual((await http(node.url, 'GET', '/health')).body, { status: 'ok' })
    const info = (await http(node.url, 'GET', '/v1/info')).body
    t.deepEqual(info.runtime, { node: process.versions.node, http_server: kind })
    t.is((await http(node.url, 'GET', '/v1/network/status')).body.runtime.http_server, kind)

    const a = agent(dev, 1 + i)
    const registered = await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, a) })
    t.is(registered.status, 201, JSON.stringify(registered.body))
    t.like(await heartbeatOnce(node.url, a), { type: 'ack', agent_id: a.agentId, status: 'active' })

    const signalled = Date.now()
    node.child.kill('SIGTERM')
    const code = await node.exited
    // The time is only logged: exit 0 says the node's own stop finished, as the watchdog that
    // bounds a stop exits 1 (and a stop that hangs with no watchdog fails this test's time limit).
    t.log(`stopped ${Date.now() - signalled} ms after SIGTERM`)
    t.is(code, 0, node.output())
  })
}

if (!uwsLoads) {
  test('--http-server uws where no build loads: exits non-zero with the reason before listening', async t => {
    const dir = await mkdtemp(join(tmpdir(), 'registry-start-uws-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const error = await t.throwsAsync(spawnNode(['--data', dir, '--http-port', '0', '--http-server', 'uws']))
    t.regex(error?.message ?? '', /node exited with 1/)
    t.regex(error?.message ?? '', /no uWebSockets\.js build loads on Node/)
    t.notRegex(error?.message ?? '', /listening on/)
  })
}
