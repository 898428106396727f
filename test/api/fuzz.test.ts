import test, { type ExecutionContext } from 'ava'
import { fuzzHttp, fuzzSockets, seedFuzzTarget, type FuzzSeeds } from '../helpers/fuzz.js'
import { startTestNode, type TestNode } from '../helpers/node.js'

// A small, seeded run on every `npm test` (the same seed each time, so a failure reproduces);
// `npm run fuzz` runs the same properties for 100k cases with a fresh seed.
const SEED = 17

/** A node for one test (stopped after it), with a developer, its handle and one agent for the fuzzed paths to reach. */
async function fuzzTarget(t: ExecutionContext): Promise<{ node: TestNode; seeds: FuzzSeeds }> {
  const node = await startTestNode()
  t.teardown(() => node.stop())
  return { node, seeds: await seedFuzzTarget(node.url) }
}

test('hostile HTTP requests on every route: never 500, every error a documented code with its status', async t => {
  const { node, seeds } = await fuzzTarget(t)
  const report = await fuzzHttp(node.url, seeds, { runs: 400, seed: SEED })
  t.deepEqual(report.failures, [])
  t.is(report.cases, 400)
  t.is((await fetch(`${node.url}/health`)).status, 200)
})

test('hostile WebSocket sessions: refused or closed with documented codes, the node keeps serving', async t => {
  const { node, seeds } = await fuzzTarget(t)
  const report = await fuzzSockets(node.url, seeds, { runs: 60, seed: SEED })
  t.deepEqual(report.failures, [])
  t.is((await fetch(`${node.url}/health`)).status, 200)
})
