/**
 * One testnet node as an operating-system process: its identity, data directory and
 * `registry-node start` flags, starting it (inside its namespace in netns mode) until it listens,
 * and the signals that stop, pause and resume it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { loadOrCreateNodeIdentity, NODE_KEY_FILE } from '../identity/node-identity.js'
// Types only: netns.js itself is loaded in netns mode.
import type { NetnsNetwork } from './netns.js'
import { PortPicker } from './ports.js'
import { TestnetError, type TestnetNode, type TestnetOptions } from './testnet-types.js'

export interface NodeSlot extends TestnetNode {
  args: string[]
  child: ChildProcess | null
  exited: Promise<number | null> | null
  output: string
}

const HERE = import.meta.url
/** Run from the sources (tsx) or from dist/: children start the same way this process did. */
const FROM_SOURCES = HERE.endsWith('.ts')
const CLI = fileURLToPath(new URL(FROM_SOURCES ? '../cli.ts' : '../cli.js', HERE))
const runtimeArgs = (): string[] => (FROM_SOURCES ? ['--import', import.meta.resolve('tsx')] : [])

const NETNS_HTTP_PORT = 8080
const NETNS_P2P_PORT = 4001
/**
 * What a node prints when a port it was given is taken (the CLI's one line for either port, or the
 * raw error): a testnet then starts it on other ports.
 */
export const PORT_TAKEN = /EADDRINUSE|port \d+ (on \S+ )?is in use by another process|a p2p port is in use/

export interface NodeLauncherSetup {
  options: TestnetOptions
  /** Every node's `--webhook-secret`, which is also its admin bearer. */
  adminSecret: string
  /** The testnet's namespaces once created; null in process mode. */
  netns: () => NetnsNetwork | null
  log: (line: string) => void
}

/** Prepares and starts the node processes of one testnet. */
export class NodeLauncher {
  private readonly ports = new PortPicker()

  constructor(private readonly setup: NodeLauncherSetup) {}

  /** Node i's data directory, identity, address, ports and flags; nothing runs yet. */
  async prepare(i: number, root: string): Promise<NodeSlot> {
    const o = this.setup.options
    const dataDir = join(root, `node-${i}`)
    await mkdir(dataDir, { recursive: true })
    const identity = await loadOrCreateNodeIdentity(join(dataDir, NODE_KEY_FILE))
    const peerId = peerIdFromPrivateKey(await generateKeyPairFromSeed('Ed25519', identity.keyPair.seed)).toString()
    const netns = this.setup.netns()
    const host = netns ? netns.address(i) : '127.0.0.1'
    const [httpPort, p2pPort] = netns ? [NETNS_HTTP_PORT, NETNS_P2P_PORT] : await this.ports.take()
    const name = `node-${i}`
    const traceFile = o.traceDir ? join(resolve(o.traceDir), `${name}.jsonl`) : null
    if (o.traceDir) await mkdir(resolve(o.traceDir), { recursive: true })
    const args = [
      'start',
      '--data',
      dataDir,
      '--http-host',
      host,
      '--http-port',
      String(httpPort),
      '--p2p',
      '--p2p-host',
      host,
      '--p2p-port',
      String(p2pPort),
      '--name',
      name,
      '--host',
      `${name}.testnet.local`,
      '--no-rate-limit',
      '--log-level',
      o.logLevel ?? 'warn',
      '--webhook-secret',
      this.setup.adminSecret,
      '--sync-interval-seconds',
      String(o.syncIntervalSeconds ?? 10),
      // Entities on this machine: http:// entity URLs, and cards fetched from private addresses.
      '--allow-http-entity-url',
      '--card-allow-private',
      ...(traceFile ? ['--trace', traceFile] : []),
      ...(o.nodeArgs ?? [])
    ]
    return {
      index: i,
      name,
      dataDir,
      url: `http://${host}:${httpPort}`,
      peerId,
      multiaddr: `/ip4/${host}/tcp/${p2pPort}/p2p/${peerId}`,
      state: 'stopped',
      traceFile,
      args,
      child: null,
      exited: null,
      output: ''
    }
  }

  /**
   * Starts a node for the first time. In process mode its ports were found free a moment before;
   * when another process took one meanwhile (EADDRINUSE), fresh ports are picked and it starts again.
   */
  async startOnFreePorts(slot: NodeSlot): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.start(slot)
      } catch (err) {
        if (this.setup.netns() || attempt >= 3 || !PORT_TAKEN.test(slot.output)) throw err
        const [httpPort, p2pPort] = await this.ports.take()
        const set = (flag: string, value: number): void => {
          slot.args[slot.args.indexOf(flag) + 1] = String(value)
        }
        set('--http-port', httpPort)
        set('--p2p-port', p2pPort)
        slot.url = `http://127.0.0.1:${httpPort}`
        slot.multiaddr = `/ip4/127.0.0.1/tcp/${p2pPort}/p2p/${slot.peerId}`
        this.setup.log(`${slot.name}: a port was taken meanwhile; starting again on ${httpPort} and ${p2pPort}`)
      }
    }
  }

  /** Spawns the node and resolves once it listens on HTTP; rejects if it exits or times out first. */
  async start(slot: NodeSlot, timeoutMs = 120_000): Promise<void> {
    const netns = this.setup.netns()
    const cli = this.setup.options.cli ?? [...runtimeArgs(), CLI]
    const argv = [process.execPath, ...(this.setup.options.runtimeArgs ?? []), ...cli, ...slot.args]
    const [command, ...rest] = netns ? netns.wrap(slot.index, argv) : argv
    // The tool's own config file is not the nodes': flags give them everything.
    const { REGISTRY_NODE_CONFIG: _ignored, ...env } = process.env
    const child = spawn(command as string, rest, { stdio: ['ignore', 'pipe', 'pipe'], env })
    slot.child = child
    slot.output = ''
    const keep = (chunk: Buffer): void => {
      slot.output = (slot.output + chunk.toString('utf8')).slice(-20_000)
    }
    child.stdout!.on('data', keep)
    child.stderr!.on('data', keep)
    slot.exited = new Promise(resolve =>
      child.once('exit', code => {
        slot.state = 'stopped'
        resolve(code)
      })
    )
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new TestnetError(`${slot.name} did not start in ${timeoutMs} ms:\n${slot.output}`)),
        timeoutMs
      )
      const check = (): void => {
        if (!/listening on http/.test(slot.output)) return
        clearTimeout(timer)
        child.stdout!.off('data', check)
        resolve()
      }
      child.stdout!.on('data', check)
      void slot.exited!.then(code => {
        clearTimeout(timer)
        reject(new TestnetError(`${slot.name} exited with ${code}:\n${slot.output}`))
      })
    })
    slot.state = 'running'
  }
}

/** SIGTERM (SIGCONT first if paused), SIGKILL after 15 s; resolves once the process is gone. */
export async function terminateProcess(slot: NodeSlot): Promise<void> {
  const child = slot.child
  if (!child || slot.state === 'stopped') return
  if (slot.state === 'paused') child.kill('SIGCONT')
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  await slot.exited
  clearTimeout(timer)
  slot.child = null
}

/** SIGSTOP: the process freezes with its connections open, like a hung host. */
export function pauseProcess(slot: NodeSlot): void {
  if (slot.state !== 'running') throw new TestnetError(`${slot.name} is ${slot.state}, not running`)
  slot.child?.kill('SIGSTOP')
  slot.state = 'paused'
}

export function resumeProcess(slot: NodeSlot): void {
  if (slot.state !== 'paused') throw new TestnetError(`${slot.name} is ${slot.state}, not paused`)
  slot.child?.kill('SIGCONT')
  slot.state = 'running'
}
