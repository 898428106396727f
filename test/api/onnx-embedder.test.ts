import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import test from 'ava'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { http, startTestNode } from '../helpers/node.js'
import { buildTinyOnnxModel } from '../helpers/tiny-onnx-model.js'

test('a node searches semantically with the onnx embedder', async t => {
  const model = await buildTinyOnnxModel()
  const n = await startTestNode({ search: { embedder: 'onnx', onnx_model_dir: model.dir } })
  try {
    const dev = developer(71)
    const babel = specRegistration(dev, agent(dev, 1), {
      name: 'Babel',
      category: 'translation',
      tags: ['multilingual'],
      summary: 'Translator for documents'
    })
    const nimbus = specRegistration(dev, agent(dev, 2), {
      name: 'Nimbus',
      category: 'weather',
      tags: ['forecast'],
      summary: 'Rain and temperature forecast'
    })
    for (const body of [babel, nimbus]) t.is((await http(n.url, 'POST', '/v1/entities', { body })).status, 201)
    await n.node.search.idle()
    // "interpreter" shares no word (nor stem, nor synonym) with either entity: only the model relates it to Babel.
    const found = await http(n.url, 'POST', '/v1/search', { body: { query: 'interpreter' } })
    t.is(found.status, 200)
    t.is(found.body.results[0]?.name, 'Babel')
    t.false(
      found.body.results.some((r: { name: string }) => r.name === 'Nimbus'),
      'the unrelated entity is not a semantic match'
    )
    t.true(found.body.results[0].score_breakdown.semantic_similarity > 0.3)
    t.is(found.body.results[0].score_breakdown.text_relevance, 0)
    t.regex(found.body.search_stats.embedder, /^onnx:tiny-minilm:8:[0-9a-f]{12}$/)
    t.is(found.body.search_stats.semantic, 'used')
  } finally {
    await n.stop()
    await rm(join(model.dir, '..'), { recursive: true, force: true })
  }
})
