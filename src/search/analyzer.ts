/**
 * Text analysis for search: one pipeline for documents and queries, so both sides always agree.
 *
 *   tokenize   NFKC, Unicode lowercase, runs of letters/digits/combining marks (\p{L}\p{N}\p{M});
 *              everything else separates tokens ("job_scraper-v2" → job, scraper, v2).
 *              Marks are part of words so that Devanagari, Thai, … words and decomposed accents
 *              are not cut in pieces.
 *   analyze    tokenize → drop single Latin letters (the "s" of "agent's") → cap at 64 chars →
 *              drop stopwords → Porter stem (@orama/stemmers, English) the Latin-script words.
 *              Order is kept: positions feed phrase matching.
 *   analyzeQuery  the same, plus "quoted phrases" and synonym expansion (weight 0.5).
 *
 * What the Go registry got wrong and this avoids (prior-art-agentdns §6.3): its suffix-stripping
 * "stemmer" (`ation` unreachable, `translation`→`transla` but `translate`→`translate`), and
 * synonyms appended unstemmed so they never met the stemmed index terms. Here every synonym entry
 * goes through analyze() once, at load, and the query's stemmed terms look up stemmed expansions.
 *
 * Stopwords: the English list of @orama/stopwords (180 words: pronouns, auxiliaries, articles,
 * prepositions, conjunctions, "not", "only", "very", …), plus ours:
 *   - the fragments that contractions leave after splitting on the apostrophe ("don't" → don, t):
 *     the list holds "don't" whole, which our tokenizer never produces;
 *   - "also", "etc", "eg", "ie", "please", "via": filler in summaries and queries.
 * We do not strip registry words such as "agent" or "service": BM25's idf already discounts
 * them, and an entity may well be named after them.
 *
 * Synonyms (SYNONYM_GROUPS): groups of interchangeable words; every entry is analyzed like any
 * text. A single-token entry expands to the other single-token entries of its group(s). A
 * multi-token entry ("large-language-model" → larg languag model) is a trigger only: when the query
 * holds it as consecutive analyzed tokens (stopwords are gone by then, so "language of the model"
 * counts too, exactly as it would for a phrase), the group's single-token entries are added (llm, gpt);
 * it is never itself added as an expansion, because a query term is one token and adding its
 * parts (larg, languag, model) would match every "model". Expansions weigh SYNONYM_WEIGHT (0.5);
 * an expansion equal to a user term stays a user term (weight 1).
 */
import { stemmer } from '@orama/stemmers/english'
import { stopwords as englishStopwords } from '@orama/stopwords/english'

/** Longest token kept (longer runs are cut: base64 blobs, URLs without separators). */
export const MAX_TOKEN_LENGTH = 64
/** Weight of a synonym expansion relative to the user's own words. */
export const SYNONYM_WEIGHT = 0.5

/** Our additions to the English stopword list (see the module comment). */
export const EXTRA_STOPWORDS: readonly string[] = Object.freeze([
  // contraction fragments
  'don',
  'doesn',
  'didn',
  'isn',
  'aren',
  'wasn',
  'weren',
  'hasn',
  'haven',
  'hadn',
  'won',
  'wouldn',
  'shan',
  'shouldn',
  'couldn',
  'mustn',
  'ain',
  'll',
  've',
  're',
  // filler
  'also',
  'etc',
  'eg',
  'ie',
  'please',
  'via'
])

const STOPWORDS: ReadonlySet<string> = new Set([...englishStopwords, ...EXTRA_STOPWORDS])

export function isStopword(token: string): boolean {
  return STOPWORDS.has(token)
}

/**
 * Groups of interchangeable words for the vocabulary of agents and services. The first entry of
 * each group is its representative (used by the hash embedder) and must be a single word.
 * Hyphenated entries are multi-word: they match the spaced or hyphenated form in a query.
 * Groups may overlap (stt is in both speech and transcription); expansions are then the union.
 */
export const SYNONYM_GROUPS: readonly (readonly string[])[] = Object.freeze(
  (
    [
      // from the brief
      ['translate', 'translation', 'translator', 'translating'],
      ['summarize', 'summarise', 'summary', 'summarization', 'summarisation', 'summariser', 'summarizer'],
      ['code', 'coding', 'programming', 'developer', 'software'],
      ['llm', 'language-model', 'large-language-model', 'gpt'],
      ['search', 'retrieval', 'lookup', 'find'],
      ['image', 'picture', 'photo', 'vision'],
      ['speech', 'voice', 'audio', 'tts', 'stt', 'text-to-speech', 'speech-to-text'],
      ['chat', 'chatbot', 'conversation', 'assistant'],
      ['data', 'dataset', 'database'],
      ['weather', 'forecast'],
      ['payment', 'pay', 'billing', 'invoice'],
      ['email', 'mail'],
      ['schedule', 'calendar', 'booking', 'appointment'],
      ['pdf', 'document', 'doc'],
      ['scrape', 'scraping', 'scraper', 'crawler', 'crawl'],
      ['sentiment', 'emotion'],
      ['finance', 'financial', 'stock', 'trading'],
      ['travel', 'flight', 'hotel'],
      ['recommend', 'recommendation', 'recommender'],
      ['classify', 'classification', 'categorize', 'categorise', 'categorization'],
      ['extract', 'extraction', 'parse', 'parser'],
      ['generate', 'generation', 'create'],
      ['test', 'testing', 'qa'],
      ['security', 'vulnerability', 'audit'],
      ['map', 'geocode', 'location'],
      // ours
      ['ai', 'artificial-intelligence'],
      ['ml', 'machine-learning'],
      ['nlp', 'natural-language-processing'],
      ['ocr', 'optical-character-recognition'],
      ['transcribe', 'transcription', 'transcript', 'stt', 'speech-to-text'],
      ['javascript', 'js'],
      ['typescript', 'ts'],
      ['python', 'py'],
      ['crypto', 'cryptocurrency', 'blockchain', 'web3'],
      ['monitor', 'monitoring', 'observability', 'uptime'],
      ['health', 'healthcare', 'medical', 'clinical']
    ] as string[][]
  ).map(group => Object.freeze(group))
)

// ---------------------------------------------------------------------------------------------
// Tokens

const TOKEN = /[\p{L}\p{N}\p{M}]+/gu
const SINGLE_LATIN_LETTER = /^[a-z]$/
const STEMMABLE = /^[\p{Script=Latin}\p{M}]+$/u
const NON_ASCII = /[^\x00-\x7f]/

/** NFKC (ligatures, full-width forms), Unicode lowercase, runs of letters/digits/marks. */
export function tokenize(text: string): string[] {
  const normalized = NON_ASCII.test(text) ? text.normalize('NFKC') : text
  return normalized.toLowerCase().match(TOKEN) ?? []
}

const STEM_CACHE_LIMIT = 50_000
const stemCache = new Map<string, string>()

function stem(token: string): string {
  let stemmed = stemCache.get(token)
  if (stemmed === undefined) {
    stemmed = token.length > 2 && STEMMABLE.test(token) ? stemmer(token) : token
    if (stemCache.size >= STEM_CACHE_LIMIT) stemCache.clear()
    stemCache.set(token, stemmed)
  }
  return stemmed
}

function cap(token: string): string {
  if (token.length <= MAX_TOKEN_LENGTH) return token
  const code = token.charCodeAt(MAX_TOKEN_LENGTH - 1)
  // do not leave half a surrogate pair
  return token.slice(0, code >= 0xd800 && code <= 0xdbff ? MAX_TOKEN_LENGTH - 1 : MAX_TOKEN_LENGTH)
}

/** tokenize → drop single Latin letters → cap length → drop stopwords → stem; order kept. */
export function analyze(text: string): string[] {
  const out: string[] = []
  for (const raw of tokenize(text)) {
    if (raw.length === 1 && SINGLE_LATIN_LETTER.test(raw)) continue
    const token = cap(raw)
    if (STOPWORDS.has(token)) continue
    out.push(stem(token))
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Synonyms, compiled once

interface CompiledSynonyms {
  /** Stemmed single-token entry → the single-token entries of all its groups (itself excluded). */
  single: Map<string, string[]>
  /** First token of a multi-token entry → the entries starting with it, with their expansions. */
  multi: Map<string, { tokens: string[]; expansions: string[]; representatives: string[] }[]>
  /** Stemmed single-token entry → representatives of its groups. */
  representatives: Map<string, string[]>
}

function compileSynonyms(groups: readonly (readonly string[])[]): CompiledSynonyms {
  const analyzed = groups.map((group, g) => {
    const entries = group.map(entry => {
      const tokens = analyze(entry)
      if (tokens.length === 0) throw new Error(`synonym group ${g}: "${entry}" analyzes to nothing`)
      return tokens
    })
    if (entries[0]!.length !== 1) throw new Error(`synonym group ${g}: the first entry must be a single word`)
    const singles = [...new Set(entries.filter(e => e.length === 1).map(e => e[0]!))]
    return { representative: entries[0]![0]!, entries, singles }
  })
  const single = new Map<string, Set<string>>()
  const representatives = new Map<string, Set<string>>()
  const multi = new Map<string, { tokens: string[]; expansions: Set<string>; representatives: Set<string> }[]>()
  const add = (map: Map<string, Set<string>>, key: string, values: readonly string[]): void => {
    let set = map.get(key)
    if (!set) map.set(key, (set = new Set()))
    for (const v of values) if (v !== key) set.add(v)
  }
  for (const { representative, entries, singles } of analyzed) {
    for (const tokens of entries) {
      if (tokens.length === 1) {
        add(single, tokens[0]!, singles)
        let reps = representatives.get(tokens[0]!)
        if (!reps) representatives.set(tokens[0]!, (reps = new Set()))
        reps.add(representative)
        continue
      }
      let list = multi.get(tokens[0]!)
      if (!list) multi.set(tokens[0]!, (list = []))
      let item = list.find(m => m.tokens.join(' ') === tokens.join(' '))
      if (!item) list.push((item = { tokens, expansions: new Set(), representatives: new Set() }))
      for (const s of singles) item.expansions.add(s)
      item.representatives.add(representative)
    }
  }
  // longest multi-token entries first, so "large language model" wins over "language model"
  for (const list of multi.values()) list.sort((a, b) => b.tokens.length - a.tokens.length)
  return {
    single: new Map([...single].map(([k, v]) => [k, [...v]])),
    representatives: new Map([...representatives].map(([k, v]) => [k, [...v]])),
    multi: new Map(
      [...multi].map(([k, list]) => [
        k,
        list.map(m => ({ tokens: m.tokens, expansions: [...m.expansions], representatives: [...m.representatives] }))
      ])
    )
  }
}

const SYNONYMS = compileSynonyms(SYNONYM_GROUPS)

/** A synonym entry found in a token sequence: where, how long, and what it brings. */
interface SynonymMatch {
  start: number
  length: number
  expansions: readonly string[]
  representatives: readonly string[]
}

/**
 * The synonym entries of `tokens` (analyzed), left to right, longest first: a multi-token entry
 * found as a run ("larg languag model") covers its tokens, so neither the shorter entries inside
 * it ("languag model") nor single entries inside it count again.
 */
function* synonymMatches(tokens: readonly string[]): Generator<SynonymMatch> {
  let i = 0
  next: while (i < tokens.length) {
    const token = tokens[i]!
    const candidates = SYNONYMS.multi.get(token)
    if (candidates) {
      for (const m of candidates) {
        if (i + m.tokens.length > tokens.length) continue
        let ok = true
        for (let j = 1; j < m.tokens.length && ok; j++) ok = tokens[i + j] === m.tokens[j]
        if (!ok) continue
        yield { start: i, length: m.tokens.length, expansions: m.expansions, representatives: m.representatives }
        i += m.tokens.length
        continue next
      }
    }
    const reps = SYNONYMS.representatives.get(token)
    if (reps) yield { start: i, length: 1, expansions: SYNONYMS.single.get(token) ?? [], representatives: reps }
    i++
  }
}

/**
 * The synonym-group representatives of an analyzed token sequence, one per group of each match
 * (see synonymMatches). Used by the hash embedder.
 */
export function synonymRepresentatives(tokens: readonly string[]): string[] {
  const out: string[] = []
  for (const m of synonymMatches(tokens)) for (const r of m.representatives) out.push(r)
  return out
}

/** Stemmed expansions of one analyzed term (single-token entries of its groups), [] when none. */
export function synonymsOf(term: string): readonly string[] {
  return SYNONYMS.single.get(term) ?? []
}

// ---------------------------------------------------------------------------------------------
// Queries

export interface QueryTerm {
  /** Analyzed (stemmed) term. */
  term: string
  /** 1 for the user's words, SYNONYM_WEIGHT for synonym expansions. */
  weight: number
  /** For expansions: the analyzed user term (or space-joined run of terms) that brought it. */
  synonymOf?: string
}

export interface AnalyzedQuery {
  /** User terms first (in order of appearance), then expansions; each term once. */
  terms: QueryTerm[]
  /** Each "quoted phrase" as its analyzed token sequence (non-empty, deduplicated). */
  phrases: string[][]
  raw: string
}

const QUOTED = /"([^"]*)"/g
const CURLY_QUOTES = /[\u201c\u201d\u201e\u201f\u00ab\u00bb]/g

/**
 * Terms and phrases of a search query. Straight and typographic double quotes delimit phrases; a
 * quote without its partner is ordinary punctuation. Phrase words are also ordinary terms.
 */
export function analyzeQuery(query: string): AnalyzedQuery {
  const text = query.replace(CURLY_QUOTES, '"')
  const phrases: string[][] = []
  const seenPhrases = new Set<string>()
  for (const match of text.matchAll(QUOTED)) {
    const tokens = analyze(match[1]!)
    const key = tokens.join(' ')
    if (tokens.length === 0 || seenPhrases.has(key)) continue
    seenPhrases.add(key)
    phrases.push(tokens)
  }
  const tokens = analyze(text)
  const terms: QueryTerm[] = []
  const index = new Map<string, QueryTerm>()
  for (const term of tokens) {
    if (index.has(term)) continue
    const entry: QueryTerm = { term, weight: 1 }
    index.set(term, entry)
    terms.push(entry)
  }
  for (const m of synonymMatches(tokens)) {
    const source = tokens.slice(m.start, m.start + m.length).join(' ')
    for (const term of m.expansions) {
      if (index.has(term)) continue
      const entry: QueryTerm = { term, weight: SYNONYM_WEIGHT, synonymOf: source }
      index.set(term, entry)
      terms.push(entry)
    }
  }
  return { terms, phrases, raw: query }
}

// ---------------------------------------------------------------------------------------------

/**
 * FNV-1a (32-bit) of everything that decides analyze()'s output besides the pinned stemmer:
 * stopwords, synonym groups and the token rules' version. Part of the hash embedder's id, so
 * stored vectors are known stale when the tables change.
 */
export const ANALYZER_FINGERPRINT: string = (() => {
  const text = JSON.stringify(['analyzer-v1', MAX_TOKEN_LENGTH, [...STOPWORDS].sort(), SYNONYM_GROUPS])
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return (h >>> 0).toString(16).padStart(8, '0')
})()
