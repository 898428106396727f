/**
 * The paying side of x402: a fetch that answers a 402 by checking the quoted price against the
 * caller's cap, signing the EIP-3009 transfer authorization with the x402 client library, and
 * retrying once with PAYMENT-SIGNATURE; the receipt is read from PAYMENT-RESPONSE (or
 * X-PAYMENT-RESPONSE). Failures carry the spec's client codes.
 */
import { readFile } from 'node:fs/promises'
import { x402Client, x402HTTPClient } from '@x402/core/client'
import type { PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types'
import { ExactEvmScheme as ExactEvmClientScheme } from '@x402/evm/exact/client'
import { privateKeyToAccount } from 'viem/accounts'
import { PAYMENT_NETWORKS } from './networks.js'
import { atomicToUsd, usdToAtomic } from './pricing.js'

/** The spec's payment client failure codes. */
export type PaymentClientCode =
  | 'MAX_PAYMENT_EXCEEDED'
  | 'INSUFFICIENT_BALANCE'
  | 'INSUFFICIENT_GAS'
  | 'NONCE_EXPIRED'
  | 'PAYMENT_REFUSED'
  | 'PAYMENT_UNSUPPORTED'

export class PaymentClientError extends Error {
  override name = 'PaymentClientError'
  constructor(
    readonly code: PaymentClientCode,
    message: string,
    readonly status?: number,
    readonly body?: unknown
  ) {
    super(message)
  }
}

export interface PayingFetchOptions {
  /** The payer's secp256k1 private key (0x + 64 hex digits). */
  privateKey: `0x${string}`
  /** Largest price paid for one call, in USD (default 1). */
  maxUsd?: number | string
  fetch?: typeof fetch
}

export interface PaidResponse {
  response: Response
  /** Present when the call was paid: the settlement receipt. */
  receipt: SettleResponse | null
  /** The requirements paid against (null when the endpoint was free). */
  paid: PaymentRequirements | null
}

/** Entity refusal codes (this package's entities) → the spec's client codes. */
const CLIENT_CODES: Record<string, PaymentClientCode> = {
  payment_insufficient_funds: 'INSUFFICIENT_BALANCE',
  payment_expired: 'NONCE_EXPIRED',
  payment_replayed: 'NONCE_EXPIRED'
}

/** Reads a wallet file: a hex private key, alone or as {"private_key": "0x…"} JSON. */
export async function readWalletFile(path: string): Promise<`0x${string}`> {
  const text = (await readFile(path, 'utf8')).trim()
  let key: unknown = text
  if (text.startsWith('{')) {
    try {
      key =
        (JSON.parse(text) as { private_key?: unknown; privateKey?: unknown }).private_key ??
        (JSON.parse(text) as { privateKey?: unknown }).privateKey
    } catch {
      key = null
    }
  }
  const hex = typeof key === 'string' ? (key.startsWith('0x') ? key : `0x${key}`) : ''
  if (!/^0x[0-9a-fA-F]{64}$/.test(hex))
    throw new Error(`${path} holds no secp256k1 private key (0x + 64 hex digits, or {"private_key": "0x…"})`)
  return hex as `0x${string}`
}

export class PayingClient {
  readonly address: `0x${string}`
  private readonly http: x402HTTPClient
  private readonly cap: bigint
  private readonly fetchFn: typeof fetch

  constructor(o: PayingFetchOptions) {
    const account = privateKeyToAccount(o.privateKey)
    this.address = account.address
    // The library's spend controls are replaced by this client's own: the cap in USD, and USDC on a known chain only.
    this.http = new x402HTTPClient(
      new x402Client().register('eip155:*', new ExactEvmClientScheme(account)).setSpendControls(false)
    )
    this.cap = usdToAtomic(o.maxUsd ?? 1, 'max-usd')
    this.fetchFn = o.fetch ?? fetch
  }

  /** Sends the request; on 402, pays within the cap and sends it once more. */
  async fetch(url: string, init: RequestInit = {}): Promise<PaidResponse> {
    const first = await this.fetchFn(url, init)
    if (first.status !== 402) return { response: first, receipt: null, paid: null }
    const body = (await first.json().catch(() => undefined)) as Record<string, unknown> | undefined
    let required: PaymentRequired
    try {
      required = this.http.getPaymentRequiredResponse(name => first.headers.get(name), body)
    } catch (err) {
      throw new PaymentClientError(
        'PAYMENT_UNSUPPORTED',
        `${url} answered 402 without an x402 quote (${(err as Error).message})`,
        402,
        body
      )
    }
    const option = required.accepts.find(
      a =>
        a.scheme === 'exact' &&
        PAYMENT_NETWORKS.some(n => n.network === a.network && n.usdc.toLowerCase() === a.asset.toLowerCase())
    )
    if (!option)
      throw new PaymentClientError(
        'PAYMENT_UNSUPPORTED',
        `${url} asks for no USDC payment this client makes (exact scheme on a known chain)`,
        402,
        body
      )
    if (BigInt(option.amount) > this.cap) {
      throw new PaymentClientError(
        'MAX_PAYMENT_EXCEEDED',
        `${url} asks ${atomicToUsd(BigInt(option.amount))} USDC, above the cap of ${atomicToUsd(this.cap)} USDC`,
        402,
        body
      )
    }
    const payload = await this.http.createPaymentPayload({ ...required, accepts: [option] })
    const headers = new Headers(init.headers)
    for (const [name, value] of Object.entries(this.http.encodePaymentSignatureHeader(payload)))
      headers.set(name, value)
    const second = await this.fetchFn(url, { ...init, headers })
    if (second.status === 402 || second.status === 503) {
      const refusal = (await second
        .clone()
        .json()
        .catch(() => undefined)) as { error?: string; message?: string; reason?: string } | undefined
      const code =
        CLIENT_CODES[refusal?.error ?? ''] ??
        (/gas/i.test(refusal?.reason ?? refusal?.message ?? '') ? 'INSUFFICIENT_GAS' : 'PAYMENT_REFUSED')
      throw new PaymentClientError(
        code,
        `${url} refused the payment: ${refusal?.error ?? second.status} ${refusal?.message ?? ''}`.trim(),
        second.status,
        refusal
      )
    }
    let receipt: SettleResponse | null = null
    try {
      receipt = this.http.getPaymentSettleResponse(name => second.headers.get(name))
    } catch {
      receipt = null
    }
    return { response: second, receipt, paid: option }
  }
}

/** A fetch that pays x402 quotes within the cap (the receipt is on the PaidResponse of PayingClient.fetch). */
export function payingFetch(o: PayingFetchOptions): (url: string, init?: RequestInit) => Promise<Response> {
  const client = new PayingClient(o)
  return async (url, init) => (await client.fetch(url, init)).response
}
