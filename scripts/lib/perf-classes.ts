/**
 * Where a Node process's CPU goes, from Linux `perf` samples: each sample is classed by the frame the
 * CPU was in (its leaf), and counted per thread; markers count the samples whose stack passes a
 * given function (a system call, say), wherever the leaf is. A V8 CPU profile sees only the main
 * thread's JavaScript; this sees every thread (LMDB's commits in libuv's pool, V8's compiler and
 * collector threads, worker threads) and the kernel (scripts/perf-breakdown.ts records and prints it).
 *
 * Input: `perf script -F comm,pid,tid,ip,sym,dso` output, a header line per sample
 * (`comm  pid/tid`) and one frame per line after it (`<address> <symbol> (<dso>)`), leaf first.
 */

export const SAMPLE_CLASSES = [
  'kernel',
  'v8-compiler',
  'gc',
  'js-optimized',
  'js-unoptimized',
  'v8-builtins',
  'ed25519',
  'lmdb',
  'lz4',
  'libc',
  'other-native'
] as const
export type SampleClass = (typeof SAMPLE_CLASSES)[number]

export interface Frame {
  readonly symbol: string
  readonly dso: string
}

export interface PerfSample {
  readonly comm: string
  readonly pid: number
  readonly tid: number
  /** Leaf first. */
  readonly frames: readonly Frame[]
}

export function parsePerfScript(text: string): PerfSample[] {
  const samples: PerfSample[] = []
  let current: { comm: string; pid: number; tid: number; frames: Frame[] } | null = null
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      if (current) samples.push(current)
      current = null
      continue
    }
    if (!line.startsWith('\t') && !line.startsWith(' ')) {
      if (current) samples.push(current)
      const header = /^(.*?)\s+(\d+)\/(\d+)\s*$/.exec(line)
      current = header ? { comm: header[1]!, pid: Number(header[2]), tid: Number(header[3]), frames: [] } : null
      continue
    }
    const frame = /^\s*[0-9a-f]+\s+(.*?)\s*\(([^()]*)\)\s*$/.exec(line)
    if (current && frame) current.frames.push({ symbol: frame[1]!, dso: frame[2]! })
  }
  if (current) samples.push(current)
  return samples
}

const GC = /Scaveng|Marking|MarkCompact|Sweep|Evacuat|RememberedSet|PointersUpdating|Heap::|MinorMC|ConcurrentMark/
const COMPILER = /compiler::|Turbofan|TurboFan|maglev::|Maglev|OptimizedCompilationJob|PipelineImpl|Pipeline::/
const ED25519 = /crypto_sign|fe25519|ge25519|sc25519|SHA512|sha512|ED25519|ed25519/

/** The class of a sample, by its leaf frame. */
export function classifyLeaf(frame: Frame | undefined): SampleClass {
  if (!frame) return 'other-native'
  const { symbol, dso } = frame
  if (dso.includes('kernel')) return 'kernel'
  // --perf-basic-prof names JIT code `JS:*name` (optimized) and `JS:^name` / `JS:~name` (baseline, interpreted).
  if (symbol.startsWith('JS:*')) return 'js-optimized'
  if (symbol.startsWith('JS:')) return 'js-unoptimized'
  if (/perf-\d+\.map|\[JIT\]/.test(dso)) return 'js-optimized'
  if (/sodium/.test(dso) || ED25519.test(symbol)) return 'ed25519'
  if (/LZ4/.test(symbol)) return 'lz4'
  if (/^mdb_|^WriteWorker|^Compression::/.test(symbol) || /lmdb/.test(dso)) return 'lmdb'
  if (COMPILER.test(symbol)) return 'v8-compiler'
  if (GC.test(symbol)) return 'gc'
  if (symbol.startsWith('Builtins_')) return 'v8-builtins'
  if (/libc\.so|libstdc\+\+|ld-linux/.test(dso)) return 'libc'
  return 'other-native'
}

/** Samples of one thread, by class. */
export interface ThreadCount {
  readonly pid: number
  samples: number
  readonly byClass: Map<SampleClass, number>
}

export interface Breakdown {
  readonly samples: number
  readonly byClass: ReadonlyMap<SampleClass, number>
  readonly byThread: ReadonlyMap<number, ThreadCount>
  /** Per marker: the samples whose stack holds a frame it matches. */
  readonly markers: ReadonlyMap<string, number>
}

function increment<K>(counts: Map<K, number>, key: K): void {
  counts.set(key, (counts.get(key) ?? 0) + 1)
}

/** Counts `samples` of the processes in `pids` (all when empty) by class, thread and marker. */
export function breakdown(
  samples: readonly PerfSample[],
  pids: ReadonlySet<number>,
  markers: Readonly<Record<string, RegExp>> = {}
): Breakdown {
  const byClass = new Map<SampleClass, number>()
  const byThread = new Map<number, ThreadCount>()
  const patterns = Object.entries(markers)
  const marked = new Map<string, number>(patterns.map(([name]) => [name, 0]))
  let total = 0
  for (const sample of samples) {
    if (pids.size > 0 && !pids.has(sample.pid)) continue
    total++
    const cls = classifyLeaf(sample.frames[0])
    increment(byClass, cls)
    let thread = byThread.get(sample.tid)
    if (!thread) byThread.set(sample.tid, (thread = { pid: sample.pid, samples: 0, byClass: new Map() }))
    thread.samples++
    increment(thread.byClass, cls)
    for (const [name, pattern] of patterns) if (sample.frames.some(f => pattern.test(f.symbol))) increment(marked, name)
  }
  return { samples: total, byClass, byThread, markers: marked }
}

/** The stacks worth naming in a registry node: its system calls. */
export const NODE_MARKERS: Readonly<Record<string, RegExp>> = {
  fdatasync: /__x64_sys_fdatasync|__x64_sys_fsync/,
  pwrite: /__x64_sys_pwrite64/,
  send: /__x64_sys_(sendto|sendmsg)$/,
  write: /__x64_sys_(write|writev)$/,
  receive: /__x64_sys_(recvfrom|recvmsg|read)$/,
  epoll_wait: /__x64_sys_epoll_(p)?wait/,
  futex: /__x64_sys_futex/,
  page_fault: /exc_page_fault/
}
