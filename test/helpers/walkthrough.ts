/**
 * Runs the shell blocks of a Markdown page as a reader would type them: one bash session per page,
 * in a fresh folder that sees this checkout's package.json, dist/, scripts/ and node_modules/, with
 * `registry-node` on the PATH. What the page states about a command's output is checked:
 *
 *   # → TEXT              the command's output holds TEXT (`…` stands for anything; spaces and case are loose)
 *   # prints: TEXT        the same, for a command that keeps running (a server)
 *   # once it prints: …   the same, for a command started with `&`
 *   # fails: TEXT         the command exits non-zero, and its output holds TEXT
 *
 * A command that keeps running (a node, an entity, the local chain, a testnet) goes to the background
 * and the next command waits until it is ready; it is stopped when its block ends, as a reader would
 * press Ctrl-C. `npm install` is already done (a prefix `npm install && ` is dropped), and `npm test`
 * is not run inside the suite that it runs.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, symlink, writeFile, mkdir, chmod } from 'node:fs/promises'
import { get as httpsGet } from 'node:https'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

const ROOT = resolve(import.meta.dirname, '../..')
const LINKED = [
  'package.json',
  'package-lock.json',
  'dist',
  'src',
  'scripts',
  'assets',
  'node_modules',
  'tsconfig.json',
  'test'
]

export interface Block {
  /** 1-based line of the opening fence. */
  line: number
  lang: string
  text: string
}

export interface Command {
  line: number
  text: string
  /** Expected output, as pieces that must appear in order. */
  expect: string[]
  /** The page shows the command failing (`# fails:`). */
  fails?: boolean
  background: boolean
}

export function blocksOf(markdown: string, langs: readonly string[] = ['sh']): Block[] {
  const blocks: Block[] = []
  const lines = markdown.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i] ?? '')
    if (!open) continue
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && !lines[i]?.startsWith('```'); i++) body.push(lines[i] ?? '')
    const lang = open[1] ?? ''
    if (langs.includes(lang)) blocks.push({ line: start + 1, lang, text: body.join('\n') })
  }
  return blocks
}

function completeShell(text: string): boolean {
  if (/[\\|]\s*$/.test(text) || /(&&|\|\|)\s*$/.test(text)) return false
  // bash -n accepts a here-document cut short (with a warning); the reader's has its last line.
  const heredoc = /<<-?\s*['"]?(\w+)['"]?/.exec(text)
  if (heredoc && !new RegExp(`^\\s*${heredoc[1] ?? ''}\\s*$`, 'm').test(text.slice(heredoc.index + heredoc[0].length)))
    return false
  return spawnSync('bash', ['-n'], { input: text }).status === 0
}

const EXPECTATION = /^#\s*(→|prints:|once it prints:|fails:)\s?(.*)$/

export function commandsOf(block: Block): Command[] {
  const commands: Command[] = []
  const lines = block.text.split('\n')
  let pending: string[] = []
  let pendingLine = 0
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] ?? ''
    const trimmed = raw.trim()
    if (pending.length === 0) {
      const expectation = EXPECTATION.exec(trimmed)
      if (expectation) {
        const last = commands.at(-1)
        if (last) last.expect.push(...pieces(expectation[2] ?? ''))
        if (last && expectation[1] === 'fails:') last.fails = true
        continue
      }
      if (trimmed === '' || trimmed.startsWith('#')) continue
      pendingLine = block.line + 1 + i
    }
    pending.push(raw)
    const text = pending.join('\n')
    if (!completeShell(text)) continue
    pending = []
    const background = /&\s*$/.test(text.replace(/\s+#[^'"]*$/, ''))
    commands.push({
      line: pendingLine,
      text: text.replace(/\s+#[^'"]*$/, '').replace(/&\s*$/, ''),
      expect: [],
      background
    })
  }
  if (pending.length > 0) throw new Error(`line ${pendingLine}: the command does not end: ${pending.join('\n')}`)
  return commands
}

function pieces(expected: string): string[] {
  return expected
    .split('…')
    .map(loose)
    .filter(p => p !== '')
}

function loose(text: string): string {
  return text.replace(/\s+/g, ' ').trim().toLowerCase()
}

/** Whether `output` holds each piece, in order. */
export function matches(output: string, expected: readonly string[]): boolean {
  const text = loose(output)
  let at = 0
  for (const piece of expected) {
    const found = text.indexOf(piece, at)
    if (found < 0) return false
    at = found + piece.length
  }
  return true
}

/** Commands that keep running until stopped, and how to know they are ready when the page says nothing. */
const SERVERS: { pattern: RegExp; ready: (log: string, command: string) => Promise<boolean> }[] = [
  { pattern: /(npm start|registry-node start|cli\.js start)\b/, ready: (_, command) => healthy(portOf(command)) },
  { pattern: /entity serve\b/, ready: async log => /serving on/.test(log) },
  { pattern: /npm run local-chain\b/, ready: async log => /Ctrl-C stops it/.test(log) },
  // A testnet runs until Ctrl-C; a scenario (--scenario) ends by itself, like any command.
  { pattern: /npm run testnet\b(?!.*--scenario)/, ready: async log => /commands:/.test(log) }
]

function portOf(command: string): number {
  const flag = /--http-port[ =](\d+)/.exec(command)
  return flag ? Number(flag[1]) : 8080
}

/** `/health` answers on the port, over HTTP or (a node serving TLS, whatever its certificate) HTTPS. */
async function healthy(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/health`)
    return res.ok
  } catch {
    return new Promise(resolve => {
      const req = httpsGet({ host: '127.0.0.1', port, path: '/health', rejectUnauthorized: false }, res => {
        res.resume()
        resolve(res.statusCode === 200)
      })
      req.on('error', () => resolve(false))
    })
  }
}

export interface Outcome {
  command: Command
  output: string
  exitCode: number
}

export class Walkthrough {
  readonly dir: string
  private readonly shell: ChildProcess
  private readonly servers: { pid: number; log: string }[] = []
  private readonly pageServers: { pid: number; log: string }[] = []
  private stdout = ''
  private count = 0
  private closed = false

  private constructor(dir: string, shell: ChildProcess) {
    this.dir = dir
    this.shell = shell
    shell.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk
    })
  }

  static async open(): Promise<Walkthrough> {
    const dir = await mkdtemp(join(tmpdir(), 'walkthrough-'))
    for (const name of LINKED) await symlink(join(ROOT, name), join(dir, name))
    const bin = join(dir, '.bin')
    await mkdir(bin)
    await writeFile(join(bin, 'registry-node'), `#!/bin/sh\nexec node ${join(ROOT, 'dist/cli.js')} "$@"\n`)
    await chmod(join(bin, 'registry-node'), 0o755)
    const shell = spawn('bash', ['--norc', '--noprofile'], {
      cwd: dir,
      detached: true,
      stdio: ['pipe', 'pipe', 'inherit'],
      env: readerEnvironment(bin)
    })
    return new Walkthrough(dir, shell)
  }

  /** Runs one command to its end (or, for a server, until it is ready). */
  async run(command: Command, timeoutMs = 120_000): Promise<Outcome> {
    const n = ++this.count
    const text = command.text.replace(/^npm install && /, '')
    const out = join(this.dir, `.out-${n}`)
    const marker = `__walkthrough_done_${n}`
    const server = !command.fails && (command.background || SERVERS.some(s => s.pattern.test(text)))
    const script = server
      ? `{\n${text}\n} > ${out} 2>&1 < /dev/null &\necho "${marker} $!"\n`
      : `{\n${text}\n} > ${out} 2>&1 < /dev/null\necho "${marker} $?"\n`
    this.shell.stdin?.write(script)
    const status = await this.waitFor(marker, timeoutMs, text)
    if (!server) {
      const output = await readFile(out, 'utf8')
      return { command, output, exitCode: status }
    }
    this.servers.push({ pid: status, log: out })
    const ready = SERVERS.find(s => s.pattern.test(text))?.ready
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const log = await readFile(out, 'utf8').catch(() => '')
      const done = command.expect.length > 0 ? matches(log, command.expect) : ready ? await ready(log, text) : true
      if (done) return { command, output: log, exitCode: 0 }
      if (!alive(status) || Date.now() > deadline) {
        return { command, output: log, exitCode: alive(status) ? -1 : 1 }
      }
      await sleep(100)
    }
  }

  /** Keeps what has been started so far running until the page ends (what the page assumes runs). */
  keepServers(): void {
    this.pageServers.push(...this.servers.splice(0))
  }

  /** Stops what the block started in the background, as Ctrl-C would. */
  async stopServers(): Promise<void> {
    for (const server of this.servers.splice(0)) {
      const pids = tree(server.pid)
      signal(pids, 'SIGINT')
      const deadline = Date.now() + 15_000
      while (pids.some(alive) && Date.now() < deadline) await sleep(100)
      signal(pids, 'SIGKILL')
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.stopServers()
    this.servers.push(...this.pageServers)
    await this.stopServers()
    this.shell.stdin?.end()
    try {
      process.kill(-(this.shell.pid ?? 0), 'SIGKILL')
    } catch {}
    await rm(this.dir, { recursive: true, force: true })
  }

  private async waitFor(marker: string, timeoutMs: number, text: string): Promise<number> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = new RegExp(`${marker} (-?\\d+)`).exec(this.stdout)
      if (found) return Number(found[1])
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms running: ${text.split('\n')[0]}`)
      await sleep(50)
    }
  }
}

/** The reader's environment: none of the suite's own settings for nodes, entities or the registry. */
function readerEnvironment(bin: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` }
  for (const name of Object.keys(env)) {
    if (name.startsWith('REGISTRY_NODE_') || name.startsWith('ENTITY_')) delete env[name]
  }
  return env
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The PIDs of a process and its descendants (a backgrounded `npm start` runs node as a child). */
function tree(pid: number): number[] {
  const out = spawnSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' }).stdout
  const children = new Map<number, number[]>()
  for (const line of out.split('\n')) {
    const [child, parent] = line.trim().split(/\s+/).map(Number)
    if (!child || parent === undefined) continue
    children.set(parent, [...(children.get(parent) ?? []), child])
  }
  const all = [pid]
  for (let i = 0; i < all.length; i++) all.push(...(children.get(all[i] ?? 0) ?? []))
  return all
}

function signal(pids: readonly number[], name: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name)
    } catch {}
  }
}
