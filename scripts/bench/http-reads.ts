/**
 * G6: HTTP reads. Compares GET /v1/entities/{id} (random IDs of a populated node) with the
 * trivial GET /health on the same server: requests per second, latency, and requests per
 * server-CPU-second (the fair comparison on a 2-core machine, where the load generator shares
 * the CPU with the node).
 *
 *   npm run bench:reads -- [--entities 2000] [--seconds 10] [--connections 50] [--http-server auto|uws|node]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { deriveId } from '../../src/identity/ids.js'
import { generateKeyPair } from '../../src/identity/keys.js'
import { signedRegistration } from '../../src/testnet/entity-factory.js'
import { cpuSeconds, spawnNode } from '../lib/node-process.js'
import { report } from '../lib/report.js'

const { values: args } = parseArgs({
  options: {
    entities: { type: 'string', default: '2000' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    'http-server': { type: 'string', default: 'auto' }
  }
})

async function populate(url: string, n: number): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, async (_, j) => {
        const key = generateKeyPair()
        const body = signedRegistration(key, {
          name: `Reader ${i + j}`,
          category: 'tools',
          summary: 'An agent used to benchmark reads',
          tags: ['bench', 'read'],
          entity_url: `https://r${i + j}.bench.example`,
          capability_summary: { skills: ['translate', 'summarize'], protocols: ['a2a'] }
        })
        const res = await fetch(`${url}/v1/entities`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body)
        })
        if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${await res.text()}`)
        ids.push(deriveId('agent', key.publicKey))
      })
    )
  }
  return ids
}

async function run(
  url: string,
  pid: number,
  path: (i: number) => string
): Promise<{ rps: number; p50: number; p99: number; perCpuSecond: number; errors: number }> {
  let i = 0
  const cpu0 = await cpuSeconds(pid)
  const result = await autocannon({
    url,
    connections: Number(args.connections),
    duration: Number(args.seconds),
    requests: [{ method: 'GET', setupRequest: (req: autocannon.Request) => ({ ...req, path: path(i++) }) }]
  })
  const cpu = (await cpuSeconds(pid)) - cpu0
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    perCpuSecond: result.requests.total / cpu,
    errors: result.errors + result.non2xx
  }
}

const data = await mkdtemp(join(tmpdir(), 'bench-reads-'))
const node = await spawnNode([
  '--data',
  data,
  '--http-port',
  '0',
  '--no-rate-limit',
  '--http-server',
  args['http-server']
])
try {
  const { runtime } = (await (await fetch(`${node.url}/v1/info`)).json()) as {
    runtime: { node: string; http_server: string }
  }
  report('http_server', runtime.http_server, '')
  report('node_version', runtime.node, '')
  const ids = await populate(node.url, Number(args.entities))
  const pid = node.child.pid!
  await run(node.url, pid, () => '/health') // warm-up
  const trivial = await run(node.url, pid, () => '/health')
  const entity = await run(node.url, pid, i => `/v1/entities/${encodeURIComponent(ids[(i * 7919) % ids.length]!)}`)
  report('entities_stored', ids.length, 'entities')
  report('trivial_route_rps', trivial.rps.toFixed(0), 'req/s')
  report('trivial_route_latency_p99', trivial.p99, 'ms')
  report('get_entity_rps', entity.rps.toFixed(0), 'req/s')
  report('get_entity_latency_p50', entity.p50, 'ms')
  report('get_entity_latency_p99', entity.p99, 'ms')
  report('get_entity_errors', entity.errors, 'responses')
  report('rps_ratio_entity_to_trivial', (entity.rps / trivial.rps).toFixed(2), '')
  report('trivial_route_req_per_server_cpu_second', trivial.perCpuSecond.toFixed(0), 'req')
  report('get_entity_req_per_server_cpu_second', entity.perCpuSecond.toFixed(0), 'req')
  report('cpu_ratio_entity_to_trivial', (entity.perCpuSecond / trivial.perCpuSecond).toFixed(2), '')
} finally {
  node.child.kill('SIGTERM')
  await node.exited
  await rm(data, { recursive: true, force: true })
}
