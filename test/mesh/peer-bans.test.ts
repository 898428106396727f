/**
 * Peer administration on real meshed nodes (loopback, ephemeral ports): an operator removes a peer
 * (hung up on, its added address forgotten) and bans one by PeerId: it is hung up on, its dials
 * are refused, this node never dials it, and the ban survives a restart of the banning node (kept
 * in its store); unbanning lets it back.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import test from 'ava'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'
import { http, startTestNode, tcpAddress, type TestNode } from '../helpers/node.js'
import { sleep, until } from '../helpers/wait.js'

const exec = promisify(execFile)
const SECRET = 'whsec_bans_test'
const admin = { authorization: `Bearer ${SECRET}` }
const MESH = { enabled: true }

const connectedTo = async (n: TestNode, peerId: string): Promise<boolean> =>
  ((await http(n.url, 'GET', '/v1/network/peers')).body.peers as { peer_id: string }[]).some(p => p.peer_id === peerId)

/** `from` dials `to` through its admin route (what a re-dial does). */
const dial = (from: TestNode, to: TestNode) =>
  http(from.url, 'POST', '/v1/network/peers', { body: { address: tcpAddress(to) }, headers: admin })

test('removing a peer hangs up and forgets its added address; the admin routes check what they are given', async t => {
  const a = await startTestNode({ name: 'node-a', p2p: MESH, onboarding: { webhook_secret: SECRET } })
  const b = await startTestNode({ name: 'node-b', p2p: MESH })
  t.teardown(() => Promise.all([a.stop(), b.stop()]))
  const peerB = b.node.mesh!.peerId
  t.is((await dial(a, b)).status, 201)

  t.like(await http(a.url, 'DELETE', `/v1/network/peers/${peerB}`), {
    status: 401,
    body: { error: 'admin_unauthorized' }
  })
  t.like(await http(a.url, 'DELETE', '/v1/network/peers/not-a-peer-id', { headers: admin }), {
    status: 400,
    body: { error: 'validation_failed', field: 'peer_id' }
  })
  const removed = await http(a.url, 'DELETE', `/v1/network/peers/${peerB}`, { headers: admin })
  t.like(removed, { status: 200, body: { peer_id: peerB, disconnected: true, addresses_dropped: [tcpAddress(b)] } })
  await until('A hung up on B', async () => !(await connectedTo(a, peerB)))

  // A peer never seen: nothing to remove.
  const stranger = (await startTestNode({ p2p: MESH })).node
  const strangerId = stranger.mesh!.peerId
  await stranger.stop()
  t.like(await http(a.url, 'DELETE', `/v1/network/peers/${strangerId}`, { headers: admin }), {
    status: 404,
    body: { error: 'peer_not_found' }
  })
  // Removed is not banned: B may connect again.
  t.is((await dial(a, b)).status, 201)
})

test('a banned peer is hung up on and kept out, across a restart of the banning node, until unbanned', async t => {
  let a = await startTestNode({ name: 'node-a', p2p: MESH, onboarding: { webhook_secret: SECRET } })
  const b = await startTestNode({
    name: 'node-b',
    p2p: { ...MESH, bootstrap: [tcpAddress(a)] },
    onboarding: { webhook_secret: SECRET }
  })
  t.teardown(() => Promise.all([a.stop(), b.stop()]))
  const peerB = b.node.mesh!.peerId
  // B's bootstrap dials A at start; on a busy machine that first dial can fail, and its retry come later than a
  // test waits, so B also dials A once itself.
  if (!(await connectedTo(a, peerB))) await dial(b, a)
  await until('A and B connected', () => connectedTo(a, peerB))

  t.like(await http(a.url, 'POST', '/v1/network/bans', { body: { peer_id: peerB } }), {
    status: 401,
    body: { error: 'admin_unauthorized' }
  })
  t.like(await http(a.url, 'POST', '/v1/network/bans', { body: { peer_id: 'nope' }, headers: admin }), {
    status: 400,
    body: { error: 'validation_failed', field: 'peer_id' }
  })
  t.like(await http(a.url, 'POST', '/v1/network/bans', { body: { peer_id: a.node.mesh!.peerId }, headers: admin }), {
    status: 400,
    body: { error: 'validation_failed', field: 'peer_id' }
  })
  const banned = await http(a.url, 'POST', '/v1/network/bans', {
    body: { peer_id: peerB, reason: 'test' },
    headers: admin
  })
  t.like(banned, { status: 201, body: { peer_id: peerB, reason: 'test' } })
  const again = await http(a.url, 'POST', '/v1/network/bans', { body: { peer_id: peerB }, headers: admin })
  t.like(again, { status: 200, body: { peer_id: peerB, reason: null, banned_at: banned.body.banned_at } })
  await until(
    'A hung up on B',
    async () => !(await connectedTo(a, peerB)) && !(await connectedTo(b, a.node.mesh!.peerId))
  )

  // B dials A again (what its bootstrap re-dial does): refused by A. A will not dial B either.
  t.like(await dial(b, a), { status: 502, body: { error: 'peer_unreachable' } })
  t.like(await dial(a, b), { status: 409, body: { error: 'peer_banned', field: 'address' } })
  await sleep(500)
  t.false(await connectedTo(a, peerB))
  t.like(await http(a.url, 'GET', '/v1/network/bans', { headers: admin }), {
    status: 200,
    body: { count: 1, bans: [{ peer_id: peerB, reason: null }] }
  })

  // A restarts on its data: the ban is still in force (its port is a new ephemeral one).
  await a.stop(true)
  a = await startTestNode({ name: 'node-a', p2p: MESH, onboarding: { webhook_secret: SECRET } }, a.dataDir)
  t.like(await http(a.url, 'GET', '/v1/network/bans', { headers: admin }), { body: { count: 1 } })
  t.like(await dial(b, a), { status: 502, body: { error: 'peer_unreachable' } })
  t.false(await connectedTo(a, peerB))

  // Unbanned, B gets in.
  t.like(await http(a.url, 'DELETE', `/v1/network/bans/${peerB}`, { headers: admin }), {
    status: 200,
    body: { peer_id: peerB, unbanned: true }
  })
  t.like(await http(a.url, 'DELETE', `/v1/network/bans/${peerB}`, { headers: admin }), {
    status: 404,
    body: { error: 'peer_not_banned' }
  })
  t.like(await dial(b, a), { status: 201, body: { peer_id: a.node.mesh!.peerId, connected: true } })
  await until('A sees B again', () => connectedTo(a, peerB))
  t.like(await http(a.url, 'GET', '/v1/network/bans', { headers: admin }), { body: { count: 0, bans: [] } })
})

test('registry-node peers ban, bans, unban and remove drive the admin routes; a missing secret is one line', async t => {
  const a = await startTestNode({ name: 'node-a', p2p: MESH, onboarding: { webhook_secret: SECRET } })
  const b = await startTestNode({ name: 'node-b', p2p: MESH })
  t.teardown(() => Promise.all([a.stop(), b.stop()]))
  const peerB = b.node.mesh!.peerId
  const cli = async (...args: string[]) => {
    const env = { ...process.env, REGISTRY_NODE_ONBOARDING_WEBHOOK_SECRET: SECRET }
    const { stdout } = await exec(process.execPath, [...CLI_FOR_TESTS, 'peers', ...args, '--registry', a.url], {
      env
    })
    return JSON.parse(stdout)
  }
  t.like(await cli('add', tcpAddress(b)), { peer_id: peerB, connected: true })
  t.like(await cli('ban', peerB, '--reason', 'from the CLI'), { peer_id: peerB, reason: 'from the CLI' })
  t.like(await cli('bans'), { count: 1, bans: [{ peer_id: peerB }] })
  t.like(await cli('unban', peerB), { peer_id: peerB, unbanned: true })
  t.like(await cli('remove', peerB), { peer_id: peerB })

  const env = { ...process.env, REGISTRY_NODE_ONBOARDING_WEBHOOK_SECRET: '' }
  const failed = await exec(process.execPath, [...CLI_FOR_TESTS, 'peers', 'bans', '--registry', a.url], {
    env
  }).catch((err: { code: number; stderr: string }) => err)
  t.like(failed, {
    code: 2,
    stderr:
      "registry-node: peers bans needs the node's admin secret: --secret SECRET or REGISTRY_NODE_ONBOARDING_WEBHOOK_SECRET\n"
  })
  const refused = await exec(
    process.execPath,
    [...CLI_FOR_TESTS, 'peers', 'unban', peerB, '--secret', SECRET, '--registry', a.url],
    { env }
  ).catch((err: { code: number; stderr: string }) => err)
  t.like(refused, { code: 1 })
  t.regex((refused as { stderr: string }).stderr, /^registry-node: .*not banned.*\n$/)
})
