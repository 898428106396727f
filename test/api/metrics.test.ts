/**
 * /metrics on a real node: liveness moves its metrics (open heartbeat sockets, heartbeats by
 * outcome, sweeps and status changes), and a node with metrics off answers a code naming the setting.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { pino } from 'pino'
import WebSocket from 'ws'
import { sign } from '../../src/identity/keys.js'
import { startRegistryNode } from '../../src/node.js'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { scrape } from '../helpers/metrics.js'
import { http, startTestNode, testConfig } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const dev = developer(71)
const stampAt = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

/** A heartbeat socket of one entity and the JSON frames it has received. */
async function openSocket(url: string): Promise<{ ws: WebSocket; frames: Record<string, unknown>[] }> {
  const ws = new WebSocket(url)
  const frames: Record<string, unknown>[] = []
  ws.on('message', data => frames.push(JSON.parse(data.toString()) as Record<string, unknown>))
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  return { ws, frames }
}

test('liveness metrics: the socket gauge, heartbeats by outcome, sweeps and transitions move', async t => {
  // The node's clock is the test's: silence is made by moving it (see the liveness test in heartbeats.test.ts).
  let clock = Date.now()
  const dir = await mkdtemp(join(tmpdir(), 'registry-node-test-'))
  const node = await startRegistryNode(
    testConfig(dir, {
      metrics: { enabled: true },
      liveness: { inactive_after_seconds: 60, sweep_interval_seconds: 0.1 }
    }),
    { logger: pino({ level: 'silent' }), now: () => new Date(clock) }
  )
  t.teardown(async () => {
    await node.stop()
    await rm(dir, { recursive: true, force: true })
  })
  const a = agent(dev, 1)
  const reg = await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, a) })
  t.is(reg.status, 201, JSON.stringify(reg.body))

  const before = await scrape(node.url)
  t.is(before.value('registry_heartbeat_sockets'), 0)
  t.is(before.value('registry_heartbeats_total'), 0)

  const { ws, frames } = await openSocket(
    `${node.url.replace(/^http/, 'ws')}/v1/entities/${encodeURIComponent(a.agentId)}/ws`
  )
  t.is((await scrape(node.url)).value('registry_heartbeat_sockets'), 1, 'the open socket counts')

  const beat = (timestamp: string, signer = a) => ({ timestamp, signature: sign(signer.keyPair, timestamp) })
  ws.send(JSON.stringify(beat(stampAt(clock))))
  ws.send(JSON.stringify(beat(stampAt(clock), agent(dev, 2))))
  ws.send('not json')
  await until('three replies', () => (frames.length >= 3 ? true : undefined))
  const beats = await scrape(node.url)
  t.is(beats.value('registry_heartbeats_total', { outcome: 'accepted' }), 1)
  t.is(beats.value('registry_heartbeats_total', { outcome: 'signature_invalid' }), 1)
  t.is(beats.value('registry_heartbeats_total', { outcome: 'heartbeat_invalid' }), 1)

  clock += 61_000 // a minute of silence: the next sweep makes the entity inactive
  const afterSweep = await until('the sweep made the entity inactive', async () => {
    const s = await scrape(node.url)
    return s.value('registry_liveness_transitions_total', { from: 'active', to: 'inactive' }) === 1 ? s : undefined
  })
  t.true(afterSweep.value('registry_liveness_sweeps_total') >= 1)
  t.true(afterSweep.value('registry_liveness_sweep_seconds_total') > 0)
  t.is(afterSweep.value('registry_liveness_transitions_total', { from: 'inactive', to: 'active' }), 0)

  const acked = frames.length
  ws.send(JSON.stringify(beat(stampAt(clock))))
  await until('the heartbeat is answered', () => (frames.length > acked ? true : undefined))
  t.like(frames.at(-1), { type: 'ack', status: 'active' })
  const revived = await scrape(node.url)
  t.is(revived.value('registry_liveness_transitions_total', { from: 'inactive', to: 'active' }), 1)
  t.is(revived.value('registry_heartbeats_total', { outcome: 'accepted' }), 2)

  ws.close()
  await until('the socket gauge falls back to 0', async () =>
    (await scrape(node.url)).value('registry_heartbeat_sockets') === 0 ? true : undefined
  )
})

test('metrics off: /metrics answers 404 metrics_disabled naming the setting', async t => {
  const n = await startTestNode()
  t.teardown(() => n.stop())
  const res = await http(n.url, 'GET', '/metrics')
  t.is(res.status, 404)
  t.is(res.body.error, 'metrics_disabled')
  t.regex(res.body.message, /metrics\.enabled/)
  t.regex(res.body.message, /--metrics/)
})
