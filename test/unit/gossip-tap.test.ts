import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import type { Message } from '@libp2p/gossipsub'
import { MeshFaults } from '../../src/mesh/faults.js'
import { contentId, GossipTap } from '../../src/mesh/gossip-tap.js'

const message = (text: string): Message => ({
  type: 'unsigned',
  topic: '/zns/ops/entities/2',
  data: new TextEncoder().encode(text)
})
const hex = (id: Uint8Array): string => Buffer.from(id).toString('hex')

test('copies keep their content ID; a lost copy gets a fresh one, so a later copy can still be accepted', async t => {
  const draws = [0.05, 0.9]
  const faults = new MeshFaults([], () => draws.shift() ?? 1)
  await faults.apply({ loss: 0.1 })
  const tap = new GossipTap(faults)
  const first = message('op')
  const lost = tap.messageId(first) as Uint8Array
  t.not(hex(lost), hex(contentId(first.data)))
  t.true(tap.isLost(first))
  const second = message('op')
  t.is(hex(tap.messageId(second) as Uint8Array), hex(contentId(second.data)))
  t.false(tap.isLost(second))
  t.like(tap.counters, { copies: 2, lost: 1 })
})

test('a publish is not counted as a copy, injected delay holds copies back, the trace records them', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'gossip-tap-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const faults = new MeshFaults()
  const tap = new GossipTap(faults, join(dir, 'trace.jsonl'))
  const own = message('mine')
  const id = tap.willPublish(own.data)
  t.is(hex(tap.messageId(own) as Uint8Array), id)
  t.is(tap.counters.copies, 0)

  await faults.apply({ delayMs: 40 })
  const started = performance.now()
  const delayed = await tap.messageId(message('theirs'))
  t.true(performance.now() - started >= 35)
  t.is(hex(delayed), hex(contentId(message('theirs').data)))
  await tap.close()
  const lines = (await readFile(join(dir, 'trace.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map(l => JSON.parse(l) as { event: string; id: string; t: number })
  t.deepEqual(
    lines.map(l => l.event),
    ['copy']
  )
  t.is(lines[0]!.id, hex(delayed))
})

test('the allow list and blocked peers decide who may connect', async t => {
  const faults = new MeshFaults(['12D3KooWA', '12D3KooWB'])
  t.true(faults.permits('12D3KooWA'))
  t.false(faults.permits('12D3KooWC'))
  const closed: string[] = []
  faults.hangUp = async peer => {
    closed.push(peer)
  }
  await faults.apply({ blockedPeers: ['12D3KooWB'] })
  t.false(faults.permits('12D3KooWB'))
  t.deepEqual(closed, ['12D3KooWB'])
  await faults.apply({ blockedPeers: [] })
  t.true(faults.permits('12D3KooWB'))
})
