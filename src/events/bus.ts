import type { EntityRecord } from '../store/records.js'

/**
 * The node's internal event bus. Publishing never waits for subscribers: each subscriber is
 * called synchronously and must not block (the activity stream buffers per subscriber).
 */
export interface RegistryEvent {
  type: string
  timestamp: string
  data: Record<string, unknown>
  /**
   * The entity record as committed (agent_registered, agent_updated), for in-process subscribers
   * that would otherwise read it back from the store; never sent on the activity stream.
   */
  entity?: EntityRecord
}

/**
 * The timestamp is formatted when read: only the activity stream reads it, and most events (two per
 * status change of a sweep, at thousands a second) are published with nobody watching the stream.
 */
class PublishedEvent implements RegistryEvent {
  constructor(
    readonly type: string,
    readonly data: Record<string, unknown>,
    readonly entity: EntityRecord | undefined,
    private readonly at: number
  ) {}

  get timestamp(): string {
    return new Date(this.at).toISOString()
  }
}

export type EventListener = (event: RegistryEvent) => void

export class EventBus {
  private readonly listeners = new Set<EventListener>()

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  publish(type: string, data: Record<string, unknown>, entity?: EntityRecord): void {
    if (this.listeners.size === 0) return
    const event = new PublishedEvent(type, data, entity, Date.now())
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch {
        /* a failing subscriber must not affect the others */
      }
    }
  }
}
