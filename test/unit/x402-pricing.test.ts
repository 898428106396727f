/**
 * Pricing of a paid entity: exact decimal prices, the chain table (56 refused with the reason), the
 * pay-to address derived as the SDKs derive it, and quote nonces bound to their requirements.
 */
import { createHash } from 'node:crypto'
import test from 'ava'
import { privateKeyToAddress } from 'viem/accounts'
import { paymentNetwork, PaymentConfigError } from '../../src/entity/x402/networks.js'
import { atomicToUsd, derivedPayTo, resolvePricing, usdToAtomic } from '../../src/entity/x402/pricing.js'
import { QuoteIssuer } from '../../src/entity/x402/quotes.js'

test('prices are parsed exactly in USDC atomic units', t => {
  t.is(usdToAtomic('0.01'), 10_000n)
  t.is(usdToAtomic('$0.01'), 10_000n)
  t.is(usdToAtomic('$0.01 USDC'), 10_000n)
  t.is(usdToAtomic(0.1 + 0.2), 300_000n, 'a float is rounded to USDC precision, not carried as 0.30000000000000004')
  t.is(usdToAtomic('12.345678'), 12_345_678n)
  t.throws(() => usdToAtomic('0.0000001'), { instanceOf: PaymentConfigError })
  t.throws(() => usdToAtomic('one cent'), { instanceOf: PaymentConfigError })
  t.is(atomicToUsd(10_000n), '0.01')
  t.is(atomicToUsd(1_000_000n), '1')
})

test('networks: chain IDs, CAIP-2 names and aliases; 84532 by default; 56 refused with the reason', t => {
  t.is(paymentNetwork(undefined).chainId, 84532)
  t.is(paymentNetwork('eip155:8453').chainId, 8453)
  t.is(paymentNetwork(137).usdc, '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359')
  t.is(paymentNetwork('base-sepolia').eip712.name, 'USDC')
  for (const chain of [8453, 84532, 1, 11155111, 137, 42161, 10, 43114]) t.is(paymentNetwork(chain).chainId, chain)
  const bnb = t.throws(() => paymentNetwork(56), { instanceOf: PaymentConfigError })
  t.regex(bnb.message, /EIP-3009/)
  t.throws(() => paymentNetwork(999), { instanceOf: PaymentConfigError, message: /Supported: 84532/ })
})

test('pay-to is derived as the SDKs derive it: the secp256k1 key is SHA-256 of the Ed25519 seed', t => {
  const seed = Buffer.alloc(32, 7)
  t.is(derivedPayTo(seed), privateKeyToAddress(`0x${createHash('sha256').update(seed).digest('hex')}`))
  const priced = resolvePricing(
    { model: 'per-request', currency: 'USDC', rates: { default: '0.25' }, payment_methods: ['x402'] },
    { ed25519Seed: seed }
  )
  t.like(priced, { priceUsd: '0.25', amount: 250_000n, payTo: derivedPayTo(seed) })
  t.is(
    resolvePricing({ base_price_usd: 0.5 }, { ed25519Seed: seed, payTo: '0x000000000000000000000000000000000000beef' })
      .payTo,
    '0x000000000000000000000000000000000000bEEF'
  )
  t.throws(() => resolvePricing({ rates: { default: '0.01' }, currency: 'EUR' }, { ed25519Seed: seed }), {
    message: /USDC/
  })
  t.throws(() => resolvePricing({ rates: {} }, { ed25519Seed: seed }), { message: /rates.default/ })
  t.throws(() => resolvePricing({ rates: { default: '0.01' }, network: 56 }, { ed25519Seed: seed }), {
    message: /chain 56/
  })
})

test('quote nonces: bound to their requirements and their issuer, and they expire', t => {
  const issuer = new QuoteIssuer(Buffer.alloc(32, 1), 300)
  const terms = { amount: '10000', payTo: '0xabc' }
  const nonce = issuer.issue(terms, 1_000_000)
  t.deepEqual(issuer.check(nonce, terms, 1_000_000), { ok: true, expiresAt: 1_300_000 })
  t.like(issuer.check(nonce, { ...terms, amount: '1' }, 1_000_000), { ok: false, reason: 'unknown' })
  t.like(new QuoteIssuer(Buffer.alloc(32, 2), 300).check(nonce, terms, 1_000_000), { ok: false, reason: 'unknown' })
  t.like(issuer.check(nonce, terms, 1_300_000), { ok: false, reason: 'expired' })
  t.like(issuer.check('0x1234', terms), { ok: false, reason: 'malformed' })
})
