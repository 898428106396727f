/**
 * Paid entity calls per second, end to end, with the local facilitator on a local chain.
 *
 *   npm run bench:x402 -- [--seconds 20] [--concurrency 4] [--http-server auto|uws|node]
 *
 * anvil (automine) with Circle's FiatToken at the Base Sepolia USDC address; a priced echo entity
 * (0.01 USDC, facilitator "local": verify and settle in process through viem); --concurrency
 * callers in this process, each repeating: unpaid call → 402 quote → sign the EIP-3009
 * authorization with the x402 client library → paid call → 200 with the receipt. Every
 * settlement is a real transaction, mined before the answer. Prints paid calls/s, the latency of
 * the paid call, and its split into verify (local checks, the ledger claim, the facilitator's
 * on-chain simulation), handler and settle (transaction sent and its receipt awaited), from the
 * entity's Server-Timing header; then that the payer's balance fell by exactly the calls paid.
 * The entity, the callers and anvil share the machine's cores; the load is printed.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { x402Client, x402HTTPClient } from '@x402/core/client'
import type { PaymentRequired } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { pino } from 'pino'
import { privateKeyToAccount } from 'viem/accounts'
import type { ServerChoice } from '../../src/http/front.js'
import { signAgentMessage } from '../../src/entity/agent-message.js'
import { createEntity } from '../../src/entity/entity.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed } from '../../src/identity/keys.js'
import { startLocalChain } from '../../test/helpers/anvil.js'
import { percentile, report } from '../lib/report.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '4' },
    'http-server': { type: 'string', default: 'auto' }
  }
})
const seconds = Number(values.seconds)
const concurrency = Number(values.concurrency)

report(
  'load before',
  loadavg()
    .map(l => l.toFixed(2))
    .join(' '),
  `(${cpus().length} cores)`
)
const chain = await startLocalChain({ payerBalance: 1_000_000_000n })
const dataDir = await mkdtemp(join(tmpdir(), 'bench-x402-'))
const entity = await createEntity({
  key: keyPairFromSeed(Buffer.alloc(32, 201)),
  registry: null,
  logger: pino({ level: 'silent' }),
  httpServer: values['http-server'] as ServerChoice,
  card: {
    name: 'Paid echo',
    pricing: { model: 'per-request', currency: 'USDC', rates: { default: '0.01' }, payment_methods: ['x402'] }
  },
  payments: { facilitator: 'local', rpcUrl: chain.rpcUrl, settlementKey: chain.deployerKey, dataDir },
  handler: input => input.content
}).start()
const caller = keyPairFromSeed(Buffer.alloc(32, 202))
const callerId = deriveId('agent', caller.publicKey)
const payer = new x402HTTPClient(
  new x402Client().register('eip155:*', new ExactEvmScheme(privateKeyToAccount(chain.payerKey))).setSpendControls(false)
)
const url = `${entity.url}/webhook/sync`
const before = await chain.balanceOf(chain.payer)

const timings = {
  quote: [] as number[],
  sign: [] as number[],
  paid: [] as number[],
  verify: [] as number[],
  handler: [] as number[],
  settle: [] as number[]
}
let errors = 0
let paid = 0
const post = (headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    body: JSON.stringify(signAgentMessage(caller, callerId, { content: 'bench' })),
    headers: { 'content-type': 'application/json', ...headers }
  })

async function caller402Loop(until: number): Promise<void> {
  while (Date.now() < until) {
    const t0 = performance.now()
    const unpaid = await post()
    await unpaid.arrayBuffer()
    const required = JSON.parse(
      Buffer.from(unpaid.headers.get('payment-required') ?? '', 'base64').toString('utf8')
    ) as PaymentRequired
    const t1 = performance.now()
    const headers = payer.encodePaymentSignatureHeader(await payer.createPaymentPayload(required))
    const t2 = performance.now()
    const res = await post(headers)
    const body = await res.text()
    const t3 = performance.now()
    if (res.status !== 200) {
      if (errors++ < 3) console.error(`paid call ${res.status}: ${body.slice(0, 300)}`)
      continue
    }
    paid++
    timings.quote.push(t1 - t0)
    timings.sign.push(t2 - t1)
    timings.paid.push(t3 - t2)
    for (const part of (res.headers.get('server-timing') ?? '').split(',')) {
      const [name, dur] = part.trim().split(';dur=')
      if (name === 'verify' || name === 'handler' || name === 'settle') timings[name].push(Number(dur))
    }
  }
}

const started = performance.now()
const cpuBefore = process.cpuUsage()
await Promise.all(Array.from({ length: concurrency }, () => caller402Loop(Date.now() + seconds * 1000)))
const elapsed = (performance.now() - started) / 1000
const cpu = process.cpuUsage(cpuBefore)

const ms = (xs: number[], p: number) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    p / 100
  ).toFixed(1)
report('paid calls', paid, `in ${elapsed.toFixed(1)} s with ${concurrency} callers`)
report('paid calls per second', (paid / elapsed).toFixed(1), '/s')
report('errors', errors, '')
for (const [name, xs] of Object.entries(timings)) report(`${name} p50 / p99`, `${ms(xs, 50)} / ${ms(xs, 99)}`, 'ms')
report(
  'this process CPU (entity, callers, facilitator)',
  (((cpu.user + cpu.system) / 1e6 / elapsed) * 100).toFixed(0),
  '% of one core'
)
const spent = before - (await chain.balanceOf(chain.payer))
report('payer balance fell by', spent.toString(), `atomic USDC (expected ${BigInt(paid) * 10_000n})`)
report(
  'load after',
  loadavg()
    .map(l => l.toFixed(2))
    .join(' '),
  ''
)
await entity.stop()
await chain.stop()
await rm(dataDir, { recursive: true, force: true })
