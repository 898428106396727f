/**
 * The operator's commands over a node's data: `export` (the signed operation log as JSON Lines),
 * `import` (those lines, into a running node over its admin route or into a stopped node's data
 * directory), `backup` and `restore`. Export and backup read the store beside the node
 * (store/store-reader.ts), running or not; import goes through the node's replication path.
 */
import { createReadStream, createWriteStream } from 'node:fs'
import { open, stat, truncate } from 'node:fs/promises'
import { resolve } from 'node:path'
import { createInterface } from 'node:readline'
import type { Writable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { registryUrl } from './client/cli.js'
import { Transport } from './client/request.js'
import { loadConfig } from './config/load.js'
import type { NodeConfig } from './config/settings.js'
import { backupDataDir, restoreDataDir } from './data-backup.js'
import { createLogger } from './logger.js'
import { OperationImport } from './services/replication/operation-import.js'
import { DataDirInUse } from './store/data-lock.js'
import { StoreReader } from './store/store-reader.js'
import { CliError, type CommandFlags, commandFlags } from './util/argv.js'
import { IMPORT_LIMITS, type ImportResult, type OperationImportAnswer } from './wire/operation-import.js'
import { toWire } from './wire/operations.js'

const usage = (message: string): never => {
  throw new CliError(message)
}

const EXPORT_PAGE = 1000
/** Operations and bytes of one import request: well inside the route's limits. */
const IMPORT_BATCH = 500
const IMPORT_BATCH_BYTES = IMPORT_LIMITS.bodyBytes / 2
const IMPORT_TIMEOUT_MS = 120_000

/** The settings these commands read: `--config FILE`, `--data DIR`, the environment, the defaults. */
async function settingsOf(f: CommandFlags): Promise<NodeConfig> {
  const argv = [
    ...(f.get('config') ? ['--config', f.get('config') as string] : []),
    ...(f.get('data') ? ['--data', f.get('data') as string] : [])
  ]
  return loadConfig({ argv })
}

// --- export ------------------------------------------------------------------------------------

export async function exportCommand(argv: string[]): Promise<void> {
  const f = commandFlags(argv, new Set(['resume']))
  if (f.positionals.length > 0) usage(`export takes no argument ${f.positionals[0]}; see registry-node export --help`)
  const dataDir = (await settingsOf(f)).data_dir
  const out = f.get('out')
  if (f.has('resume') && !out) usage('--resume needs --out FILE (it continues after the last line there)')
  if (f.has('resume') && f.has('after')) usage('--resume and --after both say where to start; give one')
  let after = 0
  if (f.has('after')) {
    after = Number(f.get('after'))
    if (!Number.isSafeInteger(after) || after < 0) usage('--after must be a sequence number (the seq of a line)')
  }
  if (f.has('resume') && out) after = await resumeCursor(out)
  const reader = StoreReader.open(dataDir)
  const sink = out ? createWriteStream(out, { flags: f.has('resume') ? 'a' : 'wx' }) : process.stdout
  let count = 0
  let last = after
  try {
    for (;;) {
      const page = reader.operationsAfter(last, EXPORT_PAGE)
      if (page.length === 0) break
      for (const [seq, op] of page) {
        await write(sink, `${JSON.stringify({ seq, ...toWire(op) })}\n`)
        last = seq
        count++
      }
      // A turn of the event loop renews lmdb-js's read transaction: each page reads the newest log.
      await nextTurn()
    }
  } finally {
    await reader.close()
    if (sink !== process.stdout) await new Promise<void>(done => sink.end(done))
  }
  process.stderr.write(
    `registry-node: exported ${count} operations after seq ${after}; the last is seq ${last} (continue with --after ${last}${out ? ` or --resume --out ${out}` : ''})\n`
  )
}

function write(sink: Writable, text: string): Promise<void> | undefined {
  if (sink.write(text)) return undefined
  return new Promise(done => sink.once('drain', done))
}

/**
 * Where an interrupted export to `path` continues: after the `seq` of its last complete line. A
 * line cut short by the interruption is removed first.
 */
async function resumeCursor(path: string): Promise<number> {
  const size = await stat(path).then(
    s => s.size,
    () => usage(`--resume: ${path} does not exist; start without --resume`)
  )
  const file = await open(path, 'r')
  try {
    const tail = Buffer.alloc(Math.min(size, 256 * 1024))
    await file.read(tail, 0, tail.length, size - tail.length)
    let end = tail.length
    if (end > 0 && tail[end - 1] !== 0x0a) {
      const cut = tail.lastIndexOf(0x0a, end - 1) + 1
      await truncate(path, size - (end - cut))
      end = cut
    }
    if (end === 0) return 0
    const lineStart = tail.lastIndexOf(0x0a, end - 2) + 1
    const seq = (JSON.parse(tail.subarray(lineStart, end - 1).toString('utf8')) as { seq?: unknown }).seq
    if (typeof seq !== 'number') usage(`--resume: the last line of ${path} carries no seq; is it an export?`)
    return seq as number
  } finally {
    await file.close()
  }
}

// --- import ------------------------------------------------------------------------------------

interface Line {
  number: number
  value: unknown
  /** Deferred once already: found present later, it was applied by this import. */
  deferred?: boolean
}

interface ImportTally {
  lines: number
  applied: number
  present: number
  refused: Record<string, number>
}

export async function importCommand(argv: string[]): Promise<void> {
  const f = commandFlags(argv, new Set())
  const source = f.positionals[0] ?? usage('import needs FILE (an export) or - for standard input')
  if (f.positionals.length > 1) usage(`import takes one FILE; ${f.positionals[1]} is one too many`)
  const target = f.has('data') ? await offlineTarget(f) : await nodeTarget(f)
  const tally: ImportTally = { lines: 0, applied: 0, present: 0, refused: {} }
  const refuse = (line: Line, reason: string, message?: string): void => {
    tally.refused[reason] = (tally.refused[reason] ?? 0) + 1
    process.stderr.write(`registry-node: line ${line.number}: refused (${reason})${message ? `: ${message}` : ''}\n`)
  }
  let waiting: Line[] = []
  let lineNumber = 0
  const send = async (lines: Line[]): Promise<void> => {
    for (let i = 0; i < lines.length; i += IMPORT_BATCH) {
      const batch = lines.slice(i, i + IMPORT_BATCH)
      const answer = await target.apply(batch.map(l => l.value))
      answer.results.forEach((result: ImportResult, j) => {
        const line = batch[j] as Line
        if (result.outcome === 'deferred') waiting.push({ ...line, deferred: true })
        else if (result.outcome === 'refused') refuse(line, result.reason ?? 'refused', result.message)
        else if (result.outcome === 'present' && !line.deferred) tally.present++
        else tally.applied++
      })
    }
  }
  try {
    let batch: Line[] = []
    let bytes = 0
    const input = source === '-' ? process.stdin : createReadStream(source)
    for await (const text of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
      const number = ++lineNumber
      if (text.trim() === '') continue
      tally.lines++
      let value: unknown
      try {
        value = JSON.parse(text)
      } catch {
        refuse({ number, value: null }, 'invalid_json', 'the line is not JSON')
        continue
      }
      const size = Buffer.byteLength(text)
      if (batch.length >= IMPORT_BATCH || bytes + size > IMPORT_BATCH_BYTES) {
        await send(batch)
        batch = []
        bytes = 0
      }
      batch.push({ number, value })
      bytes += size
    }
    await send(batch)
    // What built on a record later in the file goes again, while a round still applies something.
    for (let round = 0; round < 3 && waiting.length > 0; round++) {
      const again = waiting
      waiting = []
      await send(again)
      if (waiting.length === again.length) break
    }
    for (const line of waiting)
      refuse(line, 'missing_dependency', 'it builds on a record neither the file nor the node holds')
  } finally {
    await target.close()
  }
  process.stdout.write(`${JSON.stringify(tally, null, 2)}\n`)
  if (Object.keys(tally.refused).length > 0) process.exitCode = 1
}

interface ImportTarget {
  apply(values: unknown[]): Promise<OperationImportAnswer>
  close(): Promise<void>
}

/** A running node, through its admin route. */
async function nodeTarget(f: CommandFlags): Promise<ImportTarget> {
  const token = f.get('admin-token') ?? (await settingsOf(f)).onboarding.webhook_secret
  if (!token)
    usage(
      "import into a running node needs its admin secret: --admin-token SECRET, or --config FILE with the node's onboarding.webhook_secret (or --data DIR for a stopped node)"
    )
  const transport = new Transport(registryUrl(f), IMPORT_TIMEOUT_MS)
  return {
    apply: async operations =>
      (
        await transport.request<OperationImportAnswer>('POST', '/v1/admin/operations', {
          body: { operations },
          headers: { authorization: `Bearer ${token}` }
        })
      ).body,
    close: async () => {}
  }
}

/** A stopped node's data directory: the node runs here, without the mesh, for the import. */
async function offlineTarget(f: CommandFlags): Promise<ImportTarget> {
  const settings = await settingsOf(f)
  const config: NodeConfig = {
    ...settings,
    p2p: { ...settings.p2p, enabled: false },
    http: { ...settings.http, host: '127.0.0.1', port: 0 }
  }
  // Loaded only here: export and backup need none of the node's parts.
  const { startRegistryNode } = await import('./node.js')
  const node = await startRegistryNode(config, { logger: createLogger('error') }).catch((err: unknown) => {
    if (err instanceof DataDirInUse)
      throw new DataDirInUse(
        `${err.message}; to import into the running node, leave out --data and give --registry URL`
      )
    throw err
  })
  const imports = new OperationImport({
    replication: node.replication,
    store: node.store,
    registryId: node.identity.registryId
  })
  return { apply: values => imports.applyBatch(values), close: () => node.stop() }
}

// --- backup and restore ------------------------------------------------------------------------

export async function backupCommand(argv: string[]): Promise<void> {
  const f = commandFlags(argv, new Set(['compact']))
  const to = f.get('to') ?? usage('backup needs --to DIR (a new or empty directory)')
  const dataDir = (await settingsOf(f)).data_dir
  const manifest = await backupDataDir(dataDir, to, { compact: f.has('compact') })
  process.stdout.write(`${JSON.stringify({ backup: resolve(to), ...manifest }, null, 2)}\n`)
}

export async function restoreCommand(argv: string[]): Promise<void> {
  const f = commandFlags(argv, new Set(['force']))
  const from = f.get('from') ?? usage('restore needs --from DIR (a backup)')
  if (!f.has('data') && !f.has('config'))
    usage('restore needs --data DIR (or --config FILE naming it): where to restore')
  const dataDir = (await settingsOf(f)).data_dir
  const manifest = await restoreDataDir(from, dataDir, { force: f.has('force') })
  process.stdout.write(
    `${JSON.stringify({ restored: resolve(dataDir), registry_id: manifest.registry_id, last_seq: manifest.last_seq, backup_created_at: manifest.created_at, files: manifest.files }, null, 2)}\n`
  )
}
