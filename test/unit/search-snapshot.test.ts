import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { pino } from 'pino'
import { defaultConfig } from '../../src/config/load.js'
import { searchSettings } from '../../src/node-settings.js'
import { analyzeQuery } from '../../src/search/analyzer.js'
import { HashEmbedder } from '../../src/search/embedders/hash-embedder.js'
import {
  type IndexChange,
  type IndexOptions,
  type IndexQuery,
  LocalSearchIndex,
  type SearchIndex
} from '../../src/services/search/search-index.js'
import { WorkerSearchIndex } from '../../src/services/search/search-worker-index.js'
import { SnapshotReader, SnapshotWriter } from '../../src/util/snapshot-file.js'
import type { TermFilterMessage } from '../../src/wire/federation.js'
import { searchDoc } from '../helpers/search-documents.js'
import { until } from '../helpers/wait.js'

const REGISTRY = 'zns:registry:0123456789abcdef0123456789abcdef'
const OPTIONS: IndexOptions = {
  dimension: 64,
  embedding: 'hash',
  queryExpansion: true,
  fullScanBelow: 200_000,
  homeTerms: { registryId: REGISTRY, host: 'home.test', falsePositiveRate: 0.01, rebuildIntervalMs: 1e9 }
}
const META = { format: 1, seq: 42, seal: 'ab', embedder: 'hash-64' }
const WORDS =
  'agent summarize research paper travel flight hotel weather forecast translate code review invoice payment image caption music playlist recipe cooking legal contract'.split(
    ' '
  )

/** A deterministic spread of records: words, tags, categories, capabilities, developers, kinds and statuses. */
function upsert(i: number): Extract<IndexChange, { op: 'upsert' }> {
  const word = (k: number): string => WORDS[(i * 7 + k * 13 + ((i >> 3) % 5)) % WORDS.length] as string
  const entityId = `zns:${i.toString(16).padStart(8, '0')}`
  const tags = i % 4 === 0 ? [] : [word(1), `t${i % 9}`]
  const skills = i % 3 === 0 ? [word(2)] : []
  const summary = `${word(3)} ${word(4)} and ${word(5)} for ${word(6)} ${word(7)}`
  const doc = searchDoc(entityId, {
    type: i % 5 === 0 ? 'service' : 'agent',
    category: `c${i % 6}`,
    tags,
    developerId: i % 7 === 0 ? null : `zdev:${i % 11}`,
    active: i % 2 === 0,
    registeredAt: 1_700_000_000_000 + i * 1000,
    lastChange: 1_700_000_500_000 + i * 999,
    uptime: (i % 10) / 10,
    transitive: i % 13 === 0 ? 0.25 : 0,
    capabilities: { skills, protocols: i % 2 ? ['a2a'] : [], languages: [], models: [] }
  })
  const home = i % 3 === 1 ? 'other.test' : 'home.test'
  return {
    op: 'upsert',
    doc,
    text: { name: `${word(8)} bot ${i}`, tags, category: `c${i % 6}`, summary, capabilities: skills },
    home: { entity_id: entityId, home_registry: home, home_registry_id: home === 'home.test' ? REGISTRY : 'zns:o' }
  }
}

const embedder = new HashEmbedder(64)
async function query(text: string, over: Partial<IndexQuery> = {}): Promise<IndexQuery> {
  const { terms, phrases } = analyzeQuery(text)
  const [vector] = text ? await embedder.embed([text]) : [null]
  return {
    terms,
    phrases,
    vector: vector ?? null,
    type: null,
    active: null,
    capabilities: null,
    minTrust: 0,
    minSemantic: 0.3,
    weights: searchSettings(defaultConfig()).weights,
    fusion: 'weighted',
    halfLifeDays: 30,
    now: 1_700_100_000_000,
    offset: 0,
    limit: 20,
    ...over
  }
}

const QUERIES: [string, Partial<IndexQuery>][] = [
  ['research paper', {}],
  ['"travel flight"', {}],
  ['weather', { type: 'service' }],
  ['', { category: 'c2', tags: ['t5'] }],
  ['code review', { active: true, developerId: 'zdev:3' }],
  ['', { capabilities: { wanted: { protocols: ['a2a'] }, declared: {} } }],
  ['music', { minTrust: 0.2, offset: 5 }],
  ['bot 17', {}]
]

async function answers(index: SearchIndex): Promise<unknown[]> {
  const out: unknown[] = []
  for (const [text, over] of QUERIES) out.push(await index.search(await query(text, over)))
  return out
}

type OnFilter = (message: TermFilterMessage) => void
const KINDS: Record<string, (onFilter?: OnFilter) => SearchIndex> = {
  'on the calling thread': (onFilter = () => {}) => new LocalSearchIndex(OPTIONS, onFilter, pino({ level: 'silent' })),
  'in its worker': (onFilter = () => {}) => new WorkerSearchIndex(OPTIONS, () => {}, onFilter)
}

/** Fills `index` as a node would: records (some replaced, some removed), developers' parts, then the home filter. */
function fill(index: SearchIndex, count: number): void {
  for (let i = 0; i < count; i++) index.apply(upsert(i))
  for (let i = 0; i < count; i += 5) index.apply(upsert(i))
  for (let i = 1; i < count; i += 9) index.apply({ op: 'remove', entityId: upsert(i).doc.entityId })
  for (let d = 0; d < 11; d++) index.apply({ op: 'developer', developerId: `zdev:${d}`, part: d / 20 })
  index.apply({ op: 'home-filter' })
}

for (const [where, make] of Object.entries(KINDS)) {
  test(`${where}, an index restored from its snapshot answers every query as the index it was written from`, async t => {
    const dir = mkdtempSync(join(tmpdir(), 'search-snapshot-'))
    const filters: Record<string, TermFilterMessage[]> = { original: [], restored: [] }
    const original = make(m => filters.original?.push(m))
    const restored = make(m => filters.restored?.push(m))
    t.teardown(async () => {
      await Promise.all([original.close(), restored.close()])
      rmSync(dir, { recursive: true, force: true })
    })
    fill(original, 3000)
    const path = join(dir, 'index.snapshot')
    t.true(((await original.save(path, META)) ?? 0) > 0)
    t.is(await restored.restore(path, META), await original.settled())
    // The home records' terms are read back from the restored index: the same filter of home terms.
    restored.apply({ op: 'home-filter' })
    const built = await until('the restored index builds its home term filter', () => filters.restored?.[0])
    t.like(built, { items: filters.original?.[0]?.items, filter: filters.original?.[0]?.filter })
    // Transitive trust is computed again after a start: the restored index starts from 0, as a build does.
    for (let i = 0; i < 3000; i += 13)
      original.apply({ op: 'patch', entityId: upsert(i).doc.entityId, change: { transitive: 0 } })
    const before = await answers(original)
    t.true(before.every(answer => (answer as { hits: unknown[] }).hits.length > 0))
    t.deepEqual(await answers(restored), before)
    // Both take the same changes afterwards: new records (into freed slots, new terms), updates, removals.
    for (const index of [original, restored]) {
      for (let i = 3000; i < 3400; i++) index.apply(upsert(i))
      for (let i = 2; i < 3400; i += 7) index.apply({ op: 'remove', entityId: upsert(i).doc.entityId })
      index.apply({ op: 'developer', developerId: 'zdev:4', part: 0.9 })
    }
    t.is(await restored.settled(), await original.settled())
    t.deepEqual(await answers(restored), await answers(original))
  })
}

test('a snapshot written for another store state or index is refused, and leaves the index empty', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'search-snapshot-'))
  const original = new WorkerSearchIndex(
    OPTIONS,
    () => {},
    () => {}
  )
  const other = new WorkerSearchIndex(
    { ...OPTIONS, dimension: 128 },
    () => {},
    () => {}
  )
  const restored = new WorkerSearchIndex(
    OPTIONS,
    () => {},
    () => {}
  )
  t.teardown(async () => {
    await Promise.all([original.close(), other.close(), restored.close()])
    rmSync(dir, { recursive: true, force: true })
  })
  fill(original, 200)
  const path = join(dir, 'index.snapshot')
  await original.save(path, META)
  await t.throwsAsync(restored.restore(path, { ...META, seq: 43 }), { message: /written for/ })
  await t.throwsAsync(other.restore(path, META), { message: /written for/ })
  writeFileSync(join(dir, 'cut'), 'RNSNAP01 but cut short')
  await t.throwsAsync(restored.restore(join(dir, 'cut'), META), { message: /not a snapshot|too short/ })
  t.is(await restored.settled(), 0)
})

test('a snapshot file keeps typed arrays, any strings (lone surrogates too) and JSON', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'snapshot-file-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'f')
  const out = new SnapshotWriter()
  const strings = ['', 'a', '\u0000', '\ud800x', 'é漢字', ...Array.from({ length: 70_000 }, (_, i) => `s${i}`)]
  out.array('f64', Float64Array.of(1.5, Number.NaN, -0))
  out.strings('s', strings)
  out.json('j', { a: [1, 'two'] })
  await out.finish(path, { m: 1 })
  const input = new SnapshotReader(path)
  t.deepEqual(input.meta, { m: 1 })
  t.deepEqual([...input.array('f64', Float64Array)], [1.5, Number.NaN, -0])
  t.deepEqual(input.strings('s'), strings)
  t.deepEqual(input.json('j'), { a: [1, 'two'] })
  t.throws(() => input.array('f64', Float32Array), { message: /is a Float64Array/ })
  input.close()
})

test('a snapshot file is written a part at a time: live arrays as they are when their turn comes, slices, steps', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'snapshot-file-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'f')
  const out = new SnapshotWriter()
  // Larger than the write buffer: copied and written through it several times.
  const large = new Float64Array(3_000_000).map((_, i) => i * 0.5)
  let prepared = 0
  out.array('large', large)
  out.step(() => {
    prepared = 7
  })
  out.array('prepared', () => Uint32Array.of(prepared), { fresh: true })
  out.arraySlices('joined', 'Uint32Array', () => [Uint32Array.of(1, 2), new Uint32Array(0), Uint32Array.of(3)])
  large[0] = -1
  await out.finish(path, null)
  const input = new SnapshotReader(path)
  const back = input.array('large', Float64Array)
  t.is(back[0], -1, 'read when written, not when planned')
  t.is(back[2_999_999], 2_999_999 * 0.5)
  t.deepEqual([...input.array('prepared', Uint32Array)], [7])
  t.deepEqual([...input.array('joined', Uint32Array)], [1, 2, 3])
  input.close()
  const given = new SnapshotWriter()
  given.array('a', Uint8Array.of(1))
  await t.throwsAsync(
    given.finish(join(dir, 'g'), null, () => true),
    { name: 'SnapshotAborted' }
  )
  t.deepEqual(readdirSync(dir), ['f'])
})

test('a snapshot is given up when the index changes while it is written, but not for a patch', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'search-snapshot-'))
  const index = new LocalSearchIndex(OPTIONS, () => {}, pino({ level: 'silent' }))
  t.teardown(async () => {
    await index.close()
    rmSync(dir, { recursive: true, force: true })
  })
  fill(index, 3000)
  const path = join(dir, 'index.snapshot')
  const patched = index.save(path, META)
  index.apply({ op: 'patch', entityId: upsert(2).doc.entityId, change: { active: false } })
  t.true(((await patched) ?? 0) > 0, 'statuses are applied again at a restore: a patch does not spoil it')
  const written = readFileSync(path)
  const spoiled = index.save(path, META)
  index.apply(upsert(5000))
  t.is(await spoiled, null)
  t.deepEqual(readdirSync(dir), ['index.snapshot'], 'no temporary file is left')
  t.true(readFileSync(path).equals(written), 'the snapshot written before stays')
  t.true(((await index.save(path, META)) ?? 0) > 0, 'the next one is written')
})
