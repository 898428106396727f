/**
 * Cold start of a kept data directory, repeatable: `npm run bench:restart -- --data DIR [--runs N]`.
 * Each run copies DIR (made by `npm run bench:search -- --entities N --keep --no-restart`, so every run
 * restarts the same store), starts a node on the copy and prints when it listened and when search
 * answered (searches wait until the index holds every record), the RSS then, and each thread group's
 * CPU share every `--sample` seconds.
 * Alternate runs of two builds to compare them: a restart at 1M varies by ±10 s between runs here.
 * `npm run bench:search` reports the same restart once, with the time until vectors are complete.
 */
import { cp, rm } from 'node:fs/promises'
import { Agent } from 'node:http'
import { parseArgs } from 'node:util'
import { call, machineLoad, sleep } from '../lib/mesh-bench.js'
import { cpuSecondsByThread, memoryMiB, spawnNode } from '../lib/node-process.js'
import { report } from '../lib/report.js'

const { values: args } = parseArgs({
  options: {
    data: { type: 'string' },
    runs: { type: 'string', default: '1' },
    work: { type: 'string', default: '' },
    sample: { type: 'string', default: '5' }
  }
})
if (!args.data) throw new Error('--data DIR: a directory kept by bench:search (--keep --no-restart)')
const pristine = args.data
const work = args.work || `${pristine.replace(/\/$/, '')}-restart`
const sampleMs = Number(args.sample) * 1000

/** Every entity, whatever its type and status. */
const EVERYTHING = JSON.stringify({ type: 'any', status: 'any', max_results: 1 })

/** The first search answer's count of entities (null: no answer yet). */
async function totalFound(agent: Agent, base: URL): Promise<number | null> {
  // Searches wait for the index, up to minutes at a million entities.
  const reply = await call(agent, base, 'POST', '/v1/search', EVERYTHING, {}, 600_000)
  return reply.status === 200 ? (JSON.parse(reply.text) as { total_found: number }).total_found : null
}

/** CPU share of each thread group (main, the V8 and worker threads named "node", libuv, …) since the last call. */
async function cpuSampler(pid: number, since: number): Promise<() => Promise<string>> {
  let last = await cpuSecondsByThread(pid)
  let lastAt = performance.now()
  return async () => {
    const now = await cpuSecondsByThread(pid)
    const at = performance.now()
    const groups = new Map<string, number>()
    for (const [name, seconds] of now) {
      const group = name === 'main' ? 'main' : name.replace(/ \d+$/, '')
      groups.set(group, (groups.get(group) ?? 0) + seconds - (last.get(name) ?? 0))
    }
    const elapsed = (at - lastAt) / 1000
    last = now
    lastAt = at
    const shares = [...groups]
      .filter(([, s]) => s / elapsed >= 0.01)
      .map(([g, s]) => `${g} ${((100 * s) / elapsed).toFixed(0)} %`)
    return `t=${((at - since) / 1000).toFixed(0)} s: ${shares.join(', ')}`
  }
}

for (let run = 1; run <= Number(args.runs); run++) {
  await rm(work, { recursive: true, force: true })
  await cp(pristine, work, { recursive: true })
  const loadAtStart = machineLoad()
  const started = performance.now()
  const node = await spawnNode(['--data', work, '--http-port', '0', '--no-rate-limit'], { startTimeoutMs: 600_000 })
  const listening = performance.now() - started
  const pid = node.child.pid as number
  const sample = await cpuSampler(pid, started)
  const sampler = setInterval(() => void sample().then(line => console.log(`  ${line}`)), sampleMs)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const base = new URL(node.url)
  // Searches wait until the index holds every stored record: the first answer is the cold start.
  let count: number | null = null
  while (count === null) {
    count = await totalFound(agent, base)
    if (count === null) await sleep(20)
  }
  const searchable = performance.now() - started
  clearInterval(sampler)
  const memory = await memoryMiB(pid)
  report('run', run, `of ${args.runs} (load average ${loadAtStart} at the start)`)
  report('restart_listening', (listening / 1000).toFixed(1), 's (spawn to "listening on")')
  report(
    'restart_all_searchable',
    (searchable / 1000).toFixed(1),
    `s (spawn until search counted all ${count} entities)`
  )
  report(
    'node_rss_at_searchable',
    memory.rss.toFixed(0),
    `MiB (anonymous ${memory.anon.toFixed(0)} MiB, peak ${memory.hwm.toFixed(0)} MiB)`
  )
  agent.destroy()
  node.child.kill('SIGTERM')
  await node.exited
}
await rm(work, { recursive: true, force: true })
