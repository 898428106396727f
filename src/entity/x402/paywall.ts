/**
 * x402 on a priced endpoint, the resource-server side. Built on the x402 libraries
 * (`x402ResourceServer` builds the requirements and calls the facilitator; viem checks the
 * EIP-712 signature); this module adds what they leave to the server:
 *
 * - an unpaid request gets 402 with a quote: the v2 PAYMENT-REQUIRED header, and a JSON body with
 *   the same PaymentRequired plus the spec's `price`, `pay_to` and `nonce`;
 * - a payment (PAYMENT-SIGNATURE, or X-PAYMENT) is checked here before anything reaches the
 *   chain: `accepted` equal to a quote this entity issued (nonce authentic and unexpired),
 *   authorization to the quoted pay-to for exactly the quoted amount, inside its validity window,
 *   signed by its `from`; then its quote nonce and its `(chain, from, nonce)` are claimed in the
 *   ledger (one use each, durably), then the facilitator verifies it on chain (balance, nonce);
 * - the handler runs, the payment settles, and only then is 200 sent, with the receipt in
 *   PAYMENT-RESPONSE and X-PAYMENT-RESPONSE. A failed settlement releases no output.
 *
 * Each paid answer carries `Server-Timing: verify, handler, settle` (milliseconds).
 */
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http'
import { x402ResourceServer, type FacilitatorClient } from '@x402/core/server'
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types'
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server'
import type { Logger } from 'pino'
import { getAddress, isAddress, verifyTypedData } from 'viem'
import type { Reply, RequestContext } from '../../http/http.js'
import { json } from '../../http/http.js'
import { canonicalJson } from '../../identity/canonical-json.js'
import { ERRORS, RegistryError, type ErrorCode } from '../../errors.js'
import type { PaymentLedger } from './payment-ledger.js'
import type { ResolvedPricing } from './pricing.js'
import { QuoteIssuer } from './quotes.js'

export interface PaywallOptions {
  pricing: ResolvedPricing
  facilitator: FacilitatorClient
  ledger: PaymentLedger
  /** The entity's Ed25519 seed: quote nonces are authenticated under a key derived from it. */
  quoteSecret: Uint8Array
  /** Lifetime of a quote and of the authorization a client signs for it (default 300 s, x402's). */
  maxTimeoutSeconds?: number
  /**
   * Whether the chain answers: asked when verification or settlement fails, so that an
   * unreachable chain is answered 503 (retry later) rather than as a refused payment.
   */
  chainReachable?: () => Promise<boolean>
  logger: Logger
}

/** What the handler is told of the payment for its call (verified, settled after it returns). */
export interface VerifiedPayment {
  payer: `0x${string}`
  /** Atomic USDC units. */
  amount: string
  network: string
  asset: string
}

export interface PaymentReceipt {
  success: true
  transaction: string
  network: string
  payer: string
  amount: string
}

const AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' }
  ]
} as const

/** An authorization must stay valid this long past now, as the x402 facilitator requires. */
const VALID_BEFORE_MARGIN_S = 6
/** Clock difference tolerated between a payer and this entity. */
const CLOCK_SKEW_S = 300

interface Authorization {
  from: `0x${string}`
  to: string
  value: string
  validAfter: string
  validBefore: string
  nonce: `0x${string}`
}

/** A payment that passed every check made without the chain. */
interface CheckedPayment {
  payload: PaymentPayload
  requirements: PaymentRequirements
  authorization: Authorization
}

/** x402 "exact" EVM failure reasons → this entity's codes. */
const REASONS: ReadonlyArray<[RegExp, ErrorCode]> = [
  [/nonce_already_used/, 'payment_replayed'],
  [/insufficient_balance|insufficient_funds/, 'payment_insufficient_funds'],
  [/valid_before|valid_after|expired/, 'payment_expired'],
  [/authorization_value|amount/, 'payment_amount_mismatch'],
  [/recipient_mismatch|network_mismatch|asset/, 'payment_requirements_mismatch'],
  [/signature/, 'payment_signature_invalid']
]

class PaymentRefusal extends RegistryError {
  override name = 'PaymentRefusal'
}

export class Paywall {
  private readonly quotes: QuoteIssuer
  private readonly ttlSeconds: number

  private constructor(
    private readonly o: PaywallOptions,
    private readonly server: x402ResourceServer,
    private readonly base: PaymentRequirements
  ) {
    this.ttlSeconds = base.maxTimeoutSeconds
    this.quotes = new QuoteIssuer(o.quoteSecret, this.ttlSeconds)
  }

  /** Loads what the facilitator supports (a remote one is asked over HTTP) and builds the quote. */
  static async create(o: PaywallOptions): Promise<Paywall> {
    const { pricing } = o
    const server = new x402ResourceServer(o.facilitator).register(pricing.network.network, new ExactEvmServerScheme())
    try {
      await server.initialize()
    } catch (err) {
      throw new Error(`the x402 facilitator did not answer which payments it supports: ${(err as Error).message}`)
    }
    const [base] = await server.buildPaymentRequirements({
      scheme: 'exact',
      network: pricing.network.network,
      payTo: pricing.payTo,
      maxTimeoutSeconds: o.maxTimeoutSeconds ?? 300,
      price: { amount: pricing.amount.toString(), asset: pricing.network.usdc, extra: { ...pricing.network.eip712 } }
    })
    if (!base) throw new Error(`the x402 facilitator does not support the exact scheme on ${pricing.network.network}`)
    return new Paywall(o, server, base)
  }

  /** The quote's terms, as the card shows them. */
  get terms(): Record<string, unknown> {
    const { pricing } = this.o
    return {
      price: pricing.priceUsd,
      amount: this.base.amount,
      asset: this.base.asset,
      network: this.base.network,
      chain_id: pricing.network.chainId,
      pay_to: this.base.payTo,
      scheme: 'exact',
      max_timeout_seconds: this.ttlSeconds
    }
  }

  /**
   * Serves one request to the priced endpoint: 402 with a quote until it carries a good payment;
   * then `run` (the handler), the settlement, and 200 with `run`'s body, `payment` (the receipt)
   * added. A RegistryError from `run` is answered as usual and the payment is neither settled nor
   * used up.
   */
  async handle(
    ctx: RequestContext,
    resourceUrl: string,
    run: (payment: VerifiedPayment) => Promise<Record<string, unknown>>
  ): Promise<Reply> {
    const header = ctx.headers['payment-signature'] ?? ctx.headers['x-payment']
    if (header === undefined || header === '') return this.required(resourceUrl, new PaymentRefusal('payment_required'))
    try {
      const started = performance.now()
      const { payload, requirements, authorization } = this.check(header)
      const claimed = await this.claimOnce(requirements, authorization)
      await this.verifyOnChain(payload, requirements, claimed)
      const verified = performance.now()

      let body: Record<string, unknown>
      try {
        body = await run({
          payer: getAddress(authorization.from),
          amount: requirements.amount,
          network: requirements.network,
          asset: requirements.asset
        })
      } catch (err) {
        await this.o.ledger.release(claimed)
        throw err
      }
      const handled = performance.now()

      const settled = await this.settle(payload, requirements, claimed)
      const done = performance.now()
      const receipt: PaymentReceipt = {
        success: true,
        transaction: settled.transaction,
        network: settled.network,
        payer: settled.payer ?? authorization.from,
        amount: settled.amount ?? requirements.amount
      }
      const encoded = encodePaymentResponseHeader(settled)
      return json(
        200,
        { ...body, payment: receipt },
        {
          'payment-response': encoded,
          'x-payment-response': encoded,
          'access-control-expose-headers': 'PAYMENT-RESPONSE, X-PAYMENT-RESPONSE, Server-Timing',
          'cache-control': 'private, no-store',
          'server-timing': `verify;dur=${(verified - started).toFixed(2)}, handler;dur=${(handled - verified).toFixed(2)}, settle;dur=${(done - handled).toFixed(2)}`
        }
      )
    } catch (err) {
      if (err instanceof PaymentRefusal) return this.required(resourceUrl, err)
      throw err
    }
  }

  /**
   * Claims the quote's nonce and the authorization's `(chain, from, nonce)` in the ledger, each
   * usable once; returns the claimed keys. Throws payment_replayed when either is taken.
   */
  private async claimOnce(requirements: PaymentRequirements, authorization: Authorization): Promise<string[]> {
    const claimed = [
      `quote:${String(requirements.extra.nonce)}`,
      `auth:${requirements.network}:${authorization.from.toLowerCase()}:${authorization.nonce.toLowerCase()}`
    ]
    const expiresAt = Math.max(Number(authorization.validBefore) * 1000, Date.now() + this.ttlSeconds * 1000)
    if (!(await this.o.ledger.reserve(claimed, expiresAt)))
      throw new PaymentRefusal(
        'payment_replayed',
        'This quote or this authorization was already used (or is in use by another request).'
      )
    return claimed
  }

  /** Everything that can be checked without the chain; throws PaymentRefusal. */
  private check(header: string): CheckedPayment {
    const payload = decodePayment(header)
    const requirements = this.quotedRequirements(payload.accepted)
    const authorization = authorizationOf(payload)
    this.checkRecipientAndAmount(authorization)
    this.checkValidityWindow(authorization)
    return { payload, requirements, authorization }
  }

  /**
   * The requirements of the quote `accepted` names: its terms must be the quote's, its nonce one
   * this entity issued and still honours.
   */
  private quotedRequirements(accepted: PaymentRequirements): PaymentRequirements {
    const nonce = (accepted.extra as Record<string, unknown> | undefined)?.nonce
    const expected: PaymentRequirements = { ...this.base, extra: { ...this.base.extra, nonce } }
    if (canonicalJson(accepted) !== canonicalJson(expected)) throw this.termsMismatch(accepted, expected)
    const quote = this.quotes.check(nonce, this.base)
    if (!quote.ok) {
      if (quote.reason === 'expired')
        throw new PaymentRefusal(
          'payment_expired',
          'The quote has expired: ask again for a new one.',
          'accepted.extra.nonce'
        )
      throw new PaymentRefusal('payment_quote_unknown', undefined, 'accepted.extra.nonce')
    }
    return expected
  }

  /** The refusal naming the first term of `accepted` that differs from the quote (the amount has its own code). */
  private termsMismatch(accepted: PaymentRequirements, expected: PaymentRequirements): PaymentRefusal {
    const differs = (['scheme', 'network', 'asset', 'payTo', 'amount', 'maxTimeoutSeconds'] as const).find(
      k => canonicalJson(accepted[k]) !== canonicalJson(expected[k])
    )
    if (differs === 'amount')
      return new PaymentRefusal(
        'payment_amount_mismatch',
        `accepted.amount ${String(accepted.amount)} is not the quoted ${this.base.amount}.`,
        'accepted.amount'
      )
    return new PaymentRefusal(
      'payment_requirements_mismatch',
      `accepted${differs ? `.${differs}` : '.extra'} differs from the quote (${differs ? `quoted ${String(expected[differs])}` : 'the EIP-712 domain or other terms'}).`,
      `accepted.${differs ?? 'extra'}`
    )
  }

  /** The authorization must pay the quoted pay-to exactly the quoted amount. */
  private checkRecipientAndAmount(authorization: Authorization): void {
    if (getAddress(authorization.to) !== getAddress(this.base.payTo))
      throw new PaymentRefusal(
        'payment_requirements_mismatch',
        `The authorization pays ${authorization.to}, not the quoted ${this.base.payTo}.`,
        'payload.authorization.to'
      )
    const value = BigInt(authorization.value)
    const amount = BigInt(this.base.amount)
    if (value !== amount) {
      throw new PaymentRefusal(
        'payment_amount_mismatch',
        `The authorization is for ${authorization.value}, the price is ${this.base.amount} (${value < amount ? 'underpaid' : 'overpaid: exact payment only'}).`,
        'payload.authorization.value'
      )
    }
  }

  /** Valid now, still valid the margin the facilitator requires, and not valid for longer than the quote. */
  private checkValidityWindow(authorization: Authorization): void {
    const now = Math.floor(Date.now() / 1000)
    if (BigInt(authorization.validAfter) > BigInt(now))
      throw new PaymentRefusal(
        'payment_expired',
        'The authorization is not valid yet (validAfter is in the future).',
        'payload.authorization.validAfter'
      )
    if (BigInt(authorization.validBefore) < BigInt(now + VALID_BEFORE_MARGIN_S))
      throw new PaymentRefusal(
        'payment_expired',
        'The authorization has expired (validBefore has passed).',
        'payload.authorization.validBefore'
      )
    // Longer than the quote allows (plus clock skew): the ledger would have to keep it that long.
    if (BigInt(authorization.validBefore) > BigInt(now + this.ttlSeconds + CLOCK_SKEW_S)) {
      throw new PaymentRefusal(
        'payment_requirements_mismatch',
        `The authorization is valid for longer than the quote's ${this.ttlSeconds} s (validBefore too far ahead).`,
        'payload.authorization.validBefore'
      )
    }
  }

  /**
   * The signature (an EOA's, 65 bytes, checked here; a longer smart-wallet signature is left to
   * the facilitator's on-chain check), then the facilitator's verification: balance, the
   * authorization's nonce unused on chain. A refusal gives the claimed keys back.
   */
  private async verifyOnChain(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    claimed: string[]
  ): Promise<void> {
    const { authorization, signature } = payload.payload as { authorization: Authorization; signature: `0x${string}` }
    try {
      if (signature.length === 132) {
        const valid = await verifyTypedData({
          address: authorization.from,
          signature,
          types: AUTHORIZATION_TYPES,
          primaryType: 'TransferWithAuthorization',
          domain: {
            name: String(requirements.extra.name),
            version: String(requirements.extra.version),
            chainId: this.o.pricing.network.chainId,
            verifyingContract: requirements.asset as `0x${string}`
          },
          message: {
            from: authorization.from,
            to: authorization.to as `0x${string}`,
            value: BigInt(authorization.value),
            validAfter: BigInt(authorization.validAfter),
            validBefore: BigInt(authorization.validBefore),
            nonce: authorization.nonce
          }
        }).catch(() => false)
        if (!valid) throw new PaymentRefusal('payment_signature_invalid', undefined, 'payload.signature')
      }
      let result: Awaited<ReturnType<x402ResourceServer['verifyPayment']>>
      try {
        result = await this.server.verifyPayment(payload, requirements)
      } catch (err) {
        throw unavailable(describe(err), 'verify')
      }
      if (!result.isValid)
        throw (await this.unreachable(`${result.invalidReason} ${result.invalidMessage}`))
          ? unavailable(result.invalidMessage, 'verify')
          : refusalFor(result.invalidReason, result.invalidMessage)
    } catch (err) {
      await this.o.ledger.release(claimed)
      throw err
    }
  }

  /** Settles; a failure keeps the claim (the transfer may still land) and answers without the output. */
  private async settle(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    claimed: string[]
  ): Promise<SettleResponse> {
    let settled: SettleResponse
    try {
      settled = await this.server.settlePayment(payload, requirements)
    } catch (err) {
      await this.o.ledger.mark(claimed, 'failed')
      const reason = (err as { errorReason?: unknown }).errorReason
      throw typeof reason === 'string' && !(await this.unreachable(describe(err)))
        ? settlementFailed(reason, (err as Error).message)
        : unavailable(describe(err), 'settle')
    }
    if (!settled.success) {
      await this.o.ledger.mark(claimed, 'failed')
      throw (await this.unreachable(`${settled.errorReason} ${settled.errorMessage}`))
        ? unavailable(settled.errorMessage ?? settled.errorReason, 'settle')
        : settlementFailed(settled.errorReason, settled.errorMessage)
    }
    await this.o.ledger.mark(claimed, 'settled', settled.transaction)
    this.o.logger.info(
      { transaction: settled.transaction, payer: settled.payer, amount: requirements.amount, network: settled.network },
      'payment settled'
    )
    return settled
  }

  /** Whether a failure came from an unreachable chain or facilitator: by its text, else by asking the chain. */
  private async unreachable(text: string): Promise<boolean> {
    if (isUnreachable(text)) return true
    return this.o.chainReachable ? !(await this.o.chainReachable().catch(() => false)) : false
  }

  /** 402 (or the refusal's own status) with a fresh quote in the header and the body. */
  private async required(resourceUrl: string, refusal: RegistryError): Promise<Reply> {
    const nonce = this.quotes.issue(this.base)
    const quote: PaymentRequirements = { ...this.base, extra: { ...this.base.extra, nonce } }
    const paymentRequired: PaymentRequired = await this.server.createPaymentRequiredResponse(
      [quote],
      { url: resourceUrl, description: 'A reply from this entity', mimeType: 'application/json' },
      refusal.message
    )
    return json(
      refusal.status,
      {
        ...paymentRequired,
        ...refusal.toBody(),
        price: this.o.pricing.priceUsd,
        currency: 'USDC',
        pay_to: quote.payTo,
        nonce,
        network: quote.network,
        asset: quote.asset,
        amount: quote.amount,
        expires_at: new Date((Math.floor(Date.now() / 1000) + this.ttlSeconds) * 1000).toISOString()
      },
      {
        'payment-required': encodePaymentRequiredHeader(paymentRequired),
        'access-control-expose-headers': 'PAYMENT-REQUIRED',
        'cache-control': 'no-store'
      }
    )
  }
}

/** The header as an x402 v2 PaymentPayload; throws payment_invalid. */
function decodePayment(header: string): PaymentPayload {
  let payload: PaymentPayload
  try {
    payload = decodePaymentSignatureHeader(header)
  } catch {
    throw new PaymentRefusal('payment_invalid')
  }
  if (
    payload?.x402Version !== 2 ||
    typeof payload.accepted !== 'object' ||
    payload.accepted === null ||
    typeof payload.payload !== 'object' ||
    payload.payload === null
  ) {
    throw new PaymentRefusal(
      'payment_invalid',
      'Send an x402 v2 PaymentPayload: {x402Version: 2, accepted, payload: {authorization, signature}}.'
    )
  }
  return payload
}

/**
 * The payload's EIP-3009 authorization, once its signature and every field have the right form;
 * throws payment_invalid.
 */
function authorizationOf(payload: PaymentPayload): Authorization {
  const inner = payload.payload as {
    authorization?: Partial<Record<keyof Authorization, unknown>>
    signature?: unknown
  }
  const a = inner.authorization
  const fields = ['from', 'to', 'value', 'validAfter', 'validBefore', 'nonce'] as const
  if (
    !a ||
    typeof inner.signature !== 'string' ||
    !/^0x[0-9a-fA-F]+$/.test(inner.signature) ||
    fields.some(k => typeof a[k] !== 'string') ||
    !isAddress(a.from as string, { strict: false }) ||
    !isAddress(a.to as string, { strict: false }) ||
    !/^0x[0-9a-fA-F]{64}$/.test(a.nonce as string) ||
    !(['value', 'validAfter', 'validBefore'] as const).every(k => /^\d{1,78}$/.test(a[k] as string))
  ) {
    throw new PaymentRefusal(
      'payment_invalid',
      'payload must be {authorization: {from, to, value, validAfter, validBefore, nonce}, signature} (EIP-3009, strings).',
      'payload'
    )
  }
  return a as Authorization
}

function refusalFor(reason: string | undefined, message: string | undefined): PaymentRefusal {
  const code = REASONS.find(([pattern]) => pattern.test(reason ?? ''))?.[1] ?? 'payment_rejected'
  return new PaymentRefusal(code, `${ERRORS[code].message}${message ? ` (${message.slice(0, 200)})` : ''}`, undefined, {
    reason: reason ?? 'unknown'
  })
}

function settlementFailed(reason: string | undefined, message: string | undefined): PaymentRefusal {
  return new PaymentRefusal(
    'payment_settlement_failed',
    `The payment could not be settled on chain (${reason ?? 'unknown reason'}${message ? `: ${message.slice(0, 200)}` : ''}); no output was released.`,
    undefined,
    { reason: reason ?? 'unknown' }
  )
}

function unavailable(detail: string | undefined, step: 'verify' | 'settle'): PaymentRefusal {
  return new PaymentRefusal(
    'payment_unavailable',
    `The chain or the facilitator could not be reached to ${step} the payment (${detail?.split('\n')[0]?.slice(0, 200) ?? 'unknown error'}); no output was released.`
  )
}

/** An error's name, message and cause, as one line of text. */
function describe(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: unknown }
  return `${e?.name ?? ''}: ${e?.message ?? String(err)}${e?.cause ? ` (${describe(e.cause)})` : ''}`
}

function isUnreachable(text: string): boolean {
  return /HttpRequestError|HTTP request failed|TimeoutError|timed out|fetch failed|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|socket hang up|FacilitatorTimeoutError|FacilitatorResponseError/i.test(
    text
  )
}
