import test from 'ava'
import { pino } from 'pino'
import { analyze } from '../../src/search/analyzer.js'
import { hashTerm, TermFilter, TERM_FILTER_SEED } from '../../src/search/term-filter.js'
import { HomeTermSummary } from '../../src/services/search/home-terms.js'
import type { FieldTokens } from '../../src/search/text-index.js'
import { sleep, until } from '../helpers/wait.js'

const fields = (text: string): FieldTokens => ({
  name: analyze(text),
  tags: [],
  category: [],
  summary: [],
  capabilities: []
})

test('a term filter has no false negatives, and few false positives at its rate', t => {
  const terms = Array.from({ length: 5000 }, (_, i) => `term${i}`)
  const filter = TermFilter.build(terms.map(hashTerm), terms.length, 0.01, 1 << 23)
  t.is(filter.bits % 8, 0)
  t.is(filter.items, 5000)
  t.true(
    terms.every(term => filter.has(term) && filter.has(term, hashTerm(term))),
    "the library's own has() agrees with the bits set from cached hashes"
  )
  const others = Array.from({ length: 5000 }, (_, i) => `other${i}`)
  const positives = others.filter(term => filter.has(term, hashTerm(term))).length
  t.true(positives < 5000 * 0.03, `${positives} false positives in 5000`)
})

test('a term filter survives its wire form, and the test vector of protocols/README.md holds', t => {
  const filter = TermFilter.build(['translat', 'agent', 'weather'].map(hashTerm), 3, 0.01, 1 << 23)
  const bytes = Buffer.from(Buffer.from(filter.bytes()).toString('base64'), 'base64')
  const back = TermFilter.decode(
    { bits: filter.bits, hashes: filter.hashes, seed: filter.seed, items: filter.items },
    bytes
  )
  t.deepEqual(
    { bits: back.bits, hashes: back.hashes, seed: back.seed },
    { bits: 64, hashes: 15, seed: TERM_FILTER_SEED }
  )
  t.is(Buffer.from(back.bytes()).toString('hex'), '211b1cc9d93a8ec5')
  t.true(back.has('weather') && back.has('agent') && back.has('translat'))
  t.false(back.has('payment'))
  t.throws(() => TermFilter.decode({ bits: 64, hashes: 15, seed: TERM_FILTER_SEED, items: 3 }, new Uint8Array(7)))
})

test('a filter capped in size still holds every term (its false-positive rate grows instead)', t => {
  const terms = Array.from({ length: 2000 }, (_, i) => `t${i}`)
  const filter = TermFilter.build(terms.map(hashTerm), terms.length, 0.01, 1024)
  t.is(filter.bits, 1024)
  t.true(terms.every(term => filter.has(term)))
})

test('home terms: only home records count, updates and removals take old terms out, rebuilds are throttled', async t => {
  const summary = new HomeTermSummary({
    registryId: `zns:registry:${'a'.repeat(32)}`,
    host: 'a.test',
    falsePositiveRate: 0.01,
    rebuildIntervalMs: 150,
    logger: pino({ level: 'silent' })
  })
  const home = {
    entity_id: `zns:${'1'.repeat(32)}`,
    home_registry: 'a.test',
    home_registry_id: `zns:registry:${'a'.repeat(32)}`
  }
  const legacyHome = { entity_id: `zns:${'2'.repeat(32)}`, home_registry: 'a.test' }
  const elsewhere = {
    entity_id: `zns:${'3'.repeat(32)}`,
    home_registry: 'a.test',
    home_registry_id: `zns:registry:${'b'.repeat(32)}`
  }
  t.true(summary.isHome(home))
  t.true(summary.isHome(legacyHome), 'a record without home_registry_id is home by its host')
  t.false(summary.isHome(elsewhere), 'the registry ID decides over the host')

  summary.update(home, fields('quokka weather'))
  summary.update(legacyHome, fields('weather wombat'))
  summary.update(elsewhere, fields('platypus'))
  const first = summary.rebuild()
  t.is(summary.termCount, 3)
  const decode = () => {
    const m = summary.current()!
    return TermFilter.decode(m, Buffer.from(m.filter, 'base64'))
  }
  t.true(['quokka', 'weather', 'wombat'].every(w => decode().has(analyze(w)[0]!)))
  t.false(decode().has('platypu'))

  let told = 0
  summary.subscribe(() => {
    told++
  })
  summary.update(home, fields('quokka koala'))
  summary.remove(legacyHome.entity_id)
  summary.update(home, fields('quokka koala'))
  t.is(told, 0, 'nothing is rebuilt at once')
  await until('the burst is rebuilt', () => told >= 1)
  // Bounded: a second rebuild for the burst, if one were scheduled, would come within two intervals.
  await sleep(300)
  t.is(told, 1, 'one rebuild for the burst')
  t.is(summary.builds, 2)
  const second = summary.current()!
  // Versions are the build times (ms, the summary's clock): the rebuild waited out the interval
  // after the first build (150 ms; 2 ms for timer rounding). A busy machine only delays it more.
  t.true(
    second.version - first.version >= 150 - 2,
    `rebuilt ${second.version - first.version} ms after the first build`
  )
  t.is(summary.termCount, 2, 'quokka and koala')
  t.is(second.items, 2)
  t.true(decode().has(analyze('koala')[0]!))
  t.false(
    decode().has(analyze('wombat')[0]!),
    "a removed record's terms are gone (2 terms in 64 bits: a false positive is unlikely)"
  )

  summary.update(home, fields('koala quokka'))
  // Nothing to wait for: as above, a rebuild would come within two intervals.
  await sleep(300)
  t.is(told, 1, 'the same terms again change nothing: no rebuild')
  t.is(summary.current()!.version, second.version, 'same version')
  summary.stop()
})
