/**
 * Who owns a testnet prefix: an owner file (pid and process start time) and the subnet locks in a
 * state directory, written before anything carries the prefix, so that a sweep can tell what a
 * crashed run left behind from a testnet that is still alive.
 */
import { randomBytes } from 'node:crypto'
import { link, mkdir, readFile, readdir, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { listNamespaces, listRootLinks } from './iproute.js'
import { NetnsError } from './types.js'

/** Matches the prefixes reservePrefix() hands out. */
export const DEFAULT_PREFIX_PATTERN = /^rn[0-9a-f]{4}-/

interface OwnerRecord {
  pid: number
  start: string | null
  created: string
  subnet?: string
}

let stateDirPromise: Promise<string> | undefined
export function stateDir(): Promise<string> {
  stateDirPromise ??= (async () => {
    for (const dir of ['/run/registry-node-netns', join(tmpdir(), 'registry-node-netns')]) {
      try {
        await mkdir(dir, { recursive: true, mode: 0o700 })
        return dir
      } catch {
        // next candidate
      }
    }
    throw new NetnsError('no writable directory for testnet owner files')
  })()
  return stateDirPromise
}

const ownerFile = (dir: string, prefix: string): string => join(dir, `${prefix}owner.json`)
export const subnetLockFile = (dir: string, base: string): string => join(dir, `subnet-${base}.lock`)

/** The process's start time: a pid reused by another process does not keep a dead owner alive. */
async function processStart(pid: number): Promise<string | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // Field 22 (starttime); fields 3.. follow the parenthesised command name.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

export async function ownerAlive(dir: string, prefix: string): Promise<boolean> {
  let record: OwnerRecord
  try {
    record = JSON.parse(await readFile(ownerFile(dir, prefix), 'utf8')) as OwnerRecord
  } catch {
    return false
  }
  if (!Number.isInteger(record.pid) || record.pid <= 0) return false
  const start = await processStart(record.pid)
  if (start === null) return false
  return record.start === null || record.start === start
}

export const isExists = (err: unknown): boolean => (err as { code?: unknown }).code === 'EEXIST'

export async function removeFile(path: string): Promise<void> {
  await unlink(path).catch(() => undefined)
}

/** A fresh prefix, reserved by its owner file before anything carries its name. */
export async function reservePrefix(): Promise<{ prefix: string; dir: string }> {
  const dir = await stateDir()
  const start = await processStart(process.pid)
  for (let attempt = 0; attempt < 50; attempt++) {
    const prefix = `rn${randomBytes(2).toString('hex')}-`
    const names = [...(await listNamespaces()), ...(await listRootLinks())]
    if (names.some(n => n.startsWith(prefix))) continue
    const record: OwnerRecord = { pid: process.pid, start, created: new Date().toISOString() }
    // Written whole under a private name, then linked into place: a sweep in another process never
    // reads a half-written owner file and takes a live prefix for a crashed one.
    const draft = `${ownerFile(dir, prefix)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
    await writeFile(draft, JSON.stringify(record))
    try {
      await link(draft, ownerFile(dir, prefix))
      return { prefix, dir }
    } catch (err) {
      if (isExists(err)) continue
      throw err
    } finally {
      await removeFile(draft)
    }
  }
  throw new NetnsError('could not find a free testnet prefix')
}

/** Removes the prefix's subnet locks and then its owner file. */
export async function releaseFiles(dir: string, prefix: string): Promise<void> {
  const files = await readdir(dir).catch(() => [] as string[])
  for (const f of files) {
    if (!f.startsWith('subnet-') || !f.endsWith('.lock')) continue
    const holder = await readFile(join(dir, f), 'utf8').catch(() => '')
    if (holder === prefix) await removeFile(join(dir, f))
  }
  await removeFile(ownerFile(dir, prefix))
}
