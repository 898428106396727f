/**
 * The local-chain fixture (test/helpers/anvil.ts) works end to end: one real x402 "exact" payment
 * (EIP-3009 transferWithAuthorization) is quoted, signed, verified and settled through @x402/core and
 * @x402/evm with an in-process facilitator, and lands on anvil; replaying it is then refused.
 */
import test from 'ava'
import { x402Client } from '@x402/core/client'
import { x402Facilitator } from '@x402/core/facilitator'
import { x402ResourceServer, type FacilitatorClient } from '@x402/core/server'
import type { SupportedResponse } from '@x402/core/types'
import { ExactEvmScheme as ExactEvmClientScheme } from '@x402/evm/exact/client'
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator'
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server'
import { privateKeyToAccount } from 'viem/accounts'
import {
  anvilBinary,
  ANVIL_KEYS,
  BASE_SEPOLIA_USDC,
  localFacilitatorSigner,
  startLocalChain,
  type LocalChain
} from '../helpers/anvil.js'

const binary = anvilBinary()
const NETWORK = 'eip155:84532'
const PAY_TO = '0x000000000000000000000000000000000000bEEF'
let chain: LocalChain | undefined

test.after.always(async () => {
  await chain?.stop()
})

const title = 'local chain: USDC at the Base Sepolia address; an x402 payment settles on it, and its replay is refused'

if ('missing' in binary && process.env.CI) {
  // CI installs the anvil binary for its platform: not having it there is a failure, not a skip.
  test(title, t => t.fail(`anvil unavailable: ${binary.missing}`))
} else if ('missing' in binary) {
  console.log(`anvil chain test skipped: ${binary.missing}`)
  test.skip(title, () => {})
} else {
  test.serial(title, async t => {
    const began = Date.now()
    const local = await startLocalChain()
    chain = local
    t.log(`anvil at ${local.rpcUrl}, USDC and Multicall3 installed in ${Date.now() - began} ms`)
    t.is(local.usdc, BASE_SEPOLIA_USDC)
    t.is(local.payer, privateKeyToAccount(ANVIL_KEYS[1]!).address)
    t.is(await local.balanceOf(local.payer), 1_000_000n)
    t.is(await local.balanceOf(PAY_TO), 0n)

    // An in-process facilitator settling from anvil account #0, which pays the gas. x402Facilitator has the
    // FacilitatorClient methods, but its getSupported() is synchronous where the interface wants a Promise,
    // and types each network as a plain string where the interface wants the `namespace:reference` template.
    const facilitator = new x402Facilitator().register(
      NETWORK,
      new ExactEvmFacilitatorScheme(localFacilitatorSigner(local))
    )
    const facilitatorClient: FacilitatorClient = {
      verify: (payload, requirements) => facilitator.verify(payload, requirements),
      settle: (payload, requirements) => facilitator.settle(payload, requirements),
      getSupported: async () => facilitator.getSupported() as SupportedResponse
    }
    const server = new x402ResourceServer(facilitatorClient).register(NETWORK, new ExactEvmServerScheme())
    await server.initialize()

    const requirements = await server.buildPaymentRequirements({
      scheme: 'exact',
      network: NETWORK,
      payTo: PAY_TO,
      price: '$0.01'
    })
    const paymentRequired = await server.createPaymentRequiredResponse(requirements, {
      url: 'http://127.0.0.1/paid',
      description: 'a paid call',
      mimeType: 'application/json'
    })
    t.log(`PaymentRequired: ${JSON.stringify(paymentRequired)}`)
    t.like(paymentRequired.accepts[0], {
      scheme: 'exact',
      network: NETWORK,
      amount: '10000',
      asset: BASE_SEPOLIA_USDC,
      payTo: PAY_TO,
      extra: { name: 'USDC', version: '2' }
    })

    const client = new x402Client().register('eip155:*', new ExactEvmClientScheme(privateKeyToAccount(local.payerKey)))
    const payload = await client.createPaymentPayload(paymentRequired)
    t.log(`PaymentPayload: ${JSON.stringify(payload)}`)
    const authorization = payload.payload.authorization as {
      from: string
      to: string
      value: string
      nonce: `0x${string}`
    }
    t.like(authorization, { from: local.payer, to: PAY_TO, value: '10000' })

    // The server matches the payload against the quote it issued, as it would for a PAYMENT-SIGNATURE header.
    const matched = server.findMatchingRequirements(requirements, payload)
    if (!matched) return t.fail('the payload matches none of the issued requirements')
    const verified = await server.verifyPayment(payload, matched)
    t.log(`verify: ${JSON.stringify(verified)}`)
    t.true(verified.isValid)
    t.is(verified.payer, local.payer)

    const settled = await server.settlePayment(payload, matched)
    t.log(`settle: ${JSON.stringify(settled)}`)
    t.true(settled.success, settled.errorReason)
    t.is(settled.network, NETWORK)
    t.is(await local.transactionStatus(settled.transaction), 'success')
    t.is(await local.balanceOf(local.payer), 990_000n)
    t.is(await local.balanceOf(PAY_TO), 10_000n)
    t.true(await local.authorizationState(local.payer, authorization.nonce))
    t.is(await local.transactionStatus(`0x${'00'.repeat(32)}`), null)

    // The nonce is spent on-chain: with Multicall3 in place the facilitator names the reason exactly.
    const replay = await server.verifyPayment(payload, matched)
    t.log(`replay: ${JSON.stringify(replay)}`)
    t.false(replay.isValid)
    t.is(replay.invalidReason, 'invalid_exact_evm_nonce_already_used')
  })
}
