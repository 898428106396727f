import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { pino } from 'pino'
import WebSocket from 'ws'
import { sign } from '../../src/identity/keys.js'
import { startRegistryNode } from '../../src/node.js'
import { agent, developer, specRegistration, type Agent } from '../helpers/identities.js'
import { http, startTestNode, testConfig, type TestNode } from '../helpers/node.js'
import { until, WAIT_TIMEOUT_MS } from '../helpers/wait.js'

const dev = developer(61)

/** A WebSocket client that collects the JSON frames it receives. */
class Client {
  readonly frames: Record<string, unknown>[] = []
  private waiters: (() => void)[] = []
  closed: { code: number; reason: string } | null = null

  private constructor(readonly ws: WebSocket) {
    ws.on('message', data => {
      this.frames.push(JSON.parse(data.toString()) as Record<string, unknown>)
      for (const w of this.waiters.splice(0)) w()
    })
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() }
      for (const w of this.waiters.splice(0)) w()
    })
  }

  static open(url: string): Promise<Client> {
    const ws = new WebSocket(url)
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Client(ws)))
      ws.once('unexpected-response', (_req, res) => {
        let body = ''
        res.on('data', (d: Buffer) => {
          body += d.toString()
        })
        res.on('end', () =>
          reject(
            Object.assign(new Error(`upgrade refused: ${res.statusCode}`), {
              status: res.statusCode,
              body: JSON.parse(body) as unknown
            })
          )
        )
      })
      ws.once('error', reject)
    })
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
  }

  /** Waits until `count` frames have arrived (in total) and returns them. */
  async next(count = this.frames.length + 1, timeoutMs = WAIT_TIMEOUT_MS): Promise<Record<string, unknown>[]> {
    const deadline = Date.now() + timeoutMs
    while (this.frames.length < count) {
      if (this.closed) throw new Error(`socket closed ${this.closed.code}`)
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for frame ${count}; have ${JSON.stringify(this.frames)}`)
      await new Promise<void>(resolve => {
        this.waiters.push(resolve)
        setTimeout(resolve, 50)
      })
    }
    return this.frames
  }

  /** Sends and returns the reply. */
  async call(frame: unknown): Promise<Record<string, unknown>> {
    const count = this.frames.length + 1
    this.send(frame)
    return (await this.next(count))[count - 1] as Record<string, unknown>
  }

  close(): void {
    this.ws.close()
  }
}

/** Anything with the URL of a node's HTTP front (a TestNode, or a RegistryNode started here). */
type Served = { url: string }

const wsUrl = (n: Served, path: string) => n.url.replace(/^http/, 'ws') + path
const stampAt = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
const stamp = (offsetMs = 0) => stampAt(Date.now() + offsetMs)
const deployedBeat = (a: Agent, timestamp = stamp()) => ({ timestamp, signature: sign(a.keyPair, timestamp) })
const specBeat = (a: Agent, timestamp = stamp()) => ({
  agent_id: a.agentId,
  timestamp,
  signature: sign(a.keyPair, a.agentId + timestamp)
})

async function register(n: Served, a: Agent, fields: Record<string, unknown> = {}): Promise<void> {
  const res = await http(n.url, 'POST', '/v1/entities', { body: specRegistration(dev, a, fields) })
  if (res.status !== 201) throw new Error(JSON.stringify(res.body))
}

let n: TestNode
test.before(async () => {
  n = await startTestNode({ liveness: { max_entities_per_connection: 3 } })
  for (const i of [1, 2, 3, 4, 5]) await register(n, agent(dev, i))
})
test.after.always(async () => {
  await n.stop()
})

test('per-entity socket: both frame forms are acknowledged', async t => {
  const a = agent(dev, 1)
  const c = await Client.open(wsUrl(n, `/v1/entities/${a.agentId}/ws`))
  const deployed = deployedBeat(a)
  t.deepEqual(await c.call(deployed), {
    type: 'ack',
    agent_id: a.agentId,
    timestamp: deployed.timestamp,
    status: 'active'
  })
  const spec = specBeat(a, stamp(1000))
  t.like(await c.call(spec), { type: 'ack', agent_id: a.agentId, timestamp: spec.timestamp })
  const record = await http(n.url, 'GET', `/v1/entities/${a.agentId}`)
  t.is(record.body.status, 'active')
  t.truthy(record.body.last_heartbeat)
  c.close()
})

test("the ecosystem docs' frame: {type, agent_id, timestamp: Unix seconds, signature over agent_id + timestamp}", async t => {
  // zyndai/docs v2/build/agents/heartbeat.md: "The signature is over agent_id + timestamp", the timestamp a number.
  const a = agent(dev, 2)
  const seconds = Math.floor(Date.now() / 1000)
  const frame = {
    type: 'heartbeat',
    agent_id: a.agentId,
    timestamp: seconds,
    signature: sign(a.keyPair, a.agentId + seconds)
  }
  for (const path of [`/v1/entities/${a.agentId}/ws`, '/v1/heartbeat']) {
    const c = await Client.open(wsUrl(n, path))
    t.deepEqual(await c.call(frame), { type: 'ack', agent_id: a.agentId, timestamp: seconds, status: 'active' }, path)
    const alone = seconds + 1
    t.like(await c.call({ timestamp: alone, agent_id: a.agentId, signature: sign(a.keyPair, String(alone)) }), {
      type: 'ack'
    })
    t.like(
      await c.call({ ...frame, timestamp: seconds - 3600, signature: sign(a.keyPair, a.agentId + (seconds - 3600)) }),
      {
        type: 'error',
        error: 'clock_skew'
      }
    )
    t.like(await c.call({ ...frame, timestamp: 1.5 }), { type: 'error', error: 'heartbeat_invalid' })
    c.close()
  }
})

test('per-entity socket: an unknown entity is refused at the upgrade with 404', async t => {
  const err = (await t.throwsAsync(
    Client.open(wsUrl(n, '/v1/entities/zns:0123456789abcdef0123456789abcdef/ws'))
  )) as Error & { status: number; body: { error: string } }
  t.like(err, { status: 404, body: { error: 'entity_not_found' } })
})

test('skew, bad signatures and malformed frames get error frames and the socket stays open', async t => {
  const a = agent(dev, 2)
  const c = await Client.open(wsUrl(n, `/v1/entities/${a.agentId}/ws`))
  t.like(await c.call(deployedBeat(a, stamp(-120_000))), {
    type: 'error',
    error: 'clock_skew',
    field: 'timestamp',
    agent_id: a.agentId
  })
  t.like(await c.call(deployedBeat(a, stamp(+120_000))), { type: 'error', error: 'clock_skew' })
  const forged = deployedBeat(agent(dev, 3))
  t.like(await c.call(forged), { type: 'error', error: 'signature_invalid', field: 'signature' })
  t.like(await c.call({ ...deployedBeat(a), signature: 'ed25519:AAAA' }), { type: 'error', error: 'signature_invalid' })
  t.like(await c.call('not json'), { type: 'error', error: 'heartbeat_invalid' })
  t.like(await c.call([deployedBeat(a)]), { type: 'error', error: 'heartbeat_invalid' })
  t.like(await c.call({ signature: 'x' }), { type: 'error', error: 'heartbeat_invalid', field: 'timestamp' })
  t.like(await c.call({ timestamp: 'yesterday', signature: deployedBeat(a).signature }), {
    type: 'error',
    error: 'heartbeat_invalid',
    field: 'timestamp'
  })
  t.like(
    await c.call({ ...specBeat(agent(dev, 3)) }),
    { type: 'error', error: 'heartbeat_invalid', field: 'agent_id' },
    'another entity on this socket'
  )
  t.like(await c.call(deployedBeat(a)), { type: 'ack' })
  t.is(c.closed, null)
  c.close()
})

test('multiplexed socket: per-entity acks and errors, and a cap on entities per connection', async t => {
  const c = await Client.open(wsUrl(n, '/v1/heartbeat'))
  const [a3, a4, a5] = [agent(dev, 3), agent(dev, 4), agent(dev, 5)]
  t.like(await c.call(specBeat(a3)), { type: 'ack', agent_id: a3.agentId })
  t.like(
    await c.call(deployedBeat(a3)),
    { type: 'error', error: 'heartbeat_invalid', field: 'agent_id' },
    'frames must name their entity'
  )
  // The deployed signature (over the timestamp alone) is accepted when the frame names the entity.
  t.like(await c.call({ agent_id: a4.agentId, ...deployedBeat(a4) }), { type: 'ack', agent_id: a4.agentId })
  const unknown = 'zns:0123456789abcdef0123456789abcdef'
  t.like(await c.call({ ...specBeat(a5), agent_id: unknown }), {
    type: 'error',
    error: 'entity_not_found',
    agent_id: unknown
  })
  // A batch in one frame: one reply each.
  const before = c.frames.length
  c.send([specBeat(a3, stamp(1000)), specBeat(a5)])
  const replies = (await c.next(before + 2)).slice(before)
  t.deepEqual(replies.map(r => [r.type, r.agent_id]).sort(), [
    ['ack', a3.agentId],
    ['ack', a5.agentId]
  ])
  // A fourth entity exceeds max_entities_per_connection (3 here).
  const a1 = agent(dev, 1)
  t.like(await c.call(specBeat(a1)), { type: 'error', error: 'too_many_entities', agent_id: a1.agentId })
  c.close()
})

test('heartbeats only at the home registry: others get an error naming it', async t => {
  const a = agent(dev, 9)
  await n.node.store.commit(tx => {
    const template = tx.getEntity(agent(dev, 1).agentId)!
    tx.putEntity({ ...template, entity_id: a.agentId, public_key: a.publicKey, home_registry: 'elsewhere.example' })
  })
  const c = await Client.open(wsUrl(n, '/v1/heartbeat'))
  t.like(await c.call(specBeat(a)), {
    type: 'error',
    error: 'not_home_registry',
    home_registry: 'elsewhere.example',
    agent_id: a.agentId
  })
  const refused = (await t.throwsAsync(Client.open(wsUrl(n, `/v1/entities/${a.agentId}/ws`)))) as Error & {
    status: number
  }
  t.is(refused.status, 421)
  c.close()
})

test('a connection that floods is warned, then closed', async t => {
  const a = agent(dev, 1)
  const c = await Client.open(wsUrl(n, `/v1/entities/${a.agentId}/ws`))
  for (let i = 0; i < 60; i++) c.send(deployedBeat(a))
  await until('the node closes the flooding connection', () => c.closed !== null)
  t.is(c.closed?.code, 1008)
  t.true(c.frames.some(f => f.error === 'rate_limited'))
})

test("forged heartbeats flooding from a proven connection's own address: the proven one is still acknowledged, the flood meets its probation budget", async t => {
  // Budgets small enough that the flood overruns them at once (liveness.probation_*).
  const node = await startTestNode({ liveness: { probation_in_flight: 8, probation_in_flight_per_address: 4 } })
  t.teardown(() => node.stop())
  const honest = agent(dev, 21)
  const targets = [22, 23, 24, 25].map(i => agent(dev, i))
  for (const x of [honest, ...targets]) await register(node, x)
  const proven = await Client.open(wsUrl(node, `/v1/entities/${honest.agentId}/ws`))
  t.like(await proven.call(deployedBeat(honest)), { type: 'ack' })

  // Ten multiplexed sockets from 127.0.0.1 (the honest client's address) send forged heartbeats of registered entities, 50 a frame.
  const forger = developer(62)
  const flooders = await Promise.all(Array.from({ length: 10 }, () => Client.open(wsUrl(node, '/v1/heartbeat'))))
  let flooding = true
  const flood = (async () => {
    while (flooding) {
      const batch = Array.from({ length: 50 }, (_, i) => {
        const x = targets[i % targets.length] as Agent
        const timestamp = stamp()
        return { agent_id: x.agentId, timestamp, signature: sign(forger.keyPair, x.agentId + timestamp) }
      })
      for (const f of flooders) if (!f.closed) f.send(batch)
      await new Promise(resolve => setTimeout(resolve, 10))
    }
  })()
  const replies = []
  for (const offset of [1_000, 2_000, 3_000]) {
    await new Promise(resolve => setTimeout(resolve, 1_000))
    replies.push(await proven.call(deployedBeat(honest, stamp(offset))))
  }
  flooding = false
  await flood
  for (const reply of replies) t.like(reply, { type: 'ack', agent_id: honest.agentId })
  const errors = new Set(flooders.flatMap(f => f.frames.map(frame => frame.error)))
  t.true(errors.has('overloaded'), `flood errors: ${[...errors].join(', ')}`)
  t.false(flooders.some(f => f.frames.some(frame => frame.type === 'ack')))
})

test('a plain GET on a socket path says to upgrade', async t => {
  const res = await http(n.url, 'GET', '/v1/heartbeat')
  t.like(res, { status: 426, body: { error: 'upgrade_required' } })
})

test.serial(
  'liveness: active → inactive after silence → active on a heartbeat, with events, signed status operations and search',
  async t => {
    // The node's clock is the test's: silence is made by moving it, so a busy machine's delays can
    // neither make the entity inactive early nor keep it active. The sweep still runs on its timer.
    let clock = Date.now()
    const dir = await mkdtemp(join(tmpdir(), 'registry-node-test-'))
    const node = await startRegistryNode(
      testConfig(dir, { liveness: { inactive_after_seconds: 60, sweep_interval_seconds: 0.1 } }),
      { logger: pino({ level: 'silent' }), now: () => new Date(clock) }
    )
    t.teardown(async () => {
      await node.stop()
      await rm(dir, { recursive: true, force: true })
    })
    const a = agent(dev, 11)
    const events = await Client.open(wsUrl(node, '/v1/ws/activity'))
    await register(node, a, { name: 'Lighthouse Keeper', summary: 'Keeps the lighthouse lit' })
    const search = async () =>
      (await http(node.url, 'POST', '/v1/search', { body: { query: 'lighthouse' } })).body.total_found as number
    const status = async () => (await http(node.url, 'GET', `/v1/entities/${a.agentId}`)).body.status as string
    t.is(await status(), 'active', 'registration makes it active')
    t.is(await search(), 1)

    clock += 61_000 // a minute of silence
    await until('the sweep finds the entity silent', async () => (await status()) === 'inactive')
    t.is(await search(), 0, 'search hides inactive entities')
    await until('the activity stream reports it inactive', () =>
      events.frames.some(
        f => f.type === 'agent_became_inactive' && (f.data as { entity_id: string }).entity_id === a.agentId
      )
    )

    clock += 1_000
    const c = await Client.open(wsUrl(node, `/v1/entities/${a.agentId}/ws`))
    t.like(await c.call(deployedBeat(a, stampAt(clock))), { type: 'ack', status: 'active' })
    t.is(await status(), 'active')
    t.is(await search(), 1)
    await until('the activity stream reports it active', () =>
      events.frames.some(f => f.type === 'agent_became_active')
    )
    t.true(
      events.frames.some(f => f.type === 'agent_heartbeat'),
      'the heartbeat came before the status change it caused'
    )

    const statusOps = node.store.operationsOf(a.agentId).filter(op => op.kind === 'entity.status')
    t.deepEqual(
      statusOps.map(op => JSON.parse(Buffer.from(op.body as Uint8Array).toString()).status),
      ['inactive', 'active']
    )
    t.true(statusOps.every(op => op.auth.signer === 'node' && op.origin === node.identity.registryId))
    c.close()
    events.close()
  }
)

test.serial('a restart keeps last-seen times and statuses', async t => {
  const first = await startTestNode({ liveness: { flush_interval_ms: 50 } })
  const a = agent(dev, 12)
  await register(first, a)
  const c = await Client.open(wsUrl(first, `/v1/entities/${a.agentId}/ws`))
  t.like(await c.call(deployedBeat(a)), { type: 'ack' })
  c.close()
  const before = (await http(first.url, 'GET', `/v1/entities/${a.agentId}`)).body
  await first.stop(true)
  const second = await startTestNode({}, first.dataDir)
  t.teardown(() => second.stop())
  const after = (await http(second.url, 'GET', `/v1/entities/${a.agentId}`)).body
  t.is(after.last_heartbeat, before.last_heartbeat)
  t.is(after.status, 'active')
  t.not(after.last_heartbeat, null)
})

test.serial('after a restart, silence counts from the start: downtime alone flips no entity', async t => {
  // Downtime longer than the threshold: the entity could not reach its home meanwhile.
  let clock = Date.now()
  const dir = await mkdtemp(join(tmpdir(), 'registry-node-test-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const config = testConfig(dir, { liveness: { inactive_after_seconds: 60, flush_interval_ms: 50 } })
  const options = { logger: pino({ level: 'silent' }), now: () => new Date(clock) }
  const first = await startRegistryNode(config, options)
  const a = agent(dev, 13)
  await register(first, a)
  const c = await Client.open(wsUrl(first, `/v1/entities/${a.agentId}/ws`))
  t.like(await c.call(deployedBeat(a, stampAt(clock))), { type: 'ack', status: 'active' })
  c.close()
  await first.stop()

  clock += 10 * 60_000
  const second = await startRegistryNode(config, options)
  t.teardown(() => second.stop())
  const status = async () => (await http(second.url, 'GET', `/v1/entities/${a.agentId}`)).body.status as string
  t.is(await second.liveness.sweep(), 0, 'no sweep right after the start flips it')
  clock += 59_000
  t.is(await second.liveness.sweep(), 0)
  t.is(await status(), 'active')
  clock += 2_000 // over a minute of silence since the start
  t.is(await second.liveness.sweep(), 1)
  t.is(await status(), 'inactive')
})
