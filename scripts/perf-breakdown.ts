/**
 * Where running node processes spend their CPU, every thread and the kernel included: records them
 * with Linux `perf` for a while and prints the samples by class (scripts/lib/perf-classes.ts), by
 * thread and by system call. Run it beside a benchmark, during the phase you want to see:
 *
 *   npm run perf:breakdown -- (--pid P[,P…] | --match REGEX) [--seconds 10] [--frequency 999] [--threads 12]
 *
 * `--match` takes every process whose command line matches (`pgrep -f`), e.g. `--match 'cli[.][jt]s start'`
 * for every registry node on the machine, built or run from the sources. JavaScript frames have names only when the node runs with
 * `--perf-basic-prof` (BENCH_NODE_FLAGS="--perf-basic-prof" for the benchmarks' nodes); without it
 * they count as js-optimized. Needs `perf` (Debian: linux-perf) and leave to sample other processes
 * (`kernel.perf_event_paranoid` ≤ 1, or root).
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { machineLoad } from './lib/mesh-bench.js'
import { breakdown, NODE_MARKERS, parsePerfScript, SAMPLE_CLASSES } from './lib/perf-classes.js'
import { report } from './lib/report.js'

const { values: args } = parseArgs({
  options: {
    pid: { type: 'string' },
    match: { type: 'string' },
    seconds: { type: 'string', default: '10' },
    frequency: { type: 'string', default: '999' },
    threads: { type: 'string', default: '12' }
  }
})

class UsageError extends Error {}

function fail(message: string): never {
  throw new UsageError(message)
}

/** This process and the ones that started it (npm, its shell): their command lines hold the --match pattern too. */
function ownLineage(): Set<number> {
  const lineage = new Set<number>()
  for (let pid = process.pid; pid > 1 && !lineage.has(pid); ) {
    lineage.add(pid)
    // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
  }
  return lineage
}

function pidsToRecord(): number[] {
  if (args.pid) return args.pid.split(',').map(Number)
  if (!args.match) fail('give --pid P[,P…] or --match REGEX')
  const found = spawnSync('pgrep', ['-f', args.match], { encoding: 'utf8' })
  const lineage = ownLineage()
  return found.stdout
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter(pid => !lineage.has(pid))
}
const seconds = Number(args.seconds)
const frequency = Number(args.frequency)
const dir = mkdtempSync(join(tmpdir(), 'perf-breakdown-'))
const data = join(dir, 'perf.data')
try {
  const pids = pidsToRecord()
  if (pids.length === 0 || pids.some(p => !Number.isInteger(p) || p <= 0))
    fail(`no process to record (${pids.join(',')})`)
  report('machine_load_before', machineLoad(), '')
  const recorded = spawnSync(
    'perf',
    ['record', '-g', '-F', String(frequency), '-p', pids.join(','), '-o', data, '--', 'sleep', String(seconds)],
    { encoding: 'utf8' }
  )
  if (recorded.error) fail(`cannot run perf: ${recorded.error.message}`)
  if (recorded.status !== 0) fail(`perf record failed: ${recorded.stderr.trim()}`)
  const script = spawnSync('perf', ['script', '-i', data, '-F', 'comm,pid,tid,ip,sym,dso'], {
    encoding: 'utf8',
    maxBuffer: 2 ** 30
  })
  if (script.status !== 0) fail(`perf script failed: ${script.stderr.trim()}`)

  const result = breakdown(parsePerfScript(script.stdout), new Set(pids), NODE_MARKERS)
  // cpu-clock samples at `frequency` per second of CPU time: samples / frequency = CPU seconds.
  const coreShare = (n: number): string => `${((100 * n) / frequency / seconds).toFixed(1)} % of a core`
  const share = (n: number, of: number): string => `${((100 * n) / Math.max(of, 1)).toFixed(1)} %`
  report('processes', pids.length, `(${pids.join(' ')})`)
  report('samples', result.samples, `over ${seconds} s at ${frequency} Hz: ${coreShare(result.samples)}`)
  for (const cls of SAMPLE_CLASSES) {
    const n = result.byClass.get(cls) ?? 0
    if (n > 0) report(`class_${cls}`, share(n, result.samples), `of the samples (${coreShare(n)})`)
  }
  for (const [name, n] of result.markers) report(`stack_${name}`, share(n, result.samples), 'of the samples pass it')
  const threads = [...result.byThread].sort((a, b) => b[1].samples - a[1].samples).slice(0, Number(args.threads))
  for (const [tid, thread] of threads) {
    const top = [...thread.byClass]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([cls, n]) => `${cls} ${share(n, thread.samples)}`)
      .join(', ')
    const role = tid === thread.pid ? 'main' : 'thread'
    report(`thread_${thread.pid}_${tid}`, coreShare(thread.samples), `(${role}; ${top})`)
  }
} catch (err) {
  if (!(err instanceof UsageError)) throw err
  console.error(`perf-breakdown: ${err.message}`)
  process.exitCode = 2
} finally {
  rmSync(dir, { recursive: true, force: true })
}
