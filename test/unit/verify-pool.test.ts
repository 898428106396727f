import { connect, createServer, type AddressInfo } from 'node:net'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import test from 'ava'
import ts from 'typescript'
import { canonicalJson } from '../../src/identity/canonical-json.js'
import { parseSignature } from '../../src/identity/encoding.js'
import { keyPairFromSeed, sign } from '../../src/identity/keys.js'
import { verifyDeveloperProof, verifyEntityRegistration } from '../../src/identity/verifiers.js'
import {
  inlineVerifier,
  VerifyPool,
  type SignatureVerifier,
  type VerifyPoolOptions
} from '../../src/identity/verify-pool.js'
import { developerProofMessage } from '../../src/identity/hd.js'
import { agent, bearer, deployedRegistration, developer, specRegistration } from '../helpers/identities.js'
import { http, startTestNode } from '../helpers/node.js'

const key = keyPairFromSeed(Buffer.alloc(32, 9))
const other = keyPairFromSeed(Buffer.alloc(32, 10))

interface Case {
  messages: string[]
  signature: Buffer
  expected: number
}

/** n jobs: every third signs none of its messages, the others sign message i % 3 of three. */
function cases(n: number): Case[] {
  const out: Case[] = []
  for (let i = 0; i < n; i++) {
    const messages = [`a ${i}`, `b ${i} ${'é'.repeat(i % 7)}`, `{"n":${i}}`]
    const expected = i % 3 === 2 ? -1 : i % 3
    const signature = parseSignature(sign(expected === -1 ? other : key, messages[expected === -1 ? 0 : expected]!))!
    out.push({ messages, signature, expected })
  }
  return out
}

/** A started pool for `body`, closed after it whatever happens. */
async function withPool(options: VerifyPoolOptions, body: (pool: VerifyPool) => Promise<void>): Promise<void> {
  const pool = new VerifyPool(options)
  try {
    await pool.start()
    await body(pool)
  } finally {
    await pool.close()
  }
}

const run = (v: SignatureVerifier, list: Case[]) =>
  Promise.all(list.map(c => v.firstVerifying(key.publicKey, c.signature, c.messages)))
const turn = () => new Promise(resolve => setImmediate(resolve))

test('the workers answer the first message that verifies, -1 when none does, and -1 for malformed input', async t => {
  await withPool({ workers: 1, inlineMaxRate: 0 }, async pool => {
    const sig = parseSignature(sign(key, 'hello'))!
    t.is(await pool.firstVerifying(key.publicKey, sig, ['nope', 'hello', 'hello']), 1)
    t.is(await pool.firstVerifying(key.publicKey, sig, [Buffer.from('hello')]), 0, 'bytes as well as strings')
    t.is(await pool.firstVerifying(key.publicKey, sig, ['nope']), -1)
    t.is(await pool.firstVerifying(other.publicKey, sig, ['hello']), -1, 'another key')
    t.is(await pool.firstVerifying(key.publicKey.subarray(1), sig, ['hello']), -1, 'a short key')
    t.is(await pool.firstVerifying(key.publicKey, sig.subarray(1), ['hello']), -1, 'a short signature')
    t.is(await pool.firstVerifying(key.publicKey, sig, []), -1)
    t.is(pool.stats().pooled, 4)
    t.is(pool.stats().inline, 0)
  })
})

test('messages given as functions are built when reached inline, all of them for a worker; null is no message', async t => {
  const sig = parseSignature(sign(key, 'hello'))!
  const builtInline: string[] = []
  const lazy = (text: string | null) => () => {
    builtInline.push(String(text))
    return text
  }
  t.is(await inlineVerifier.firstVerifying(key.publicKey, sig, [lazy(null), lazy('hello'), lazy('unused')]), 1)
  t.deepEqual(builtInline, ['null', 'hello'], 'the form after the one that verified is never built')
  await withPool({ workers: 1, inlineMaxRate: 0 }, async pool => {
    t.is(await pool.firstVerifying(key.publicKey, sig, [() => null, 'nope', () => null, () => 'hello']), 3)
    t.is(await pool.firstVerifying(key.publicKey, sig, [() => null, () => 'nope']), -1)
    t.is(await pool.firstVerifying(key.publicKey, sig, [() => null]), -1)
    t.is(pool.stats().pooled, 3)
  })
})

test('the verifiers give the same forms through the pool as inline', async t => {
  await withPool({ workers: 1, inlineMaxRate: 0 }, async pool => {
    const body = {
      name: 'A & B',
      type: 'agent',
      category: 'x',
      entity_url: 'https://a.example',
      public_key: 'k',
      tags: ['t']
    }
    for (const signed of [canonicalJson(body), canonicalJson(body).replace('&', '\\u0026')]) {
      const signature = parseSignature(sign(key, signed))!
      const inline = await verifyEntityRegistration(body, key.publicKey, signature, inlineVerifier)
      t.truthy(inline)
      t.is(await verifyEntityRegistration(body, key.publicKey, signature, pool), inline)
    }
    const proof = parseSignature(sign(key, developerProofMessage(other.publicKey, 3)))!
    t.true(await verifyDeveloperProof(key.publicKey, other.publicKey, 3, proof, pool))
    t.false(await verifyDeveloperProof(key.publicKey, other.publicKey, 4, proof, pool))
    t.is(pool.stats().inline, 0)
  })
})

test('many concurrent jobs, valid and invalid, are answered right and travel in batches', async t => {
  await withPool({ workers: 2, inlineMaxRate: 0 }, async pool => {
    const list = cases(3000)
    const results = await run(pool, list)
    t.deepEqual(
      results,
      list.map(c => c.expected)
    )
    const stats = pool.stats()
    t.is(stats.pooled, 3000)
    t.true(stats.batches <= Math.ceil(3000 / 32) + 4, `${stats.batches} batches of at most 32`)
  })
})

test('jobs submitted together leave together; at most maxBatch to a message, one batch in flight per worker', async t => {
  await withPool({ workers: 1, inlineMaxRate: 0, maxBatch: 4 }, async pool => {
    t.deepEqual(await run(pool, cases(3)), [0, 1, -1])
    t.is(pool.stats().batches, 1)
    const list = cases(20)
    const answers = run(pool, list)
    await Promise.resolve()
    t.is(pool['slots'][0]!.batches.size, 1, 'one batch of four in flight')
    t.is(pool['queued'].length, 16, 'the rest waits for an answer')
    t.deepEqual(
      await answers,
      list.map(c => c.expected)
    )
    t.is(pool.stats().batches, 1 + 5)
  })
})

test('queued jobs of normal priority leave for the workers before low-priority ones queued earlier', async t => {
  await withPool({ workers: 1, inlineMaxRate: 0, maxBatch: 4 }, async pool => {
    const order: string[] = []
    const track = (list: Case[], name: string, priority: 'normal' | 'low') =>
      Promise.all(
        list.map((c, i) =>
          pool.firstVerifying(key.publicKey, c.signature, c.messages, priority).then(r => {
            order.push(`${name}${i}`)
            return r
          })
        )
      )
    const busy = track(cases(8), 'busy', 'normal') // fills the batch in flight, and some wait
    await Promise.resolve()
    const low = track(cases(8), 'low', 'low')
    const normal = track(cases(4), 'normal', 'normal')
    await Promise.all([busy, low, normal])
    t.true(order.indexOf('normal3') < order.indexOf('low0'), order.join(' '))
  })
})

test('answers the worker has finished are read at the end of the turn that sent them', async t => {
  await withPool({ workers: 1, inlineMaxRate: 0 }, async pool => {
    const list = cases(4)
    let answers: Promise<number[]> | undefined
    let workerFinished = false
    await new Promise<void>(resolve => {
      // Sent from a socket's data callback, as a request handler does; the turn then stays busy
      // (other requests) until the worker has finished the batch, so its message can only be
      // handled in a later turn. The wait is for the worker, not for a time: how long the worker
      // takes to be scheduled on a loaded machine does not matter.
      const server = createServer(socket =>
        socket.once('data', () => {
          answers = run(pool, list)
          queueMicrotask(() => {
            // The batch left in the microtask queued before this one: the worker's shared counter
            // says when it is done (the worker does not notify; wait a millisecond at a time).
            const finished = pool['slots'][0]!.finished
            const deadline = performance.now() + 20_000
            while (Atomics.load(finished, 0) < 1 && performance.now() < deadline) Atomics.wait(finished, 0, 0, 1)
            workerFinished = Atomics.load(finished, 0) >= 1
            socket.destroy()
            server.close()
            resolve()
          })
        })
      ).listen(0, '127.0.0.1', () => {
        const client = connect((server.address() as AddressInfo).port, '127.0.0.1', () => client.end('request'))
      })
    })
    t.true(workerFinished, 'the worker finished the batch within 20 s')
    t.deepEqual(
      await answers,
      list.map(c => c.expected)
    )
    t.is(
      pool.stats().answeredSameTurn,
      1,
      "read from shared memory at the end of the turn, not on the worker's message"
    )
  })
})

test('at a low rate the pool verifies inline and starts no worker', async t => {
  const pool = new VerifyPool({ workers: 1 })
  try {
    for (const c of cases(6)) t.is(await pool.firstVerifying(key.publicKey, c.signature, c.messages), c.expected)
    await turn()
    t.like(pool.stats(), { inline: 6, pooled: 0, workersReady: 0 })
    t.is(pool['slots'].length, 0)
  } finally {
    await pool.close()
  }
})

test('inline_max_rate: the pool takes over when the rate calls for it', async t => {
  // 50/s: a burst of 400 crosses it after 13 jobs in one 250 ms window, even when a loaded machine
  // makes each inline verification ten times slower than usual (at 500/s that took 125).
  const pool = new VerifyPool({ workers: 1, inlineMaxRate: 50 })
  try {
    const burst = cases(400)
    t.deepEqual(
      await run(pool, burst),
      burst.map(c => c.expected),
      'answered inline while the worker starts'
    )
    t.true(pool.stats().inline > 0)
    await pool.start()
    t.deepEqual(
      await run(pool, burst),
      burst.map(c => c.expected)
    )
    t.true(pool.stats().pooled > 0, JSON.stringify(pool.stats()))
  } finally {
    await pool.close()
  }
})

test('inline_max_rate: once pooling, the pool keeps the work until the rate falls below 85 % of it', t => {
  // The rate is counted in 250 ms windows; the clock is stepped by hand, and the worker is marked
  // ready without starting one (only the choice between inline and pool is looked at).
  const pool = new VerifyPool({ workers: 1, inlineMaxRate: 100 })
  let now = 0
  const clock = performance.now
  performance.now = () => now
  try {
    pool['windowStart'] = 0
    pool['spawnMissing'] = () => {}
    pool['slots'].push({ ready: true, load: 0 } as never)
    const offload = (): boolean => pool['offload']()
    /**
     * `jobs` in one window; the choice made for the last of them, which follows the rate of the
     * window before or this one's so far, whichever is higher.
     */
    const window = (jobs: number): boolean => {
      let choice = false
      for (let i = 0; i < jobs; i++) choice = offload()
      now += 250
      return choice
    }
    t.false(window(20), '80/s: inline')
    t.true(window(30), '120/s: pooled')
    t.true(window(22))
    t.true(window(20), 'after a window at 88/s: still pooled (above 85/s)')
    t.false(window(20), 'after a window at 80/s: inline again')
    t.false(window(22))
    t.false(window(22), 'after a window at 88/s: inline (below 100/s, not pooling)')
  } finally {
    performance.now = clock
    pool['slots'].length = 0
  }
})

test('a worker that dies with jobs in flight: they are verified inline, and a new worker takes its place', async t => {
  const errors: Error[] = []
  await withPool({ workers: 1, inlineMaxRate: 0, onWorkerError: err => errors.push(err) }, async pool => {
    const list = cases(600)
    const answers = run(pool, list)
    await Promise.resolve()
    const worker = pool['slots'][0]!.worker
    t.true(pool['slots'][0]!.load > 0, 'jobs are in flight')
    await worker.terminate()
    t.deepEqual(
      await answers,
      list.map(c => c.expected)
    )
    t.like(pool.stats(), { workerDeaths: 1, broken: false })
    t.true(pool.stats().retriedInline > 0)
    t.deepEqual(
      await run(pool, list),
      list.map(c => c.expected),
      'the next jobs start a new worker and are answered inline meanwhile'
    )
    await pool.start()
    const pooled = pool.stats().pooled
    t.deepEqual(
      await run(pool, list),
      list.map(c => c.expected)
    )
    t.is(pool.stats().pooled, pooled + list.length, 'the new worker answers')
  })
})

test('workers that crash on every batch: no job hangs, and after three deaths the pool stays inline', async t => {
  const errors: Error[] = []
  const workerUrl = new URL('../fixtures/verify-pool/crashing-worker.mjs', import.meta.url)
  const pool = new VerifyPool({ workers: 1, inlineMaxRate: 0, workerUrl, onWorkerError: err => errors.push(err) })
  try {
    const list = cases(30)
    for (let round = 0; round < 4; round++) {
      await pool.start()
      t.deepEqual(
        await run(pool, list),
        list.map(c => c.expected),
        `round ${round}`
      )
    }
    const stats = pool.stats()
    t.like(stats, { workerDeaths: 3, broken: true, workersReady: 0 })
    t.true(stats.inline >= list.length, 'the last round was inline')
    t.true(errors.some(e => /crashed on purpose/.test(e.message)))
    t.true(errors.some(e => /main thread from now on/.test(e.message)))
  } finally {
    await pool.close()
  }
})

test('close: jobs in flight still get answers, later jobs verify inline, no worker is left', async t => {
  const pool = new VerifyPool({ workers: 2, inlineMaxRate: 0 })
  await pool.start()
  const list = cases(600)
  const answers = run(pool, list)
  await turn()
  await pool.close()
  t.deepEqual(
    await answers,
    list.map(c => c.expected)
  )
  t.deepEqual(
    await run(pool, list.slice(0, 5)),
    list.slice(0, 5).map(c => c.expected)
  )
  t.like(pool.stats(), { workersReady: 0, workerDeaths: 0 })
  t.is(pool['slots'].length, 0)
})

test('the worker also loads as compiled JavaScript beside the module (the dist/ layout)', async t => {
  // The modules the pool needs, transpiled as tsc does for dist/ and in its folders, into a folder without tsx.
  const dir = await mkdtemp(join(tmpdir(), 'verify-pool-dist-'))
  try {
    await writeFile(join(dir, 'package.json'), '{"type":"module"}')
    const modules = [
      'config/settings-node',
      'identity/verify-pool',
      'identity/verify-worker',
      'identity/keys',
      'identity/encoding',
      'util/bounded-map',
      'util/buffer-view',
      'util/module-worker'
    ]
    for (const name of modules) {
      const source = await readFile(new URL(`../../src/${name}.ts`, import.meta.url), 'utf8')
      const { outputText } = ts.transpileModule(source, {
        compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true }
      })
      await mkdir(dirname(join(dir, `${name}.js`)), { recursive: true })
      await writeFile(join(dir, `${name}.js`), outputText)
    }
    const compiled = (await import(
      pathToFileURL(join(dir, 'identity/verify-pool.js')).href
    )) as typeof import('../../src/identity/verify-pool.js')
    const pool = new compiled.VerifyPool({ workers: 1, inlineMaxRate: 0 })
    try {
      await pool.start()
      t.is(pool.stats().workersReady, 1)
      const list = cases(50)
      t.deepEqual(
        await run(pool, list),
        list.map(c => c.expected)
      )
      t.is(pool.stats().pooled, 50)
    } finally {
      await pool.close()
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('a node verifying every write in its pool: register, update, deregister, and rejections', async t => {
  const n = await startTestNode({ verify: { workers: 1, inline_max_rate: 0 } })
  try {
    await (n.node.entities as unknown as { c: { verifier: VerifyPool } }).c.verifier.start()
    const dev = developer(21)
    const a = agent(dev, 1)
    const b = agent(dev, 2)
    t.is((await http(n.url, 'POST', '/v1/entities', { body: deployedRegistration(dev, a) })).status, 201)
    t.is((await http(n.url, 'POST', '/v1/entities', { body: specRegistration(dev, b) })).status, 201)
    const forged = { ...specRegistration(dev, agent(dev, 3)), summary: 'changed after signing' }
    t.is((await http(n.url, 'POST', '/v1/entities', { body: forged })).body.error, 'signature_invalid')
    const c = agent(dev, 4)
    const badProof = specRegistration(dev, c, {
      developer_proof: { ...c.proof, signature: agent(dev, 5).proof.signature }
    })
    t.is((await http(n.url, 'POST', '/v1/entities', { body: badProof })).body.error, 'developer_proof_invalid')
    const raw = JSON.stringify({ summary: 'updated' })
    t.is((await http(n.url, 'PUT', `/v1/entities/${a.agentId}`, { raw, headers: bearer(a, raw) })).status, 200)
    t.is(
      (
        await http(n.url, 'DELETE', `/v1/entities/${b.agentId}`, {
          headers: { authorization: `Bearer-Dev ${sign(dev.keyPair, b.agentId)}` }
        })
      ).status,
      200
    )
    const stats = (n.node.entities as unknown as { c: { verifier: VerifyPool } }).c.verifier.stats()
    t.true(stats.pooled >= 6, JSON.stringify(stats))
    t.is(stats.inline, 0)
  } finally {
    await n.stop()
  }
})
