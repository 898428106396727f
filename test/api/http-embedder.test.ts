import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import test from 'ava'
import { HttpEmbedder } from '../../src/search/embedders/http-embedder.js'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { http, startTestNode } from '../helpers/node.js'

const DIM = 8

/** A toy model: letter counts folded into 8 dimensions. */
function toy(text: string): number[] {
  const v = new Array(DIM).fill(0)
  for (const ch of text.toLowerCase()) if (ch >= 'a' && ch <= 'z') v[(ch.charCodeAt(0) - 97) % DIM] += 1
  return v
}

interface Stub {
  url: string
  requests: number
  mode: 'ok' | 'fail' | 'slow' | 'wrong-dim'
  close(): Promise<void>
}

async function startEmbeddingServer(style: 'openai' | 'ollama'): Promise<Stub> {
  const stub: Stub = { url: '', requests: 0, mode: 'ok', close: async () => {} }
  const server: Server = createServer((req, res) => {
    let body = ''
    req.on('data', d => {
      body += d
    })
    req.on('end', () => {
      stub.requests++
      if (stub.mode === 'fail') {
        res.statusCode = 500
        res.end('{}')
        return
      }
      if (stub.mode === 'slow') return // never answers
      const { input } = JSON.parse(body) as { input: string[] }
      const vectors = input.map(t => (stub.mode === 'wrong-dim' ? [1, 2] : toy(t)))
      res.setHeader('content-type', 'application/json')
      res.end(
        JSON.stringify(
          style === 'openai'
            ? { data: vectors.map((embedding, index) => ({ index, embedding })).reverse() }
            : { embeddings: vectors }
        )
      )
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  stub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/embed`
  stub.close = () =>
    new Promise(resolve => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return stub
}

for (const style of ['openai', 'ollama'] as const) {
  test(`${style}: batches, keeps order, normalises; failures are errors, never zero vectors`, async t => {
    const stub = await startEmbeddingServer(style)
    try {
      // A generous limit where the stub answers (a busy machine may be slow to get there), a short
      // one where it never does.
      const embedder = new HttpEmbedder({
        url: stub.url,
        model: 'toy',
        style,
        dimension: DIM,
        timeoutMs: 20_000,
        batchSize: 2
      })
      const texts = ['abc', 'hello world', 'zzz', 'translate', 'b']
      const vectors = await embedder.embed(texts)
      t.is(stub.requests, 3, 'five texts in batches of two')
      t.is(vectors.length, 5)
      vectors.forEach((v, i) => {
        const expected = toy(texts[i] as string)
        const norm = Math.hypot(...expected)
        t.true(
          expected.every((x, j) => Math.abs(x / norm - (v[j] as number)) < 1e-6),
          `vector ${i} in order and normalised`
        )
      })
      stub.mode = 'fail'
      await t.throwsAsync(embedder.embed(['x']), { message: /status 500/ })
      stub.mode = 'wrong-dim'
      await t.throwsAsync(embedder.embed(['x']), { message: /not 8 numbers/ })
      stub.mode = 'slow'
      const impatient = new HttpEmbedder({
        url: stub.url,
        model: 'toy',
        style,
        dimension: DIM,
        timeoutMs: 300,
        batchSize: 2
      })
      await t.throwsAsync(impatient.embed(['x']), { message: /no answer within 300 ms/ })
    } finally {
      await stub.close()
    }
  })
}

test('a node searches with the http embedder, and keeps answering by text when it fails', async t => {
  const stub = await startEmbeddingServer('ollama')
  // The stub answers at once or fails at once: the time limit is only there to be generous.
  const n = await startTestNode({
    search: {
      embedder: 'http',
      http_url: stub.url,
      http_model: 'toy',
      http_style: 'ollama',
      dimension: DIM,
      http_timeout_ms: 20_000
    }
  })
  try {
    const dev = developer(61)
    t.is(
      (
        await http(n.url, 'POST', '/v1/entities', {
          body: specRegistration(dev, agent(dev, 1), { name: 'Lexicon', summary: 'Word lists' })
        })
      ).status,
      201
    )
    await n.node.search.idle()
    const ok = await http(n.url, 'POST', '/v1/search', { body: { query: 'lexicon' } })
    t.is(ok.body.results[0].name, 'Lexicon')
    t.like(ok.body.search_stats, { embedder: 'http-ollama:toy:8', semantic: 'used' })
    t.true(ok.body.results[0].score_breakdown.semantic_similarity > 0)
    stub.mode = 'fail'
    const degraded = await http(n.url, 'POST', '/v1/search', { body: { query: 'lexicon' } })
    t.is(degraded.status, 200)
    t.is(degraded.body.results[0].name, 'Lexicon')
    t.is(degraded.body.search_stats.semantic, 'unavailable')
    t.true(n.node.search.embedFailures >= 1, 'the failure is counted')
  } finally {
    await n.stop()
    await stub.close()
  }
})
