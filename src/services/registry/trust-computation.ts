/**
 * Transitive trust over what a store holds (docs/decisions.md, "Transitive trust"): identities are
 * developers and entities, numbered in sorted ID order; edges are the attestations (weighed by
 * src/trust/weights.ts at the start of the hour), each developer → its entities and each entity → its
 * developer; seeds are the developers with a verified handle and the operator's `trust.seeds`.
 * A full computation reads one snapshot of the store and notes the log's sequence number there; later
 * refreshes read the log after it, merge the attestations added into their issuers' rows and repair the
 * previous scores from there (forward push), so nothing is counted twice or missed whatever the timing.
 * Identities that came or went, or a handle verified (a new seed), need a full computation: one runs
 * in a new hour, and otherwise once the last has been idle FULL_IDLE_FACTOR times as long as it took.
 * Runs in the trust worker (trust-worker.ts).
 */
import type { AttestationRecord, OperationKind } from '../../store/records.js'
import type { StoreReader } from '../../store/store-reader.js'
import { edgeFacts, edgeIssuer, edgeSubject } from '../../store/attestation-edges.js'
import { DEFAULT_RESTART, propagate, repair, scaledScore } from '../../trust/propagation.js'
import { TrustGraph, type TrustEdges } from '../../trust/trust-graph.js'
import { attestationWeight, hourStart } from '../../trust/weights.js'
import { facts } from './attestation-facts.js'
import { TrustIdIndex } from './trust-id-index.js'

/** Weight of the edges between a developer and each of its entities, both ways. */
const OWNERSHIP_WEIGHT = 1

/** A full computation waits until the last one has been this many times its own duration ago (outside a new hour). */
const FULL_IDLE_FACTOR = 10
/** Operations read from the log at a time. */
const LOG_PAGE = 5000
/** Operations that change who is in the graph, or who is a seed. */
const STRUCTURAL: ReadonlySet<OperationKind> = new Set([
  'entity.register',
  'entity.deregister',
  'developer.register',
  'developer.implicit',
  'developer.deregister',
  'handle.verify',
  'handle.release'
])

/** What a computation reads: a read-only view of the store (the worker's own). */
export type TrustSource = Pick<StoreReader, 'snapshot' | 'operationsAfter' | 'getAttestation' | 'attestationsOf'>

export interface TrustRefresh {
  /** Identities whose scaled score changed, with the new score. */
  changes: [id: string, transitive: number][]
  /** A full computation is owed (identities changed) and may run after this long: refresh then. */
  fullInMs?: number
}

export interface TrustExplanation {
  /** The score on [0, 1] (0: no path from a seed reaches it). */
  transitive: number
  /** The share of all trust it holds. */
  share: number
  seed: boolean
  /** Who passes it the most trust, and how much of its score each gives. */
  attesters: { issuer: string; share: number }[]
}

export const NO_EXPLANATION: TrustExplanation = { transitive: 0, share: 0, seed: false, attesters: [] }

interface Computed {
  /** The log's last sequence number reflected. */
  seq: number
  ids: string[]
  index: TrustIdIndex
  /** Each entity's developer, for the ownership edge into it. */
  owners: Map<string, string>
  seeds: number[]
  graph: TrustGraph
  scores: Float64Array
  /** The hour the weights were taken at. */
  hour: number
}

export class TrustComputation {
  private computed: Computed | null = null
  /** The scaled score each identity was last given (only those above 0). */
  private readonly published = new Map<string, number>()
  /** When the last full computation ended, and how long it took (performance.now() ms). */
  private lastFull = { endedAt: Number.NEGATIVE_INFINITY, tookMs: 0 }
  /** Identities changed since the last full computation. */
  private owed = false
  /** The scaled scores last returned, by the numbering of the computation they came from. */
  private shown: { ids: readonly string[]; scores: Float64Array } | null = null

  constructor(
    private readonly source: TrustSource,
    private readonly seeds: readonly string[],
    private readonly clock: () => number = () => performance.now()
  ) {}

  /**
   * Brings the scores up to date at time `nowMs` and returns the identities whose scaled score
   * changed since the last refresh. With no attestation at all nothing is computed: every score is 0.
   */
  refresh(nowMs: number): TrustRefresh {
    const hour = hourStart(nowMs)
    const c = this.computed
    let fullInMs: number | undefined
    if (!c || c.hour !== hour) this.computeAll(hour)
    else {
      const { seq, added, structural } = this.readLog(c)
      if (structural) this.owed = true
      const wait = this.owed ? this.lastFull.endedAt + FULL_IDLE_FACTOR * this.lastFull.tookMs - this.clock() : 0
      if (this.owed && wait <= 0) this.computeAll(hour)
      else {
        if (this.owed) fullInMs = Math.ceil(wait)
        this.merge(c, seq, added)
      }
    }
    const changes = this.changes()
    return fullInMs === undefined ? { changes } : { changes, fullInMs }
  }

  /**
   * The identities whose scaled score differs from what was last returned. Between full computations
   * the numbering stays, so each score is compared with the one shown at its number (no lookup by ID),
   * and a change counts once it reaches a whole thousandth: repaired scores are within about 0.1 % of
   * exact, and that noise alone flipped the rounding of 40 % of a million scores. After one, every
   * score is compared exactly with the map of what was shown by ID, so nodes agree after each.
   */
  private changes(): [string, number][] {
    const changes: [string, number][] = []
    const c = this.computed
    if (c && this.shown?.ids === c.ids) {
      const shown = this.shown.scores
      for (let i = 0; i < c.ids.length; i++) {
        const exact = scaledScore(c.scores[i]!, c.ids.length)
        if (Math.abs(exact - shown[i]!) < 0.001 && (exact > 0 || shown[i] === 0)) continue
        const score = Math.round(exact * 1000) / 1000
        if (score === shown[i]) continue
        shown[i] = score
        const id = c.ids[i]!
        changes.push([id, score])
        if (score > 0) this.published.set(id, score)
        else this.published.delete(id)
      }
      return changes
    }
    const seen = new Set<string>()
    const shown = new Float64Array(c?.ids.length ?? 0)
    if (c)
      for (let i = 0; i < c.ids.length; i++) {
        const id = c.ids[i]!
        const score = shownScore(c.scores[i]!, c.ids.length)
        shown[i] = score
        if (score > 0) seen.add(id)
        if (score !== (this.published.get(id) ?? 0)) {
          changes.push([id, score])
          if (score > 0) this.published.set(id, score)
          else this.published.delete(id)
        }
      }
    for (const id of [...this.published.keys()])
      if (!seen.has(id)) {
        this.published.delete(id)
        changes.push([id, 0])
      }
    this.shown = c ? { ids: c.ids, scores: shown } : null
    return changes
  }

  /**
   * Why `id` has its score, as last computed: the identities with an edge into it (the issuers of
   * its attestations and its developer), each with the part of its score it passes on.
   */
  explain(id: string, top = 5): TrustExplanation {
    const c = this.computed
    const i = c?.index.get(id)
    if (!c || i === undefined) return NO_EXPLANATION
    const candidates = new Set<number>()
    for (const r of this.source.attestationsOf(id)) {
      const from = c.index.get(r.issuer)
      if (from !== undefined) candidates.add(from)
    }
    const owner = c.owners.get(id)
    const ownerIndex = owner === undefined ? undefined : c.index.get(owner)
    if (ownerIndex !== undefined) candidates.add(ownerIndex)
    const received: [number, number][] = []
    for (const from of candidates) {
      const share = shareOf(c.graph, from, i)
      if (share > 0 && c.scores[from]! > 0) received.push([from, (1 - DEFAULT_RESTART) * c.scores[from]! * share])
    }
    const total = c.scores[i]!
    return {
      // What resolve and search show: between full computations a repaired score is reported only once
      // it moves a whole thousandth, so rounding it afresh here could disagree with them in the last digit.
      transitive: this.published.get(id) ?? 0,
      share: total,
      seed: c.seeds.includes(i),
      attesters: received
        .sort((a, b) => b[1] - a[1] || a[0] - b[0])
        .slice(0, top)
        .map(([from, amount]) => ({
          issuer: c.ids[from]!,
          share: total > 0 ? Math.round((amount / total) * 1e4) / 1e4 : 0
        }))
    }
  }

  /** The log after the computation's sequence number: the attestations added, and whether identities changed. */
  private readLog(c: Computed): { seq: number; added: AttestationRecord[]; structural: boolean } {
    const added: AttestationRecord[] = []
    let structural = false
    let seq = c.seq
    for (;;) {
      const page = this.source.operationsAfter(seq, LOG_PAGE)
      for (const [at, op] of page) {
        seq = at
        if (STRUCTURAL.has(op.kind)) structural = true
        if (op.kind !== 'attestation.add') continue
        const record = this.source.getAttestation(op.subject)
        if (!record) continue
        if (c.index.has(record.issuer) && c.index.has(record.subject)) added.push(record)
        else structural = true
      }
      if (page.length < LOG_PAGE) return { seq, added, structural }
    }
  }

  /** The attestations added since merged into their issuers' rows, the scores repaired from the previous ones. */
  private merge(c: Computed, seq: number, added: readonly AttestationRecord[]): void {
    if (added.length === 0) {
      this.computed = { ...c, seq }
      return
    }
    const list = new EdgeList()
    for (const r of added) list.addAttestation(r, c.index, c.hour)
    const edges = list.edges()
    const graph = c.graph.withAdded(edges)
    this.computed = { ...c, seq, graph, scores: repair(c, graph, edges.from, c.seeds).scores }
  }

  /** Reads every developer, entity and attestation edge of one snapshot, streaming: nothing but the edges is kept. */
  private computeAll(hour: number): void {
    const began = this.clock()
    this.computed = this.source.snapshot(view => {
      if (view.attestations()[Symbol.iterator]().next().done) return null
      const owners = new Map<string, string>()
      const ids = new Set<string>()
      const seedIds = new Set(this.seeds)
      for (const d of view.developers()) {
        ids.add(d.developer_id)
        if (d.dev_handle_verified) seedIds.add(d.developer_id)
      }
      for (const e of view.entities()) {
        ids.add(e.entity_id)
        if (e.developer_id) owners.set(e.entity_id, e.developer_id)
      }
      const sorted = [...ids].sort()
      ids.clear()
      const index = new TrustIdIndex(sorted)
      const list = new EdgeList()
      // The edges, not the records: no record decoded and no string made per attestation. They come
      // in issuer order, so each issuer is looked up once.
      let issuerKey: Uint8Array | null = null
      let i: number | undefined
      for (const [key, edge] of view.attestationEdges()) {
        if (issuerKey === null || Buffer.compare(key, issuerKey) !== 0) {
          issuerKey = key
          i = index.getRaw(edgeIssuer(key))
        }
        if (i === undefined) continue
        const j = index.getRaw(edgeSubject(edge))
        const w = attestationWeight(edgeFacts(edge), hour)
        if (j !== undefined && w > 0) list.add(i, j, w)
      }
      for (const [entity, developer] of owners) {
        const e = index.get(entity)
        const d = index.get(developer)
        if (e === undefined || d === undefined) continue
        list.add(d, e, OWNERSHIP_WEIGHT)
        list.add(e, d, OWNERSHIP_WEIGHT)
      }
      const graph = TrustGraph.build(sorted.length, list.edges())
      const seeds = [...seedIds].map(id => index.get(id)).filter((i): i is number => i !== undefined)
      return {
        seq: view.lastSeq,
        ids: sorted,
        index,
        owners,
        seeds,
        graph,
        scores: propagate(graph, seeds).scores,
        hour
      }
    })
    this.owed = false
    const endedAt = this.clock()
    this.lastFull = { endedAt, tookMs: endedAt - began }
  }
}

/**
 * The score as the node shows and ranks it: to a thousandth, the precision of `trust_score`. Finer
 * differences are not news: 1,000 new attestations at a million identities moved half a million
 * scores in their sixth decimal, and reporting those to search took seconds.
 */
function shownScore(score: number, identities: number): number {
  return Math.round(scaledScore(score, identities) * 1000) / 1000
}

/** The share of `from`'s trust that goes to `to` (0: no edge), by a binary search of its row. */
function shareOf(graph: TrustGraph, from: number, to: number): number {
  const { columns, weights } = graph.row(from)
  let low = 0
  let high = columns.length - 1
  while (low <= high) {
    const mid = (low + high) >> 1
    const c = columns[mid]!
    if (c === to) return weights[mid]! / graph.rowTotals[from]!
    if (c < to) low = mid + 1
    else high = mid - 1
  }
  return 0
}

/** Edges gathered into growing typed arrays: ten million of them take 160 MB, not the gigabytes of arrays of numbers. */
class EdgeList {
  private from = new Uint32Array(1024)
  private to = new Uint32Array(1024)
  private weight = new Float64Array(1024)
  private length = 0

  add(from: number, to: number, weight: number): void {
    if (this.length === this.from.length) {
      const size = this.length * 2
      this.from = grown(this.from, new Uint32Array(size))
      this.to = grown(this.to, new Uint32Array(size))
      this.weight = grown(this.weight, new Float64Array(size))
    }
    this.from[this.length] = from
    this.to[this.length] = to
    this.weight[this.length] = weight
    this.length++
  }

  addAttestation(r: AttestationRecord, index: TrustIdIndex, hour: number): void {
    const i = index.get(r.issuer)
    const j = index.get(r.subject)
    if (i === undefined || j === undefined) return
    const w = attestationWeight(facts(r), hour)
    if (w > 0) this.add(i, j, w)
  }

  edges(): TrustEdges {
    return {
      from: this.from.subarray(0, this.length),
      to: this.to.subarray(0, this.length),
      weight: this.weight.subarray(0, this.length)
    }
  }
}

function grown<T extends Uint32Array | Float64Array>(old: T, next: T): T {
  next.set(old)
  return next
}
