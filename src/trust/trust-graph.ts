/**
 * The attestation graph in compressed sparse row form: identities are numbered 0 … n − 1 by the
 * caller, and each edge is the local trust an issuer places in a subject, the sum of that issuer's
 * attestations of that subject. Weights are counted in whole thousandths, so every sum is exact and
 * two nodes holding the same attestations get the same rows whatever order they arrived in (and
 * then bit-identical scores). Attestations added later replace only their issuers' rows: the rest
 * stays shared with the graph they were added to.
 */

/** Edges as parallel arrays: `from[k]` trusts `to[k]` with `weight[k]` (> 0; others are dropped). */
export interface TrustEdges {
  from: Uint32Array
  to: Uint32Array
  weight: Float64Array
}

/** Weights are kept in units of 1 / WEIGHT_UNITS (rounded): integer sums are exact in any order. */
export const WEIGHT_UNITS = 1000

/** One issuer's edges: subjects ascending, with their summed weights. */
interface Row {
  columns: Uint32Array
  weights: Float64Array
}

export class TrustGraph {
  private constructor(
    /** Identities. */
    readonly size: number,
    /** Row i's edges are `columns[rowStart[i] … rowStart[i + 1] − 1]`, unless `replaced` holds row i. */
    readonly rowStart: Uint32Array,
    /** Subjects, ascending within each row. */
    readonly columns: Uint32Array,
    /** Summed weights, in units of 1 / WEIGHT_UNITS. */
    readonly weights: Float64Array,
    /** Each row's total weight. */
    readonly rowTotals: Float64Array,
    /** Rows replaced since the arrays above were built (by `withAdded`). */
    readonly replaced: ReadonlyMap<number, Row>
  ) {}

  get edgeCount(): number {
    let count = this.columns.length
    for (const [i, row] of this.replaced) count += row.columns.length - (this.rowStart[i + 1]! - this.rowStart[i]!)
    return count
  }

  /** Edges out of `node`: subjects and their shares of its trust. */
  edgesOf(node: number): { subject: number; share: number }[] {
    const { columns, weights } = this.row(node)
    const total = this.rowTotals[node]!
    return Array.from(columns, (subject, k) => ({ subject, share: weights[k]! / total }))
  }

  /** Row `node`, from the replaced rows or as a view of the arrays. */
  row(node: number): Row {
    const replaced = this.replaced.get(node)
    if (replaced) return replaced
    const begin = this.rowStart[node]!
    const end = this.rowStart[node + 1]!
    return { columns: this.columns.subarray(begin, end), weights: this.weights.subarray(begin, end) }
  }

  /**
   * Builds the graph of `size` identities: edges with the same issuer and subject are summed, self
   * edges and weights that are not positive and finite dropped. A counting sort by issuer, then a
   * sort of each row by subject: O(edges) apart from the rows' own sorts.
   */
  static build(size: number, edges: TrustEdges): TrustGraph {
    const { from, to, weight } = edges
    const start = new Uint32Array(size + 1)
    for (let k = 0; k < from.length; k++) if (units(from[k]!, to[k]!, weight[k]!, size) > 0) start[from[k]! + 1]!++
    for (let i = 0; i < size; i++) start[i + 1]! += start[i]!
    const kept = start[size]!
    const cursor = start.slice(0, size)
    const columns = new Uint32Array(kept)
    const values = new Float64Array(kept)
    for (let k = 0; k < from.length; k++) {
      const w = units(from[k]!, to[k]!, weight[k]!, size)
      if (w <= 0) continue
      const at = cursor[from[k]!]!++
      columns[at] = to[k]!
      values[at] = w
    }
    const rowStart = new Uint32Array(size + 1)
    const rowTotals = new Float64Array(size)
    let written = 0
    for (let i = 0; i < size; i++) {
      rowStart[i] = written
      sortRow(columns, values, start[i]!, start[i + 1]!)
      const rowBegin = written
      for (let k = start[i]!; k < start[i + 1]!; k++) {
        rowTotals[i]! += values[k]!
        if (written > rowBegin && columns[written - 1] === columns[k]) values[written - 1]! += values[k]!
        else {
          columns[written] = columns[k]!
          values[written] = values[k]!
          written++
        }
      }
    }
    rowStart[size] = written
    return new TrustGraph(size, rowStart, columns.slice(0, written), values.slice(0, written), rowTotals, new Map())
  }

  /**
   * This graph with `edges` added: the rows of their issuers are merged into new rows, every other
   * row stays shared. The result equals `build` over all the edges (the same rows and totals).
   */
  withAdded(edges: TrustEdges): TrustGraph {
    const byIssuer = new Map<number, { to: number[]; weight: number[] }>()
    for (let k = 0; k < edges.from.length; k++) {
      const w = units(edges.from[k]!, edges.to[k]!, edges.weight[k]!, this.size)
      if (w <= 0) continue
      const list = byIssuer.get(edges.from[k]!) ?? { to: [], weight: [] }
      list.to.push(edges.to[k]!)
      list.weight.push(w)
      byIssuer.set(edges.from[k]!, list)
    }
    if (byIssuer.size === 0) return this
    const replaced = new Map(this.replaced)
    const rowTotals = this.rowTotals.slice()
    for (const [issuer, added] of byIssuer) {
      const old = this.row(issuer)
      const columns = new Uint32Array(old.columns.length + added.to.length)
      const weights = new Float64Array(columns.length)
      columns.set(old.columns)
      weights.set(old.weights)
      columns.set(added.to, old.columns.length)
      weights.set(added.weight, old.columns.length)
      sortRow(columns, weights, 0, columns.length)
      let written = 0
      for (let k = 0; k < columns.length; k++) {
        if (written > 0 && columns[written - 1] === columns[k]) weights[written - 1]! += weights[k]!
        else {
          columns[written] = columns[k]!
          weights[written] = weights[k]!
          written++
        }
      }
      for (const w of added.weight) rowTotals[issuer]! += w
      replaced.set(issuer, { columns: columns.slice(0, written), weights: weights.slice(0, written) })
    }
    return new TrustGraph(this.size, this.rowStart, this.columns, this.weights, rowTotals, replaced)
  }
}

/** The edge's weight in whole units, or 0 when it is dropped. */
function units(from: number, to: number, weight: number, size: number): number {
  if (from === to || from >= size || to >= size || !(weight > 0) || !Number.isFinite(weight)) return 0
  return Math.round(weight * WEIGHT_UNITS)
}

/** Sorts `columns[begin … end − 1]` ascending, moving `values` along: insertion sort for short rows. */
function sortRow(columns: Uint32Array, values: Float64Array, begin: number, end: number): void {
  if (end - begin <= 32) {
    for (let k = begin + 1; k < end; k++) {
      const c = columns[k]!
      const v = values[k]!
      let j = k - 1
      while (j >= begin && columns[j]! > c) {
        columns[j + 1] = columns[j]!
        values[j + 1] = values[j]!
        j--
      }
      columns[j + 1] = c
      values[j + 1] = v
    }
    return
  }
  const order = Array.from({ length: end - begin }, (_, k) => begin + k).sort(
    (a, b) => columns[a]! - columns[b]! || a - b
  )
  const c = order.map(k => columns[k]!)
  const v = order.map(k => values[k]!)
  columns.set(c, begin)
  values.set(v, begin)
}
