/**
 * The entity runtime's card is an A2A AgentCard: it validates against the A2A 0.3.0 AgentCard
 * (test/helpers/a2a-agent-card.ts), keeps the registry's fields and signature, and the A2A
 * project's own JavaScript client (@a2a-js/sdk) finds the JSON-RPC endpoint from it and calls it.
 */
import { randomUUID } from 'node:crypto'
import { ClientFactory } from '@a2a-js/sdk/client'
import test from 'ava'
import { pino } from 'pino'
import { a2aEndpoint } from '../../src/entity/call.js'
import { createEntity, type RunningEntity } from '../../src/entity/index.js'
import { verifyCard } from '../../src/identity/card-signature.js'
import { validate } from '../../src/wire/validate.js'
import { A2AAgentCard } from '../helpers/a2a-agent-card.js'
import { developer } from '../helpers/identities.js'
import { startTestNode, type TestNode } from '../helpers/node.js'

const dev = developer(73)
let node: TestNode
let entity: RunningEntity

test.before(async () => {
  node = await startTestNode({ entities: { allow_http_url: true }, cards: { allow_private_addresses: true } })
  entity = await createEntity({
    developerKey: dev.keyPair,
    index: 1,
    registry: node.url,
    card: { name: 'A2A Echo', summary: 'Repeats what it is told', category: 'tools', capabilities: ['echo'] },
    handler: input => `echo: ${input.content}`,
    authMode: 'permissive',
    logger: pino({ level: 'silent' })
  }).start()
})

test.after.always(async () => {
  await entity?.stop().catch(() => {})
  await node?.stop()
})

test('the card is an A2A 0.3.0 AgentCard that keeps the registry fields and the registry signature', async t => {
  const card = (await (await fetch(`${entity.url}/.well-known/agent-card.json`)).json()) as Record<string, unknown>
  t.notThrows(() => validate(A2AAgentCard, card))
  t.like(card, {
    protocolVersion: '0.3.0',
    url: `${entity.url}/a2a/v1`,
    preferredTransport: 'JSONRPC',
    entity_id: entity.entityId,
    entity_url: entity.url,
    endpoints: { a2a: `${entity.url}/a2a/v1`, invoke: `${entity.url}/webhook/sync` }
  })
  t.deepEqual(card.skills, [{ id: 'echo', name: 'echo', description: 'echo', tags: [] }])
  t.is(verifyCard(card, entity.publicKey).verification, 'verified')
  t.is(a2aEndpoint(card, entity.url), `${entity.url}/a2a/v1`)
})

test("the A2A project's JavaScript client resolves the transport from the card and calls the entity", async t => {
  const client = await new ClientFactory().createFromUrl(entity.url)
  const reply = await client.sendMessage({
    message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'hello' }] }
  })
  const text = JSON.stringify(reply)
  t.true(text.includes('echo: hello'), text)
})
