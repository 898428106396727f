/**
 * Sync waste (issue 17): operations sent by sync sessions against those applied, when nodes join a
 * node that holds writes they lack, all at once (their sessions overlap). In-process nodes on
 * loopback, the mesh fully connected.
 *
 *   npm run bench:sync-waste -- [--entities 3000] [--joiners 3]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { pino } from 'pino'
import { defaultConfig } from '../../src/config/load.js'
import type { NodeConfig } from '../../src/config/settings.js'
import { startRegistryNode, type RegistryNode } from '../../src/node.js'
import { sleep } from '../lib/mesh-bench.js'
import { makeBodies } from '../lib/registration-bodies.js'
import { report } from '../lib/report.js'

const { values: args } = parseArgs({
  options: { entities: { type: 'string', default: '3000' }, joiners: { type: 'string', default: '3' } }
})
const total = Number(args.entities)

async function start(name: string, bootstrap: string[]): Promise<{ node: RegistryNode; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), `sync-waste-${name}-`))
  const base = defaultConfig()
  const config = {
    ...base,
    data_dir: dir,
    name,
    host: `${name}.test`,
    http: { ...base.http, host: '127.0.0.1', port: 0 },
    rate_limit: { ...base.rate_limit, enabled: false },
    p2p: {
      ...base.p2p,
      enabled: true,
      host: '127.0.0.1',
      port: 0,
      bootstrap,
      sync_interval_seconds: 5,
      origin_ops_per_second: 0,
      developer_ops_per_second: 0
    }
  } as NodeConfig
  return { node: await startRegistryNode(config, { logger: pino({ level: 'silent' }) }), dir }
}

const first = await start('seed', [])
const address = first.node.mesh!.addresses().find(a => !a.includes('/ws')) as string
const bodies = makeBodies(total)
for (let i = 0; i < bodies.length; i += 64) {
  await Promise.all(
    bodies.slice(i, i + 64).map(b =>
      fetch(`${first.node.url}/v1/entities`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: b.body
      })
    )
  )
}
// Older than gossip's age bound by the time they are asked for: they travel by sync only.
const started = performance.now()
const joiners = await Promise.all(
  Array.from({ length: Number(args.joiners) }, (_, i) => start(`joiner${i}`, [address]))
)
const everyone = [first, ...joiners]
const held = (n: RegistryNode) => [...n.store.allEntities()].length
for (;;) {
  if (joiners.every(j => held(j.node) >= total)) break
  if (performance.now() - started > 180_000) throw new Error('did not converge in 180 s')
  await sleep(250)
}
await sleep(6_000) // the sessions still under way end
const totals = everyone.map(n => n.node.mesh!.sync.totals)
const sum = (k: keyof (typeof totals)[number]) => totals.reduce((s, t) => s + t[k], 0)
report('sync_entities', total, `registered on one node; ${joiners.length} nodes join it at once`)
report('sync_converged_after', ((performance.now() - started - 6000) / 1000).toFixed(1), 's')
report('sync_operations_sent', sum('sent'), 'over all sessions')
report('sync_operations_applied', sum('applied'), '')
report(
  'sync_waste',
  ((1 - sum('applied') / Math.max(1, sum('sent'))) * 100).toFixed(1),
  `% of sent operations not applied (sessions ${sum('sessions')}, busy ${sum('busy')}, failed ${sum('failed')})`
)
for (const n of everyone) await n.node.stop()
for (const n of everyone) await rm(n.dir, { recursive: true, force: true })
