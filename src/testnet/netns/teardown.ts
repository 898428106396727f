/**
 * Removing a testnet prefix's namespaces and root-namespace links, and sweeping away what crashed
 * runs left behind (prefixes whose owner process is gone).
 */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { bin, firstLine, listNamespaces, listRootLinks, mapLimit, PARALLEL, run } from './iproute.js'
import { DEFAULT_PREFIX_PATTERN, ownerAlive, releaseFiles, removeFile, stateDir } from './ownership.js'
import type { StaleCleanup } from './types.js'

const ignorable = (stderr: string): boolean =>
  /cannot find device|no such file|does not exist|not found|cannot open network namespace/i.test(stderr)

/** Deletes every namespace and root-namespace link named with `prefix`; returns pids found inside. */
export async function teardownPrefix(prefix: string): Promise<{ pids: number[]; errors: string[] }> {
  const errors: string[] = []
  const pids: number[] = []
  const links = (await listRootLinks()).filter(n => n.startsWith(prefix))
  // Deleting a veth deletes its peer; the root side first, so even a namespace kept alive by a
  // leftover process loses its way out.
  for (const link of links) {
    const r = await run([bin('ip'), 'link', 'del', 'dev', link])
    if (r.code !== 0 && !ignorable(r.stderr)) errors.push(`ip link del ${link}: ${firstLine(r.stderr)}`)
  }
  const namespaces = (await listNamespaces()).filter(n => n.startsWith(prefix))
  await mapLimit(namespaces, PARALLEL, async ns => {
    const inside = await run([bin('ip'), 'netns', 'pids', ns])
    for (const p of inside.stdout.split(/\s+/)) if (/^\d+$/.test(p)) pids.push(Number(p))
    const r = await run([bin('ip'), 'netns', 'del', ns])
    if (r.code !== 0 && !ignorable(r.stderr)) errors.push(`ip netns del ${ns}: ${firstLine(r.stderr)}`)
  })
  return { pids, errors }
}

/**
 * Removes the namespaces, root-namespace links and files of every testnet prefix matching
 * `prefixPattern` (anchored at the start of the name; its match is the prefix) whose owner process
 * has exited, or that has no owner file. Testnets whose owner is alive are kept.
 */
export async function cleanupStaleNetns(prefixPattern: RegExp = DEFAULT_PREFIX_PATTERN): Promise<StaleCleanup> {
  const pattern = new RegExp(prefixPattern.source, prefixPattern.flags.replace(/[gy]/g, ''))
  const prefixOf = (name: string): string | undefined => {
    const m = pattern.exec(name)
    return m !== null && m.index === 0 && m[0] !== '' ? m[0] : undefined
  }
  const dir = await stateDir()
  const prefixes = new Set<string>()
  for (const name of [...(await listNamespaces()), ...(await listRootLinks())]) {
    const p = prefixOf(name)
    if (p !== undefined) prefixes.add(p)
  }
  const files = await readdir(dir).catch(() => [] as string[])
  for (const f of files) {
    if (f.endsWith('owner.json')) {
      const p = prefixOf(f.slice(0, -'owner.json'.length))
      if (p !== undefined && `${p}owner.json` === f) prefixes.add(p)
    }
  }
  const result: StaleCleanup = { removed: [], kept: [], orphanPids: [] }
  for (const prefix of [...prefixes].sort()) {
    if (await ownerAlive(dir, prefix)) {
      result.kept.push(prefix)
      continue
    }
    const { pids } = await teardownPrefix(prefix)
    await releaseFiles(dir, prefix)
    result.removed.push(prefix)
    result.orphanPids.push(...pids)
  }
  // Subnet locks held by prefixes matching the pattern that have no live owner.
  for (const f of files) {
    if (!f.startsWith('subnet-') || !f.endsWith('.lock')) continue
    const holder = await readFile(join(dir, f), 'utf8').catch(() => null)
    if (holder === null) continue
    const p = prefixOf(holder)
    if (p !== undefined && p === holder && !(await ownerAlive(dir, p))) await removeFile(join(dir, f))
  }
  return result
}
