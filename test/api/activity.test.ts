import test from 'ava'
import WebSocket from 'ws'
import { agent, developer, developerRegistration, specRegistration } from '../helpers/identities.js'
import { http, startTestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

interface Frame {
  type: string
  timestamp: string
  data: Record<string, unknown>
}

function subscribe(url: string): Promise<{ ws: WebSocket; frames: Frame[] }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/ws/activity`)
  const frames: Frame[] = []
  ws.on('message', data => frames.push(JSON.parse(data.toString()) as Frame))
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, frames }))
    ws.once('error', reject)
  })
}

test('the activity stream greets with the node identity, then carries the writes of the core API as {type, timestamp, data}', async t => {
  const n = await startTestNode()
  t.teardown(() => n.stop())
  const { ws, frames } = await subscribe(n.url)
  await until('the hello frame arrives', () => frames.length >= 1)
  t.like(frames[0], {
    type: 'hello',
    data: { registry_id: n.node.identity.registryId, public_key: n.node.identity.publicKey }
  })
  const dev = developer(71)
  const a = agent(dev, 1)
  t.is(
    (await http(n.url, 'POST', '/v1/developers', { body: developerRegistration(dev, { name: 'Seventy One' }) })).status,
    201
  )
  t.is(
    (await http(n.url, 'POST', '/v1/entities', { body: specRegistration(dev, a, { name: 'Streamed' }) })).status,
    201
  )
  await until('the registration is streamed', () => frames.some(f => f.type === 'agent_registered'))
  const types = frames.map(f => f.type)
  t.true(types.includes('developer_registered'))
  const registered = frames.find(f => f.type === 'agent_registered') as Frame
  t.like(registered.data, { entity_id: a.agentId, name: 'Streamed', developer_id: dev.id })
  t.false(Number.isNaN(Date.parse(registered.timestamp)))
  // Read-only: what a subscriber sends is ignored, and the stream goes on.
  ws.send('{"type":"agent_registered"}')
  await http(n.url, 'POST', '/v1/search', { body: { query: 'streamed' } })
  await until('the search is streamed', () => frames.some(f => f.type === 'search_local'))
  ws.close()
})

test.serial('a slow subscriber loses events without slowing the bus or the other subscribers', async t => {
  const n = await startTestNode({ activity: { queue_size: 16 } })
  t.teardown(() => n.stop())
  const fast = await subscribe(n.url)
  const slow = await subscribe(n.url)
  await until('both subscribers are greeted', () => fast.frames.length >= 1 && slow.frames.length >= 1)
  // The slow subscriber stops reading: its TCP window and then the node's buffers fill up.
  const socket = (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket
  socket.pause()
  // 24 MiB in all: more than loopback TCP buffers hold, so the paused reader must lose some.
  const padding = 'x'.repeat(4 * 1024)
  const total = 6000
  // A steady stream (bursts of 10 events), as a busy node produces them: a reader that keeps up
  // gets everything, one that does not read loses what its buffers cannot hold.
  let publishMs = 0
  for (let i = 0; i < total; i += 10) {
    const started = performance.now()
    for (let j = i; j < i + 10; j++) n.node.bus.publish('test_event', { i: j, padding })
    publishMs += performance.now() - started
    await new Promise(r => setTimeout(r, 1))
  }
  await until(
    'the fast subscriber has every event',
    () => fast.frames.filter(f => f.type === 'test_event').length === total,
    { detail: () => fast.frames.filter(f => f.type === 'test_event').length }
  )
  t.deepEqual(
    fast.frames.filter(f => f.type === 'test_event').map(f => f.data.i),
    Array.from({ length: total }, (_, i) => i),
    'the fast subscriber gets every event, in order'
  )
  // The bus was not held up: every publish returned, and the fast subscriber got everything, while
  // the slow reader was still paused. What publishing cost is a figure, not a pass mark.
  t.log(`publishing ${total} events took ${publishMs.toFixed(0)} ms`)
  socket.resume()
  await until('the slow subscriber is told what it lost', () => slow.frames.some(f => f.type === 'events_dropped'))
  const received = slow.frames.filter(f => f.type === 'test_event').length
  const dropped = slow.frames
    .filter(f => f.type === 'events_dropped')
    .reduce((sum, f) => sum + (f.data.count as number), 0)
  t.true(received < total, `the slow subscriber received ${received}`)
  t.is(received + dropped, total, 'every event is either delivered or counted as dropped')
  fast.ws.close()
  slow.ws.close()
})
