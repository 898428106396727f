/**
 * Payment evidence checked on a real chain (anvil, test/helpers/anvil.ts) when the node has an RPC
 * for its network (`trust.payment_rpc`): a transfer of the stated amount settles (weight 5), one of
 * another amount is refuted (weight 0), a transaction the chain does not know stays unchecked (2).
 */
import { randomBytes } from 'node:crypto'
import test from 'ava'
import { createWalletClient, http as viemHttp, parseAbi } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { anvilBinary, type LocalChain, startLocalChain } from '../helpers/anvil.js'
import { agent, developer, developerRegistration, signSpec, specRegistration } from '../helpers/identities.js'
import { http, startTestNode, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const binary = anvilBinary()
const NETWORK = 'eip155:84532'
const title =
  'payment evidence is checked on chain: settled weighs 5, another amount is refuted, an unknown transaction stays unchecked'

let chain: LocalChain | undefined
let node: TestNode | undefined
test.after.always(async () => {
  await node?.stop()
  await chain?.stop()
})

if ('missing' in binary && process.env.CI) test(title, t => t.fail(`anvil unavailable: ${binary.missing}`))
else if ('missing' in binary) {
  console.log(`payment check test skipped: ${binary.missing}`)
  test.skip(title, () => {})
} else
  test(title, async t => {
    const local = await startLocalChain()
    chain = local
    const payer = createWalletClient({
      chain: local.chain,
      transport: viemHttp(local.rpcUrl),
      account: privateKeyToAccount(local.payerKey)
    })
    const payTo = '0x000000000000000000000000000000000000bEEF'
    const transfer = await payer.writeContract({
      address: local.usdc,
      abi: parseAbi(['function transfer(address to, uint256 amount) returns (bool)']),
      functionName: 'transfer',
      args: [payTo, 2500n]
    })
    // The hash comes back when anvil has the transaction; its receipt may follow a moment later.
    t.is(await until('the transfer is mined', () => local.transactionStatus(transfer)), 'success')

    node = await startTestNode({ p2p: { enabled: false }, trust: { payment_rpc: [`${NETWORK}=${local.rpcUrl}`] } })
    const alice = developer(70)
    const bob = developer(71)
    const [a0, b0] = [agent(alice, 0), agent(bob, 0)]
    for (const dev of [alice, bob]) {
      const registered = await http(node.url, 'POST', '/v1/developers', { body: developerRegistration(dev) })
      t.is(registered.status, 201, JSON.stringify(registered.body))
    }
    for (const [dev, a] of [
      [alice, a0],
      [bob, b0]
    ] as const) {
      const registered = await http(node.url, 'POST', '/v1/entities', { body: specRegistration(dev, a) })
      t.is(registered.status, 201, JSON.stringify(registered.body))
    }

    const attest = (payment: Record<string, string>) =>
      http(node!.url, 'POST', '/v1/attestations', {
        body: signSpec(a0.keyPair, {
          issuer: a0.agentId,
          subject: b0.agentId,
          kind: 'interaction',
          outcome: 'success',
          issued_at: new Date().toISOString(),
          nonce: randomBytes(16).toString('hex'),
          evidence: { payment: { network: NETWORK, ...payment } }
        })
      })
    const settled = await attest({ transaction: transfer, amount: '2500' })
    t.is(settled.status, 201, JSON.stringify(settled.body))
    t.like(settled.body, { payment_check: 'settled', weight: 5 }, JSON.stringify(settled.body))
    const otherAmount = await attest({ transaction: transfer, amount: '9999' })
    t.like(otherAmount.body, { payment_check: 'refuted', weight: 0 }, JSON.stringify(otherAmount.body))
    const unknown = await attest({ transaction: `0x${'ab'.repeat(32)}` })
    t.like(unknown.body, { payment_check: 'unchecked', weight: 2 }, JSON.stringify(unknown.body))
  })
