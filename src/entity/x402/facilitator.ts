/**
 * Who verifies payments against the chain and settles them: in process (`local`: the x402
 * facilitator library with a viem client on `rpcUrl`, paying gas from the settlement key), or a
 * remote x402 facilitator by URL. Either way the resource server sees one FacilitatorClient.
 */
import { x402Facilitator } from '@x402/core/facilitator'
import { HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server'
import type { SupportedResponse } from '@x402/core/types'
import { toFacilitatorEvmSigner } from '@x402/evm'
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator'
import { createWalletClient, defineChain, http, nonceManager, publicActions } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { PaymentNetwork } from './networks.js'
import { PaymentConfigError } from './networks.js'

export type FacilitatorSetting =
  | { kind: 'local'; rpcUrl: string; settlementKey: `0x${string}` }
  | { kind: 'remote'; url: string }

/** How long a settlement waits for its receipt before it counts as failed. */
const CONFIRMATION_TIMEOUT_MS = 60_000

export interface Facilitator {
  client: FacilitatorClient
  /** Whether the chain answers (the local facilitator's RPC); undefined for a remote facilitator. */
  chainReachable?: () => Promise<boolean>
}

export function createFacilitator(setting: FacilitatorSetting, network: PaymentNetwork): Facilitator {
  if (setting.kind === 'remote')
    return { client: new HTTPFacilitatorClient({ url: setting.url.replace(/\/+$/, ''), timeoutMs: 30_000 }) }
  if (!/^0x[0-9a-fA-F]{64}$/.test(setting.settlementKey))
    throw new PaymentConfigError(
      'payments.settlement_key must be a 32-byte secp256k1 private key in hex (0x + 64 hex digits)'
    )
  // Settlements run concurrently from one account: the nonce manager hands out consecutive nonces
  // instead of each transaction reading the same pending count.
  const account = privateKeyToAccount(setting.settlementKey, { nonceManager })
  const chain = defineChain({
    id: network.chainId,
    name: network.name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [setting.rpcUrl] } }
  })
  // Receipts are polled every 200 ms (viem's default is 4 s): the caller waits for the settlement.
  const client = createWalletClient({
    account,
    chain,
    pollingInterval: 200,
    transport: http(setting.rpcUrl, { retryCount: 0, timeout: 15_000 })
  }).extend(publicActions)
  // viem's verifyTypedData accepts a union of parameter forms the library's narrower signature
  // type does not list; the object is the client the library documents.
  const signer = toFacilitatorEvmSigner(
    { ...client, address: account.address } as unknown as Parameters<typeof toFacilitatorEvmSigner>[0],
    { confirmationTimeoutMs: CONFIRMATION_TIMEOUT_MS }
  )
  const facilitator = new x402Facilitator().register(network.network, new ExactEvmFacilitatorScheme(signer))
  // The in-process facilitator answers getSupported synchronously; the client interface is async.
  return {
    client: {
      verify: (payload, requirements) => facilitator.verify(payload, requirements),
      settle: (payload, requirements) => facilitator.settle(payload, requirements),
      getSupported: async () => facilitator.getSupported() as SupportedResponse
    },
    chainReachable: () =>
      client.getChainId().then(
        id => id === network.chainId,
        () => false
      )
  }
}
