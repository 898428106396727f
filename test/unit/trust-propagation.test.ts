import test from 'ava'
import { propagate, repair, scaledScore } from '../../src/trust/propagation.js'
import { TrustGraph, type TrustEdges } from '../../src/trust/trust-graph.js'
import { type AttestationFacts, attestationWeight, EVIDENCE_WEIGHTS, HALF_LIFE_DAYS } from '../../src/trust/weights.js'

function edges(list: readonly (readonly [number, number, number])[]): TrustEdges {
  return {
    from: Uint32Array.from(list.map(e => e[0])),
    to: Uint32Array.from(list.map(e => e[1])),
    weight: Float64Array.from(list.map(e => e[2]))
  }
}

const sum = (xs: Float64Array): number => xs.reduce((a, b) => a + b, 0)

/** Pseudo-random non-negative integers from a seed (a linear congruential generator): graphs every run alike. */
function integers(seed: number): () => number {
  let x = seed
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31
    return x
  }
}

test('the graph sums repeated edges, drops self edges and bad weights, and normalizes each row', t => {
  const g = TrustGraph.build(
    4,
    edges([
      [0, 2, 1],
      [0, 1, 2],
      [0, 2, 1],
      [0, 0, 5],
      [1, 3, -1],
      [1, 3, Number.NaN],
      [2, 9, 1],
      [3, 0, 4]
    ])
  )
  t.deepEqual(g.edgesOf(0), [
    { subject: 1, share: 0.5 },
    { subject: 2, share: 0.5 }
  ])
  t.deepEqual(g.edgesOf(1), [])
  t.deepEqual(g.edgesOf(2), [])
  t.deepEqual(g.edgesOf(3), [{ subject: 0, share: 1 }])
  t.is(g.edgeCount, 3)
  t.is(g.rowTotals[0], 4000, 'in thousandths')
})

test('trust flows from the seeds along the edges and sums to 1', t => {
  // 0 (seed) → 1 → 2; 3 attests 1 but nothing reaches 3.
  const g = TrustGraph.build(
    4,
    edges([
      [0, 1, 1],
      [1, 2, 1],
      [3, 1, 1]
    ])
  )
  const { scores, rounds } = propagate(g, [0])
  t.true(rounds > 1)
  t.true(Math.abs(sum(scores) - 1) < 1e-9)
  t.true(scores[0]! > scores[1]! && scores[1]! > scores[2]! && scores[2]! > 0)
  t.is(scores[3], 0)
})

test('a Sybil ring the seeded part never attests holds nothing, and its statements move no one', t => {
  // Honest: seeds 0 and 1, entities 2–5 attested among themselves. Ring: 6–15, all attesting each
  // other and the honest entities 2 and 3.
  const honest: [number, number, number][] = [
    [0, 2, 1],
    [0, 3, 1],
    [1, 4, 2],
    [2, 5, 1],
    [4, 3, 1],
    [5, 2, 1]
  ]
  const ring: [number, number, number][] = []
  for (let a = 6; a < 16; a++) for (let b = 6; b < 16; b++) if (a !== b) ring.push([a, b, 10])
  for (let a = 6; a < 16; a++) ring.push([a, 2, 1], [a, 3, 1])
  const before = propagate(TrustGraph.build(16, edges(honest)), [0, 1]).scores
  const after = propagate(TrustGraph.build(16, edges([...honest, ...ring])), [0, 1]).scores
  for (let i = 6; i < 16; i++) t.is(after[i], 0)
  t.deepEqual([...after], [...before])
})

test('the same edges in another order give bit-identical scores', t => {
  const list: [number, number, number][] = []
  const next = integers(7)
  const seen = new Set<string>()
  while (list.length < 2000) {
    const a = next() % 300
    const b = next() % 300
    if (a === b || seen.has(`${a} ${b}`)) continue
    seen.add(`${a} ${b}`)
    list.push([a, b, 1 + (next() % 5)])
  }
  const shuffled = [...list].reverse()
  const one = propagate(TrustGraph.build(300, edges(list)), [0, 1, 2]).scores
  const two = propagate(TrustGraph.build(300, edges(shuffled)), [2, 1, 0, 1]).scores
  t.deepEqual([...one], [...two])
})

test('starting from a previous result converges to the same scores in fewer rounds', t => {
  const list: [number, number, number][] = []
  for (let i = 0; i < 500; i++) list.push([i, (i * 7 + 3) % 500, 1], [i, (i * 13 + 1) % 500, 2])
  const first = propagate(TrustGraph.build(500, edges(list)), [0, 250])
  const changed = TrustGraph.build(500, edges(list)).withAdded(edges([[10, 400, 3]]))
  const cold = propagate(changed, [0, 250])
  const warm = propagate(changed, [0, 250], { start: first.scores })
  t.true(warm.rounds < cold.rounds, `${warm.rounds} rounds warm, ${cold.rounds} cold`)
  for (let i = 0; i < 500; i++) t.true(Math.abs(warm.scores[i]! - cold.scores[i]!) < 1e-9)
})

test('attestations added to a graph give the rows and scores of a graph built with them', t => {
  const list: [number, number, number][] = []
  for (let i = 0; i < 200; i++) list.push([i, (i * 7 + 3) % 200, 0.7], [i, (i * 13 + 1) % 200, 1.3])
  const more: [number, number, number][] = [
    [5, 6, 2.5],
    [5, 38, 0.1],
    [7, 8, 1],
    [150, 3, 4],
    [5, 6, 1]
  ]
  const added = TrustGraph.build(200, edges(list))
    .withAdded(edges(more.slice(0, 2)))
    .withAdded(edges(more.slice(2)))
  const whole = TrustGraph.build(200, edges([...more, ...list].reverse()))
  for (let i = 0; i < 200; i++) t.deepEqual(added.edgesOf(i), whole.edgesOf(i))
  t.is(added.edgeCount, whole.edgeCount)
  t.deepEqual([...propagate(added, [0, 1]).scores], [...propagate(whole, [0, 1]).scores])
})

test('without seeds every score is 0', t => {
  const g = TrustGraph.build(3, edges([[0, 1, 1]]))
  t.deepEqual([...propagate(g, []).scores], [0, 0, 0])
})

test('the [0, 1] scale is 0 for nothing, about 0.15 for the average identity, 1 from 100 times it', t => {
  t.is(scaledScore(0, 1000), 0)
  t.is(scaledScore(1 / 1000, 1000), Math.round((Math.log(2) / Math.log(101)) * 1e6) / 1e6)
  t.is(scaledScore(100 / 1000, 1000), 1)
  t.is(scaledScore(0.5, 1000), 1)
})

test('an attestation weighs by its evidence, halves every 180 days, and a failure or dispute weighs nothing', t => {
  const at = Date.UTC(2026, 0, 1)
  const facts = (over: Partial<AttestationFacts>): AttestationFacts => ({
    kind: 'interaction',
    outcome: 'success',
    messageId: false,
    payment: 'none',
    issuedAtMs: at,
    ...over
  })
  t.is(attestationWeight(facts({}), at), EVIDENCE_WEIGHTS.statement)
  t.is(attestationWeight(facts({ messageId: true }), at), EVIDENCE_WEIGHTS.message)
  t.is(attestationWeight(facts({ payment: 'unchecked', messageId: true }), at), EVIDENCE_WEIGHTS.paymentUnchecked)
  t.is(attestationWeight(facts({ payment: 'settled' }), at), EVIDENCE_WEIGHTS.paymentSettled)
  t.is(attestationWeight(facts({ payment: 'settled' }), at + HALF_LIFE_DAYS * 86_400_000), 2.5)
  t.is(attestationWeight(facts({ kind: 'endorsement', outcome: undefined }), at), 1)
  for (const zero of [
    facts({ outcome: 'failure' }),
    facts({ outcome: undefined }),
    facts({ kind: 'dispute' }),
    facts({ payment: 'refuted' })
  ])
    t.is(attestationWeight(zero, at), 0)
  // Ages are taken at the start of the hour: any moment of one hour gives the same weight.
  const later = at + 100 * 86_400_000
  t.is(attestationWeight(facts({}), later + 1), attestationWeight(facts({}), later + 3_599_999))
})

test("repairing the previous scores after added attestations gives a full computation's scores, to within 0.1 % by default", t => {
  const list: [number, number, number][] = []
  const next = integers(11)
  for (let k = 0; k < 5000; k++) list.push([next() % 1000, next() % 1000, 1 + (next() % 5)])
  const before = TrustGraph.build(1000, edges(list))
  const seeds = [0, 1, 2, 3]
  const previous = propagate(before, seeds).scores
  const added: [number, number, number][] = [
    [5, 900, 5],
    [999, 4, 2],
    [17, 18, 1],
    [400, 401, 3]
  ]
  const after = before.withAdded(edges(added))
  const full = propagate(after, seeds).scores
  const difference = (scores: Float64Array): number => scores.reduce((sum, s, i) => sum + Math.abs(s - full[i]!), 0)
  const changed = added.map(e => e[0])
  const exact = repair({ graph: before, scores: previous }, after, changed, seeds, { relative: 1e-9 })
  t.true(difference(exact.scores) < 1e-8, `L1 difference ${difference(exact.scores)}`)
  t.true(Math.abs(exact.scores.reduce((a, b) => a + b, 0) - 1) < 1e-8)
  // By default each score is repaired to within 0.1 % of itself: fewer pushes, and the subjects of
  // the new attestations move as the full computation moves them.
  const quick = repair({ graph: before, scores: previous }, after, changed, seeds)
  t.true(quick.pushes > 0 && quick.pushes < exact.pushes, `${quick.pushes} against ${exact.pushes} pushes`)
  for (let i = 0; i < 1000; i++) t.true(Math.abs(quick.scores[i]! - full[i]!) <= 2e-3 * Math.max(full[i]!, 1e-3))
  for (const subject of [900, 4, 18, 401])
    t.is(Math.sign(quick.scores[subject]! - previous[subject]!), Math.sign(full[subject]! - previous[subject]!))
})
