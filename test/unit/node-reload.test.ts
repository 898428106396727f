/**
 * reloadNode on in-process nodes: a new bootstrap address is dialled at once, limits read per
 * request change, and a configuration with a value the node refuses changes nothing at all.
 */
import test from 'ava'
import { tcpAddress, testNodes } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const nodes = testNodes()
test.after.always(nodes.stopAll)

test('a bootstrap address added on reload is dialled without a restart', async t => {
  const a = await nodes.start({ p2p: { enabled: true } })
  const b = await nodes.start({ p2p: { enabled: true } })
  t.is(b.node.mesh?.peers.connectedCount, 0)
  const next = structuredClone(b.node.config)
  next.p2p.bootstrap = [tcpAddress(a)]
  const report = await b.node.reload(next)
  t.deepEqual(
    report.applied.map(a => a.setting),
    ['p2p.bootstrap']
  )
  await until('b is connected to a', () => b.node.mesh?.peers.connectedCount === 1)
  t.deepEqual(b.node.config.p2p.bootstrap, [tcpAddress(a)])
})

test('limits read per request change; a refused value changes nothing, the valid ones beside it included', async t => {
  const n = await nodes.start({ rate_limit: { enabled: true, reads_per_minute: 100 } })
  const limit = async (): Promise<string | null> => (await fetch(`${n.url}/v1/info`)).headers.get('x-ratelimit-limit')
  t.is(await limit(), '100')

  const refused = structuredClone(n.node.config)
  refused.rate_limit.reads_per_minute = 5
  refused.log.level = 'debug'
  refused.http.trusted_proxies = ['not-an-address']
  await t.throwsAsync(n.node.reload(refused), { message: /^http\.trusted_proxies: trusted proxy not-an-address/ })
  t.is(await limit(), '100')
  t.is(n.node.config.log.level, 'info')

  const next = structuredClone(n.node.config)
  next.rate_limit.reads_per_minute = 5
  next.limits.max_list_limit = 3
  next.http.body_limit_bytes = 2048
  next.name = 'renamed'
  const report = await n.node.reload(next)
  t.deepEqual(report.restart, ['name'])
  t.deepEqual(report.applied.map(a => a.setting).sort(), [
    'http.body_limit_bytes',
    'limits.max_list_limit',
    'rate_limit.reads_per_minute'
  ])
  t.is(await limit(), '5')
  const page = (await (await fetch(`${n.url}/v1/entities?limit=50`)).json()) as { limit: number }
  t.is(page.limit, 3)
  const big = await fetch(`${n.url}/v1/entities`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pad: 'x'.repeat(4000) })
  })
  t.is(big.status, 413)
  t.is(n.node.config.name, 'registry-node', 'a setting that needs a restart keeps its running value')
})
