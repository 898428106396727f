/**
 * What a priced entity charges, resolved from its pricing (the card's `pricing`, the spec's
 * PricingModel): the price of one `/webhook/sync` call in USDC atomic units (6 decimals, parsed
 * exactly, never through a float), the network and the address paid.
 */
import { createHash } from 'node:crypto'
import { getAddress, isAddress } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { paymentNetwork, PaymentConfigError, type PaymentNetwork } from './networks.js'

export const USDC_DECIMALS = 6

export interface PricingInput {
  model?: string
  currency?: string
  /** Rate key → price in USD; `default` prices `/webhook/sync`. */
  rates?: Record<string, string | number>
  /** The spec's other spelling of the per-request price. */
  base_price_usd?: number | string
  payment_methods?: string[]
  /** Chain ID, CAIP-2 name or alias; default 84532 (Base Sepolia). */
  network?: string | number
}

export interface ResolvedPricing {
  /** The price as a decimal USD string, e.g. "0.01". */
  priceUsd: string
  /** The same in USDC atomic units. */
  amount: bigint
  network: PaymentNetwork
  payTo: `0x${string}`
}

/** A decimal USD amount ("0.01", "$0.01", 0.01) in atomic units; more than 6 decimals is refused. */
export function usdToAtomic(value: string | number, field = 'price'): bigint {
  const text = (typeof value === 'number' ? value.toFixed(USDC_DECIMALS).replace(/0+$/, '').replace(/\.$/, '') : value)
    .trim()
    .replace(/^\$/, '')
    .replace(/\s*usdc?$/i, '')
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text)
  if (!match) throw new PaymentConfigError(`${field} ${JSON.stringify(value)} is not a decimal amount of USD`)
  const fraction = match[2] ?? ''
  if (fraction.length > USDC_DECIMALS && /[1-9]/.test(fraction.slice(USDC_DECIMALS)))
    throw new PaymentConfigError(
      `${field} ${JSON.stringify(value)} has more than ${USDC_DECIMALS} decimals (USDC's precision)`
    )
  return (
    BigInt(match[1] as string) * 10n ** BigInt(USDC_DECIMALS) +
    BigInt(fraction.slice(0, USDC_DECIMALS).padEnd(USDC_DECIMALS, '0'))
  )
}

export function atomicToUsd(amount: bigint): string {
  const whole = amount / 10n ** BigInt(USDC_DECIMALS)
  const fraction = (amount % 10n ** BigInt(USDC_DECIMALS)).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '')
  return fraction ? `${whole}.${fraction}` : `${whole}`
}

/**
 * The EVM address an entity is paid at when none is configured, derived as the deployed SDKs
 * derive it: the secp256k1 private key is SHA-256 of the entity's Ed25519 seed.
 */
export function derivedPayTo(ed25519Seed: Uint8Array): `0x${string}` {
  return privateKeyToAddress(`0x${createHash('sha256').update(ed25519Seed).digest('hex')}`)
}

/** Resolves pricing; throws PaymentConfigError naming the field at fault. */
export function resolvePricing(pricing: PricingInput, o: { payTo?: string; ed25519Seed: Uint8Array }): ResolvedPricing {
  if (pricing.currency !== undefined && pricing.currency.toUpperCase() !== 'USDC')
    throw new PaymentConfigError(`pricing.currency ${JSON.stringify(pricing.currency)}: settlement is always in USDC`)
  if (pricing.payment_methods && !pricing.payment_methods.includes('x402'))
    throw new PaymentConfigError('pricing.payment_methods does not include "x402", the only method served')
  const model = pricing.model?.replace('-', '_')
  if (model !== undefined && model !== 'per_request')
    throw new PaymentConfigError(
      `pricing.model ${JSON.stringify(pricing.model)}: only per-request pricing is charged (x402 exact)`
    )
  const raw = pricing.rates?.default ?? pricing.base_price_usd
  if (raw === undefined)
    throw new PaymentConfigError(
      'pricing needs rates.default (or base_price_usd): the price of one /webhook/sync call in USD'
    )
  const amount = usdToAtomic(
    raw,
    pricing.rates?.default !== undefined ? 'pricing.rates.default' : 'pricing.base_price_usd'
  )
  if (amount <= 0n)
    throw new PaymentConfigError('pricing.rates.default must be more than 0 (leave pricing out for a free entity)')
  if (o.payTo !== undefined && !isAddress(o.payTo, { strict: false }))
    throw new PaymentConfigError(`payments.pay_to ${JSON.stringify(o.payTo)} is not an EVM address`)
  return {
    priceUsd: atomicToUsd(amount),
    amount,
    network: paymentNetwork(pricing.network),
    payTo: o.payTo !== undefined ? getAddress(o.payTo) : derivedPayTo(o.ed25519Seed)
  }
}
