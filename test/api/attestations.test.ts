/**
 * Attestations over real HTTP against a real node: accepted once per signed statement, refused with
 * a clear error for every bad input (nothing stored), quotas per issuer, and listed a page at a time.
 */
import { randomBytes } from 'node:crypto'
import test from 'ava'
import pino from 'pino'
import { callEntity } from '../../src/entity/call.js'
import { createEntity } from '../../src/entity/entity.js'
import { RegistryClient } from '../../src/entity/registry-client.js'
import { ATTESTATION_QUOTAS } from '../../src/services/registry/attestations.js'
import {
  agent,
  type Agent,
  developer,
  developerRegistration,
  signSpec,
  specRegistration
} from '../helpers/identities.js'
import { enc, http, startTestNode, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

let node: TestNode
const alice = developer(60)
const bob = developer(61)
const [a0, a1] = [agent(alice, 0), agent(alice, 1)]
const [b0, b1] = [agent(bob, 0), agent(bob, 1)]
const carol = developer(62)
const [c0, c1] = [agent(carol, 0), agent(carol, 1)]

test.before(async () => {
  node = await startTestNode({
    p2p: { enabled: false },
    trust: { seeds: [alice.id] },
    entities: { allow_http_url: true },
    cards: { allow_private_addresses: true }
  })
  for (const dev of [alice, bob, carol]) {
    const r = await http(node.url, 'POST', '/v1/developers', { body: developerRegistration(dev) })
    if (r.status !== 201) throw new Error(`developer: ${r.status} ${JSON.stringify(r.body)}`)
  }
  for (const [dev, a] of [
    [alice, a0],
    [alice, a1],
    [bob, b0],
    [bob, b1],
    [carol, c0],
    [carol, c1]
  ] as const) {
    const r = await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, a) })
    if (r.status !== 201) throw new Error(`entity: ${r.status} ${JSON.stringify(r.body)}`)
  }
})
test.after.always(async () => node?.stop())

/** An attestation signed by `by` (an entity's key, or a developer's), about `subject`. */
function attestation(
  by: { keyPair: Agent['keyPair'] },
  issuer: string,
  subject: string,
  fields: Record<string, unknown> = {}
) {
  return signSpec(by.keyPair, {
    issuer,
    subject,
    kind: 'interaction',
    outcome: 'success',
    issued_at: new Date().toISOString(),
    nonce: randomBytes(16).toString('hex'),
    ...fields
  })
}

test.serial(
  'an entity attests another developer’s entity: 201, then 200 for the same statement, listed both ways',
  async t => {
    const body = attestation(a0, a0.agentId, b0.agentId, {
      evidence: { message_id: 'msg-1', payment: { network: 'eip155:31337', transaction: `0x${'ab'.repeat(32)}` } }
    })
    const first = await http(node.url, 'POST', '/v1/attestations', { body })
    t.is(first.status, 201, JSON.stringify(first.body))
    t.regex(first.body.attestation_id, /^zns:att:[0-9a-f]{32}$/)
    t.is(first.body.weight, 2, 'an unchecked payment weighs 2')
    const again = await http(node.url, 'POST', '/v1/attestations', { body })
    t.is(again.status, 200)
    t.is(again.body.attestation_id, first.body.attestation_id)
    const one = await http(node.url, 'GET', `/v1/attestations/${enc(first.body.attestation_id)}`)
    const { message: _message, ...view } = first.body
    t.deepEqual(one.body, view)
    const bySubject = await http(node.url, 'GET', `/v1/attestations?subject=${enc(b0.agentId)}`)
    t.deepEqual(
      bySubject.body.attestations.map((a: { issuer: string }) => a.issuer),
      [a0.agentId]
    )
    const byIssuer = await http(node.url, 'GET', `/v1/attestations?issuer=${enc(a0.agentId)}`)
    t.is(byIssuer.body.count, 1)
  }
)

test.serial('a developer attests an entity; failures and disputes are kept and weigh nothing', async t => {
  const byDeveloper = await http(node.url, 'POST', '/v1/attestations', {
    body: attestation(bob, bob.id, a1.agentId, { kind: 'endorsement', outcome: undefined })
  })
  t.is(byDeveloper.status, 201, JSON.stringify(byDeveloper.body))
  t.is(byDeveloper.body.weight, 1)
  for (const fields of [{ outcome: 'failure' }, { kind: 'dispute', outcome: undefined, comment: 'never answered' }]) {
    const r = await http(node.url, 'POST', '/v1/attestations', {
      body: attestation(b1, b1.agentId, a1.agentId, fields)
    })
    t.is(r.status, 201, JSON.stringify(r.body))
    t.is(r.body.weight, 0)
  }
})

test.serial('bad attestations get one clear error each and nothing is stored', async t => {
  const cases: [string, Record<string, unknown>, number, string, string?][] = [
    ['self', attestation(a0, a0.agentId, a0.agentId), 400, 'self_attestation'],
    ['own developer’s entity', attestation(a0, a0.agentId, a1.agentId), 400, 'self_attestation'],
    ['developer of the subject', attestation(alice, alice.id, a1.agentId), 400, 'self_attestation'],
    ['unknown issuer', attestation(a0, `zns:${'0'.repeat(32)}`, b0.agentId), 404, 'issuer_not_found', 'issuer'],
    ['unknown subject', attestation(a0, a0.agentId, `zns:${'1'.repeat(32)}`), 404, 'entity_not_found', 'subject'],
    ['another key', attestation(b1, a0.agentId, b0.agentId), 401, 'signature_invalid', 'signature'],
    [
      'interaction without outcome',
      attestation(a0, a0.agentId, b0.agentId, { outcome: undefined }),
      400,
      'validation_failed',
      'outcome'
    ],
    [
      'endorsement with outcome',
      attestation(a0, a0.agentId, b0.agentId, { kind: 'endorsement' }),
      400,
      'validation_failed',
      'outcome'
    ],
    ['unknown member', attestation(a0, a0.agentId, b0.agentId, { score: 5 }), 400, 'validation_failed'],
    [
      'issued an hour ago',
      attestation(a0, a0.agentId, b0.agentId, { issued_at: new Date(Date.now() - 3_600_000).toISOString() }),
      400,
      'clock_skew',
      'issued_at'
    ]
  ]
  const before = (await http(node.url, 'GET', `/v1/attestations?issuer=${enc(a0.agentId)}`)).body.count
  for (const [label, body, status, code, field] of cases) {
    const r = await http(node.url, 'POST', '/v1/attestations', { body })
    t.is(r.status, status, `${label}: ${JSON.stringify(r.body)}`)
    t.is(r.body.error, code, label)
    if (field) t.is(r.body.field, field, label)
  }
  t.is((await http(node.url, 'GET', `/v1/attestations?issuer=${enc(a0.agentId)}`)).body.count, before)
  t.is((await http(node.url, 'GET', '/v1/attestations')).body.error, 'invalid_query')
  t.is((await http(node.url, 'GET', `/v1/attestations/${enc('zns:att:00')}`)).status, 404)
})

test.serial('an issuer attests one subject at most 10 times a day; pages follow `next`', async t => {
  const issued: string[] = []
  for (let i = 1; i < ATTESTATION_QUOTAS.perSubjectPerDay; i++) {
    const r = await http(node.url, 'POST', '/v1/attestations', { body: attestation(a0, a0.agentId, b0.agentId) })
    t.is(r.status, 201, JSON.stringify(r.body))
    issued.push(r.body.attestation_id)
  }
  const over = await http(node.url, 'POST', '/v1/attestations', { body: attestation(a0, a0.agentId, b0.agentId) })
  t.is(over.status, 429)
  t.is(over.body.error, 'attestation_quota')
  // Another subject is still open to the same issuer.
  t.is(
    (await http(node.url, 'POST', '/v1/attestations', { body: attestation(a0, a0.agentId, b1.agentId) })).status,
    201
  )
  const seen: string[] = []
  let after: string | null = null
  do {
    const page: { body: { attestations: { attestation_id: string }[]; next: string | null } } = await http(
      node.url,
      'GET',
      `/v1/attestations?subject=${enc(b0.agentId)}&limit=4${after ? `&after=${enc(after)}` : ''}`
    )
    seen.push(...page.body.attestations.map(a => a.attestation_id))
    after = page.body.next
  } while (after)
  t.is(seen.length, ATTESTATION_QUOTAS.perSubjectPerDay)
  t.deepEqual([...seen].sort(), seen)
})

test.serial('trust flows from the seed through attestations; an entity only outsiders attest has none', async t => {
  // Alice is the seed; a0 attested b0 above. Carol's c0 attests bob's b1: a statement made earns its
  // issuer nothing, and nothing trusted attests carol or her entities.
  const carolAttests = await http(node.url, 'POST', '/v1/attestations', {
    body: attestation(c0, c0.agentId, b1.agentId)
  })
  t.is(carolAttests.status, 201, JSON.stringify(carolAttests.body))
  // Scores are computed off the request path, within about a second of an attestation's arrival.
  let b0Trust = await http(node.url, 'GET', `/v1/entities/${enc(b0.agentId)}/trust`)
  await until('the attestations are in the scores', async () => {
    b0Trust = await http(node.url, 'GET', `/v1/entities/${enc(b0.agentId)}/trust`)
    return b0Trust.status === 200 && b0Trust.body.transitive > 0 && b0Trust.body.received.interaction_success >= 1
  })
  t.is(b0Trust.body.attesters[0].issuer, a0.agentId, JSON.stringify(b0Trust.body.attesters))
  t.true(b0Trust.body.received.interaction_success >= 1)
  const c0Trust = await http(node.url, 'GET', `/v1/entities/${enc(c0.agentId)}/trust`)
  t.is(c0Trust.body.transitive, 0, 'carol and her entities: nothing trusted attests them')
  t.is(c0Trust.body.seed, false)
  // Resolve shows the score /trust explains. A full computation may still follow the attestations
  // (a new identity owes one), so the two are read together until they agree.
  let resolved = await http(node.url, 'GET', `/v1/resolve/agent/${enc(b0.agentId)}`)
  await until('resolve and /trust show the same transitive score', async () => {
    resolved = await http(node.url, 'GET', `/v1/resolve/agent/${enc(b0.agentId)}`)
    b0Trust = await http(node.url, 'GET', `/v1/entities/${enc(b0.agentId)}/trust`)
    return resolved.body.trust.transitive === b0Trust.body.transitive
  })
  const shown = JSON.stringify(resolved.body.trust)
  t.is(resolved.body.trust.transitive, b0Trust.body.transitive, shown)
  const { local, transitive } = resolved.body.trust
  t.is(resolved.body.trust_score, Math.round((local + (1 - local) * 0.5 * transitive) * 1000) / 1000, shown)
  t.true(resolved.body.trust_score > local, shown)
  // Bob, whose entity others attest, gains trust through it; Carol, whom nothing trusted attests, none.
  const bobView = await http(node.url, 'GET', `/v1/developers/${bob.id}`)
  const carolView = await http(node.url, 'GET', `/v1/developers/${carol.id}`)
  t.true(bobView.body.trust_score > 0.1, JSON.stringify(bobView.body))
  t.is(carolView.body.trust_score, 0.1, 'a registered profile and nothing more')
  // Search ranks with the score resolve shows, once the refresh after the attestations reached the
  // index. A later full computation may move both, so each try reads the two afresh.
  let searched: unknown
  await until(
    'search shows the blended trust score resolve shows',
    async () => {
      const now = await http(node.url, 'GET', `/v1/resolve/agent/${enc(b0.agentId)}`)
      const found = await http(node.url, 'POST', '/v1/search', { body: { query: 'Agent 0', limit: 50 } })
      const hit = found.body.results?.find((r: { entity_id: string }) => r.entity_id === b0.agentId)
      searched = { resolve: now.body.trust_score, search: hit?.score_breakdown ?? null }
      return hit?.score_breakdown?.trust_score === now.body.trust_score
    },
    { detail: () => searched }
  )
  // A minimum equal to the score search shows keeps the entity. A full computation may still move
  // the score between two requests, so the minimum is the one search showed just before.
  let filtered: { body: { results?: { entity_id: string }[] } } | undefined
  await until(
    'min_trust_score at the shown score keeps the entity',
    async () => {
      const found = await http(node.url, 'POST', '/v1/search', { body: { query: 'Agent 0', limit: 50 } })
      const hit = found.body.results?.find((r: { entity_id: string }) => r.entity_id === b0.agentId)
      if (!hit) return false
      filtered = await http(node.url, 'POST', '/v1/search', {
        body: { query: 'Agent 0', limit: 50, min_trust_score: hit.score_breakdown.trust_score }
      })
      return filtered?.body.results?.some(r => r.entity_id === b0.agentId)
    },
    { detail: () => filtered?.body }
  )
  t.is((await http(node.url, 'GET', `/v1/entities/${enc(`zns:${'2'.repeat(32)}`)}/trust`)).status, 404)
})

test.serial(
  "the runtime's client attests a call it made, with the call's message ID (what `call --attest` sends)",
  async t => {
    const client = new RegistryClient(node.url)
    const answer = await client.attest(a1.keyPair, {
      issuer: a1.agentId,
      subject: b0.agentId,
      outcome: 'success',
      messageId: 'b5f0c1c2-0000-4000-8000-000000000001',
      payment: { network: 'eip155:31337', transaction: `0x${'cd'.repeat(32)}` }
    })
    t.regex(String(answer.attestation_id), /^zns:att:/)
    t.deepEqual(answer.evidence, {
      message_id: 'b5f0c1c2-0000-4000-8000-000000000001',
      payment: { network: 'eip155:31337', transaction: `0x${'cd'.repeat(32)}` }
    })
    const refused = await client
      .attest(a1.keyPair, { issuer: a1.agentId, subject: a0.agentId, outcome: 'success' })
      .catch((err: { code?: string }) => err)
    t.is((refused as { code?: string }).code, 'self_attestation')
  }
)

test.serial('a call made with `attest` records the caller’s attestation, with the call’s message ID', async t => {
  const served = await createEntity({
    developerKey: bob.keyPair,
    index: 5,
    registry: node.url,
    card: { name: 'Attested echo', summary: 'Repeats what it is told', category: 'tools', tags: ['echo'] },
    handler: input => input.content,
    logger: pino({ level: 'silent' })
  }).start()
  t.teardown(() => served.stop())
  const result = await callEntity(served.entityId, 'hello', {
    registry: node.url,
    key: a1.keyPair,
    senderId: a1.agentId,
    attest: true
  })
  t.is(result.response, 'hello')
  t.regex(String(result.attestation_id), /^zns:att:/)
  const stored = await http(node.url, 'GET', `/v1/attestations/${enc(String(result.attestation_id))}`)
  t.like(stored.body, {
    issuer: a1.agentId,
    subject: served.entityId,
    kind: 'interaction',
    outcome: 'success',
    evidence: { message_id: result.message_id }
  })
  await t.throwsAsync(callEntity(served.entityId, 'hello', { registry: node.url, attest: true }), {
    message: /attest needs key and senderId/
  })
})
