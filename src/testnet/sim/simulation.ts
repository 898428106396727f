/**
 * N registry nodes in this process, on virtual time (virtual-clock.ts) over a simulated network
 * (network-model.ts, sim-transport.ts). Each is the real node (`startRegistryNode`): its store on
 * LMDB, its services, its mesh with libp2p, noise, yamux, identify, kad-dht and gossipsub. What
 * differs from a node a testnet starts as a process: no HTTP front (experiments call the services
 * directly), commits written synchronously without a sync to disk, signatures verified on the
 * node's thread, search indexed on it too, no transitive-trust worker, gossip traces kept in memory.
 */
import { createHash } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { existsSync, rmSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { pino } from 'pino'
import { defaultConfig } from '../../config/load.js'
import type { NodeConfig } from '../../config/settings.js'
import { identityFromKeyPair, NODE_KEY_FILE } from '../../identity/node-identity.js'
import { keyPairFromSeed } from '../../identity/keys.js'
import type { TraceEvent } from '../../mesh/gossip-tap.js'
import { loadMeshModule, startRegistryNode, type RegistryNode } from '../../node.js'
import { RegistryStore } from '../../store/registry-store.js'
import { seededRandom } from '../random.js'
import { seedRandomness } from './seeded-randomness.js'
import { buildTopology, neighbours, type Topology } from '../topology.js'
import { type NetworkModelSpec, SimNetwork } from './network-model.js'
import { simAddress, SimSwitchboard, simTransport } from './sim-transport.js'
import { VirtualClock } from './virtual-clock.js'

const realSetTimeout = globalThis.setTimeout
const realNow = Date.now
/** How long `drive` waits on real time for work the clock cannot see. */
const REAL_WAIT_LIMIT_MS = 60_000

/** Where virtual time starts unless told: the same instant on every run. */
export const DEFAULT_EPOCH_MS = Date.UTC(2026, 0, 1)

export interface SimulationOptions {
  nodes: number
  seed: number
  /** full, ring, star or random:<d> (topology.ts); the only peers each node connects to. */
  topology: string
  network: NetworkModelSpec
  /** gossipsub's D (p2p.gossip_mesh_degree). */
  meshDegree?: number
  epochMs?: number
  /** Where the nodes' stores go (default: a new folder in /dev/shm where there is one). */
  dataRoot?: string
  /** Changes to each node's settings before it starts. */
  configure?: (config: NodeConfig, index: number) => void
  log?: (line: string) => void
}

export interface TraceRecord {
  /** Virtual ms since the simulation started. */
  t: number
  event: string
  id: string
  [field: string]: unknown
}

export interface SimNode {
  index: number
  peerId: string
  region: string
  state: 'running' | 'stopped'
  node: RegistryNode | null
  trace: TraceRecord[]
}

export class Simulation {
  readonly clock: VirtualClock
  readonly network: SimNetwork
  readonly switchboard: SimSwitchboard
  readonly topology: Topology
  readonly nodes: SimNode[] = []
  readonly random: () => number
  private root = ''
  private ownsRoot = false
  private restoreRandomness: () => void = () => {}
  private readonly seeds: Buffer[] = []
  /** Each node's neighbours in the topology. */
  private readonly adjacency: number[][]
  /** Draws of the nodes' processing times (its own stream: a model without them draws nothing). */
  private readonly processingRandom: () => number
  private maxListeners: number | null = null

  constructor(readonly o: SimulationOptions) {
    if (!Number.isInteger(o.nodes) || o.nodes < 2) throw new Error('a simulation needs at least 2 nodes')
    this.random = seededRandom(o.seed)
    this.clock = new VirtualClock(o.epochMs ?? DEFAULT_EPOCH_MS)
    this.network = new SimNetwork(this.clock, o.network, seededRandom(o.seed * 7919 + 1))
    this.switchboard = new SimSwitchboard(this.network)
    this.topology = buildTopology(o.topology, o.nodes, o.seed)
    this.adjacency = Array.from({ length: o.nodes }, (_, i) => neighbours(this.topology, i))
    this.processingRandom = seededRandom(o.seed * 104_729 + 3)
  }

  private log(line: string): void {
    this.o.log?.(line)
  }

  /** Starts every node on virtual time and waits until each is connected to its neighbours. */
  async start(): Promise<void> {
    this.root =
      this.o.dataRoot ?? (await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'registry-sim-')))
    this.ownsRoot = this.o.dataRoot === undefined
    await mkdir(this.root, { recursive: true })
    // /dev/shm is memory: a run that ends without stop() (Ctrl-C) must not leave its stores there.
    if (this.ownsRoot) process.once('exit', this.removeRoot)
    // Loaded now, on real time: a node loads the mesh's modules when it starts, and the clock cannot
    // see a module load in flight (it would move virtual time under it).
    await loadMeshModule()
    // The stores are created now too: creating one writes through LMDB's own thread, which the clock
    // cannot see; opening an existing one at the node's start only reads.
    for (let i = 0; i < this.o.nodes; i++) await (await RegistryStore.open(join(this.root, `node-${i}`))).close()
    // libp2p, gossipsub and kad-dht draw from Math.random and the crypto sources: seeded, a run repeats.
    this.restoreRandomness = seedRandomness(this.o.seed)
    this.clock.install()
    // Many nodes in one process: libp2p's shared abort signals gather more listeners than the warning's 10.
    this.maxListeners = EventEmitter.defaultMaxListeners
    EventEmitter.defaultMaxListeners = 1000
    try {
      for (let i = 0; i < this.o.nodes; i++) {
        const seed = createHash('sha256').update(`simulation ${this.o.seed} node ${i}`).digest()
        this.seeds.push(seed)
        const peerId = peerIdFromPrivateKey(await generateKeyPairFromSeed('Ed25519', seed)).toString()
        const region = this.network.regionOf(this.network.addNode(i))
        this.nodes.push({ index: i, peerId, region, state: 'stopped', node: null, trace: [] })
      }
      this.log(`starting ${this.o.nodes} simulated nodes (${this.topology.name}, ${this.topology.edges.length} edges)`)
      // Last first: each edge is dialled by its lower end, whose neighbour then already listens.
      for (const n of [...this.nodes].reverse())
        await this.drive(this.startNode(n.index), 120_000, `node ${n.index} to start`)
      await this.drive(this.meshFormed(), 600_000, 'the mesh to form')
    } catch (err) {
      await this.stop()
      throw err
    }
  }

  /** Starts node `i` (again, after `stopNode`: same key, same store). */
  async startNode(i: number): Promise<void> {
    const n = this.nodes[i]
    if (!n) throw new Error(`no node ${i}`)
    if (n.state === 'running') return
    const dataDir = join(this.root, `node-${i}`)
    await mkdir(dataDir, { recursive: true })
    const keyFile = join(dataDir, NODE_KEY_FILE)
    if (!existsSync(keyFile)) await writeKeyFile(keyFile, this.seeds[i] as Buffer, this.clock.now)
    const config = this.configFor(i, dataDir)
    const validationMs = this.o.network.validationMs ?? 0
    n.node = await startRegistryNode(config, {
      logger: pino({ level: 'silent' }),
      http: false,
      // The store closes on LMDB's own thread: the clock waits for it, so a stop takes the same virtual time every run.
      lifecycle: { stopping: (step, stop) => step === 'store' && this.clock.waitFor(stop) },
      synchronousStore: true,
      transitiveTrust: false,
      libp2pTransport: {
        transports: [simTransport({ switchboard: this.switchboard, index: i })],
        listen: [simAddress(i)]
      },
      gossipTrace: (event: TraceEvent) => {
        n.trace.push({ ...event, t: this.clock.elapsed } as TraceRecord)
      },
      ...(validationMs > 0 ? { gossipProcessingMs: () => validationMs * (0.5 + this.processingRandom()) } : {})
    })
    n.state = 'running'
  }

  /** Stops node `i` cleanly (it says goodbye to its peers); `crash` cuts its connections first. */
  async stopNode(i: number, crash = false): Promise<void> {
    await this.drive(this.leave(i, crash), 60_000, `node ${i} to stop`)
  }

  /**
   * Stops node `i` without driving the clock: for events scheduled on the clock (churn), which the
   * run in progress drives.
   */
  async leave(i: number, crash = false): Promise<void> {
    const n = this.nodes[i]
    if (!n?.node) return
    if (crash) this.switchboard.cut(i)
    const node = n.node
    n.node = null
    n.state = 'stopped'
    await node.stop()
  }

  /** Runs virtual time for `ms` ms. */
  async run(ms: number): Promise<void> {
    await this.clock.advance(ms)
  }

  /** Runs virtual time until `done` holds (checked after every step), at most `limitMs`; returns whether it held. */
  async runUntil(done: () => boolean, limitMs: number): Promise<boolean> {
    await this.clock.runUntil(this.clock.now + limitMs, done)
    return done()
  }

  /** Runs virtual time until `work` settles; throws if it takes more than `limitMs` of virtual time. */
  async drive<T>(work: Promise<T>, limitMs: number, what: string): Promise<T> {
    let settled = false
    const watched = work.finally(() => {
      settled = true
    })
    watched.catch(() => {})
    const deadline = this.clock.now + limitMs
    const realStart = realNow()
    while (!settled) {
      if (await this.clock.step(deadline)) continue
      if (settled) break
      // No timer due: the work waits on something real the clock cannot see (an LMDB commit on its
      // own thread); real time passes, virtual time does not.
      if (this.clock.pending > 0 && this.clock.now >= deadline)
        throw new Error(`gave up waiting for ${what} after ${limitMs} ms of virtual time`)
      if (realNow() - realStart > REAL_WAIT_LIMIT_MS)
        throw new Error(`gave up waiting for ${what}: nothing left to run, and no progress for a minute`)
      await new Promise(resolve => realSetTimeout(resolve, 1))
    }
    return watched
  }

  running(): SimNode[] {
    return this.nodes.filter(n => n.state === 'running')
  }

  /** Stops every node, puts the real clock back and removes the stores it made. */
  async stop(): Promise<void> {
    for (const n of this.nodes) if (n.node) await this.stopNode(n.index).catch(() => {})
    this.clock.uninstall()
    if (this.maxListeners !== null) EventEmitter.defaultMaxListeners = this.maxListeners
    this.restoreRandomness()
    if (this.ownsRoot && this.root) await rm(this.root, { recursive: true, force: true })
    process.off('exit', this.removeRoot)
  }

  private readonly removeRoot = (): void => {
    if (this.root) rmSync(this.root, { recursive: true, force: true })
  }

  private configFor(i: number, dataDir: string): NodeConfig {
    const base = defaultConfig()
    const peersOf = this.adjacency[i] ?? []
    const config: NodeConfig = {
      ...base,
      data_dir: dataDir,
      host: `sim-${i}.test`,
      name: `sim-${i}`,
      rate_limit: { ...base.rate_limit, enabled: false },
      verify: { ...base.verify, workers: 0 },
      search: { ...base.search, worker: false },
      log: { ...base.log, level: 'silent' },
      p2p: {
        ...base.p2p,
        enabled: true,
        // Each edge is dialled by its lower end; both ends allow only their neighbours.
        bootstrap: peersOf.filter(j => j > i).map(j => `${simAddress(j)}/p2p/${this.nodes[j]?.peerId}`),
        allow_peers: peersOf.map(j => this.nodes[j]?.peerId as string),
        // The topology decides who connects (the allow list), as in a testnet: no discovery walks.
        target_peers: 0,
        reachability_check: false,
        relay_server: false,
        relay_client: 'off',
        hole_punching: false,
        upnp: false,
        ...(this.o.meshDegree ? { gossip_mesh_degree: this.o.meshDegree } : {})
      }
    }
    this.o.configure?.(config, i)
    return config
  }

  /** Resolves once every running node is connected to each running neighbour. */
  private async meshFormed(): Promise<void> {
    for (;;) {
      const missing = this.missingLinks()
      if (missing === 0) break
      await new Promise(resolve => setTimeout(resolve, 250))
    }
    // Gossipsub grafts its mesh on its 1 s heartbeat after the subscriptions are exchanged.
    await new Promise(resolve => setTimeout(resolve, 2000))
    this.log(`mesh formed at ${Math.round(this.clock.elapsed)} ms of virtual time`)
  }

  private missingLinks(): number {
    let missing = 0
    for (const n of this.running()) {
      const connected = new Set(n.node?.mesh?.libp2p.getConnections().map(c => c.remotePeer.toString()) ?? [])
      for (const j of this.adjacency[n.index] ?? [])
        if (this.nodes[j]?.state === 'running' && !connected.has(this.nodes[j].peerId)) missing++
    }
    return missing
  }
}

/** A node key file with a seed derived from the simulation's, so every run has the same peers. */
async function writeKeyFile(path: string, seed: Buffer, nowMs: number): Promise<void> {
  const identity = identityFromKeyPair(keyPairFromSeed(seed))
  const file = {
    type: 'registry-node-key',
    registry_id: identity.registryId,
    public_key: identity.publicKey,
    seed: seed.toString('base64'),
    created_at: new Date(nowMs).toISOString()
  }
  await writeFile(path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 })
}
