/**
 * A local chain for trying paid entities: anvil with Circle's USDC at the Base Sepolia address,
 * a funded payer, until Ctrl-C. Writes the settlement key (anvil account #0, pays settlement gas)
 * and the payer's wallet (account #1, holds USDC) as files an entity.toml and `call --pay` read.
 *
 *   npm run local-chain -- [--port 8545] [--dir local-chain] [--usdc 100]
 *
 * Development only: the keys are anvil's well-known test keys.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { startLocalChain } from '../test/helpers/anvil.js'
import { usdToAtomic } from '../src/entity/x402/pricing.js'

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8545' },
    dir: { type: 'string', default: 'local-chain' },
    usdc: { type: 'string', default: '100' }
  }
})
const dir = resolve(values.dir)
const chain = await startLocalChain({ port: Number(values.port), payerBalance: usdToAtomic(values.usdc, '--usdc') })
await mkdir(dir, { recursive: true })
await writeFile(join(dir, 'settlement-key.txt'), `${chain.deployerKey}\n`, { mode: 0o600 })
await writeFile(join(dir, 'payer-wallet.txt'), `${chain.payerKey}\n`, { mode: 0o600 })
console.log(`local chain ${chain.chainId} at ${chain.rpcUrl} (anvil), USDC at ${chain.usdc}
settlement key (pays gas): ${join(dir, 'settlement-key.txt')}
payer wallet: ${join(dir, 'payer-wallet.txt')} (${chain.payer}, ${values.usdc} USDC)
Ctrl-C stops it; the chain's state goes with it.`)
const stop = (): void => {
  void chain.stop().then(() => process.exit(0))
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
