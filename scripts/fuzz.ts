/**
 * The long fuzz run (issue 17): hostile requests on every HTTP route and WebSocket endpoint of a
 * real node process (`registry-node start`, rate limits off so that requests get past them), with
 * the properties of test/helpers/fuzz.ts: never 500, every error a documented code with its status,
 * sockets refused or closed with documented codes, the process never exits.
 *
 *   npm run fuzz -- [--runs 100000] [--socket-runs 2000] [--seed N [--path P]] [--http-server uws|node]
 *
 * A failure prints its seed and path: `--seed S --path P` replays that case alone.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { fuzzHttp, fuzzSockets, seedFuzzTarget, type FuzzReport } from '../test/helpers/fuzz.js'
import { spawnNode } from './lib/node-process.js'
import { report } from './lib/report.js'

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '100000' },
    'socket-runs': { type: 'string', default: '2000' },
    seed: { type: 'string' },
    path: { type: 'string' },
    'http-server': { type: 'string', default: 'auto' }
  }
})
const seed = args.seed === undefined ? undefined : Number(args.seed)
const dir = await mkdtemp(join(tmpdir(), 'registry-node-fuzz-'))
const node = await spawnNode([
  '--data',
  dir,
  '--http-port',
  '0',
  '--no-rate-limit',
  '--http-server',
  args['http-server']
])
let exitCode: number | null | undefined
void node.exited.then(code => {
  exitCode = code
})
const seeds = await seedFuzzTarget(node.url)

const print = (kind: string, r: FuzzReport, seconds: number) => {
  report(
    `fuzz_${kind}_cases`,
    r.cases,
    `in ${seconds.toFixed(0)} s (seed ${r.seed}${r.path ? `, failing path ${r.path}` : ''})`
  )
  report(
    `fuzz_${kind}_failures`,
    r.failures.length,
    r.failures.length ? `: ${r.failures.join(' | ').slice(0, 2000)}` : ''
  )
  report(
    `fuzz_${kind}_outcomes`,
    Object.entries(r.statuses)
      .sort()
      .map(([k, n]) => `${k} ×${n}`)
      .join(', '),
    ''
  )
}
let started = performance.now()
const http = await fuzzHttp(node.url, seeds, {
  runs: Number(args.runs),
  seed,
  ...(args.path ? { path: args.path } : {})
})
print('http', http, (performance.now() - started) / 1000)
started = performance.now()
const sockets = await fuzzSockets(node.url, seeds, { runs: Number(args['socket-runs']), seed })
print('socket', sockets, (performance.now() - started) / 1000)
const healthy = (await fetch(`${node.url}/health`).catch(() => null))?.status === 200
report('fuzz_node_alive', exitCode === undefined && healthy ? 'yes' : `no (exit ${exitCode}, health ${healthy})`, '')
node.child.kill('SIGTERM')
await node.exited
await rm(dir, { recursive: true, force: true })
if (http.failures.length + sockets.failures.length > 0 || !healthy) process.exitCode = 1
