/**
 * The order in which a node's parts start and stop. Each part that starts pushes how to stop it;
 * a failed start and `stop()` unwind the same stack, last started first (js-libp2p's Startable,
 * Fastify's onClose hooks). A stack rather than libp2p's parallel stop, because the order matters:
 * HTTP stops taking requests before writes drain, and writes drain before the store closes.
 */
import type { Logger } from 'pino'

export interface LifecycleHooks {
  /** Told before each start step (a test throws here to inject a failure at that step). */
  starting?(step: string): void
  /** Told when a part that will need stopping has started (or a stop was registered). */
  started?(step: string): void
  /** Told as a started part begins to stop, with its stop in flight (a simulation waits for real work in it). */
  stopping?(step: string, stop: Promise<unknown>): void
  /** Told once a started part has stopped. */
  stopped?(step: string): void
}

interface Started {
  step: string
  stop: () => unknown
}

export class Lifecycle {
  private readonly started: Started[] = []
  private stopping: Promise<void> | null = null

  constructor(
    private readonly logger: Pick<Logger, 'error'>,
    private readonly hooks: LifecycleHooks = {}
  ) {}

  /** Runs one start step and remembers how to stop what it started. */
  async start<T>(step: string, start: () => T | Promise<T>, stop?: (started: T) => unknown): Promise<T> {
    this.hooks.starting?.(step)
    const value = await start()
    if (stop) this.onStop(step, () => stop(value))
    return value
  }

  /** Remembers how to undo a step that needs no start of its own (it is undone in stack order). */
  onStop(step: string, stop: () => unknown): void {
    this.started.push({ step, stop })
    this.hooks.started?.(step)
  }

  /** Stops every started part, last first. A part that fails to stop is logged; the others still stop. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (let part = this.started.pop(); part; part = this.started.pop()) {
        try {
          const stop = Promise.resolve(part.stop())
          this.hooks.stopping?.(part.step, stop)
          await stop
        } catch (err) {
          this.logger.error({ err, step: part.step }, 'a part of the node failed to stop')
        }
        this.hooks.stopped?.(part.step)
      }
    })()
    return this.stopping
  }
}
