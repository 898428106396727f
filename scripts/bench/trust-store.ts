/**
 * Transitive trust as the node computes it (issue 58): fills a store in a temporary directory with
 * `--identities` identities (one developer per `--entities-per-developer` entities, the first
 * `--seeds` share of developers verified) and `--attestations` attestation records, then starts the
 * node's own TransitiveTrust, whose worker thread reads the store and computes; times the start to the
 * first scores reported, and `--added` attestations written to the store to the scores reporting them.
 *
 *   npm run bench:trust-store -- [--identities 1000000] [--attestations 10000000] [--added 1000]
 *                                [--entities-per-developer 9] [--seeds 0.01] [--seed 58] [--keep DIR]
 *
 * Records are written directly (no signatures to check); they have every field the node stores, with
 * placeholder keys and signatures. Subjects follow the same Zipf-like popularity as bench:trust; a
 * tenth of the attestations carry payment evidence, half a message ID. Prints `name: value unit` lines,
 * with the RSS growth of the whole process (this thread and the worker) during the computation.
 * `--keep DIR` keeps the store; a later run given the same DIR uses it as it is.
 */
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pino from 'pino'
import { TransitiveTrust } from '../../src/services/registry/transitive-trust.js'
import type { AttestationRecord } from '../../src/store/records.js'
import { RegistryStore } from '../../src/store/registry-store.js'
import { machineLoad, reportMachineSpeed } from '../lib/mesh-bench.js'
import { seededRandom } from '../lib/random.js'
import { report } from '../lib/report.js'
import { attestationOperation, storedAttestation, storedDeveloper, storedEntity } from '../lib/stored-records.js'

const { values: args } = parseArgs({
  options: {
    identities: { type: 'string', default: '1000000' },
    attestations: { type: 'string', default: '10000000' },
    added: { type: 'string', default: '1000' },
    'entities-per-developer': { type: 'string', default: '9' },
    seeds: { type: 'string', default: '0.01' },
    seed: { type: 'string', default: '58' },
    keep: { type: 'string' }
  }
})
const n = Number(args.identities)
const m = Number(args.attestations)
const added = Number(args.added)
const perDeveloper = Number(args['entities-per-developer'])
const random = seededRandom(Number(args.seed))
// Large commits: each rewrites the index pages it touches, and random subjects touch most of them.
const BATCH = 500_000

report('machine_load_before', machineLoad(), '')
reportMachineSpeed()

const hex = (prefix: string, i: number): string => `${prefix}${i.toString(16).padStart(32, '0')}`
/** Identity i: every (perDeveloper + 1)th a developer, the rest its entities. */
const isDeveloper = (i: number): boolean => i % (perDeveloper + 1) === 0
const idOf = (i: number): string => (isDeveloper(i) ? hex('zns:dev:', i) : hex('zns:', i))
const developers = Math.ceil(n / (perDeveloper + 1))
const verified = Math.max(1, Math.floor(developers * Number(args.seeds)))
const now = new Date()
const issuedAt = new Date(now.getTime() - 86_400_000).toISOString()
let counter = 0

function attestation(): AttestationRecord {
  let issuer = Math.floor(random() * n)
  let subject = Math.min(n - 1, Math.floor(n * random() ** 3))
  if (isDeveloper(subject)) subject = Math.min(n - 1, subject + 1)
  if (issuer === subject) issuer = (issuer + 1) % n
  const id = counter++
  const paid = random() < 0.1
  const evidence = paid
    ? { payment: { network: 'eip155:8453', transaction: `0x${id.toString(16).padStart(64, '0')}`, amount: '1000' } }
    : random() < 0.5
      ? { message_id: `msg-${id}` }
      : null
  return storedAttestation(id, idOf(issuer), idOf(subject), evidence, issuedAt)
}

const dir = args.keep ?? (await mkdtemp(join(tmpdir(), 'bench-trust-store-')))
const store = await RegistryStore.open(dir)
let started = performance.now()
// A kept store from an earlier run (--keep) is used as it is: filling ten million takes minutes.
const reused = args.keep !== undefined && store.allAttestations()[Symbol.iterator]().next().done === false
if (reused) counter = m + Date.now()
else {
  for (let i = 0; i < n; i += BATCH)
    await store.commit(tx => {
      for (let k = i; k < Math.min(n, i + BATCH); k++) {
        if (isDeveloper(k)) tx.putDeveloper(storedDeveloper(idOf(k), k / (perDeveloper + 1) < verified))
        else {
          const owner = k - (k % (perDeveloper + 1))
          tx.putEntity(
            storedEntity({
              entity_id: idOf(k),
              name: `entity ${k}`,
              summary: `bench entity ${k}`,
              home_registry: 'bench.test',
              developer_id: idOf(owner)
            })
          )
        }
      }
    })
  for (let i = 0; i < m; i += BATCH)
    await store.commit(tx => {
      for (let k = i; k < Math.min(m, i + BATCH); k++) tx.putAttestation(attestation())
    })
}
report('identities', n, `(${developers} developers, ${verified} of them verified: the seeds)`)
report('attestations', m, '')
if (!reused) report('store_filled_in', ((performance.now() - started) / 1000).toFixed(1), 's (not a goal)')

const rss = (): number => process.memoryUsage().rss / 2 ** 20
/** RSS without the store's mapped pages (which the kernel drops at will): the memory the computation holds. */
const anon = (): number => Number(/RssAnon:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) / 1024
const rssBefore = rss()
const anonBefore = anon()
let peak = rssBefore
let anonPeak = anonBefore
const sample = setInterval(() => {
  peak = Math.max(peak, rss())
  anonPeak = Math.max(anonPeak, anon())
}, 50)

let reported: (changes: [string, number][]) => void = () => {}
const trust = new TransitiveTrust({
  dataDir: dir,
  seeds: [],
  hasAttestations: () => true,
  logger: pino({ level: 'warn' })
})
started = performance.now()
const first = await new Promise<[string, number][]>(resolve => {
  reported = resolve
  trust.start(changes => reported(changes))
})
report(
  'compute_total',
  ((performance.now() - started) / 1000).toFixed(2),
  `s from start to the first scores (${first.length} entities scored; the worker read the store and computed; goal ≤ 60 s)`
)
peak = Math.max(peak, rss())
report(
  'anon_rss_growth',
  (anonPeak - anonBefore).toFixed(0),
  `MiB (the process's own memory, worker included, without the store's mapped pages; peak ${anonPeak.toFixed(0)} MiB; goal ≤ 1024)`
)
report(
  'rss_growth',
  (peak - rssBefore).toFixed(0),
  `MiB (with the store's pages mapped as the worker read them; peak ${peak.toFixed(0)} MiB)`
)

// Added as the node adds them: each with its operation in the log, which the worker reads after its snapshot.
const more = Array.from({ length: added }, attestation)
started = performance.now()
await store.commit(tx => {
  for (const r of more) {
    tx.appendOperation(attestationOperation(r))
    tx.putAttestation(r)
  }
})
const second = await new Promise<[string, number][]>(resolve => {
  reported = resolve
  for (let k = 0; k < added; k++) trust.attestationAdded()
})
report(
  'added_reflected_after',
  ((performance.now() - started) / 1000).toFixed(2),
  `s from the commit of the ${added} attestations to the scores reporting them (${second.length} entities changed; goal ≤ 1 s)`
)
clearInterval(sample)
await trust.stop()
await store.close()
if (!args.keep) await rm(dir, { recursive: true, force: true })
report('machine_load_after', machineLoad(), '')
