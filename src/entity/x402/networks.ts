/**
 * The chains an entity may be paid on, each with its USDC contract and the EIP-712 domain its
 * `transferWithAuthorization` (EIP-3009) signatures use. x402's "exact" EVM scheme needs exactly
 * that function, so a chain whose USDC lacks it (BNB Smart Chain, 56) is refused at start.
 *
 * Sources: 8453, 84532, 1, 43114, 137, 42161 as in @x402/evm 2.27's default asset table
 * (dist: defaultAssets); 11155111 and 10 from Circle's published USDC addresses
 * (developers.circle.com/stablecoins/usdc-contract-addresses), with the domain name each contract
 * returns from name()/version() (Circle's FiatTokenV2_2: "USDC" on testnets, "USD Coin" on mainnets).
 */
export interface PaymentNetwork {
  chainId: number
  /** CAIP-2, as x402 v2 names networks. */
  network: `eip155:${number}`
  name: string
  /** Names accepted in configuration besides the chain ID. */
  aliases: readonly string[]
  usdc: `0x${string}`
  /** EIP-712 domain name and version of the USDC contract. */
  eip712: { name: string; version: string }
  testnet: boolean
}

const entry = (
  chainId: number,
  name: string,
  aliases: string[],
  usdc: `0x${string}`,
  domainName: string,
  testnet = false
): PaymentNetwork => ({
  chainId,
  network: `eip155:${chainId}`,
  name,
  aliases,
  usdc,
  eip712: { name: domainName, version: '2' },
  testnet
})

export const PAYMENT_NETWORKS: readonly PaymentNetwork[] = [
  entry(84532, 'Base Sepolia', ['base-sepolia'], '0x036CbD53842c5426634e7929541eC2318f3dCF7e', 'USDC', true),
  entry(8453, 'Base', ['base'], '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', 'USD Coin'),
  entry(1, 'Ethereum', ['ethereum', 'mainnet'], '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', 'USD Coin'),
  entry(
    11155111,
    'Sepolia',
    ['sepolia', 'ethereum-sepolia'],
    '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238',
    'USDC',
    true
  ),
  entry(137, 'Polygon', ['polygon'], '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359', 'USD Coin'),
  entry(42161, 'Arbitrum One', ['arbitrum', 'arbitrum-one'], '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', 'USD Coin'),
  entry(10, 'OP Mainnet', ['optimism', 'op'], '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85', 'USD Coin'),
  entry(
    43114,
    'Avalanche C-Chain',
    ['avalanche', 'avalanche-c'],
    '0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E',
    'USD Coin'
  )
]

export const DEFAULT_PAYMENT_CHAIN = 84532

/** Chains the spec lists where x402's exact scheme cannot settle, with why. */
const UNSUPPORTED: ReadonlyMap<number, string> = new Map([
  [
    56,
    'chain 56 (BNB Smart Chain) has no USDC with EIP-3009 transferWithAuthorization (its "USDC" is the Binance-Peg BEP-20 token, 18 decimals), which x402\'s exact scheme needs'
  ]
])

export class PaymentConfigError extends Error {
  override name = 'PaymentConfigError'
}

/**
 * The network of a configuration value: a chain ID (number or text), a CAIP-2 name
 * (`eip155:84532`) or an alias (`base-sepolia`). Unknown and unsupported chains throw, naming
 * the supported ones.
 */
export function paymentNetwork(value: string | number | undefined): PaymentNetwork {
  if (value === undefined || value === '') return PAYMENT_NETWORKS[0] as PaymentNetwork
  const text = String(value).trim().toLowerCase()
  const id = /^\d+$/.test(text) ? Number(text) : /^eip155:\d+$/.test(text) ? Number(text.slice(7)) : null
  const found = PAYMENT_NETWORKS.find(n => n.chainId === id || n.aliases.includes(text))
  if (found) return found
  const supported = PAYMENT_NETWORKS.map(n => `${n.chainId} (${n.name})`).join(', ')
  const why = id !== null ? UNSUPPORTED.get(id) : text === 'bsc' || text === 'bnb' ? UNSUPPORTED.get(56) : undefined
  throw new PaymentConfigError(
    `pricing.network ${JSON.stringify(value)}: ${why ?? 'not a known USDC chain'}. Supported: ${supported}.`
  )
}
