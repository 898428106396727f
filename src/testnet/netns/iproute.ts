/**
 * Running iproute2 (and sysctl) for the netns modules: where the binaries are, commands whose
 * failure is reported or thrown, a loop that runs a few of them at a time, and listings of
 * namespaces and root-namespace links.
 */
import { execFile as execFileCallback } from 'node:child_process'
import { existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { promisify } from 'node:util'
import { NetnsError } from './types.js'

const execFile = promisify(execFileCallback)

const COMMAND_TIMEOUT_MS = 15_000
/** Bounds the ip and tc processes running at once when every node of a large testnet is changed. */
export const PARALLEL = 8

export interface CommandResult {
  code: number
  stdout: string
  stderr: string
}

const binaries = new Map<string, string>()
/**
 * Looked up in the usual directories first (/usr/sbin and /sbin are often not on PATH), then on
 * PATH without its node_modules/.bin entries: under npm those come first, and a package's `nft`
 * (@vercel/nft, through ava) is not nftables.
 */
export function bin(name: 'ip' | 'tc' | 'sysctl' | 'nft'): string {
  let found = binaries.get(name)
  if (found === undefined) {
    const path = (process.env.PATH ?? '').split(delimiter).filter(d => d !== '' && !d.includes('node_modules'))
    found = ['/usr/sbin', '/sbin', '/usr/bin', '/bin', ...path].map(d => join(d, name)).find(p => existsSync(p))
    // Not found: a path that does not exist, so running it fails as a missing tool.
    found ??= join('/usr/sbin', name)
    binaries.set(name, found)
  }
  return found
}

/** Runs a command; its failure is returned (code -1 when it could not start), not thrown. */
export async function run(argv: readonly string[]): Promise<CommandResult> {
  const [file, ...args] = argv
  if (file === undefined) throw new NetnsError('empty command')
  try {
    const { stdout, stderr } = await execFile(file, args, {
      timeout: COMMAND_TIMEOUT_MS,
      encoding: 'utf8',
      maxBuffer: 16 << 20
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code?: unknown; stdout?: unknown; stderr?: unknown; message?: unknown }
    const stderr = typeof e.stderr === 'string' && e.stderr.trim() !== '' ? e.stderr : String(e.message ?? err)
    return {
      code: typeof e.code === 'number' ? e.code : -1,
      stdout: typeof e.stdout === 'string' ? e.stdout : '',
      stderr
    }
  }
}

export function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .map(l => l.trim())
      .find(l => l !== '') ?? ''
  )
}

/** Runs a command that has to succeed: its stdout, or a NetnsError with the first line of stderr. */
export async function must(argv: readonly string[]): Promise<string> {
  const r = await run(argv)
  if (r.code !== 0) throw new NetnsError(`${argv.join(' ')}: ${firstLine(r.stderr) || `exit ${r.code}`}`)
  return r.stdout
}

/** `fn` over `items`, at most `limit` at once; every item is tried, then the first failure is thrown. */
export async function mapLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failure: unknown = null
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T
      try {
        await fn(item)
      } catch (err) {
        failure ??= err
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  if (failure !== null) throw failure
}

export async function listNamespaces(): Promise<string[]> {
  const r = await run([bin('ip'), 'netns', 'list'])
  if (r.code !== 0) return []
  return r.stdout
    .split('\n')
    .map(l => l.trim().split(/\s+/)[0] ?? '')
    .filter(n => n !== '')
}

export async function listRootLinks(): Promise<string[]> {
  const r = await run([bin('ip'), '-o', 'link', 'show'])
  if (r.code !== 0) return []
  const names: string[] = []
  for (const line of r.stdout.split('\n')) {
    const m = /^\d+:\s+([^:@\s]+)/.exec(line)
    if (m?.[1] !== undefined) names.push(m[1])
  }
  return names
}
