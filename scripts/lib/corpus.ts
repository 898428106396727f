/**
 * A synthetic registry corpus for search benchmarks: words drawn from a Zipf-distributed
 * vocabulary whose most frequent words are this domain's (agent, ai, api, data, service, …),
 * followed by 20,000 rarer made-up words. Seeded, so every run sees the same entities and queries.
 */
import { seededRandom } from './random.js'

/** The domain's frequent words, most frequent first (Zipf ranks 1 to 30). */
export const DOMAIN = [
  'agent',
  'ai',
  'api',
  'data',
  'service',
  'translate',
  'summarize',
  'code',
  'search',
  'image',
  'voice',
  'chat',
  'weather',
  'payment',
  'email',
  'calendar',
  'document',
  'scrape',
  'sentiment',
  'finance',
  'travel',
  'recommend',
  'classify',
  'extract',
  'generate',
  'test',
  'security',
  'map',
  'crypto',
  'health'
] as const

/** Every word by Zipf rank: DOMAIN, then `w0` … `wfzz` (base 36), rarer and rarer. */
export const VOCABULARY: readonly string[] = [
  ...DOMAIN,
  ...Array.from({ length: 20_000 }, (_, i) => `w${i.toString(36)}`)
]

export const CATEGORIES = [
  'tools',
  'finance',
  'travel',
  'research',
  'language',
  'productivity',
  'developer-tools',
  'data',
  'media',
  'health'
] as const

/** Share of entities that are services (the rest are agents). */
export const SERVICE_SHARE = 0.2

export interface Corpus {
  /** The generator's own uniform [0, 1) stream (seeded). */
  random: () => number
  /** One word, drawn with probability ∝ 1 / rank^1.07. */
  word: () => string
  /** n words joined by spaces. */
  words: (n: number) => string
}

export function zipfCorpus(seed = 42, exponent = 1.07): Corpus {
  const random = seededRandom(seed)
  const cumulative = new Float64Array(VOCABULARY.length)
  let total = 0
  for (let r = 0; r < VOCABULARY.length; r++) cumulative[r] = total += 1 / (r + 1) ** exponent
  const word = (): string => {
    const x = random() * total
    let lo = 0
    let hi = cumulative.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if ((cumulative[mid] as number) < x) lo = mid + 1
      else hi = mid
    }
    return VOCABULARY[lo] as string
  }
  return { random, word, words: n => Array.from({ length: n }, word).join(' ') }
}

/** The searchable content of the i-th entity (what the engine indexes). */
export interface EntityContent {
  type: 'agent' | 'service'
  name: string
  category: string
  summary: string
  tags: string[]
  capability_summary: { skills: string[] }
}

/**
 * The i-th entity's content: a 3-word name, a 20-word summary, 3 tags and 2 skills, all Zipf words;
 * category i mod 10; 20% services. Call with i = 0, 1, 2, … in order (the corpus is one stream).
 */
export function entityContent(corpus: Corpus, i: number): EntityContent {
  const type = corpus.random() < SERVICE_SHARE ? 'service' : 'agent'
  return {
    type,
    name: corpus.words(3),
    category: CATEGORIES[i % CATEGORIES.length] as string,
    summary: corpus.words(20),
    tags: [...new Set([corpus.word(), corpus.word(), corpus.word()])],
    capability_summary: { skills: [...new Set([corpus.word(), corpus.word()])] }
  }
}

/**
 * The i-th entity as an unsigned spec-form registration body (POST /v1/entities) without its keys:
 * the caller adds public_key (and developer_id with developer_proof) and signs the canonical JSON.
 */
export function registrationBody(content: EntityContent, i: number): Record<string, unknown> {
  return {
    ...content,
    version: '1.0.0',
    ...(content.type === 'agent'
      ? { entity_url: `https://agent${i}.bench.example` }
      : { service_endpoint: `https://service${i}.bench.example/api` })
  }
}
