import { readFileSync } from 'node:fs'
import test from 'ava'
import {
  signA2AMessage,
  verifyA2AMessage,
  A2AAuthError,
  A2A_AUTH_EXPIRED,
  A2A_AUTH_FAILED,
  A2A_REPLAY_DETECTED
} from '../../src/entity/a2a-auth.js'
import { agentMessageSignable, parseAgentMessage, signAgentMessage } from '../../src/entity/agent-message.js'
import { MessageAuthenticator } from '../../src/entity/message-auth.js'
import { ReplayCache } from '../../src/entity/replay-cache.js'
import { SenderKeys } from '../../src/entity/sender-keys.js'
import { RegistryError } from '../../src/errors.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed, sign } from '../../src/identity/keys.js'

interface Vector {
  seed_hex: string
  entity_id: string
  message: Record<string, unknown> & { metadata: Record<string, any> }
}
const vector = JSON.parse(
  readFileSync(new URL('../fixtures/a2a/x-zynd-auth-vector.json', import.meta.url), 'utf8')
) as Vector
const vectorKey = keyPairFromSeed(Buffer.from(vector.seed_hex, 'hex'))
const issued = Date.parse(vector.message.metadata['x-zynd-auth'].issued_at)

const verify = (
  message: Record<string, unknown>,
  o: { mode?: 'strict' | 'permissive'; now?: number; replays?: ReplayCache } = {}
) =>
  verifyA2AMessage(structuredClone(message), {
    mode: o.mode ?? 'permissive',
    replays: o.replays ?? new ReplayCache(),
    now: o.now ?? issued + 1000
  })

function rpcCode(fn: () => unknown): number {
  try {
    fn()
  } catch (err) {
    if (err instanceof A2AAuthError) return err.rpcCode
    throw err
  }
  return 0
}

test("x-zynd-auth: the SDK's own signed message verifies, and our signer makes the same bytes", t => {
  t.deepEqual(verify(vector.message), { signed: true, entityId: vector.entity_id, fqan: 'localhost/alice/translator' })
  const auth = vector.message.metadata['x-zynd-auth']
  const { 'x-zynd-auth': _auth, ...metadata } = vector.message.metadata
  const ours = signA2AMessage(
    { ...structuredClone(vector.message), metadata },
    {
      keyPair: vectorKey,
      entityId: vector.entity_id,
      fqan: auth.fqan,
      nonce: auth.nonce,
      now: new Date(auth.issued_at)
    }
  )
  t.is((ours.metadata as Record<string, any>)['x-zynd-auth'].signature, auth.signature)
})

test('x-zynd-auth: wrong signature, tampered text, foreign key, expiry, future issue and replay are refused with the SDK codes', t => {
  const tampered = structuredClone(vector.message) as any
  tampered.parts[0].text = 'Translate something else'
  t.is(
    rpcCode(() => verify(tampered)),
    A2A_AUTH_FAILED
  )
  const badSig = structuredClone(vector.message) as any
  badSig.metadata['x-zynd-auth'].signature = sign(keyPairFromSeed(Buffer.alloc(32, 8)), 'x')
  t.is(
    rpcCode(() => verify(badSig)),
    A2A_AUTH_FAILED
  )
  const otherId = structuredClone(vector.message) as any
  otherId.metadata['x-zynd-auth'].entity_id = 'zns:00000000000000000000000000000000'
  t.is(
    rpcCode(() => verify(otherId)),
    A2A_AUTH_FAILED
  )
  t.is(
    rpcCode(() => verify(vector.message, { now: issued + 61_000 })),
    A2A_AUTH_EXPIRED,
    'expired (60 s validity)'
  )
  t.is(
    rpcCode(() => verify(vector.message, { now: issued - 61_000 })),
    A2A_AUTH_EXPIRED,
    'issued too far in the future'
  )
  const replays = new ReplayCache()
  t.true(verify(vector.message, { replays }).signed)
  t.is(
    rpcCode(() => verify(vector.message, { replays })),
    A2A_REPLAY_DETECTED
  )
})

test('x-zynd-auth: an unsigned message passes in permissive mode (signed: false) and fails in strict; a developer proof is checked', t => {
  const unsigned = { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'hi' }] }
  t.deepEqual(verify(unsigned), { signed: false, entityId: null, fqan: null })
  t.is(
    rpcCode(() => verify(unsigned, { mode: 'strict' })),
    A2A_AUTH_FAILED
  )
  const developer = keyPairFromSeed(Buffer.alloc(32, 1))
  const proof = {
    developer_public_key: `ed25519:${developer.publicKey.toString('base64')}`,
    entity_index: 3,
    developer_signature: sign(developer, Buffer.concat([vectorKey.publicKey, Buffer.from([0, 0, 0, 3])]))
  }
  const withProof = signA2AMessage(structuredClone(unsigned), {
    keyPair: vectorKey,
    entityId: vector.entity_id,
    developerProof: proof
  })
  t.true(verifyA2AMessage(withProof, { mode: 'strict', replays: new ReplayCache() }).signed)
  const wrongProof = signA2AMessage(structuredClone(unsigned), {
    keyPair: vectorKey,
    entityId: vector.entity_id,
    developerProof: { ...proof, entity_index: 4 }
  })
  t.is(
    rpcCode(() => verifyA2AMessage(wrongProof, { mode: 'strict', replays: new ReplayCache() })),
    A2A_AUTH_FAILED
  )
})

test("AgentMessage: content or prompt, the SDKs' defaults, unix-seconds timestamps, and signing over everything but signature", t => {
  const m = parseAgentMessage({ prompt: 'from an older client', timestamp: 1795503610.25 })
  t.is(m.content, 'from an older client')
  t.is(m.sender_id, 'unknown')
  t.is(m.message_type, 'query')
  t.regex(m.message_id, /^[0-9a-f-]{36}$/)
  t.is(parseAgentMessage({ content: 'wins', prompt: 'loses' }).content, 'wins')
  t.is(parseAgentMessage({ content: { structured: true } }).content, '{"structured":true}')
  for (const bad of [
    null,
    [],
    'text',
    { content: '' },
    {},
    { content: 'x', metadata: [] },
    { content: 'x', timestamp: {} },
    { content: 'x', message_id: 'y'.repeat(300) }
  ]) {
    t.throws(() => parseAgentMessage(bad), { instanceOf: RegistryError }, JSON.stringify(bad))
  }
  const key = keyPairFromSeed(Buffer.alloc(32, 3))
  const signed = signAgentMessage(key, deriveId('agent', key.publicKey), { content: 'hello <&>', metadata: { a: 1 } })
  t.is(signed.signature, sign(key, agentMessageSignable(signed)))
})

test('webhook auth: the auth_mode matrix, skew, replay, and how the sender key is found', async t => {
  const key = keyPairFromSeed(Buffer.alloc(32, 4))
  const sender = deriveId('agent', key.publicKey)
  const now = Date.parse('2026-11-24T10:00:00Z')
  const registered = new Map<string, string>()
  const registry = {
    getEntity: async (id: string) => (registered.has(id) ? { entity_id: id, public_key: registered.get(id)! } : null)
  } as never
  const make = (mode: 'strict' | 'permissive') =>
    new MessageAuthenticator({
      mode,
      skewMs: 60_000,
      keys: new SenderKeys(registry, () => now),
      replays: new ReplayCache(() => now),
      now: () => now
    })
  const code = async (auth: MessageAuthenticator, body: Record<string, unknown>): Promise<string> => {
    try {
      await auth.check(body, parseAgentMessage(body))
      return 'ok'
    } catch (err) {
      return (err as RegistryError).code
    }
  }
  const signed = (fields: Record<string, unknown> = {}, at = now) => ({
    ...signAgentMessage(key, sender, { content: 'hi' }, new Date(at)),
    ...fields
  })
  const resign = (body: Record<string, unknown>) => ({ ...body, signature: sign(key, agentMessageSignable(body)) })

  for (const mode of ['strict', 'permissive'] as const) {
    const auth = make(mode)
    t.is(
      await code(auth, { content: 'unsigned' }),
      mode === 'strict' ? 'signature_required' : 'ok',
      `${mode}: unsigned`
    )
    t.is(await code(auth, signed()), 'ok', `${mode}: signed`)
    t.is(await code(auth, { ...signed(), content: 'changed' }), 'signature_invalid', `${mode}: tampered`)
    t.is(
      await code(auth, { ...signed(), signature: 'not-a-signature' }),
      'signature_invalid',
      `${mode}: malformed signature`
    )
  }
  const auth = make('permissive')
  const once = signed()
  t.is(await code(auth, once), 'ok')
  t.is(await code(auth, once), 'message_replayed')
  t.is(await code(auth, signed({}, now - 61_000)), 'timestamp_out_of_window')
  t.is(await code(auth, signed({}, now + 61_000)), 'timestamp_out_of_window')
  const { timestamp: _t, ...noTime } = signed()
  t.is(await code(auth, resign(noTime)), 'timestamp_out_of_window', 'a signed message must carry its time')
  t.is(
    await code(auth, resign({ ...signed(), timestamp: (now + 1000) / 1000 })),
    'ok',
    'unix seconds, as the SDKs send'
  )
  const other = keyPairFromSeed(Buffer.alloc(32, 5))
  t.is(
    await code(auth, resign({ ...signed(), sender_public_key: `ed25519:${other.publicKey.toString('base64')}` })),
    'sender_key_mismatch'
  )
  // Without sender_public_key the key comes from the registry.
  const { sender_public_key: _k, ...bare } = signed()
  t.is(await code(auth, resign(bare)), 'sender_unknown')
  registered.set(sender, `ed25519:${key.publicKey.toString('base64')}`)
  t.is(await code(make('strict'), resign(bare)), 'ok', 'resolved through the registry')
})
