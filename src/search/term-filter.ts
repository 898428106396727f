/**
 * A Bloom filter of analyzed search terms (bloom-filters' BloomFilter): what a node tells its peers
 * about the words of its home records, so a federated query goes only to peers that may hold a match.
 * Terms are the analyzer's output on both sides (stemmed, lowercased), so a query term and a
 * document term that would match in the index also match here. A false positive costs one needless
 * peer request; there are no false negatives.
 *
 * The index rule is bloom-filters' own (`getIndexes`: two XXH64 hashes of the term, then enhanced
 * double hashing), but the two hashes are computed once per term and passed around (`TermHash`), by
 * our own XXH64 (xxh64.ts: the same values as bloom-filters' xxhashjs, which cost about 8 µs a term
 * here, a quarter of indexing a registration's record).
 */
import bf from 'bloom-filters'
import { xxh64Low32 } from './xxh64.js'

type BloomFilter = InstanceType<typeof bf.BloomFilter>

/** bloom-filters' own default seed; every filter of ours uses it, so a term's hashes serve every filter. */
export const TERM_FILTER_SEED = 0x1234567890

/** The two base hashes of a term: the low 32 bits of XXH64 with seeds (seed + 1) and (seed + 2) mod 2³² (protocols/README.md). */
export interface TermHash {
  first: number
  second: number
}

const hashing = new bf.Hashing()

export function hashTerm(term: string): TermHash {
  return { first: xxh64Low32(term, TERM_FILTER_SEED + 1), second: xxh64Low32(term, TERM_FILTER_SEED + 2) }
}

export interface TermFilterShape {
  /** Size m in bits, a multiple of 8. */
  bits: number
  /** Number of index functions k. */
  hashes: number
  seed: number
  /** Distinct terms added. */
  items: number
}

export class TermFilter implements TermFilterShape {
  private constructor(
    private readonly bloom: BloomFilter,
    readonly items: number
  ) {}

  /**
   * A filter sized for `count` terms at `falsePositiveRate`, at most `maxBits` (beyond that the
   * rate grows: more peers asked, never fewer).
   */
  static build(terms: Iterable<TermHash>, count: number, falsePositiveRate: number, maxBits: number): TermFilter {
    const n = Math.max(1, count)
    const optimal = Math.ceil(-(n * Math.log(falsePositiveRate)) / (Math.LN2 * Math.LN2))
    // A multiple of 8, so that the bit array has no padding and `bits` says exactly what indexes range over.
    const bits = Math.min(maxBits, Math.max(64, Math.ceil(optimal / 8) * 8))
    const hashes = Math.max(1, Math.min(32, Math.round((bits / n) * Math.LN2)))
    const bloom = new bf.BloomFilter(bits, hashes)
    bloom.seed = TERM_FILTER_SEED
    let items = 0
    for (const h of terms) {
      for (let i = 0; i < hashes; i++) bloom._filter.add(hashing.doubleHashing(i, h.first, h.second, bits))
      items++
    }
    return new TermFilter(bloom, items)
  }

  /** Rebuilds a filter from its parts (a peer's message, already validated). Throws on a size mismatch. */
  static decode(shape: TermFilterShape, bytes: Uint8Array): TermFilter {
    if (shape.bits % 8 !== 0 || bytes.byteLength !== shape.bits / 8)
      throw new Error(`filter: ${bytes.byteLength} bytes for ${shape.bits} bits`)
    const bloom = new bf.BloomFilter(shape.bits, shape.hashes)
    bloom.seed = shape.seed
    bloom._filter.array = new Uint8Array(bytes)
    return new TermFilter(bloom, shape.items)
  }

  get bits(): number {
    return this.bloom._size
  }
  get hashes(): number {
    return this.bloom._nbHashes
  }
  get seed(): number {
    return this.bloom.seed
  }

  /**
   * Membership of a term; `h`, its precomputed hashes, saves hashing it again (used when this
   * filter has our seed; a peer's filter with another seed hashes the term itself).
   */
  has(term: string, h?: TermHash): boolean {
    const bloom = this.bloom
    if (h === undefined || bloom.seed !== TERM_FILTER_SEED) return bloom.has(term)
    for (let i = 0; i < bloom._nbHashes; i++)
      if (!bloom._filter.has(hashing.doubleHashing(i, h.first, h.second, bloom._size))) return false
    return true
  }

  /** The bit array (bit i is bit i mod 8 of byte floor(i / 8)). */
  bytes(): Uint8Array {
    return this.bloom._filter.array
  }
}
