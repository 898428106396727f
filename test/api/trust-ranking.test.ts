/**
 * Transitive trust in a real node's search against a small Sybil ring: ring entities that attest
 * each other (with payment evidence) earn nothing without an attestation from the seeded graph, so a
 * ring entity never outranks an honest one of the same text; an honest entity the seeded graph attests
 * ranks first; and the ring's disputes and failures about it leave its score as it was.
 */
import { randomBytes } from 'node:crypto'
import test from 'ava'
import {
  type Agent,
  agent,
  type Developer,
  developer,
  developerRegistration,
  signSpec,
  specRegistration
} from '../helpers/identities.js'
import { enc, http, startTestNode, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const TEXT = { name: 'Orchard Planner', summary: 'Plans orchard planting by soil and climate', tags: ['orchard'] }
const RING_DEVELOPERS = 3
const RING_PER_DEVELOPER = 4

let node: TestNode
test.after.always(async () => node?.stop())

interface Party {
  dev: Developer
  a: Agent
}

async function register(dev: Developer, indexes: number[], text: (i: number) => Record<string, unknown>) {
  const r = await http(node.url, 'POST', '/v1/developers', { body: developerRegistration(dev) })
  if (r.status !== 201) throw new Error(`developer: ${r.status} ${JSON.stringify(r.body)}`)
  const parties: Party[] = []
  for (const i of indexes) {
    const a = agent(dev, i)
    const e = await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, a, text(i)) })
    if (e.status !== 201) throw new Error(`entity: ${e.status} ${JSON.stringify(e.body)}`)
    parties.push({ dev, a })
  }
  return parties
}

async function attest(by: Party, subject: Party, fields: Record<string, unknown> = {}): Promise<void> {
  const body = signSpec(by.a.keyPair, {
    issuer: by.a.agentId,
    subject: subject.a.agentId,
    kind: 'interaction',
    outcome: 'success',
    issued_at: new Date().toISOString(),
    nonce: randomBytes(16).toString('hex'),
    ...fields
  })
  const r = await http(node.url, 'POST', '/v1/attestations', { body })
  if (r.status !== 201) throw new Error(`attestation: ${r.status} ${JSON.stringify(r.body)}`)
}

const trustOf = async (p: Party): Promise<number> =>
  (await http(node.url, 'GET', `/v1/entities/${enc(p.a.agentId)}/trust`)).body.transitive

async function ranking(): Promise<{ entity_id: string; score_breakdown: { trust_score: number } }[]> {
  const found = await http(node.url, 'POST', '/v1/search', { body: { query: 'orchard planner', limit: 50 } })
  return found.body.results
}

test('a Sybil ring earns no trust and never outranks an honest entity of the same text; its disputes move nothing', async t => {
  const seed = developer(80)
  node = await startTestNode({ p2p: { enabled: false }, trust: { seeds: [seed.id] } })
  const [caller] = await register(seed, [0], () => ({ name: 'Seed caller', summary: 'Calls others', tags: ['x'] }))
  const [attested] = await register(developer(81), [0], () => TEXT)
  const [unattested] = await register(developer(82), [0], () => TEXT)
  const ring: Party[] = []
  for (let d = 0; d < RING_DEVELOPERS; d++)
    ring.push(
      ...(await register(
        developer(90 + d),
        Array.from({ length: RING_PER_DEVELOPER }, (_, i) => i),
        i => (d === 0 && i === 0 ? TEXT : { name: `Ring ${d}-${i}`, summary: 'Ring member', tags: ['ring'] })
      ))
    )
  const ringTarget = ring[0]!
  await attest(caller!, attested!, { evidence: { message_id: 'call-1' } })
  // Every ring entity attests every other ring entity of another ring developer, "paid".
  for (const by of ring)
    for (const to of ring)
      if (by.dev !== to.dev && to.a.index < 2)
        await attest(by, to, {
          evidence: { payment: { network: 'eip155:8453', transaction: `0x${randomBytes(32).toString('hex')}` } }
        })
  await until('the honest entity has transitive trust', async () => (await trustOf(attested!)) > 0)
  const before = await trustOf(attested!)
  t.is(await trustOf(ringTarget), 0, 'the ring reaches nothing from the seeds')

  await until('search ranks with the computed scores', async () => {
    const results = await ranking()
    return results[0]?.entity_id === attested!.a.agentId
  })
  const results = await ranking()
  const at = (p: Party) => results.findIndex(r => r.entity_id === p.a.agentId)
  t.true(at(attested!) < at(ringTarget))
  const trustScore = (p: Party) => results[at(p)]!.score_breakdown.trust_score
  t.true(trustScore(ringTarget) <= trustScore(unattested!), 'no more trust than an honest entity nobody attested')

  // The ring bad-mouths the honest entity: failures and disputes weigh nothing.
  for (const by of ring.slice(0, 8)) {
    await attest(by, attested!, { outcome: 'failure' })
    await attest(by, attested!, { kind: 'dispute', outcome: undefined })
  }
  await until('the disputes are in', async () => {
    const r = await http(node.url, 'GET', `/v1/entities/${enc(attested!.a.agentId)}/trust`)
    return r.body.received.dispute === 8
  })
  await new Promise(resolve => setTimeout(resolve, 600))
  t.is(await trustOf(attested!), before)
  t.is((await ranking())[0]?.entity_id, attested!.a.agentId)
})
