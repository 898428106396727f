/**
 * Echo entities for a testnet, run by the testnet's own process (the runtime of src/entity/): each
 * registered at one node (entity k at node k mod N), heartbeating to it, serving its endpoints on
 * an address the nodes reach (the host's bridge address in netns mode). Stopping one closes its
 * server and heartbeat socket, as a crashed entity would; restarting it registers it again.
 */
import { pino } from 'pino'
import { createEntity, type Entity, type RunningEntity } from '../entity/entity.js'
import { keyPairFromSeed } from '../identity/keys.js'
import { createHash } from 'node:crypto'

export interface TestnetEntity {
  index: number
  /** The node it registers and heartbeats at. */
  home: number
  entityId: string
  /** Its URL while running. */
  url: string | null
}

export interface TestnetEntityOptions {
  /** Node base URLs, by index. */
  nodeUrls: () => readonly string[]
  /** The address entity servers listen on, reachable from the nodes (known once the network is up). */
  host: () => string
  heartbeatSeconds: number
  /** Names the developer key (the testnet's seed), so a run's entities are the same each time. */
  seed: string
}

interface Slot {
  index: number
  home: number
  entity: Entity
  running: RunningEntity | null
}

export class TestnetEntities {
  private readonly slots: Slot[] = []
  private readonly developer

  constructor(private readonly o: TestnetEntityOptions) {
    this.developer = keyPairFromSeed(createHash('sha256').update(`testnet entities ${o.seed}`).digest())
  }

  list(): TestnetEntity[] {
    return this.slots.map(s => ({
      index: s.index,
      home: s.home,
      entityId: s.entity.entityId,
      url: s.running?.url ?? null
    }))
  }

  /** Adds and starts `count` entities, spread over the nodes. */
  async add(count: number): Promise<TestnetEntity[]> {
    const urls = this.o.nodeUrls()
    const first = this.slots.length
    const added: Slot[] = Array.from({ length: count }, (_, k) => {
      const index = first + k
      const home = index % urls.length
      const entity = createEntity({
        developerKey: this.developer,
        index,
        registry: urls[home] as string,
        host: this.o.host(),
        card: {
          name: `Echo ${index}`,
          summary: 'A testnet echo entity: answers with what it is sent',
          category: 'testnet',
          tags: ['echo', 'testnet'],
          capabilities: ['echo']
        },
        handler: input => input.content,
        heartbeat: { intervalMs: this.o.heartbeatSeconds * 1000 },
        logger: pino({ level: 'silent' })
      })
      return { index, home, entity, running: null }
    })
    this.slots.push(...added)
    // A few at a time: each registers with its node and opens a socket.
    for (let i = 0; i < added.length; i += 16) await Promise.all(added.slice(i, i + 16).map(s => this.startSlot(s)))
    return this.list().slice(first)
  }

  /** Stops entity k (its server and heartbeats end; the registration stays). */
  async stop(k: number): Promise<void> {
    const slot = this.slot(k)
    await slot.running?.stop()
    slot.running = null
  }

  async restart(k: number): Promise<void> {
    const slot = this.slot(k)
    if (slot.running) throw new Error(`entity ${k} is running`)
    await this.startSlot(slot)
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.slots.map(s => s.running?.stop().catch(() => {})))
    for (const s of this.slots) s.running = null
  }

  private async startSlot(slot: Slot): Promise<void> {
    slot.running = await slot.entity.start()
  }

  private slot(k: number): Slot {
    const slot = this.slots[k]
    if (!slot) throw new Error(`no entity ${k} (the testnet has ${this.slots.length})`)
    return slot
  }
}
