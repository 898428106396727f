/**
 * registry-node/client against a real node: reads typed as the node answers them, every write in
 * the spec's form and the deployed clients' form, and refusals as typed codes.
 */
import test from 'ava'
import { RegistryClient, RegistryRequestError, RegistryUnreachableError } from '../../src/client/index.js'
import { generateKeyPair } from '../../src/identity/keys.js'
import { startDnsServer } from '../helpers/dns-server.js'
import { agent, developer } from '../helpers/identities.js'
import { developerSigner, entitySigner, registration } from '../helpers/client-signers.js'
import { http, testNodes } from '../helpers/node.js'
import { closedPort } from '../helpers/shared.js'

const nodes = testNodes()

test.after.always(nodes.stopAll)

/** The refusal a call ends in. */
async function refusal(t: import('ava').ExecutionContext, call: Promise<unknown>): Promise<RegistryRequestError> {
  const err = await t.throwsAsync(call)
  if (!(err instanceof RegistryRequestError)) throw err
  return err
}

test('reads: node, network, catalog and search answers as the schemas type them', async t => {
  const node = await nodes.start()
  const client = new RegistryClient(`${node.url}/`)
  t.is(client.baseUrl, node.url)
  t.deepEqual(await client.health(), { status: 'ok' })
  const info = await client.info()
  t.is(info.host, 'registry.test')
  t.is(info.onboarding_mode, 'open')
  t.is((await client.networkStatus()).registry_id, info.registry_id)
  t.deepEqual(await client.peers(), { peers: [], count: 0 })
  t.is((await client.networkStats()).estimated_registries, 1)
  t.is((await client.registryProof()).registry_id, info.registry_id)

  const dev = developer(31)
  const a = agent(dev, 0)
  const registered = await client.registerEntity(registration('Doc Reader'), entitySigner(dev, a))
  t.is(registered.entity_id, a.agentId)
  t.like(await client.getEntity(a.agentId), { developer_id: dev.id, name: 'Doc Reader' })
  t.deepEqual(await client.categories(), { categories: ['tools'] })
  t.deepEqual(await client.tags({ counts: true }), [{ tag: 'translation', count: 1 }])
  t.is((await client.listEntities({ type: 'agent', limit: 5 })).total, 1)
  t.is((await client.developerEntities(dev.id)).entities[0]?.entity_id, a.agentId)
  t.is((await client.resolveEntity(a.agentId)).entity_id, a.agentId)
  t.is((await client.search({ query: 'translates documents' })).results[0]?.entity_id, a.agentId)
  t.is(await client.getEntity('zns:00000000000000000000000000000000'), null)
  const missing = await refusal(t, client.getEntity('zns:00000000000000000000000000000000', { missing: 'throw' }))
  t.like(missing, { status: 404, code: 'entity_not_found' })
})

test('spec form: developer with handle, name bind, update and release, entity update, deregistrations', async t => {
  const node = await nodes.start()
  const client = new RegistryClient(node.url)
  const dev = developer(32)
  const a = agent(dev, 0)
  const devKey = developerSigner(dev)
  t.like(await client.registerDeveloper({ name: 'Dana', handle: 'dana' }, devKey), { handle: 'dana' })
  await client.registerEntity(registration('Dana Bot'), entitySigner(dev, a))
  const bound = await client.bindName(
    { entity_id: a.agentId, entity_name: 'bot', developer_handle: 'dana', version: '1.0.0' },
    devKey
  )
  t.is(bound.fqan, 'registry.test/dana/bot')
  t.is((await client.updateName('dana', 'bot', { version: '1.1.0' }, devKey)).version, '1.1.0')
  t.deepEqual(
    (await client.nameVersions('dana', 'bot')).map(v => v.version),
    ['1.1.0', '1.0.0']
  )
  t.is((await client.resolveName('dana', 'bot@1.0')).version, '1.0.0')
  t.is((await client.resolveFqan('zns://registry.test/dana/bot')).entity_id, a.agentId)
  t.like(await client.nameAvailable('dana', 'bot'), { available: false, reason: 'taken' })
  t.is((await client.handleNames('dana'))[0]?.fqan, 'registry.test/dana/bot')

  // Signed by the owning developer's key, as a body signature.
  const updated = await client.updateEntity(a.agentId, { summary: 'Reads documents aloud' }, devKey)
  t.deepEqual(updated.changed, ['summary'])
  t.deepEqual((await client.updateDeveloper(dev.id, { github: 'dana' }, devKey)).changed, ['github'])

  // Untimestamped spec release: Authorization over release:<fqan>, the host read from the binding.
  t.like(await client.releaseName('dana', 'bot', devKey, { timestamp: false }), {
    fqan: 'registry.test/dana/bot',
    message: 'name released'
  })
  // Timestamped (the default): the path with ?timestamp=, in X-Signature.
  t.like(await client.deregisterEntity(a.agentId, entitySigner(dev, a)), { entity_id: a.agentId })
  t.is((await http(node.url, 'GET', `/v1/entities/${a.agentId}`)).status, 404)
  t.like(await client.releaseHandle('dana', devKey), { message: 'handle released' })
  t.like(await client.handleAvailable('dana'), { available: true })
  // Untimestamped: X-Signature over the bare path.
  t.truthy((await client.deregisterDeveloper(dev.id, devKey, { timestamp: false })).message)
  t.is((await http(node.url, 'GET', `/v1/developers/${dev.id}`)).status, 404)
})

test('deployed form: every write as the public clients sign it', async t => {
  const node = await nodes.start()
  const client = new RegistryClient(node.url)
  const form = 'deployed' as const
  const dev = developer(33)
  const a = agent(dev, 0)
  const devKey = developerSigner(dev)
  await client.registerDeveloper({ name: 'Eve', github: 'eve' }, devKey, { form })
  t.like(await client.claimHandle('eve', dev.id, devKey, { form }), { handle: 'eve', developer_id: dev.id })
  await client.registerEntity(registration('Eve Bot'), entitySigner(dev, a), { form, route: '/v1/services' })
  await client.bindName({ entity_id: a.agentId, entity_name: 'bot', developer_handle: 'eve' }, devKey, { form })
  t.is((await client.updateName('eve', 'bot', { version: '2.0.0' }, devKey, { form })).version, '2.0.0')
  // Authorization: Bearer over the raw body (the entity's key), then Bearer-Dev (its developer's).
  await client.updateEntity(a.agentId, { summary: 'One' }, entitySigner(dev, a), { form })
  t.deepEqual((await client.updateEntity(a.agentId, { summary: 'Two' }, devKey, { form })).changed, ['summary'])
  t.like(await client.releaseName('eve', 'bot', devKey, { form }), { fqan: 'registry.test/eve/bot' })
  await client.deregisterEntity(a.agentId, devKey, { form })
  t.is(await client.getEntity(a.agentId), null)
  await client.releaseHandle('eve', devKey, { form })
  await client.deregisterDeveloper(dev.id, devKey, { form })
  t.is((await http(node.url, 'GET', `/v1/developers/${dev.id}`)).status, 404)
})

test('refusals carry the node code, status and field; an absent node is RegistryUnreachableError', async t => {
  const node = await nodes.start()
  const client = new RegistryClient(node.url)
  const dev = developer(34)
  const a = agent(dev, 0)
  await client.registerEntity(registration('Fay Bot'), entitySigner(dev, a))

  const stranger = await refusal(t, client.updateEntity(a.agentId, { summary: 'mine now' }, generateKeyPair()))
  t.like(stranger, { status: 401, code: 'signature_invalid', field: 'signature' })
  t.regex(stranger.message, /^PUT \/v1\/entities\/zns%3A[0-9a-f]+: 401 signature_invalid: /)

  const stale = await refusal(
    t,
    client.deregisterEntity(a.agentId, entitySigner(dev, a), { now: () => Date.now() - 3_600_000 })
  )
  t.like(stale, { status: 400, code: 'clock_skew', field: 'timestamp' })

  await client.registerDeveloper({ name: 'Fay', handle: 'fay' }, developerSigner(dev))
  const other = developer(35)
  await client.registerDeveloper({ name: 'Gus' }, developerSigner(other))
  t.like(await refusal(t, client.claimHandle('fay', other.id, developerSigner(other))), {
    status: 409,
    code: 'handle_claimed'
  })
  t.like(await refusal(t, client.getHandle('Not A Handle')), { status: 400, code: 'handle_invalid' })

  const awayUrl = `http://127.0.0.1:${await closedPort()}`
  const unreachable = await t.throwsAsync(new RegistryClient(awayUrl, 2_000).info())
  t.true(unreachable instanceof RegistryUnreachableError)
  t.like(unreachable, { status: 0, code: 'registry_unreachable', url: awayUrl })
  t.regex((unreachable as RegistryUnreachableError).reason, /ECONNREFUSED/)
})

test('handle verification by DNS, in both forms', async t => {
  const spec = developer(36)
  const deployed = developer(37)
  const dns = await startDnsServer({
    '_zns-verify.spec.example': [[spec.publicKey]],
    '_zns-verify.deployed.example': [[deployed.publicKey]]
  })
  t.teardown(() => dns.close())
  const node = await nodes.start({ verification: { dns_servers: [dns.address], timeout_ms: 20_000 } })
  const client = new RegistryClient(node.url)
  for (const [dev, handle, form] of [
    [spec, 'spec-dev', 'spec'],
    [deployed, 'deployed-dev', 'deployed']
  ] as const) {
    await client.registerDeveloper({ name: handle, handle }, developerSigner(dev))
    const proof = { method: 'dns', proof: `${form}.example` } as const
    t.like(await client.verifyHandle(handle, proof, developerSigner(dev), { form }), {
      verified: true,
      verification_tier: 'dns-verified'
    })
  }
  const failed = await refusal(
    t,
    client.verifyHandle('spec-dev', { method: 'dns', proof: 'deployed.example' }, developerSigner(spec))
  )
  t.like(failed, { status: 400, code: 'verification_failed' })
})
