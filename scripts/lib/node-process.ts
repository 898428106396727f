/**
 * Node processes for the benchmarks and the process-level tests: `registry-node start` from the
 * sources as a child process, and a process's CPU and memory read from /proc (Linux).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, readdirSync, statSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

export const REPO = fileURLToPath(new URL('../../', import.meta.url))

/** `node --import` argument for tsx that works from any working directory. */
export const TSX_IMPORT = import.meta.resolve('tsx')

/** Node arguments that run the CLI from the sources. */
export const CLI_FROM_SOURCES = ['--import', TSX_IMPORT, `${REPO}src/cli.ts`]
/** Node arguments that run the built CLI (`npm run build` first), as `npm start` does. */
export const CLI_BUILT = [`${REPO}dist/cli.js`]

/** Whether dist/ was built after the last change to src/ (npm install builds it; an edit since makes it stale). */
function builtIsCurrent(): boolean {
  const built = statSync(`${REPO}dist/cli.js`, { throwIfNoEntry: false })
  if (!built) return false
  const sources = readdirSync(`${REPO}src`, { recursive: true, encoding: 'utf8' })
  return sources.every(file => statSync(`${REPO}src/${file}`).mtimeMs <= built.mtimeMs)
}

/**
 * The CLI the tests spawn: the built one when it is current, since a start from the sources spends
 * about two seconds compiling them (dozens of CLI starts per run); the sources otherwise, so a test
 * never runs code older than the checkout.
 */
export const CLI_FOR_TESTS = builtIsCurrent() ? CLI_BUILT : CLI_FROM_SOURCES

/** Resident and peak resident memory of a process, MiB, and the resident part's anonymous and file-backed shares (Linux /proc). */
export async function memoryMiB(pid: number): Promise<{ rss: number; hwm: number; anon: number; file: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  // RssFile is mostly the LMDB file mapped into memory: page cache the kernel can drop, not heap.
  return {
    rss: kib('VmRSS') / 1024,
    hwm: kib('VmHWM') / 1024,
    anon: kib('RssAnon') / 1024,
    file: kib('RssFile') / 1024
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** CPU seconds a process has used so far in user and in kernel mode, from /proc (Linux). */
export async function cpuSecondsSplit(pid: number): Promise<{ user: number; system: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 }
}

/** CPU seconds per thread of a process (`main`, or `<name> <tid>`), from /proc (Linux). */
export async function cpuSecondsByThread(pid: number): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => null)
    if (!stat) continue
    const name = tid === String(pid) ? 'main' : `${stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))} ${tid}`
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    out.set(name, (out.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100)
  }
  return out
}

export interface NodeProcess {
  child: ChildProcess
  url: string
  output: () => string
  exited: Promise<number | null>
}

/** Starts `registry-node start` (from the sources by default) as a child process and waits for its URL. */
export async function spawnNode(
  args: string[],
  options: {
    cwd?: string
    env?: NodeJS.ProcessEnv
    entry?: string[]
    startTimeoutMs?: number
    /** The --log-level flag given (default warn); null gives none, so the config file's level applies. */
    logLevel?: string | null
  } = {}
): Promise<NodeProcess> {
  // BENCH_NODE_BUILT=1: the node under test from dist/ (as `npm start` runs it): a worker thread
  // started from the sources loads tsx and compiles its modules, three times the CPU of a built one.
  const entry = options.entry ?? (process.env.BENCH_NODE_BUILT ? CLI_BUILT : CLI_FROM_SOURCES)
  // BENCH_NODE_FLAGS: Node flags for the node under test only, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
  // (NODE_OPTIONS refuses --cpu-prof, and would profile the load generator too).
  const flags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean)
  const child = spawn(
    process.execPath,
    [
      ...flags,
      ...entry,
      'start',
      '--http-host',
      '127.0.0.1',
      ...(options.logLevel === null ? [] : ['--log-level', options.logLevel ?? 'warn']),
      ...args
    ],
    {
      cwd: options.cwd ?? REPO,
      // The mesh on loopback and ephemeral ports, so nodes never collide on 4001 (flags still override).
      env: { REGISTRY_NODE_P2P_HOST: '127.0.0.1', REGISTRY_NODE_P2P_PORT: '0', ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe']
    }
  )
  // BENCH_NODE_LOG: a file that also receives the node's output (e.g. with BENCH_NODE_FLAGS="--trace-gc").
  if (process.env.BENCH_NODE_LOG) {
    const log = createWriteStream(process.env.BENCH_NODE_LOG, { flags: 'a' })
    child.stdout!.pipe(log)
    child.stderr!.pipe(log)
  }
  let out = ''
  child.stdout!.on('data', d => {
    out += d
  })
  child.stderr!.on('data', d => {
    out += d
  })
  // Never leave a node running behind a failed test or benchmark.
  const killOnExit = (): void => {
    child.kill('SIGKILL')
  }
  process.once('exit', killOnExit)
  const exited = new Promise<number | null>(resolve =>
    child.on('exit', code => {
      process.off('exit', killOnExit)
      resolve(code)
    })
  )
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node did not start:\n${out}`)), options.startTimeoutMs ?? 30_000)
    const check = () => {
      const m = /listening on (https?:\/\/\S+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(m[1] as string)
      }
    }
    child.stdout!.on('data', check)
    void exited.then(code => {
      clearTimeout(timer)
      reject(new Error(`node exited with ${code}:\n${out}`))
    })
  })
  return { child, url, output: () => out, exited }
}

/** The node's TCP multiaddr on loopback, from its start line (`registry-node p2p <peer id> at <multiaddr> …`). */
export async function tcpAddressOf(node: NodeProcess): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const tcp = /(\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/[^\s"]+)/.exec(node.output())?.[1]
    if (tcp) return tcp
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  throw new Error(`no TCP multiaddr in the node's output:\n${node.output()}`)
}
