import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { runTrustExperiment } from '../../src/testnet/experiments/trust.js'

const base = { developers: 50, entitiesPer: 3, verified: 0.3, interactions: 10, paid: 0.3, ring: 200, seed: 3 }

test('a ring nothing honest attests holds no trust and moves no honest entity; the files are written', async t => {
  const out = await mkdtemp(join(tmpdir(), 'trust-experiment-'))
  try {
    const summary = await runTrustExperiment({ ...base, out })
    t.is(summary.ring_share_of_trust, 0)
    t.is(summary.ring_and_its_developers_share, 0)
    t.is(summary.honest_top10_max_rank_move, 0)
    t.is(summary.honest_ranked_below_best_ring_entity, 0)
    const csv = (await readFile(join(out, 'scores.csv'), 'utf8')).trim().split('\n')
    t.is(csv.length, 1 + 50 * 3 + 200)
    t.is(JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')).identities, summary.identities)
    t.regex(await readFile(join(out, 'trust-cdf.svg'), 'utf8'), /^<svg/)
  } finally {
    await rm(out, { recursive: true, force: true })
  }
})

test('attack edges let trust into the ring, in proportion to them', async t => {
  const out = await mkdtemp(join(tmpdir(), 'trust-experiment-'))
  try {
    const few = await runTrustExperiment({ ...base, attackEdges: 2, out })
    const many = await runTrustExperiment({ ...base, attackEdges: 40, out })
    t.true(few.ring_share_of_trust > 0)
    t.true(many.ring_share_of_trust > few.ring_share_of_trust)
    t.true(many.ring_share_of_trust < 1)
  } finally {
    await rm(out, { recursive: true, force: true })
  }
})
