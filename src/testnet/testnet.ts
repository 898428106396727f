/**
 * A local testnet: N registry-node processes on this machine, each with its own data directory
 * and ports, wired by a topology (topology.ts), with faults a test or an experiment can inject.
 * `registry-node testnet` and `registry-node experiment` are built on it (commands.ts), and tests
 * use it as a library.
 *
 * Two network modes:
 * - `netns`: every node runs in its own network namespace behind a bridge (netns.ts), so a
 *   partition and packet loss act on real packets in the kernel. Chosen by `auto` where the
 *   machine allows it (root, iproute2).
 * - `process`: every node on 127.0.0.1; faults act inside the nodes (`PUT /v1/admin/mesh/faults`:
 *   blocked peers, dropped or delayed gossip, mesh/faults.ts) or on the processes (stop, pause).
 * Each fault reports the mode it ran in: a netns testnet still delays gossip in the process where
 * the kernel has no netem.
 *
 * Topologies hold because each node is started with `--allow-peer` for its neighbours only: the DHT
 * and gossipsub discover every node, but a node refuses connections outside its edges.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { loadOrCreateNodeIdentity, NODE_KEY_FILE } from '../identity/node-identity.js'
import type { EntityFactory } from './entity-factory.js'
import { TestnetEntities } from './entities.js'
// Types only: netns.js itself is loaded in netns mode.
import type { NetnsNetwork } from './netns.js'
import { buildTopology, neighbours, type Topology } from './topology.js'

export type NetworkMode = 'netns' | 'process'

export interface TestnetOptions {
  nodes: number
  /** full, ring, star or random:<degree> (default full). */
  topology?: string
  /** Fixes random topologies and seeded entities (default 1). */
  seed?: number
  /** netns, process, or auto: netns where the machine allows it (default auto). */
  network?: NetworkMode | 'auto'
  /** Parent of the nodes' data directories (default: a new temporary directory). */
  dataRoot?: string
  /** Keep the data directories after stop(). */
  keep?: boolean
  /** Write each node's gossip trace to <traceDir>/node-<i>.jsonl. */
  traceDir?: string
  /** Period of each node's sync rounds (default 10 s: testnets heal faster than the 60 s default). */
  syncIntervalSeconds?: number
  /** More `registry-node start` flags for every node. */
  nodeArgs?: readonly string[]
  /** Heartbeat period of the testnet's echo entities (default 10 s). */
  entityHeartbeatSeconds?: number
  /** Node.js flags for every node process, before the entry point (`--cpu-prof`, `--cpu-prof-dir=DIR`). */
  runtimeArgs?: readonly string[]
  logLevel?: string
  /** Progress lines (the CLI prints them). */
  log?: (line: string) => void
}

export interface TestnetNode {
  index: number
  name: string
  dataDir: string
  /** Base URL of the node's HTTP API. */
  url: string
  peerId: string
  /** TCP multiaddr ending in /p2p/<peer id>. */
  multiaddr: string
  state: 'running' | 'paused' | 'stopped'
  traceFile: string | null
}

interface NodeSlot extends TestnetNode {
  args: string[]
  child: ChildProcess | null
  exited: Promise<number | null> | null
  output: string
}

export interface LinkFaults {
  /** Probability in [0, 1] that a packet (netns) or a gossip copy (process) is lost. */
  loss?: number
  /** Added latency per hop, ms. */
  latencyMs?: number
  /** Only these links (both directions); every link when absent. Needs netns mode. */
  between?: [number, number][]
}

export class TestnetError extends Error {
  override name = 'TestnetError'
}

const HERE = import.meta.url
/** Run from the sources (tsx) or from dist/: children start the same way this process did. */
const FROM_SOURCES = HERE.endsWith('.ts')
const CLI = fileURLToPath(new URL(FROM_SOURCES ? '../cli.ts' : '../cli.js', HERE))
const runtimeArgs = (): string[] => (FROM_SOURCES ? ['--import', import.meta.resolve('tsx')] : [])

const NETNS_HTTP_PORT = 8080
const NETNS_P2P_PORT = 4001

export class Testnet {
  readonly topology: Topology
  readonly adminSecret = randomBytes(24).toString('hex')
  /** Echo entities run by this process (none until entities.add). */
  readonly entities: TestnetEntities
  private slots: NodeSlot[] = []
  private netns: NetnsNetwork | null = null
  private root = ''
  private ownsRoot = false
  private modeChosen: NetworkMode = 'process'
  private readonly log: (line: string) => void
  private readonly ports = new PortPicker()
  private readonly killAll = (): void => {
    for (const s of this.slots) s.child?.kill('SIGKILL')
  }

  constructor(private readonly o: TestnetOptions) {
    if (!Number.isInteger(o.nodes) || o.nodes < 1 || o.nodes > 200)
      throw new TestnetError('--nodes must be an integer from 1 to 200')
    this.topology = buildTopology(o.topology ?? 'full', o.nodes, o.seed ?? 1)
    this.log = o.log ?? (() => {})
    this.entities = new TestnetEntities({
      nodeUrls: () => this.slots.map(s => s.url),
      host: () => this.netns?.hostAddress ?? '127.0.0.1',
      heartbeatSeconds: o.entityHeartbeatSeconds ?? 10,
      seed: String(o.seed ?? 1)
    })
  }

  get mode(): NetworkMode {
    return this.modeChosen
  }

  get nodes(): readonly TestnetNode[] {
    return this.slots
  }

  get dataRoot(): string {
    return this.root
  }

  /** Starts every node, wires the topology and waits until the mesh is formed. */
  async start(timeoutMs = 120_000): Promise<void> {
    this.modeChosen = await this.chooseMode()
    this.root = this.o.dataRoot ? resolve(this.o.dataRoot) : await mkdtemp(join(tmpdir(), 'registry-testnet-'))
    this.ownsRoot = !this.o.dataRoot
    await mkdir(this.root, { recursive: true })
    process.once('exit', this.killAll)
    try {
      if (this.modeChosen === 'netns') {
        const { cleanupStaleNetns, createNetnsNetwork } = await import('./netns.js')
        // What crashed testnets left behind (their owner process is gone); live ones are kept.
        const stale = await cleanupStaleNetns().catch(() => ({ removed: [] as string[] }))
        if (stale.removed.length > 0) this.log(`removed ${stale.removed.length} leftovers of crashed testnets`)
        this.netns = await createNetnsNetwork(this.o.nodes)
      }
      this.slots = await Promise.all(Array.from({ length: this.o.nodes }, (_, i) => this.prepare(i)))
      for (const slot of this.slots)
        slot.args.push(...neighbours(this.topology, slot.index).flatMap(j => ['--allow-peer', this.slots[j]!.peerId]))
      this.log(
        `starting ${this.o.nodes} nodes (${this.topology.name}, ${this.topology.edges.length} edges, network mode ${this.modeChosen})`
      )
      await Promise.all(this.slots.map(s => this.spawnOnFreePorts(s)))
      await this.wire()
      await this.waitForMesh(timeoutMs)
    } catch (err) {
      await this.stop()
      throw err
    }
  }

  /** SIGTERM to every node (SIGKILL after 15 s), network namespaces removed, data removed unless `keep`. */
  async stop(): Promise<void> {
    await this.entities.stopAll()
    await Promise.all(this.slots.map(s => this.terminate(s)))
    await this.netns?.destroy()
    this.netns = null
    process.off('exit', this.killAll)
    if (this.ownsRoot && !this.o.keep && this.root) await rm(this.root, { recursive: true, force: true })
  }

  /** Name, HTTP URL, peer ID and multiaddr of each node, as an aligned text table. */
  table(): string {
    const rows = [
      ['name', 'http', 'peer id', 'multiaddr'],
      ...this.slots.map(s => [s.name, s.url, s.peerId, s.multiaddr])
    ]
    const widths = rows[0]!.map((_, c) => Math.max(...rows.map(r => r[c]!.length)))
    return rows
      .map(r =>
        r
          .map((cell, c) => cell.padEnd(widths[c]!))
          .join('  ')
          .trimEnd()
      )
      .join('\n')
  }

  // ---- HTTP

  /** Node `i`'s HTTP API (for requests that carry their own headers). */
  url(i: number): string {
    return this.slot(i).url
  }

  /** Node `i`'s process ID, while it runs. */
  pid(i: number): number | undefined {
    return this.slot(i).child?.pid
  }

  /** A JSON request to node `i`'s API (with the admin bearer); throws on a transport error. */
  async request<T = unknown>(
    i: number,
    method: string,
    path: string,
    body?: unknown
  ): Promise<{ status: number; body: T }> {
    const slot = this.slot(i)
    const init: RequestInit = {
      method,
      headers: {
        authorization: `Bearer ${this.adminSecret}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' })
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000)
    }
    let response: Response
    try {
      response = await fetch(slot.url + path, init)
    } catch {
      // A kept-alive connection the node closed in between: one retry on a fresh one.
      response = await fetch(slot.url + path, { ...init, signal: AbortSignal.timeout(30_000) })
    }
    const text = await response.text()
    return { status: response.status, body: (text ? JSON.parse(text) : null) as T }
  }

  async getJson<T>(i: number, path: string): Promise<T> {
    const reply = await this.request<T>(i, 'GET', path)
    if (reply.status !== 200)
      throw new TestnetError(`GET ${path} on ${this.slot(i).name}: ${reply.status} ${JSON.stringify(reply.body)}`)
    return reply.body
  }

  /** Connected peers of node i (PeerIds). */
  async connectedPeers(i: number): Promise<string[]> {
    const list = await this.getJson<{ peers: { peer_id: string; connected: boolean }[] }>(i, '/v1/network/peers')
    return list.peers.filter(p => p.connected).map(p => p.peer_id)
  }

  /** Entities (agents + services) node i holds. */
  async entityCount(i: number): Promise<number> {
    const status = await this.getJson<{ entities: { agents: number; services: number } }>(i, '/v1/network/status')
    return status.entities.agents + status.entities.services
  }

  /** Registers `count` entities made by `factory` (numbers from `first`), spread round-robin over the running nodes. */
  async seedEntities(
    factory: EntityFactory,
    count: number,
    first = 0,
    on: readonly number[] = this.running()
  ): Promise<string[]> {
    const ids: string[] = []
    let next = 0
    const worker = async (): Promise<void> => {
      while (next < count) {
        const k = next++
        const { id, body } = factory.registration(first + k)
        const i = on[k % on.length] as number
        const reply = await this.request(i, 'POST', '/v1/entities', body)
        if (reply.status !== 201 && reply.status !== 200)
          throw new TestnetError(
            `registering entity ${first + k} on ${this.slot(i).name}: ${reply.status} ${JSON.stringify(reply.body)}`
          )
        ids[k] = id
      }
    }
    await Promise.all(Array.from({ length: Math.min(8, count) }, worker))
    return ids
  }

  /** Waits until every running node holds at least `total` entities; the time it took (ms). */
  async waitForEntities(total: number, timeoutMs = 60_000): Promise<number> {
    const started = Date.now()
    for (;;) {
      const counts = await Promise.all(this.running().map(i => this.entityCount(i)))
      if (counts.every(c => c >= total)) return Date.now() - started
      if (Date.now() - started > timeoutMs)
        throw new TestnetError(`after ${timeoutMs} ms the nodes hold ${counts.join(', ')} entities, not ${total}`)
      await sleep(250)
    }
  }

  // ---- Faults

  /** Stops node i (SIGTERM); its data stays for restartNode. */
  async stopNode(i: number): Promise<void> {
    await this.terminate(this.slot(i))
  }

  /** Starts node i again on its data directory and ports, and dials its edges. */
  async restartNode(i: number): Promise<void> {
    const slot = this.slot(i)
    if (slot.state !== 'stopped') throw new TestnetError(`${slot.name} is ${slot.state}, not stopped`)
    await this.spawn(slot)
    await this.wire(neighbours(this.topology, i).map(j => [Math.min(i, j), Math.max(i, j)] as const))
  }

  /** SIGSTOP: the process freezes with its connections open, like a hung host. */
  pauseNode(i: number): void {
    const slot = this.slot(i)
    if (slot.state !== 'running') throw new TestnetError(`${slot.name} is ${slot.state}, not running`)
    slot.child?.kill('SIGSTOP')
    slot.state = 'paused'
  }

  resumeNode(i: number): void {
    const slot = this.slot(i)
    if (slot.state !== 'paused') throw new TestnetError(`${slot.name} is ${slot.state}, not paused`)
    slot.child?.kill('SIGCONT')
    slot.state = 'running'
  }

  /**
   * Splits the mesh: nodes in different groups exchange nothing. Nodes left out of every group form
   * one more group. Returns the mode it ran in.
   */
  async partition(groups: readonly (readonly number[])[]): Promise<NetworkMode> {
    const listed = new Set(groups.flat())
    const all = [...groups.map(g => [...g]), this.slots.map(s => s.index).filter(i => !listed.has(i))].filter(
      g => g.length > 0
    )
    if (this.netns) {
      await this.netns.partition(all)
      return 'netns'
    }
    const groupOf = new Map(all.flatMap((g, k) => g.map(i => [i, k] as const)))
    await Promise.all(
      this.running().map(i =>
        this.setProcessFaults(i, {
          blocked_peers: this.slots.filter(s => groupOf.get(s.index) !== groupOf.get(i)).map(s => s.peerId)
        })
      )
    )
    return 'process'
  }

  /** Ends a partition and dials the edges again. */
  async heal(): Promise<NetworkMode> {
    if (this.netns) await this.netns.heal()
    else await Promise.all(this.running().map(i => this.setProcessFaults(i, { blocked_peers: [] })))
    await this.wire()
    return this.netns ? 'netns' : 'process'
  }

  /** Loss and latency on every link (or the chosen ones); says where each acts (netns packets or process gossip). Replaces earlier link faults. */
  async setLinkFaults(faults: LinkFaults): Promise<{ loss?: NetworkMode; latency?: NetworkMode }> {
    const modes: { loss?: NetworkMode; latency?: NetworkMode } = {}
    let processFaults: { loss?: number; delay_ms?: number } = {}
    if (faults.between) {
      // In-process faults act on every copy a node receives: they cannot single out one link.
      if (!this.netns)
        throw new TestnetError(
          'faults on chosen links need netns mode (process-mode loss and latency apply to every link)'
        )
      for (const pair of faults.between) for (const i of pair) this.slot(i)
    }
    if (this.netns) {
      const result = await this.netns.setLinkFaults({
        ...(faults.loss ? { lossPercent: faults.loss * 100 } : {}),
        ...(faults.latencyMs ? { latencyMs: faults.latencyMs } : {}),
        ...(faults.between ? { between: faults.between } : {})
      })
      if (faults.between && result.unsupported.length > 0)
        throw new TestnetError(`not possible on chosen links here: ${result.unsupported.join('; ')}`)
      if (faults.loss) modes.loss = result.applied.some(a => a.startsWith('loss')) ? 'netns' : 'process'
      if (faults.latencyMs) modes.latency = result.applied.some(a => a.startsWith('latency')) ? 'netns' : 'process'
    } else {
      if (faults.loss) modes.loss = 'process'
      if (faults.latencyMs) modes.latency = 'process'
    }
    if (modes.loss === 'process') processFaults.loss = faults.loss
    if (modes.latency === 'process') processFaults = { ...processFaults, delay_ms: Math.round(faults.latencyMs ?? 0) }
    if (Object.keys(processFaults).length > 0)
      await Promise.all(this.running().map(i => this.setProcessFaults(i, processFaults)))
    return modes
  }

  async clearLinkFaults(): Promise<void> {
    await this.netns?.clearLinkFaults()
    await Promise.all(this.running().map(i => this.setProcessFaults(i, { loss: 0, delay_ms: 0 })))
  }

  private async setProcessFaults(
    i: number,
    faults: { blocked_peers?: string[]; loss?: number; delay_ms?: number }
  ): Promise<void> {
    const reply = await this.request(i, 'PUT', '/v1/admin/mesh/faults', faults)
    if (reply.status !== 200)
      throw new TestnetError(`faults on ${this.slot(i).name}: ${reply.status} ${JSON.stringify(reply.body)}`)
  }

  /** Indexes of running nodes. */
  running(): number[] {
    return this.slots.filter(s => s.state === 'running').map(s => s.index)
  }

  // ---- Internals

  private slot(i: number): NodeSlot {
    const slot = this.slots[i]
    if (!slot) throw new TestnetError(`no node ${i} (the testnet has ${this.slots.length})`)
    return slot
  }

  private async chooseMode(): Promise<NetworkMode> {
    const wanted = this.o.network ?? 'auto'
    if (wanted === 'process') return 'process'
    const { probeNetns } = await import('./netns.js')
    const capabilities = await probeNetns()
    if (capabilities.namespaces) return 'netns'
    if (wanted === 'netns')
      throw new TestnetError(`network namespaces are not available here: ${capabilities.reasons.join('; ')}`)
    this.log(`network namespaces unavailable (${capabilities.reasons.join('; ')}): process-level faults`)
    return 'process'
  }

  private async prepare(i: number): Promise<NodeSlot> {
    const dataDir = join(this.root, `node-${i}`)
    await mkdir(dataDir, { recursive: true })
    const identity = await loadOrCreateNodeIdentity(join(dataDir, NODE_KEY_FILE))
    const peerId = peerIdFromPrivateKey(await generateKeyPairFromSeed('Ed25519', identity.keyPair.seed)).toString()
    const host = this.netns ? this.netns.address(i) : '127.0.0.1'
    const [httpPort, p2pPort] = this.netns ? [NETNS_HTTP_PORT, NETNS_P2P_PORT] : await this.ports.take()
    const name = `node-${i}`
    const traceFile = this.o.traceDir ? join(resolve(this.o.traceDir), `${name}.jsonl`) : null
    if (this.o.traceDir) await mkdir(resolve(this.o.traceDir), { recursive: true })
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
      this.o.logLevel ?? 'warn',
      '--webhook-secret',
      this.adminSecret,
      '--sync-interval-seconds',
      String(this.o.syncIntervalSeconds ?? 10),
      // Entities on this machine: http:// entity URLs, and cards fetched from private addresses.
      '--allow-http-entity-url',
      '--card-allow-private',
      ...(traceFile ? ['--trace', traceFile] : []),
      ...(this.o.nodeArgs ?? [])
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
  private async spawnOnFreePorts(slot: NodeSlot): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.spawn(slot)
      } catch (err) {
        if (this.netns || attempt >= 3 || !/EADDRINUSE/.test(slot.output)) throw err
        const [httpPort, p2pPort] = await this.ports.take()
        const set = (flag: string, value: number): void => {
          slot.args[slot.args.indexOf(flag) + 1] = String(value)
        }
        set('--http-port', httpPort)
        set('--p2p-port', p2pPort)
        slot.url = `http://127.0.0.1:${httpPort}`
        slot.multiaddr = `/ip4/127.0.0.1/tcp/${p2pPort}/p2p/${slot.peerId}`
        this.log(`${slot.name}: a port was taken meanwhile; starting again on ${httpPort} and ${p2pPort}`)
      }
    }
  }

  private async spawn(slot: NodeSlot, timeoutMs = 120_000): Promise<void> {
    const argv = [process.execPath, ...(this.o.runtimeArgs ?? []), ...runtimeArgs(), CLI, ...slot.args]
    const [command, ...rest] = this.netns ? this.netns.wrap(slot.index, argv) : argv
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

  private async terminate(slot: NodeSlot): Promise<void> {
    const child = slot.child
    if (!child || slot.state === 'stopped') return
    if (slot.state === 'paused') child.kill('SIGCONT')
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    await slot.exited
    clearTimeout(timer)
    slot.child = null
  }

  /** Dials each edge (the higher node dials the lower one) through the admin API; the address stays pinned. */
  private async wire(edges: readonly (readonly [number, number])[] = this.topology.edges): Promise<void> {
    const up = new Set(this.running())
    await Promise.all(
      edges
        .filter(([a, b]) => up.has(a) && up.has(b))
        .map(async ([a, b]) => {
          const reply = await this.request(b, 'POST', '/v1/network/peers', { address: this.slot(a).multiaddr })
          if (reply.status !== 201)
            this.log(
              `${this.slot(b).name} → ${this.slot(a).name}: ${reply.status} ${JSON.stringify(reply.body)} (it re-dials)`
            )
        })
    )
  }

  /** Waits until every running node is connected to each running neighbour. */
  async waitForMesh(timeoutMs = 60_000): Promise<void> {
    const started = Date.now()
    for (;;) {
      const up = this.running()
      const missing: string[] = []
      await Promise.all(
        up.map(async i => {
          const connected = new Set(await this.connectedPeers(i))
          for (const j of neighbours(this.topology, i)) {
            if (up.includes(j) && !connected.has(this.slot(j).peerId))
              missing.push(`${this.slot(i).name}–${this.slot(j).name}`)
          }
        })
      )
      if (missing.length === 0) break
      if (Date.now() - started > timeoutMs)
        throw new TestnetError(`the mesh did not form in ${timeoutMs} ms; missing links: ${missing.join(', ')}`)
      await sleep(250)
    }
    // Gossipsub grafts its mesh on its 1 s heartbeat after the subscriptions are exchanged.
    await sleep(1500)
  }
}

export const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms))

/** Free ports on 127.0.0.1 for the nodes' HTTP (p) and libp2p (q, with q + 1 for WebSockets), never the same twice. */
class PortPicker {
  private readonly taken = new Set<number>()

  async take(): Promise<[number, number]> {
    const http = await this.next(1)
    return [http, await this.next(2)]
  }

  private async next(span: number): Promise<number> {
    for (let attempt = 0; attempt < 100; attempt++) {
      const port = await freePort(0)
      const range = Array.from({ length: span }, (_, k) => port + k)
      if (port + span > 65535 || range.some(p => this.taken.has(p))) continue
      if (
        span > 1 &&
        !(await freePort(port + 1).then(
          () => true,
          () => false
        ))
      )
        continue
      for (const p of range) this.taken.add(p)
      return port
    }
    throw new TestnetError('found no free ports on 127.0.0.1')
  }
}

/** Binds `port` (0: the kernel's pick) on 127.0.0.1, releases it and returns it. */
function freePort(port: number): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as { port: number }).port
      server.close(() => resolvePort(bound))
    })
  })
}
