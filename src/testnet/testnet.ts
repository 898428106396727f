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
 *
 * This file is the orchestration and the library's entry; the node processes are node-process.ts,
 * where each fault acts is fault-injection.ts.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { EntityFactory } from './entity-factory.js'
import { TestnetEntities } from './entities.js'
import { FaultInjector } from './fault-injection.js'
// Types only: netns.js itself is loaded in netns mode.
import type { NetnsNetwork } from './netns.js'
import { NodeLauncher, type NodeSlot, pauseProcess, resumeProcess, terminateProcess } from './node-process.js'
import {
  type Convergence,
  type LinkFaultModes,
  type LinkFaults,
  type NetworkMode,
  type SyncState,
  TestnetError,
  type TestnetNode,
  type TestnetOptions
} from './testnet-types.js'
import { buildTopology, neighbours, type Topology } from './topology.js'

export {
  type Convergence,
  type LinkFaultModes,
  type LinkFaults,
  type NetworkMode,
  type SyncState,
  TestnetError,
  type TestnetNode,
  type TestnetOptions
} from './testnet-types.js'

export class Testnet {
  readonly topology: Topology
  readonly adminSecret = randomBytes(24).toString('hex')
  /** Echo entities run by this process (none until entities.add). */
  readonly entities: TestnetEntities
  private slots: NodeSlot[] = []
  private netns: NetnsNetwork | null = null
  /** Nodes behind a filter that refuses inbound connections (TestnetOptions.private). */
  private readonly privateNodes: ReadonlySet<number>
  private root = ''
  private ownsRoot = false
  private modeChosen: NetworkMode = 'process'
  private split = false
  private readonly log: (line: string) => void
  private readonly launcher: NodeLauncher
  private readonly faults = new FaultInjector({
    netns: () => this.netns,
    nodes: () => this.slots,
    running: () => this.running(),
    node: i => this.slot(i),
    request: (i, method, path, body) => this.request(i, method, path, body)
  })
  private readonly killAll = (): void => {
    for (const s of this.slots) s.child?.kill('SIGKILL')
  }

  constructor(private readonly o: TestnetOptions) {
    if (!Number.isInteger(o.nodes) || o.nodes < 1 || o.nodes > 200)
      throw new TestnetError('--nodes must be an integer from 1 to 200')
    this.topology = buildTopology(o.topology ?? 'full', o.nodes, o.seed ?? 1)
    for (const i of o.private ?? [])
      if (!Number.isInteger(i) || i < 0 || i >= o.nodes)
        throw new TestnetError(`private node ${i}: expected 0..${o.nodes - 1}`)
    this.privateNodes = new Set(o.private ?? [])
    if (this.privateNodes.size > 0 && this.privateNodes.size >= o.nodes)
      throw new TestnetError('at least one node must accept inbound connections (a relay for the private ones)')
    this.log = o.log ?? (() => {})
    this.entities = new TestnetEntities({
      nodeUrls: () => this.slots.map(s => s.url),
      host: () => this.netns?.hostAddress ?? '127.0.0.1',
      heartbeatSeconds: o.entityHeartbeatSeconds ?? 10,
      seed: String(o.seed ?? 1)
    })
    this.launcher = new NodeLauncher({
      options: o,
      adminSecret: this.adminSecret,
      netns: () => this.netns,
      log: this.log
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
        if (this.privateNodes.size > 0) {
          await this.netns.refuseInbound([...this.privateNodes])
          this.log(`nodes ${[...this.privateNodes].join(', ')} refuse inbound connections (stateful filter)`)
        }
      } else if (this.privateNodes.size > 0) {
        throw new TestnetError('private nodes (behind a filter that refuses inbound connections) need netns mode')
      }
      this.slots = await Promise.all(
        Array.from({ length: this.o.nodes }, (_, i) => this.launcher.prepare(i, this.root))
      )
      for (const slot of this.slots)
        slot.args.push(...neighbours(this.topology, slot.index).flatMap(j => ['--allow-peer', this.slots[j]!.peerId]))
      this.log(
        `starting ${this.o.nodes} nodes (${this.topology.name}, ${this.topology.edges.length} edges, network mode ${this.modeChosen})`
      )
      await Promise.all(this.slots.map(s => this.launcher.startOnFreePorts(s)))
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
    await Promise.all(this.slots.map(s => terminateProcess(s)))
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

  /** Node i's sync summary and entity count, from one status request. */
  async syncState(i: number): Promise<SyncState> {
    const status = await this.getJson<{
      entities: { agents: number; services: number }
      sync: { digest: string; operations: number; digest_changed_at: string } | null
    }>(i, '/v1/network/status')
    if (!status.sync) throw new TestnetError(`${this.slot(i).name} reports no sync digest (is its mesh disabled?)`)
    return {
      digest: status.sync.digest,
      operations: status.sync.operations,
      changedAt: Date.parse(status.sync.digest_changed_at),
      entities: status.entities.agents + status.entities.services
    }
  }

  /**
   * Waits until every running node reports the same sync digest, i.e. holds the same operations
   * (and, with `entities`, at least that many entities), then times each node from `since` (a
   * Date.now() of this process) to when it applied the last change of that state, taken from its
   * own digest_changed_at: the nodes share this machine's clock, so how often this polls does not
   * enter the figures. A node that held that state already at `since` counts 0.
   */
  async waitForConvergence(since: number, o: { entities?: number; timeoutMs?: number } = {}): Promise<Convergence> {
    const timeoutMs = o.timeoutMs ?? 60_000
    for (;;) {
      const up = this.running()
      const states = await Promise.all(up.map(i => this.syncState(i)))
      const first = states[0]
      if (
        first &&
        states.every(s => s.digest === first.digest && s.entities >= (o.entities ?? 0)) &&
        // A node paused, stopped or restarted during this round: ask the nodes running now again.
        up.join() === this.running().join()
      ) {
        const perNodeMs: (number | null)[] = this.slots.map(() => null)
        for (const [k, i] of up.entries()) perNodeMs[i] = Math.max(0, states[k]!.changedAt - since)
        return {
          digest: first.digest,
          operations: first.operations,
          entities: first.entities,
          perNodeMs,
          ms: Math.max(...perNodeMs.map(ms => ms ?? 0))
        }
      }
      if (Date.now() - since > timeoutMs) {
        const digests = new Set(states.map(s => s.digest)).size
        throw new TestnetError(
          `after ${timeoutMs} ms the running nodes hold ${digests} different sets of operations (entities ${states.map(s => s.entities).join(', ')})`
        )
      }
      await sleep(100)
    }
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
    await terminateProcess(this.slot(i))
  }

  /** Starts node i again on its data directory and ports, and dials its edges. */
  async restartNode(i: number): Promise<void> {
    const slot = this.slot(i)
    if (slot.state !== 'stopped') throw new TestnetError(`${slot.name} is ${slot.state}, not stopped`)
    await this.launcher.start(slot)
    await this.wire(neighbours(this.topology, i).map(j => [Math.min(i, j), Math.max(i, j)] as const))
  }

  /** SIGSTOP: the process freezes with its connections open, like a hung host. */
  pauseNode(i: number): void {
    pauseProcess(this.slot(i))
  }

  resumeNode(i: number): void {
    resumeProcess(this.slot(i))
  }

  /**
   * Splits the mesh: nodes in different groups exchange nothing. Nodes left out of every group form
   * one more group. Returns the mode it ran in.
   */
  async partition(groups: readonly (readonly number[])[]): Promise<NetworkMode> {
    const mode = await this.faults.partition(groups)
    this.split = true
    return mode
  }

  /** Whether a partition is in force (until heal). */
  get partitioned(): boolean {
    return this.split
  }

  /** Ends a partition and dials the edges again. */
  async heal(): Promise<NetworkMode> {
    await this.faults.heal()
    this.split = false
    await this.wire()
    return this.netns ? 'netns' : 'process'
  }

  /**
   * Loss, latency and jitter on every link (or the chosen ones), bandwidth on every node's uplink;
   * says where each acts (netns packets or process gossip) and lists what acts nowhere (jitter and
   * bandwidth need netns mode). Replaces earlier link faults.
   */
  setLinkFaults(faults: LinkFaults): Promise<LinkFaultModes> {
    return this.faults.setLinkFaults(faults)
  }

  clearLinkFaults(): Promise<void> {
    return this.faults.clearLinkFaults()
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

  /**
   * Dials each edge (the higher node dials the lower one, a private node always dials) through the
   * admin API; the address stays pinned. Two private nodes cannot dial each other: they meet through
   * a relay, once they hold reservations.
   */
  private async wire(edges: readonly (readonly [number, number])[] = this.topology.edges): Promise<void> {
    const up = new Set(this.running())
    const priv = this.privateNodes
    await Promise.all(
      edges
        .filter(([a, b]) => up.has(a) && up.has(b) && !(priv.has(a) && priv.has(b)))
        .map(([a, b]) => (priv.has(a) ? ([b, a] as const) : ([a, b] as const)))
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
            if (this.privateNodes.has(i) && this.privateNodes.has(j)) continue
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
