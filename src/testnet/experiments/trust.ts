/**
 * `registry-node experiment trust`: transitive trust against a Sybil ring, on the graph itself (the
 * node's own src/trust/ code; no node processes: the question is what the scores do, not the mesh).
 *
 * Honest population: `developers` developers with `entitiesPer` entities each; a `verified` share of
 * the developers has a verified handle (the seeds). Each honest entity makes `interactions`
 * attestations of other developers' entities, chosen by popularity (a few entities are called by
 * many): a success nine times in ten, a settled payment as evidence in a `paid` share of them.
 * Ring: `ring` identities (entities of ring developers, none verified) that attest each other with
 * settled payments among themselves, and bad-mouth the honest top 10 with failures and disputes;
 * `attackEdges` honest entities were duped into attesting a ring entity (paid), the ring's way in.
 * Scores are computed without the ring and with it; honest entities are ranked by score alone (as
 * if every one had the same text relevance and local signals). Writes into the results folder:
 *
 *   scores.csv        one row per entity: group, transitive score with and without the ring, ranks
 *   summary.json      parameters, the ring's share of all trust, rank moves of the honest top 10,
 *                     honest entities ranked below the best ring entity, rounds and time to converge
 *   trust-cdf.svg     the CDF of scores, honest and ring
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { propagate, scaledScore } from '../../trust/propagation.js'
import { TrustGraph } from '../../trust/trust-graph.js'
import { EVIDENCE_WEIGHTS } from '../../trust/weights.js'
import { seededRandom } from '../random.js'
import { cdfChart, writeCsv } from './report.js'

export interface TrustExperimentOptions {
  developers: number
  entitiesPer: number
  verified: number
  interactions: number
  paid: number
  ring: number
  /** Attestations honest entities make of ring entities (duped callers: the ring's way in). */
  attackEdges?: number
  out: string
  seed?: number
  log?: (line: string) => void
}

interface Population {
  /** Identities: honest developers, honest entities, ring developers, ring entities (in that order). */
  size: number
  developerOf: Int32Array
  honestEntities: number[]
  ringEntities: number[]
  seeds: number[]
  from: number[]
  to: number[]
  weight: number[]
  /** Where the ring's own edges begin in from/to/weight. */
  ringEdgesFrom: number
}

const RING_PER_DEVELOPER = 10

function populate(o: TrustExperimentOptions, random: () => number): Population {
  const honestDevelopers = o.developers
  const honestEntityCount = o.developers * o.entitiesPer
  const ringDevelopers = Math.ceil(o.ring / RING_PER_DEVELOPER)
  const size = honestDevelopers + honestEntityCount + ringDevelopers + o.ring
  const developerOf = new Int32Array(size).fill(-1)
  const honestEntities: number[] = []
  const ringEntities: number[] = []
  const from: number[] = []
  const to: number[] = []
  const weight: number[] = []
  const edge = (a: number, b: number, w: number): void => {
    from.push(a)
    to.push(b)
    weight.push(w)
  }
  for (let e = 0; e < honestEntityCount; e++) {
    const id = honestDevelopers + e
    const dev = Math.floor(e / o.entitiesPer)
    developerOf[id] = dev
    honestEntities.push(id)
    edge(dev, id, 1)
    edge(id, dev, 1)
  }
  const ringBase = honestDevelopers + honestEntityCount
  for (let r = 0; r < o.ring; r++) {
    const id = ringBase + ringDevelopers + r
    const dev = ringBase + Math.floor(r / RING_PER_DEVELOPER)
    developerOf[id] = dev
    ringEntities.push(id)
    edge(dev, id, 1)
    edge(id, dev, 1)
  }
  const seeds = Array.from({ length: honestDevelopers }, (_, d) => d).filter(() => random() < o.verified)
  if (seeds.length === 0) seeds.push(0)
  // Popularity: the callee's index drawn as n·u³ favours the first entities.
  const popular = (): number => honestEntities[Math.floor(honestEntities.length * random() ** 3)]!
  for (const caller of honestEntities) {
    for (let k = 0; k < o.interactions; k++) {
      const callee = popular()
      if (developerOf[callee] === developerOf[caller]) continue
      if (random() >= 0.9) continue // a failure: kept, weighs nothing
      edge(caller, callee, random() < o.paid ? EVIDENCE_WEIGHTS.paymentSettled : EVIDENCE_WEIGHTS.message)
    }
  }
  const ringEdgesFrom = from.length
  for (const member of ringEntities) {
    for (let k = 0; k < 10; k++) {
      const other = ringEntities[Math.floor(random() * ringEntities.length)]!
      if (developerOf[other] !== developerOf[member]) edge(member, other, EVIDENCE_WEIGHTS.paymentSettled)
    }
    // Bad-mouthing (failures and disputes of the honest top 10) adds no edge: it weighs nothing.
  }
  for (let k = 0; k < (o.attackEdges ?? 0) && ringEntities.length > 0; k++) {
    const caller = honestEntities[Math.floor(random() * honestEntities.length)]!
    edge(caller, ringEntities[Math.floor(random() * ringEntities.length)]!, EVIDENCE_WEIGHTS.paymentSettled)
  }
  return { size, developerOf, honestEntities, ringEntities, seeds, from, to, weight, ringEdgesFrom }
}

/** Ranks (1 = best) of `ids` by score, ties broken by ID. */
function ranks(ids: readonly number[], scores: Float64Array): Map<number, number> {
  const sorted = [...ids].sort((a, b) => scores[b]! - scores[a]! || a - b)
  return new Map(sorted.map((id, i) => [id, i + 1]))
}

export async function runTrustExperiment(o: TrustExperimentOptions) {
  const log = o.log ?? (() => {})
  const random = seededRandom(o.seed ?? 1)
  const p = populate(o, random)
  const build = (upTo: number) =>
    TrustGraph.build(p.size, {
      from: Uint32Array.from(p.from.slice(0, upTo)),
      to: Uint32Array.from(p.to.slice(0, upTo)),
      weight: Float64Array.from(p.weight.slice(0, upTo))
    })
  const without = propagate(build(p.ringEdgesFrom), p.seeds).scores
  const started = performance.now()
  const withRing = propagate(build(p.from.length), p.seeds)
  const convergeMs = performance.now() - started
  const ringShare = p.ringEntities.reduce((a, r) => a + withRing.scores[r]!, 0)
  // The ring's developers too: everything outside the honest population.
  let outsideShare = 0
  for (let i = p.size - p.ringEntities.length - Math.ceil(o.ring / RING_PER_DEVELOPER); i < p.size; i++)
    outsideShare += withRing.scores[i]!
  const rankWithout = ranks(p.honestEntities, without)
  const everyone = [...p.honestEntities, ...p.ringEntities]
  const rankWith = ranks(everyone, withRing.scores)
  const honestWithRing = ranks(p.honestEntities, withRing.scores)
  const top10 = p.honestEntities.filter(e => (rankWithout.get(e) ?? Infinity) <= 10)
  const moves = top10.map(e => Math.abs((honestWithRing.get(e) ?? 0) - (rankWithout.get(e) ?? 0)))
  const bestRing = Math.max(0, ...p.ringEntities.map(r => withRing.scores[r]!))
  const honestBelowRing = p.honestEntities.filter(e => withRing.scores[e]! < bestRing).length
  const summary = {
    parameters: { ...o, log: undefined },
    identities: p.size,
    attestations: p.from.length,
    seeds: p.seeds.length,
    ring_share_of_trust: ringShare,
    ring_and_its_developers_share: outsideShare,
    best_ring_score: scaledScore(bestRing, p.size),
    honest_ranked_below_best_ring_entity: honestBelowRing,
    honest_top10_max_rank_move: Math.max(0, ...moves),
    converged_in_rounds: withRing.rounds,
    converged_in_ms: Math.round(convergeMs * 10) / 10
  }
  await mkdir(o.out, { recursive: true })
  await writeCsv(
    join(o.out, 'scores.csv'),
    ['identity', 'group', 'score_without_ring', 'score_with_ring', 'rank_without_ring', 'rank_with_ring'],
    everyone.map(id => [
      id,
      p.ringEntities.includes(id) ? 'ring' : 'honest',
      scaledScore(without[id]!, p.size),
      scaledScore(withRing.scores[id]!, p.size),
      rankWithout.get(id) ?? null,
      rankWith.get(id) ?? null
    ])
  )
  await writeFile(join(o.out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`)
  await writeFile(
    join(o.out, 'trust-cdf.svg'),
    cdfChart('Transitive trust with a Sybil ring', 'score on [0, 1]', [
      {
        label: `honest entities (${p.honestEntities.length})`,
        values: p.honestEntities.map(e => scaledScore(withRing.scores[e]!, p.size))
      },
      {
        label: `ring entities (${p.ringEntities.length})`,
        values: p.ringEntities.map(r => scaledScore(withRing.scores[r]!, p.size))
      }
    ])
  )
  log(
    `ring holds ${(ringShare * 100).toFixed(3)} % of all trust; ${honestBelowRing} honest entities below the best ring entity; honest top 10 moved at most ${summary.honest_top10_max_rank_move} ranks; converged in ${withRing.rounds} rounds, ${summary.converged_in_ms} ms`
  )
  return summary
}
