/**
 * Checks an attestation's payment evidence on chain (`trust.payment_rpc`): the transaction's receipt,
 * asked of the network's JSON-RPC endpoint. Settled: the transaction succeeded and moved tokens (an
 * ERC-20 Transfer log, of `amount` when the evidence states one). Refuted: it reverted, or moved no
 * such amount. Unchecked: no RPC for the network, no receipt (yet), or the endpoint did not answer in
 * time; such a payment weighs as an unchecked one. The check runs once, when the attestation is
 * accepted, so every node holding the same operations and the same RPC settings weighs it alike.
 */
import type { PaymentCheck } from '../../trust/weights.js'

/** keccak256("Transfer(address,address,uint256)"): the ERC-20 Transfer event's topic. */
const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'
const RPC_TIMEOUT_MS = 5000

export interface PaymentEvidence {
  network: string
  transaction: string
  amount?: string
}

interface Receipt {
  status?: string
  logs?: { topics?: string[]; data?: string }[]
}

export class PaymentChecker {
  constructor(private readonly rpcs: ReadonlyMap<string, string>) {}

  async check(payment: PaymentEvidence): Promise<PaymentCheck> {
    const url = this.rpcs.get(payment.network)
    if (!url || !/^0x[0-9a-fA-F]{64}$/.test(payment.transaction)) return 'unchecked'
    let receipt: Receipt | null
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'eth_getTransactionReceipt',
          params: [payment.transaction]
        }),
        signal: AbortSignal.timeout(RPC_TIMEOUT_MS)
      })
      const answer = (await response.json()) as { result?: Receipt | null; error?: unknown }
      if (!response.ok || answer.error !== undefined) return 'unchecked'
      receipt = answer.result ?? null
    } catch {
      return 'unchecked'
    }
    if (!receipt) return 'unchecked'
    if (receipt.status !== '0x1') return 'refuted'
    const amount = payment.amount === undefined ? null : BigInt(payment.amount)
    const moved = (receipt.logs ?? []).some(
      log =>
        log.topics?.[0]?.toLowerCase() === TRANSFER_TOPIC &&
        (amount === null ||
          (log.data !== undefined && /^0x[0-9a-fA-F]+$/.test(log.data) && BigInt(log.data) === amount))
    )
    return moved ? 'settled' : 'refuted'
  }
}
