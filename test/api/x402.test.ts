/**
 * A priced entity over real HTTP against a real chain (anvil, with Circle's FiatToken at the Base
 * Sepolia USDC address): the 402 quote, a paid call settled on chain, every refusal with its
 * code (replays also after a restart, under- and overpayment, wrong pay-to/asset/network, an
 * expired authorization, a tampered signature, a quote never issued), two concurrent uses of one
 * payment, the free endpoints, and a settlement that fails because the chain went away.
 */
import { execFile, spawn } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { pino } from 'pino'
import { x402Client, x402HTTPClient } from '@x402/core/client'
import type { PaymentPayload, PaymentRequired } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { privateKeyToAccount } from 'viem/accounts'
import {
  createEntity,
  derivedPayTo,
  PayingClient,
  PaymentClientError,
  signAgentMessage,
  type RunningEntity
} from '../../src/entity/index.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed } from '../../src/identity/keys.js'
import { createFacilitator } from '../../src/entity/x402/facilitator.js'
import { paymentNetwork } from '../../src/entity/x402/networks.js'
import { entityKeyFile, writeKeyFile } from '../../src/identity/key-file.js'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'
import { anvilBinary, startLocalChain, type LocalChain } from '../helpers/anvil.js'
import { developer } from '../helpers/identities.js'
import { startTestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const PRICE = 10_000n // 0.01 USDC
const entityKey = keyPairFromSeed(Buffer.alloc(32, 151))
const payTo = derivedPayTo(entityKey.seed)
const caller = keyPairFromSeed(Buffer.alloc(32, 152))
const callerId = deriveId('agent', caller.publicKey)
const binary = anvilBinary()

let chain: LocalChain
let dataDir: string
let entity: RunningEntity
let stopChainOnCall = false

const decode = (header: string | null): unknown =>
  header ? JSON.parse(Buffer.from(header, 'base64').toString('utf8')) : null

async function startPriced(): Promise<RunningEntity> {
  return createEntity({
    key: entityKey,
    registry: null,
    logger: pino({ level: 'silent' }),
    card: {
      name: 'Paid echo',
      pricing: { model: 'per-request', currency: 'USDC', rates: { default: '0.01' }, payment_methods: ['x402'] }
    },
    payments: { facilitator: 'local', rpcUrl: chain.rpcUrl, settlementKey: chain.deployerKey, dataDir },
    handler: async input => {
      if (input.content === 'stop the chain' && stopChainOnCall) await chain.stop()
      return `${input.content} (paid by ${input.payment?.payer ?? 'nobody'})`
    }
  }).start()
}

const message = (content = 'hello') => JSON.stringify(signAgentMessage(caller, callerId, { content }))

async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${entity.url}${path}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers }
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as Record<string, unknown> }
}

/** The quote of an unpaid call. */
async function quote(): Promise<PaymentRequired> {
  const res = await post('/webhook/sync', message())
  return decode(res.headers.get('payment-required')) as PaymentRequired
}

/** The x402 client library, without its spend controls: it signs whatever the (possibly forged) requirements say. */
const payer = (key = chain.payerKey) =>
  new x402HTTPClient(
    new x402Client().register('eip155:*', new ExactEvmScheme(privateKeyToAccount(key))).setSpendControls(false)
  )

/** A payment signed by the x402 client library for `required` (changed first by `alter`, to forge one). */
async function payment(alter: (r: PaymentRequired) => void = () => {}): Promise<PaymentPayload> {
  const required = await quote()
  alter(required)
  return payer().createPaymentPayload(required)
}

const header = (p: PaymentPayload): Record<string, string> => payer().encodePaymentSignatureHeader(p)

async function paidCall(p: PaymentPayload, content = 'hello') {
  return post('/webhook/sync', message(content), header(p))
}

if ('missing' in binary) {
  test('x402 against a local chain', t => {
    if (process.env.CI) t.fail(`anvil cannot run here: ${binary.missing}`)
    else t.pass(`skipped: anvil cannot run here (${binary.missing})`)
  })
} else {
  test.before(async () => {
    chain = await startLocalChain()
    dataDir = await mkdtemp(join(tmpdir(), 'x402-entity-'))
    entity = await startPriced()
  })

  test.after.always(async () => {
    await entity?.stop().catch(() => {})
    await chain?.stop()
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  test.serial('unpaid → 402 with the quote in the PAYMENT-REQUIRED header and the body', async t => {
    const res = await post('/webhook/sync', message())
    t.is(res.status, 402)
    const required = decode(res.headers.get('payment-required')) as PaymentRequired
    t.is(required.x402Version, 2)
    const [accepted] = required.accepts
    t.like(accepted, { scheme: 'exact', network: 'eip155:84532', amount: PRICE.toString(), asset: chain.usdc, payTo })
    t.like(accepted?.extra, { name: 'USDC', version: '2' })
    t.regex(String(accepted?.extra.nonce), /^0x[0-9a-f]{64}$/)
    t.like(res.body, {
      error: 'payment_required',
      price: '0.01',
      pay_to: payTo,
      nonce: accepted?.extra.nonce,
      x402Version: 2
    })
    t.deepEqual(res.body.accepts, required.accepts, 'the body carries the same requirements')
    t.is(res.body.response, undefined)
  })

  test.serial('free endpoints stay free: /webhook, /health and the card (which shows the price)', async t => {
    t.is((await post('/webhook', message())).status, 202)
    t.is((await fetch(`${entity.url}/health`)).status, 200)
    const card = (await (await fetch(`${entity.url}/.well-known/agent-card.json`)).json()) as Record<
      string,
      Record<string, unknown>
    >
    t.like(card.pricing, { price: '0.01', pay_to: payTo, network: 'eip155:84532', currency: 'USDC' })
  })

  test.serial(
    'a paid call → 200 with a receipt whose transaction is on chain; balances moved; the authorization is used on chain',
    async t => {
      const [payerBefore, payeeBefore] = await Promise.all([chain.balanceOf(chain.payer), chain.balanceOf(payTo)])
      const p = await payment()
      const res = await paidCall(p)
      t.is(res.status, 200, JSON.stringify(res.body))
      t.is(res.body.response, `hello (paid by ${chain.payer})`)
      const receipt = decode(res.headers.get('payment-response')) as {
        success: boolean
        transaction: string
        network: string
        payer: string
      }
      t.like(receipt, { success: true, network: 'eip155:84532' })
      t.is(receipt.payer.toLowerCase(), chain.payer.toLowerCase())
      t.deepEqual(decode(res.headers.get('x-payment-response')), receipt)
      t.like(res.body.payment as object, { transaction: receipt.transaction })
      t.is(await chain.transactionStatus(receipt.transaction), 'success')
      t.is(await chain.balanceOf(chain.payer), payerBefore - PRICE)
      t.is(await chain.balanceOf(payTo), payeeBefore + PRICE)
      const authorization = (p.payload as { authorization: { from: string; nonce: `0x${string}` } }).authorization
      t.true(await chain.authorizationState(authorization.from, authorization.nonce))
      t.regex(res.headers.get('server-timing') ?? '', /verify;dur=[\d.]+, handler;dur=[\d.]+, settle;dur=[\d.]+/)

      // The same payment again: refused, here and after a restart.
      const replay = await paidCall(p)
      t.like(replay, { status: 402, body: { error: 'payment_replayed' } })
      t.truthy(replay.headers.get('payment-required'), 'a refusal carries a fresh quote')
      await entity.stop()
      entity = await startPriced()
      const afterRestart = await paidCall(p)
      t.like(afterRestart, { status: 402, body: { error: 'payment_replayed' } })
      t.is(await chain.balanceOf(chain.payer), payerBefore - PRICE, 'paid once')
    }
  )

  test.serial('the library client pays, within its cap, and refuses above it', async t => {
    const client = new PayingClient({ privateKey: chain.payerKey, maxUsd: '0.05' })
    const paid = await client.fetch(`${entity.url}/webhook/sync`, {
      method: 'POST',
      body: message('via the client'),
      headers: { 'content-type': 'application/json' }
    })
    t.is(paid.response.status, 200)
    t.is(paid.receipt?.success, true)
    t.is(await chain.transactionStatus(paid.receipt?.transaction ?? ''), 'success')
    const stingy = new PayingClient({ privateKey: chain.payerKey, maxUsd: '0.001' })
    const err = await t.throwsAsync(
      stingy.fetch(`${entity.url}/webhook/sync`, {
        method: 'POST',
        body: message(),
        headers: { 'content-type': 'application/json' }
      })
    )
    t.true(err instanceof PaymentClientError)
    t.is((err as PaymentClientError).code, 'MAX_PAYMENT_EXCEEDED')
  })

  test.serial(
    'refused with their codes: underpayment, overpayment, wrong payTo, asset and network, a quote never issued',
    async t => {
      const before = await chain.balanceOf(chain.payer)
      const cases: Array<[string, (r: PaymentRequired) => void, string]> = [
        [
          'underpayment',
          r => {
            r.accepts[0]!.amount = (PRICE - 1n).toString()
          },
          'payment_amount_mismatch'
        ],
        [
          'overpayment',
          r => {
            r.accepts[0]!.amount = (PRICE + 1n).toString()
          },
          'payment_amount_mismatch'
        ],
        [
          'wrong payTo',
          r => {
            r.accepts[0]!.payTo = privateKeyToAccount(`0x${'77'.repeat(32)}`).address
          },
          'payment_requirements_mismatch'
        ],
        [
          'wrong asset',
          r => {
            r.accepts[0]!.asset = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
          },
          'payment_requirements_mismatch'
        ],
        [
          'wrong network',
          r => {
            r.accepts[0]!.network = 'eip155:8453'
          },
          'payment_requirements_mismatch'
        ],
        [
          'a quote nonce never issued',
          r => {
            r.accepts[0]!.extra.nonce = `0x${randomBytes(32).toString('hex')}`
          },
          'payment_quote_unknown'
        ]
      ]
      for (const [what, alter, code] of cases) {
        const res = await paidCall(await payment(alter))
        t.is(res.status, 402, what)
        t.is(res.body.error, code, `${what}: ${String(res.body.message)}`)
        t.is(res.body.response, undefined, `${what}: no output`)
      }
      // An authorization whose value differs from `accepted` (which is the quote): the signed value counts.
      const p = await payment()
      const auth = (p.payload as { authorization: Record<string, string> }).authorization
      auth.value = (PRICE - 1n).toString()
      t.is((await paidCall(p)).body.error, 'payment_amount_mismatch')
      t.is(await chain.balanceOf(chain.payer), before, 'nothing was taken')
    }
  )

  test.serial(
    'refused with their codes: an expired authorization, one valid for too long, a tampered signature',
    async t => {
      const required = await quote()
      const accepted = required.accepts[0]!
      const account = privateKeyToAccount(chain.payerKey)
      const now = Math.floor(Date.now() / 1000)
      /** An authorization for the quote, signed by the payer, valid from `validAfter` to `validBefore`. */
      const signed = async (validAfter: number, validBefore: number): Promise<PaymentPayload> => {
        const authorization = {
          from: account.address,
          to: accepted.payTo as `0x${string}`,
          value: accepted.amount,
          validAfter: String(validAfter),
          validBefore: String(validBefore),
          nonce: `0x${randomBytes(32).toString('hex')}` as `0x${string}`
        }
        const signature = await account.signTypedData({
          domain: { name: 'USDC', version: '2', chainId: 84532, verifyingContract: accepted.asset as `0x${string}` },
          types: {
            TransferWithAuthorization: [
              { name: 'from', type: 'address' },
              { name: 'to', type: 'address' },
              { name: 'value', type: 'uint256' },
              { name: 'validAfter', type: 'uint256' },
              { name: 'validBefore', type: 'uint256' },
              { name: 'nonce', type: 'bytes32' }
            ]
          },
          primaryType: 'TransferWithAuthorization',
          message: {
            ...authorization,
            value: BigInt(authorization.value),
            validAfter: BigInt(validAfter),
            validBefore: BigInt(validBefore)
          }
        })
        return { x402Version: 2, resource: required.resource, accepted, payload: { authorization, signature } }
      }
      const expired = await paidCall(await signed(now - 600, now - 10))
      t.like(expired, { status: 402, body: { error: 'payment_expired' } })
      const notYet = await paidCall(await signed(now + 600, now + 900))
      t.is(notYet.body.error, 'payment_expired')
      const tooLong = await paidCall(await signed(0, now + 100_000))
      t.is(tooLong.body.error, 'payment_requirements_mismatch')
      t.is(tooLong.body.field, 'payload.authorization.validBefore')

      const p = await payment()
      const inner = p.payload as { signature: string }
      inner.signature =
        inner.signature.slice(0, 10) + (inner.signature[10] === 'a' ? 'b' : 'a') + inner.signature.slice(11)
      const tampered = await paidCall(p)
      t.like(tampered, { status: 402, body: { error: 'payment_signature_invalid' } })

      const garbage = await post('/webhook/sync', message(), { 'payment-signature': 'not base64 json' })
      t.is(garbage.body.error, 'payment_invalid')
      // X-PAYMENT carries the same payload as PAYMENT-SIGNATURE.
      const viaLegacyHeader = await post('/webhook/sync', message(), {
        'x-payment': header(await payment())['PAYMENT-SIGNATURE'] ?? ''
      })
      t.is(viaLegacyHeader.status, 200, JSON.stringify(viaLegacyHeader.body))
    }
  )

  test.serial('two concurrent uses of one authorization → exactly one 200', async t => {
    const before = await chain.balanceOf(chain.payer)
    const p = await payment()
    const answers = await Promise.all([paidCall(p), paidCall(p), paidCall(p)])
    t.deepEqual(answers.map(a => a.status).sort(), [200, 402, 402])
    t.true(answers.filter(a => a.status === 402).every(a => a.body.error === 'payment_replayed'))
    t.is(await chain.balanceOf(chain.payer), before - PRICE)
  })

  test.serial(
    "concurrent paid calls, each with its own payment, all settle (the settlement account's nonces do not collide)",
    async t => {
      const before = await chain.balanceOf(chain.payer)
      const payments = await Promise.all([1, 2, 3, 4].map(() => payment()))
      const answers = await Promise.all(payments.map((p, i) => paidCall(p, `call ${i}`)))
      t.deepEqual(
        answers.map(a => a.status),
        [200, 200, 200, 200],
        JSON.stringify(answers.map(a => a.body.error))
      )
      t.is(await chain.balanceOf(chain.payer), before - 4n * PRICE)
    }
  )

  test.serial(
    'the command line: entity serve with [pricing] and [payments], call --pay prints the reply and the receipt, --max-usd refuses',
    async t => {
      const node = await startTestNode({ entities: { allow_http_url: true } })
      const dir = await mkdtemp(join(tmpdir(), 'x402-cli-'))
      let serve: ReturnType<typeof spawn> | null = null
      try {
        await writeKeyFile(join(dir, 'entity-key.json'), entityKeyFile(developer(153).keyPair, 0).file)
        await writeFile(join(dir, 'settlement-key.txt'), `${chain.deployerKey}\n`)
        await writeFile(join(dir, 'wallet.txt'), `${chain.payerKey}\n`)
        await writeFile(
          join(dir, 'entity.toml'),
          [
            '[entity]',
            'name = "Paid CLI echo"',
            '[pricing]',
            'model = "per-request"',
            'currency = "USDC"',
            'rates = { default = "0.02" }',
            'payment_methods = ["x402"]',
            'network = 84532',
            '[payments]',
            'facilitator = "local"',
            `rpc_url = "${chain.rpcUrl}"`,
            'settlement_key_file = "settlement-key.txt"',
            'data_dir = "data"'
          ].join('\n')
        )
        serve = spawn(
          process.execPath,
          [...CLI_FOR_TESTS, 'entity', 'serve', '--config', join(dir, 'entity.toml'), '--registry', node.url, '--echo'],
          { stdio: ['ignore', 'pipe', 'pipe'] }
        )
        let out = ''
        serve.stdout?.on('data', chunk => {
          out += String(chunk)
        })
        serve.stderr?.on('data', chunk => {
          out += String(chunk)
        })
        const url = await until(
          'entity serve prints its URL and price',
          () => (/priced: 0\.02 USDC/.test(out) ? /serving on (\S+)/.exec(out)?.[1] : undefined),
          { timeoutMs: 30_000, detail: () => out }
        )
        const before = await chain.balanceOf(chain.payer)
        const run = promisify(execFile)
        const paid = JSON.parse(
          (
            await run(process.execPath, [
              ...CLI_FOR_TESTS,
              'call',
              url,
              'pay me',
              '--pay',
              '--wallet',
              join(dir, 'wallet.txt'),
              '--json'
            ])
          ).stdout
        ) as { response: string; payment: { transaction: string } }
        t.is(paid.response, 'pay me')
        t.is(await chain.transactionStatus(paid.payment.transaction), 'success')
        t.is(await chain.balanceOf(chain.payer), before - 2n * PRICE)
        const refused = await run(process.execPath, [
          ...CLI_FOR_TESTS,
          'call',
          url,
          'too dear',
          '--pay',
          '--wallet',
          join(dir, 'wallet.txt'),
          '--max-usd',
          '0.01'
        ]).then(
          () => null,
          (err: { code: number; stderr: string }) => err
        )
        t.is(refused?.code, 1)
        t.regex(refused?.stderr ?? '', /MAX_PAYMENT_EXCEEDED/)
        const unpaid = await run(process.execPath, [...CLI_FOR_TESTS, 'call', url, 'free?']).then(
          () => null,
          (err: { code: number; stderr: string }) => err
        )
        t.regex(unpaid?.stderr ?? '', /HTTP 402 \(a priced entity: pay with --pay --wallet FILE\)/)
      } finally {
        serve?.kill('SIGTERM')
        await node.stop()
        await rm(dir, { recursive: true, force: true })
      }
    }
  )

  test.serial(
    'a remote facilitator (x402 HTTP: /supported, /verify, /settle) verifies and settles the same way',
    async t => {
      // The in-process facilitator, served over HTTP as a remote one would be.
      const inner = createFacilitator(
        { kind: 'local', rpcUrl: chain.rpcUrl, settlementKey: chain.deployerKey },
        paymentNetwork(84532)
      ).client
      const calls: string[] = []
      const server = createServer((req, res) => {
        let body = ''
        req.on('data', chunk => {
          body += String(chunk)
        })
        req.on('end', () => {
          calls.push(`${req.method} ${req.url}`)
          const answer = async (): Promise<unknown> => {
            if (req.method === 'GET' && req.url === '/supported') return inner.getSupported()
            const { paymentPayload, paymentRequirements } = JSON.parse(body) as {
              paymentPayload: PaymentPayload
              paymentRequirements: PaymentPayload['accepted']
            }
            return req.url === '/verify'
              ? inner.verify(paymentPayload, paymentRequirements)
              : inner.settle(paymentPayload, paymentRequirements)
          }
          answer().then(
            out => {
              res.writeHead(200, { 'content-type': 'application/json' })
              res.end(JSON.stringify(out))
            },
            (err: Error) => {
              res.writeHead(500)
              res.end(JSON.stringify({ error: err.message }))
            }
          )
        })
      })
      await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
      const remoteDir = await mkdtemp(join(tmpdir(), 'x402-remote-'))
      const remote = await createEntity({
        key: keyPairFromSeed(Buffer.alloc(32, 154)),
        registry: null,
        logger: pino({ level: 'silent' }),
        card: { name: 'Remote-settled echo', pricing: { rates: { default: '0.01' } } },
        payments: { facilitator: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, dataDir: remoteDir },
        handler: input => input.content
      }).start()
      try {
        const client = new PayingClient({ privateKey: chain.payerKey })
        const paid = await client.fetch(`${remote.url}/webhook/sync`, {
          method: 'POST',
          body: message('remote'),
          headers: { 'content-type': 'application/json' }
        })
        t.is(paid.response.status, 200)
        t.is(await chain.transactionStatus(paid.receipt?.transaction ?? ''), 'success')
        t.deepEqual(calls, ['GET /supported', 'POST /verify', 'POST /settle'])
      } finally {
        await remote.stop()
        server.close()
        await rm(remoteDir, { recursive: true, force: true })
      }
    }
  )

  test.serial(
    'a handler failure is not charged; a settlement that fails (the chain went away) releases no output',
    async t => {
      const before = await chain.balanceOf(chain.payer)
      const bad = await paidCall(await payment(), '')
      t.is(bad.status, 400, 'an invalid message is answered as such')
      t.is(await chain.balanceOf(chain.payer), before, 'and not charged')

      stopChainOnCall = true
      const res = await paidCall(await payment(), 'stop the chain')
      t.is(res.status, 503, JSON.stringify(res.body))
      t.is(res.body.error, 'payment_unavailable')
      t.is(res.body.response, undefined, 'no output')
      t.is(res.headers.get('payment-response'), null)
      // With the chain gone, a quote is still given, and a payment cannot be verified: 503 again.
      const unpaid = await post('/webhook/sync', message())
      t.is(unpaid.status, 402)
      const later = await post(
        '/webhook/sync',
        message(),
        header(await payer().createPaymentPayload(decode(unpaid.headers.get('payment-required')) as PaymentRequired))
      )
      t.like(later, { status: 503, body: { error: 'payment_unavailable' } })
    }
  )
}
