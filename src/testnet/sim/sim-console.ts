/**
 * The testnet's console on virtual time (`registry-node testnet --simulate`): the same commands as
 * a testnet of processes, run against a simulation, plus what only virtual time makes exact. A
 * scenario is a file of these commands, one per line; `at SECONDS COMMAND` runs a command at that
 * virtual time since the simulation started, `sleep SECONDS` lets time run. Virtual time stands
 * still between commands typed by hand. Each output line starts with the virtual seconds, so a
 * scenario's transcript repeats exactly for the same seed.
 */
import { EntityFactory } from '../entity-factory.js'
import { seededRandom } from '../random.js'
import { runSimPropagation } from './sim-propagation.js'
import type { Simulation } from './simulation.js'

export const SIM_CONSOLE_HELP = `commands: status | table | stop I | restart I | partition 0,1/2,3 | heal | converge [SECONDS]
          seed K | publish K [RATE] | loss PERCENT | latency MS | churn PER_MINUTE DOWN_SECONDS | churn off
          sleep SECONDS | at SECONDS COMMAND | quit`

/** Commands after which `converge` times the nodes' agreement. */
const CHANGES = new Set(['heal', 'partition', 'stop', 'kill', 'restart', 'join', 'loss', 'latency', 'churn'])

export class ScenarioError extends Error {
  override name = 'ScenarioError'
}

/** Runs console commands against one simulation; `execute` returns the lines to print. */
export class SimConsole {
  private readonly factory: EntityFactory
  private readonly random: () => number
  private registered = 0
  private published = 0
  /** The last command that changed the network or who is in it, and when: what `converge` times from. */
  private lastChange: { command: string; at: number } | null = null
  private churnTimer: ReturnType<typeof setTimeout> | null = null

  constructor(
    private readonly sim: Simulation,
    seed: number
  ) {
    this.factory = new EntityFactory(`simulated testnet ${seed}`)
    this.random = seededRandom(seed * 31 + 7)
  }

  /** Virtual seconds since the simulation started, as every output line begins. */
  stamp(): string {
    return `[${(this.sim.clock.elapsed / 1000).toFixed(3).padStart(9)}] `
  }

  table(): string[] {
    return [
      'name     region         peer id',
      ...this.sim.nodes.map(n => `node-${n.index}`.padEnd(9) + n.region.padEnd(15) + n.peerId)
    ]
  }

  /** Runs one command; 'quit' is returned as is. Throws ScenarioError on a command it cannot run. */
  async execute(line: string): Promise<string[] | 'quit'> {
    const [command = '', ...args] = line.trim().split(/\s+/)
    if (CHANGES.has(command)) this.lastChange = { command, at: this.sim.clock.now }
    const number = (text: string | undefined, what: string, min = 0): number => {
      const value = Number(text)
      if (text === undefined || !Number.isFinite(value) || value < min)
        throw new ScenarioError(`${command} takes ${what}`)
      return value
    }
    const node = (text: string | undefined): number => {
      const i = number(text, 'a node number')
      if (!Number.isInteger(i) || !this.sim.nodes[i]) throw new ScenarioError(`there is no node-${text}`)
      return i
    }
    switch (command) {
      case '':
      case '#':
        return []
      case 'help':
        return SIM_CONSOLE_HELP.split('\n')
      case 'quit':
        this.stopChurn()
        return 'quit'
      case 'at': {
        const at = number(args[0], 'the virtual seconds since the start, then a command') * 1000
        if (args.length < 2) throw new ScenarioError('at takes the virtual seconds since the start, then a command')
        if (at > this.sim.clock.elapsed) await this.sim.run(at - this.sim.clock.elapsed)
        return this.execute(args.slice(1).join(' '))
      }
      case 'sleep':
        await this.sim.run(number(args[0], 'seconds') * 1000)
        return []
      case 'table':
        return this.table()
      case 'status':
        return this.status()
      case 'stop':
      case 'kill': {
        const i = node(args[0])
        await this.sim.stopNode(i, true)
        return [`stopped node-${i} (its connections cut, as in a crash)`]
      }
      case 'restart':
      case 'join': {
        const i = node(args[0])
        await this.sim.drive(this.sim.startNode(i), 120_000, `node ${i} to start`)
        return [`restarted node-${i}`]
      }
      case 'partition': {
        const groups = (args[0] ?? '').split('/').map(g => g.split(',').map(node))
        if (groups.length < 2) throw new ScenarioError('partition takes groups of node numbers: partition 0,1/2,3')
        const groupOf = this.sim.nodes.map(n => groups.findIndex(g => g.includes(n.index)))
        // Nodes named in no group form one more group.
        this.sim.network.partition(groupOf.map(g => (g === -1 ? groups.length : g)))
        return [`partitioned ${groups.map(g => g.join(',')).join(' | ')}`]
      }
      case 'heal':
        this.sim.network.heal()
        return ['healed']
      case 'converge':
        return this.converge(number(args[0] ?? '120', 'seconds', 1) * 1000)
      case 'seed':
        return this.seed(number(args[0], 'a number of entities', 1))
      case 'publish':
        return this.publish(number(args[0], 'a number of messages', 1), number(args[1] ?? '10', 'a rate', 0.001))
      case 'loss': {
        const percent = number(args[0], 'a percentage from 0 to 99')
        if (percent >= 100) throw new ScenarioError('loss takes a percentage from 0 to 99')
        this.sim.network.adjust({ loss: percent / 100 })
        return [`loss ${percent} % on every link`]
      }
      case 'latency': {
        const ms = number(args[0], 'milliseconds')
        this.sim.network.adjust({ latencyMs: ms })
        return [`latency ${ms} ms between any two nodes`]
      }
      case 'churn':
        if (args[0] === 'off') {
          this.stopChurn()
          return ['churn off']
        }
        return this.churn(
          number(args[0], 'departures per minute, then seconds down', 0.001),
          number(args[1], 'seconds down', 0)
        )
      default:
        throw new ScenarioError(`unknown command ${command} (help lists the commands)`)
    }
  }

  /** One line per node, as the testnet of processes prints them. */
  private status(): string[] {
    return this.sim.nodes.map(n => {
      if (!n.node) return `node-${n.index}  stopped`
      const sync = n.node.digests.summary()
      const peers = n.node.mesh?.libp2p.getConnections().length ?? 0
      return `node-${n.index}  running  peers ${peers}  entities ${n.node.store.entityCount()}  digest ${sync.digest.slice(0, 12)} (${sync.operations} operations)`
    })
  }

  private entitiesEverywhere(count: number): boolean {
    return this.sim.running().every(n => (n.node?.store.entityCount() ?? 0) >= count)
  }

  /** Registers K entities from random running nodes; then runs until every running node holds them. */
  private async seed(count: number): Promise<string[]> {
    const running = this.sim.running()
    if (running.length === 0) throw new ScenarioError('no node is running')
    const sentAt = this.sim.clock.now
    const writes: Promise<unknown>[] = []
    for (let k = 0; k < count; k++) {
      const origin = running[Math.floor(this.random() * running.length)]
      const { body } = this.factory.registration(this.registered++)
      const written = origin?.node?.entities.register({
        raw: Buffer.from(body),
        body: JSON.parse(body) as unknown,
        path: '/v1/entities'
      })
      if (written) writes.push(written)
    }
    await this.sim.drive(Promise.all(writes), 60_000, 'the registrations')
    if (this.sim.network.partitioned)
      return [`registered ${count} entities (${this.registered} in all); a partition keeps the sides apart`]
    const held = await this.sim.runUntil(() => this.entitiesEverywhere(this.registered), 120_000)
    return [
      held
        ? `registered ${count} entities (${this.registered} in all); every running node held them ${Math.round(this.sim.clock.now - sentAt)} ms after the first was sent`
        : `registered ${count} entities (${this.registered} in all); not every running node held them within 120 s`
    ]
  }

  /** A propagation run: K registrations at RATE per second from random nodes, and its figures. */
  private async publish(messages: number, rate: number): Promise<string[]> {
    const { figures } = await runSimPropagation(this.sim, {
      messages,
      rate,
      settleMs: 30_000,
      seed: this.published++ * 7919 + 1
    })
    this.registered += messages
    return [
      `published ${figures.published} of ${messages}: delivery ${(figures.delivery_ratio * 100).toFixed(1)} %, latency mean ${figures.latency_ms.mean} ms p99 ${figures.latency_ms.p99} ms, hops mean ${figures.hops.mean}, duplicates/node/message ${figures.duplicates_per_node_per_message.mean}`
    ]
  }

  /** Runs until every running node holds one digest; times it from the last change (or from now). */
  private async converge(limitMs: number): Promise<string[]> {
    const since = this.lastChange?.at ?? this.sim.clock.now
    const agreed = (): boolean => {
      const digests = this.sim.running().map(n => n.node?.digests.summary().digest)
      return digests.length > 0 && digests.every(d => d !== undefined && d === digests[0])
    }
    const converged = await this.sim.runUntil(agreed, limitMs)
    if (!converged) return [`not converged within ${limitMs / 1000} s`]
    const last = Math.max(...this.sim.running().map(n => n.node?.digests.summary().changedAt ?? since))
    return [
      `converged: one digest on ${this.sim.running().length} running nodes, ${Math.max(0, Math.round(last - since))} ms after the ${this.lastChange?.command ?? 'command'}`
    ]
  }

  /**
   * Churn on the clock: departures at exponential intervals (PER_MINUTE on average), each a random
   * running node crashing and rejoining DOWN_SECONDS later. Node 0 stays, so the mesh keeps a root.
   */
  private churn(perMinute: number, downSeconds: number): string[] {
    this.stopChurn()
    const next = (): void => {
      const gap = (-Math.log(1 - this.random()) * 60_000) / perMinute
      this.churnTimer = setTimeout(() => {
        const candidates = this.sim.running().filter(n => n.index !== 0)
        const leaving = candidates[Math.floor(this.random() * candidates.length)]
        if (leaving) {
          const i = leaving.index
          void this.sim
            .leave(i, true)
            .then(() => new Promise(resolve => setTimeout(resolve, downSeconds * 1000)))
            .then(() => this.sim.startNode(i))
            .catch(() => {})
        }
        next()
      }, gap)
    }
    next()
    return [`churn: ${perMinute} departures a minute on average, each node down ${downSeconds} s`]
  }

  private stopChurn(): void {
    if (this.churnTimer) clearTimeout(this.churnTimer)
    this.churnTimer = null
  }
}
